/* SPDX-License-Identifier: MIT */
/*
 * epoll-stray: a wake byte that reaches the connection's socket after its
 * message was read (a producer that saw the connection armed sends it late)
 * makes the socket readable with nothing to report.  bypass_ipc_epoll_wait with
 * no timeout (-1) must not return 0 for it, as epoll_wait never does: it
 * goes back to sleep until the real message comes.
 *
 * The client waits until the server's loop has armed the connection (the
 * flag it sets before sleeping in epoll_wait), then writes a stray byte;
 * once the loop has armed the connection again, it sends a real message.
 */
#include <sys/prctl.h>

#include "ipc/ipc_internal.h"
#include "util.h"

#define ROUNDS 20

static void wait_armed(bypass_ipc_conn *c)
{
	while (!atomic_load(&c->tx.ctl->rx_armed))
		usleep(1000);
}

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "stray");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *c = test_connect(name, NULL);
		for (uint64_t i = 0; i < ROUNDS; i++) {
			wait_armed(c);
			/* A wake byte for no message, taking the flag as a
			 * producer does; wait for the loop to drain the byte
			 * and arm again, then send for real. */
			atomic_store(&c->tx.ctl->rx_armed, 0);
			CHECK(write(bypass_ipc_fd(c), "w", 1) == 1);
			wait_armed(c);
			CHECK_ERR(bypass_ipc_send(c, &i, sizeof(i), BYPASS_FOREVER), 0);
		}
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	bypass_ipc_conn *s = test_accept(svc);
	bypass_ipc_set_mode(s, BYPASS_WAIT_SLEEP, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 7 }, ev[4];
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s, &e), 0);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		int n = bypass_ipc_epoll_wait(ep, ev, 4, BYPASS_FOREVER);
		CHECK_EQ(n, 1);
		CHECK_EQ(ev[0].data.u64, 7);
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(s, &m, 0), 0);
		CHECK_EQ(*(uint64_t *)m.data, i);
		CHECK_ERR(bypass_ipc_release(s, &m), 0);
	}
	wait_child(pid);
	CHECK_ERR(bypass_ipc_close(s), 0);
	close(ep);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll-stray");
}
