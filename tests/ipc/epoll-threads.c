/* SPDX-License-Identifier: MIT */
/*
 * epoll-threads: two threads, each with its own epoll instance (the usual
 * one-loop-per-thread server).  One loop waits on an idle connection in
 * polling mode (BYPASS_WAIT_SPIN: it never sleeps); the other must still
 * see its own connection's messages: one loop's spinning must not hold the
 * other back.  TEST_LABELS: threads
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>

#include "util.h"

#define ROUNDS 50

static int ep_a;
static _Atomic int a_events;

static void *loop_a(void *arg)
{
	(void)arg;
	struct epoll_event ev[4];
	/* Returns when the client's message on A finally arrives. */
	int n = bypass_ipc_epoll_wait(ep_a, ev, 4, BYPASS_FOREVER);
	atomic_store(&a_events, n);
	return NULL;
}

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "epthr");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *a = test_connect(name, NULL);
		bypass_ipc_conn *b = test_connect(name, NULL);
		char x;
		for (uint64_t i = 0; i < ROUNDS; i++) {
			CHECK(read(go[0], &x, 1) == 1);
			CHECK_ERR(bypass_ipc_send(b, &i, sizeof(i), BYPASS_FOREVER), 0);
		}
		CHECK(read(go[0], &x, 1) == 1);
		CHECK_ERR(bypass_ipc_send(a, "end", 4, BYPASS_FOREVER), 0);
		CHECK(read(go[0], &x, 1) == 1);
		CHECK_ERR(bypass_ipc_close(a), 0);
		CHECK_ERR(bypass_ipc_close(b), 0);
		_exit(0);
	}
	bypass_ipc_conn *a = test_accept(svc), *b = test_accept(svc);
	CHECK_ERR(bypass_ipc_set_mode(a, BYPASS_WAIT_SPIN, 0), 0);
	ep_a = epoll_create1(EPOLL_CLOEXEC);
	int ep_b = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep_a >= 0 && ep_b >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 }, ev[4];
	CHECK_ERR(bypass_ipc_epoll_ctl(ep_a, EPOLL_CTL_ADD, a, &e), 0);
	e.data.u64 = 2;
	CHECK_ERR(bypass_ipc_epoll_ctl(ep_b, EPOLL_CTL_ADD, b, &e), 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, loop_a, NULL) == 0);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		CHECK(write(go[1], "g", 1) == 1);
		int n = bypass_ipc_epoll_wait(ep_b, ev, 4, BYPASS_FOREVER);
		CHECK_EQ(n, 1);
		CHECK_EQ(ev[0].data.u64, 2);
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(b, &m, 0), 0);
		CHECK_EQ(*(uint64_t *)m.data, i);
		CHECK_ERR(bypass_ipc_release(b, &m), 0);
	}
	CHECK_EQ(atomic_load(&a_events), 0); /* A is still waiting */
	CHECK(write(go[1], "g", 1) == 1);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(atomic_load(&a_events), 1);
	CHECK(write(go[1], "g", 1) == 1);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_close(a), 0);
	CHECK_ERR(bypass_ipc_close(b), 0);
	close(ep_a);
	close(ep_b);
	close(go[0]);
	close(go[1]);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll-threads");
}
