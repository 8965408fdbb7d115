/* SPDX-License-Identifier: MIT */
/*
 * epoll-hup: a connection registered without EPOLLIN (only EPOLLRDHUP, or
 * nothing) is not reported for its messages, but its peer's hang-up is
 * (EPOLLHUP is always reported, as by epoll), both when the peer closes and
 * when it is killed.
 */
#include <sys/prctl.h>

#include "util.h"

static void trial(const char *name, bypass_ipc_service *svc, uint32_t events, bool crash)
{
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *c = test_connect(name, NULL);
		CHECK_ERR(bypass_ipc_send(c, "msg", 4, BYPASS_FOREVER), 0);
		char x;
		CHECK(read(go[0], &x, 1) == 1);
		if (!crash)
			CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	bypass_ipc_conn *s = test_accept(svc);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = events, .data.u64 = 9 }, ev[4];
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s, &e), 0);
	/* The message is there, but not asked for. */
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(s, &m, BYPASS_FOREVER), 0);
	CHECK_ERR(bypass_ipc_release(s, &m), 0);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 4, 50 * BYPASS_MS), 0);
	CHECK(write(go[1], "x", 1) == 1);
	wait_child(pid);
	int n = bypass_ipc_epoll_wait(ep, ev, 4, 10000 * BYPASS_MS);
	CHECK_EQ(n, 1);
	CHECK_EQ(ev[0].data.u64, 9);
	CHECK(ev[0].events & EPOLLHUP);
	CHECK(!(ev[0].events & EPOLLIN));
	CHECK_EQ(ev[0].events & EPOLLRDHUP, events & EPOLLRDHUP);
	/* Level-triggered: reported again. */
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 4, 0), 1);
	CHECK_ERR(bypass_ipc_close(s), 0);
	close(ep);
	close(go[0]);
	close(go[1]);
}

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "ephup");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	trial(name, svc, EPOLLRDHUP, false);
	trial(name, svc, EPOLLRDHUP, true);
	trial(name, svc, 0, false);
	trial(name, svc, 0, true);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll-hup");
}
