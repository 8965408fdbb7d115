/* SPDX-License-Identifier: MIT */
/*
 * helper-recv SOCK MODE ROUNDS: the far side of notify/exec-recv, a separate
 * program (exec'd, so it shares no memory with the test).  It receives three
 * doorbells over the Unix socket SOCK with bypass_notify_recv: "ping" (made
 * with BYPASS_NOTIFY_EVENTFD), "pong", and "third" (no eventfd), then:
 *   1. ping-pong ROUNDS times: wait ping (FOREVER, in MODE) = 1, ring pong;
 *   2. ping's eventfd came along: bypass_notify_fd opens no descriptor;
 *      wait for a last ring of ping ("go") and the byte on SOCK that says
 *      the ring has returned (else it may post the eventfd after the arm), arm ping, ring pong ("armed"), poll the fd until readable, try = 1;
 *   3. third has no eventfd: bypass_notify_fd makes one here (one more
 *      descriptor), arm, ring pong, poll: the test's ring must reach it.
 * Exit 0 when everything held, 1 (with a message) otherwise.
 */
#include <bypass/notify.h>
#include <poll.h>

#include "harness.h"
#include "core/testutil.h"

static void poll_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;
	do
		r = poll(&p, 1, 20000);
	while (r < 0 && errno == EINTR);
	CHECK_EQ(r, 1);
	CHECK(p.revents & POLLIN);
}

static void poll_not_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECK_EQ(poll(&p, 1, 0), 0);
}

int main(int argc, char **argv)
{
	test_timeout(100);
	if (argc != 4)
		TEST_FAIL("usage: helper-recv SOCK MODE ROUNDS");
	int sock = atoi(argv[1]), mode = atoi(argv[2]), rounds = atoi(argv[3]);
	bypass_doorbell *ping, *pong, *third;
	CHECK_ERR(bypass_notify_recv(sock, &ping), 0);
	CHECK_ERR(bypass_notify_recv(sock, &pong), 0);
	CHECK_ERR(bypass_notify_recv(sock, &third), 0);
	CHECK(!strcmp(bypass_notify_backend(ping), "futex"));
	CHECK_ERR(bypass_notify_set_mode(ping, mode, 0), 0);
	CHECK_ERR(bypass_notify_set_mode(pong, mode, 0), 0);
	CHECK_ERR(bypass_notify_set_mode(third, mode, 0), 0);

	/* 1. ping-pong with exact counts. */
	for (int i = 0; i < rounds; i++) {
		CHECK_EQ(bypass_notify_wait(ping, BYPASS_FOREVER), 1);
		CHECK_ERR(bypass_notify_ring(pong), 0);
	}

	/* 2. The eventfd that came with ping (after a "go" on ping, so that
	 *    our next ring of pong does not merge with the last one above). */
	CHECK_EQ(bypass_notify_wait(ping, BYPASS_FOREVER), 1);
	char g;
	CHECK_EQ(read(sock, &g, 1), 1); /* the "go" ring has returned */
	int before = test_count_fds();
	int fd = bypass_notify_fd(ping);
	CHECK(fd >= 0);
	CHECK_EQ(test_count_fds(), before);
	CHECK_EQ(bypass_notify_fd(ping), fd);
	CHECK_EQ(bypass_notify_arm(ping), 0);
	poll_not_readable(fd);
	CHECK_ERR(bypass_notify_ring(pong), 0);
	poll_readable(fd);
	CHECK_EQ(bypass_notify_try(ping), 1);
	poll_not_readable(fd);

	/* 3. An eventfd made here, reached by the test's ring. */
	before = test_count_fds();
	int fd3 = bypass_notify_fd(third);
	CHECK(fd3 >= 0);
	CHECK_EQ(test_count_fds(), before + 1);
	CHECK_EQ(bypass_notify_arm(third), 0);
	CHECK_ERR(bypass_notify_ring(pong), 0);
	poll_readable(fd3);
	CHECK_EQ(bypass_notify_try(third), 1);
	poll_not_readable(fd3);
	CHECK_ERR(bypass_notify_ring(pong), 0);

	CHECK_ERR(bypass_notify_close(ping), 0);
	CHECK_ERR(bypass_notify_close(pong), 0);
	CHECK_ERR(bypass_notify_close(third), 0);
	return 0;
}
