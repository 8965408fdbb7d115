/* SPDX-License-Identifier: MIT */
/*
 * epoll: bypass_ipc_epoll_wait reports connections and ordinary descriptors of
 * one epoll instance together: a message that arrives while the loop sleeps
 * wakes it with the connection's data; a pipe's data comes through as
 * given; both can be ready at once; a peer's death is EPOLLIN|EPOLLHUP and
 * recv then says -ECONNRESET; EPOLL_CTL_MOD changes the data, EPOLL_CTL_DEL
 * stops the reports; bad registrations are refused.  Also the low-level
 * route: bypass_ipc_fd + bypass_ipc_arm under poll().
 */
#include <poll.h>

#include "util.h"

#define TAG_PIPE 0x1111
#define TAG_A 0xaaaa
#define TAG_B 0xbbbb

static int wait_events(int ep, struct epoll_event *ev, int max)
{
	int n = bypass_ipc_epoll_wait(ep, ev, max, 10000 * BYPASS_MS);
	if (n <= 0)
		TEST_FAIL("bypass_ipc_epoll_wait: %d", n);
	return n;
}

static bool has(struct epoll_event *ev, int n, uint64_t tag, uint32_t want)
{
	for (int i = 0; i < n; i++)
		if (ev[i].data.u64 == tag && (ev[i].events & want) == want)
			return true;
	return false;
}

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "epoll");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	int go[2], pp[2];
	CHECK(pipe(go) == 0 && pipe(pp) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* Two clients; steps paced by the parent through the go pipe. */
		struct bypass_ipc_opts o = { .mode = BYPASS_WAIT_SLEEP };
		bypass_ipc_conn *a = test_connect(name, &o), *b = test_connect(name, &o);
		char step;
		CHECK(read(go[0], &step, 1) == 1); /* 1: A sends while the loop sleeps */
		usleep(50000);
		CHECK_ERR(bypass_ipc_send(a, "to A", 5, BYPASS_FOREVER), 0);
		CHECK(read(go[0], &step, 1) == 1); /* 2: B sends, and the pipe */
		CHECK_ERR(bypass_ipc_send(b, "to B", 5, BYPASS_FOREVER), 0);
		CHECK(write(pp[1], "p", 1) == 1);
		CHECK(read(go[0], &step, 1) == 1); /* 3: A sends again (armed route) */
		usleep(50000);
		CHECK_ERR(bypass_ipc_send(a, "poll", 5, BYPASS_FOREVER), 0);
		CHECK(read(go[0], &step, 1) == 1); /* 4: die */
		_exit(0); /* without closing: like a crash */
	}
	bypass_ipc_conn *a = test_accept(svc), *b = test_accept(svc);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event ev[8];
	struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP, .data.u64 = TAG_A };
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, a, &e), 0);
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, a, &e), -EEXIST);
	e.data.u64 = TAG_B;
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_DEL, b, NULL), -ENOENT);
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_MOD, b, &e), -ENOENT);
	e.events = EPOLLIN | EPOLLOUT;
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, b, &e), -EOPNOTSUPP);
	e.events = EPOLLIN | EPOLLET;
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, b, &e), -EOPNOTSUPP);
	e.events = EPOLLIN;
	e.data.u64 = 0;
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, b, &e), 0);
	e.data.u64 = TAG_B;
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_MOD, b, &e), 0);
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, 99, b, &e), -EINVAL);
	struct epoll_event pe = { .events = EPOLLIN, .data.u64 = TAG_PIPE };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &pe) == 0);

	/* Nothing ready: a timeout. */
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 8, 20 * BYPASS_MS), 0);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 8, 0), 0);

	/* 1: asleep in the kernel, woken by A's message. */
	CHECK(write(go[1], "1", 1) == 1);
	int n = wait_events(ep, ev, 8);
	CHECK_EQ(n, 1);
	CHECK(has(ev, n, TAG_A, EPOLLIN));
	struct bypass_ipc_msg m;
	/* Level-triggered: still reported until read. */
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 8, 0), 1);
	CHECK_ERR(bypass_ipc_recv(a, &m, 0), 0);
	CHECK(!memcmp(m.data, "to A", 5));
	CHECK_ERR(bypass_ipc_release(a, &m), 0);
	CHECK_ERR(bypass_ipc_recv(a, &m, 0), -EAGAIN);

	/* 2: a connection and the pipe together. */
	CHECK(write(go[1], "2", 1) == 1);
	bool got_b = false, got_pipe = false;
	while (!got_b || !got_pipe) {
		n = wait_events(ep, ev, 8);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == TAG_B) {
				CHECK_ERR(bypass_ipc_recv(b, &m, 0), 0);
				CHECK(!memcmp(m.data, "to B", 5));
				CHECK_ERR(bypass_ipc_release(b, &m), 0);
				got_b = true;
			} else if (ev[i].data.u64 == TAG_PIPE) {
				char x;
				CHECK(read(pp[0], &x, 1) == 1);
				got_pipe = true;
			} else {
				TEST_FAIL("unexpected event data %#llx",
					  (unsigned long long)ev[i].data.u64);
			}
		}
	}
	/* DEL: B is no longer reported. */
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_DEL, b, NULL), 0);

	/* 3: the low-level route, outside epoll: fd + arm + poll(). */
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_DEL, a, NULL), 0);
	CHECK(write(go[1], "3", 1) == 1);
	CHECK_ERR(bypass_ipc_arm(a), 0);
	struct pollfd p = { .fd = bypass_ipc_fd(a), .events = POLLIN };
	CHECK_EQ(poll(&p, 1, 10000), 1);
	CHECK_ERR(bypass_ipc_recv(a, &m, 0), 0);
	CHECK(!memcmp(m.data, "poll", 5));
	CHECK_ERR(bypass_ipc_release(a, &m), 0);
	CHECK_ERR(bypass_ipc_recv(a, &m, 0), -EAGAIN);
	CHECK_EQ(poll(&p, 1, 0), 0); /* the wake byte was drained */

	/* 4: the peer dies: a hang-up on A. */
	e.events = EPOLLIN | EPOLLRDHUP;
	e.data.u64 = TAG_A;
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, a, &e), 0);
	CHECK(write(go[1], "4", 1) == 1);
	wait_child(pid);
	n = wait_events(ep, ev, 8);
	CHECK(has(ev, n, TAG_A, EPOLLIN | EPOLLHUP | EPOLLRDHUP));
	CHECK(!has(ev, n, TAG_B, 0));
	CHECK_ERR(bypass_ipc_recv(a, &m, 0), -ECONNRESET);
	/* Closing a registered connection removes it. */
	CHECK_ERR(bypass_ipc_close(a), 0);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 8, 0), 0);
	CHECK_ERR(bypass_ipc_close(b), 0);
	CHECK_ERR(bypass_ipc_epoll_wait(-1, ev, 8, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_epoll_wait(ep, NULL, 8, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_epoll_wait(ep, ev, 0, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_epoll_wait(ep, ev, 8, -2), -EINVAL);  /* only BYPASS_FOREVER is negative */
	close(ep);
	close(go[0]);
	close(go[1]);
	close(pp[0]);
	close(pp[1]);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll");
}
