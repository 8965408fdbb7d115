/* SPDX-License-Identifier: MIT */
/*
 * epoll-busy: while connections are busy, bypass_ipc_epoll_wait still polls
 * the kernel for the application's ordinary descriptors (at least every
 * 50 us), also when the connections alone fill maxevents.  One connection
 * holds thousands of queued messages; the loop takes one event per call
 * (maxevents 1) and one message per event, and a pipe becomes readable
 * after the first 100: it must come up long before the connection is
 * drained (thousands of calls, far more than 50 us).
 */
#include <sys/prctl.h>

#include "util.h"

#define TAG_CONN 1
#define TAG_PIPE 2

int main(void)
{
	test_timeout(30);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "epbusy");
	struct bypass_ipc_opts so = { .ring_size = 1u << 20, .max_msg = 64 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	int done[2], ready[2], pp[2];
	CHECK(pipe(done) == 0 && pipe(ready) == 0 && pipe(pp) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *c = test_connect(name, NULL);
		int sent = 0;
		/* Fill the ring. */
		while (bypass_ipc_send(c, &sent, sizeof(sent), 0) == 0)
			sent++;
		CHECK(write(ready[1], &sent, sizeof(sent)) == sizeof(sent));
		char x;
		CHECK(read(done[0], &x, 1) == 1);
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	bypass_ipc_conn *s = test_accept(svc);
	int sent;
	CHECK(read(ready[0], &sent, sizeof(sent)) == sizeof(sent));
	CHECK(sent > 1000);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = TAG_CONN };
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s, &e), 0);
	e.data.u64 = TAG_PIPE;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &e) == 0);
	int got = 0;
	bool pipe_seen = false;
	while (got < sent) {
		struct epoll_event ev;
		if (got == 100)
			CHECK(write(pp[1], "p", 1) == 1);
		CHECK_EQ(bypass_ipc_epoll_wait(ep, &ev, 1, 10000 * BYPASS_MS), 1);
		if (ev.data.u64 == TAG_PIPE) {
			char x;
			CHECK(read(pp[0], &x, 1) == 1);
			pipe_seen = true;
			break;
		}
		CHECK_EQ(ev.data.u64, TAG_CONN);
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(s, &m, 0), 0);
		CHECK_EQ(*(int *)m.data, got);
		got++;
		CHECK_ERR(bypass_ipc_release(s, &m), 0);
	}
	TEST_LOG("the pipe came up after %d of %d messages", got, sent);
	CHECK(pipe_seen);
	CHECK(write(done[1], "d", 1) == 1);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_close(s), 0);
	close(ep);
	int p[] = { done[0], done[1], ready[0], ready[1], pp[0], pp[1] };
	for (unsigned i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		close(p[i]);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll-busy");
}
