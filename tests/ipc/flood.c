/* SPDX-License-Identifier: MIT */
/*
 * flood: a hostile client floods the connection's handshake socket (which
 * carries only wake bytes, one per arming) as fast as it can write.  The
 * server must not be kept reading it forever: recv after arming, and
 * bypass_ipc_epoll_wait with a timeout, return; and the connection still carries
 * messages.
 */
#include <fcntl.h>
#include <sys/prctl.h>

#include "util.h"

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "flood");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *c = test_connect(name, NULL);
		CHECK_ERR(bypass_ipc_send(c, "hello", 6, BYPASS_FOREVER), 0);
		int fd = bypass_ipc_fd(c);
		int fl = fcntl(fd, F_GETFL);
		CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0);
		/* A deep send buffer (as root), so that the writer stays ahead. */
		int big = 64 << 20;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) < 0)
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		static char junk[1 << 16];
		memset(junk, 'w', sizeof(junk));
		for (;;)
			if (write(fd, junk, sizeof(junk)) < 0 && errno != EINTR)
				_exit(0);
	}
	bypass_ipc_conn *s = test_accept(svc);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(s, &m, BYPASS_FOREVER), 0);
	CHECK(!memcmp(m.data, "hello", 6));
	CHECK_ERR(bypass_ipc_release(s, &m), 0);
	/* Armed: recv drains wake bytes first. */
	for (int i = 0; i < 20; i++) {
		CHECK_ERR(bypass_ipc_arm(s), 0);
		CHECK_ERR(bypass_ipc_recv(s, &m, 0), -EAGAIN);
	}
	/* In an epoll loop: the socket is always readable. */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 7 }, ev[4];
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s, &e), 0);
	for (int i = 0; i < 20; i++)
		CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 4, 10 * BYPASS_MS), 0);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 4, 0), 0);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, NULL, 0) == pid);
	CHECK_ERR(bypass_ipc_close(s), 0);
	close(ep);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/flood");
}
