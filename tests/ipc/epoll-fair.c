/* SPDX-License-Identifier: MIT */
/*
 * epoll-fair: more ready connections than maxevents.  Like epoll, which
 * moves a reported level-triggered descriptor to the back of its ready
 * list, bypass_ipc_epoll_wait must take turns: a connection that always has
 * another message must not keep the others from ever being reported.
 * Three clients queue messages; the loop takes one event per call and one
 * message per event; every connection must come up among the first three.
 */
#include <sys/prctl.h>

#include "util.h"

#define CONNS 3
#define MSGS 10

int main(void)
{
	test_timeout(30);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "epfair");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	int done[2], ready[2];
	CHECK(pipe(done) == 0 && pipe(ready) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *c[CONNS];
		for (int i = 0; i < CONNS; i++)
			c[i] = test_connect(name, NULL);
		for (int k = 0; k < MSGS; k++)
			for (int i = 0; i < CONNS; i++)
				CHECK_ERR(bypass_ipc_send(c[i], &k, sizeof(k), BYPASS_FOREVER), 0);
		CHECK(write(ready[1], "r", 1) == 1);
		char x;
		CHECK(read(done[0], &x, 1) == 1);
		for (int i = 0; i < CONNS; i++)
			CHECK_ERR(bypass_ipc_close(c[i]), 0);
		_exit(0);
	}
	bypass_ipc_conn *s[CONNS];
	for (int i = 0; i < CONNS; i++)
		s[i] = test_accept(svc);
	/* Everything queued before the loop starts. */
	char x;
	CHECK(read(ready[0], &x, 1) == 1);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	for (int i = 0; i < CONNS; i++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u64 = (uint64_t)i };
		CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s[i], &e), 0);
	}
	unsigned seen = 0;
	int next[CONNS] = { 0 };
	for (int round = 0; round < CONNS * MSGS; round++) {
		struct epoll_event ev;
		CHECK_EQ(bypass_ipc_epoll_wait(ep, &ev, 1, 10000 * BYPASS_MS), 1);
		uint64_t k = ev.data.u64;
		CHECK(k < CONNS);
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(s[k], &m, 0), 0);
		CHECK_EQ(*(int *)m.data, next[k]);
		next[k]++;
		CHECK_ERR(bypass_ipc_release(s[k], &m), 0);
		seen |= 1u << k;
		if (round == CONNS - 1 && seen != (1u << CONNS) - 1)
			TEST_FAIL("after %d events only connections %#x were reported", CONNS,
				  seen);
	}
	CHECK_EQ(bypass_ipc_epoll_wait(ep, (struct epoll_event[1]){ 0 }, 1, 0), 0);
	CHECK(write(done[1], "d", 1) == 1);
	wait_child(pid);
	for (int i = 0; i < CONNS; i++)
		CHECK_ERR(bypass_ipc_close(s[i]), 0);
	close(ep);
	close(done[0]);
	close(done[1]);
	close(ready[0]);
	close(ready[1]);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll-fair");
}
