/* SPDX-License-Identifier: MIT */
/*
 * epoll-forked: the server dies (SIGKILL) while a child it forked still
 * holds the connection's socket, so the socket never hangs up.  recv sees
 * the death through the peer's pidfd; bypass_ipc_epoll_wait must too: the
 * client's loop gets EPOLLIN|EPOLLHUP, not an endless sleep.
 */
#include <sys/prctl.h>

#include "util.h"

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	/* The server's orphaned child becomes ours, to be reaped. */
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	char name[64];
	test_svc_name(name, sizeof(name), "epfork");
	int ready[2], hold[2];
	CHECK(pipe(ready) == 0 && pipe(hold) == 0);
	pid_t srv = fork();
	CHECK(srv >= 0);
	if (srv == 0) {
		close(hold[1]);
		bypass_ipc_service *svc;
		CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
		CHECK(write(ready[1], "l", 1) == 1);
		bypass_ipc_conn *c = test_accept(svc);
		CHECK_ERR(bypass_ipc_send(c, "hi", 3, BYPASS_FOREVER), 0);
		pid_t kid = fork();
		CHECK(kid >= 0);
		if (kid == 0) {
			/* Holds every descriptor until the test closes hold. */
			char x;
			while (read(hold[0], &x, 1) > 0)
				;
			_exit(0);
		}
		CHECK(write(ready[1], "f", 1) == 1);
		for (;;)
			pause();
	}
	close(hold[0]);
	char x;
	CHECK(read(ready[0], &x, 1) == 1);
	bypass_ipc_conn *c = test_connect(name, NULL);
	CHECK(read(ready[0], &x, 1) == 1);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP, .data.u64 = 5 }, ev[4];
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, c, &e), 0);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 4, BYPASS_FOREVER), 1);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, 0), 0);
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 4, 0), 0);

	kill(srv, SIGKILL);
	int st;
	CHECK(waitpid(srv, &st, 0) == srv);
	int n = bypass_ipc_epoll_wait(ep, ev, 4, BYPASS_FOREVER);
	CHECK_EQ(n, 1);
	CHECK_EQ(ev[0].data.u64, 5);
	CHECK((ev[0].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) ==
	      (EPOLLIN | EPOLLHUP | EPOLLRDHUP));
	CHECK_ERR(bypass_ipc_recv(c, &m, 0), -ECONNRESET);
	CHECK_ERR(bypass_ipc_close(c), 0);
	close(ep);

	/* Let the server's child go, and reap it. */
	close(hold[1]);
	CHECK(wait(&st) > 0);
	close(ready[0]);
	close(ready[1]);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll-forked");
}
