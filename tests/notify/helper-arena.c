/* SPDX-License-Identifier: MIT */
/*
 * helper-arena SOCK MODE ROUNDS: the far side of notify/exec-arena, an
 * exec'd program.  It receives the arena's descriptor (and the address the
 * creator mapped it at) over the Unix socket SOCK, attaches it with
 * bypass_arena_open, finds two doorbells at root slots 0 ("ping") and 1
 * ("pong"), opens them with bypass_notify_open, and then:
 *   1. checks that open refuses addresses that are not a doorbell;
 *   2. ping-pong ROUNDS times (wait ping = 1, ring pong) in MODE;
 *   3. sleeps on ping until the test destroys it: the wait returns -EINVAL,
 *      and so do ring, try, arm, fd and a new open; then rings pong.
 */
#include <bypass/notify.h>
#include <stdint.h>

#include "harness.h"
#include "core/testutil.h"

int main(int argc, char **argv)
{
	test_timeout(100);
	if (argc != 4)
		TEST_FAIL("usage: helper-arena SOCK MODE ROUNDS");
	int sock = atoi(argv[1]), mode = atoi(argv[2]), rounds = atoi(argv[3]);
	int fd = -1;
	unsigned nfds = 1;
	uint64_t base = 0;
	CHECK_EQ(bypass_recv_fds(sock, &fd, &nfds, &base, sizeof(base)), (int)sizeof(base));
	CHECK_EQ(nfds, 1);
	bypass_arena *a;
	CHECK_ERR(bypass_arena_open(fd, &a), 0);
	close(fd);
	CHECK_EQ((uintptr_t)bypass_arena_base(a), base);

	void *pa, *pb;
	CHECK_ERR(bypass_arena_get_root(a, 0, &pa), 0);
	CHECK_ERR(bypass_arena_get_root(a, 1, &pb), 0);
	bypass_doorbell *ping, *pong, *bad;

	/* 1. Not doorbells. */
	CHECK_ERR(bypass_notify_open(a, (char *)pa + 64, &bad), -EINVAL);
	CHECK_ERR(bypass_notify_open(a, (char *)pa + 8, &bad), -EINVAL);
	CHECK_ERR(bypass_notify_open(a, bypass_arena_base(a), &bad), -EINVAL);
	CHECK_ERR(bypass_notify_open(a, (char *)bypass_arena_base(a) +
				       bypass_arena_size(a) - 64, &bad), -EINVAL);

	CHECK_ERR(bypass_notify_open(a, pa, &ping), 0);
	CHECK_ERR(bypass_notify_open(a, pb, &pong), 0);
	CHECK(bypass_notify_addr(ping) == pa);
	CHECK_ERR(bypass_notify_set_mode(ping, mode, 0), 0);
	CHECK_ERR(bypass_notify_set_mode(pong, mode, 0), 0);

	/* 2. Ping-pong. */
	for (int i = 0; i < rounds; i++) {
		CHECK_EQ(bypass_notify_wait(ping, BYPASS_FOREVER), 1);
		CHECK_ERR(bypass_notify_ring(pong), 0);
	}

	/* 3. The test destroys ping while we wait on it. */
	CHECK_ERR(bypass_notify_wait(ping, BYPASS_FOREVER), -EINVAL);
	CHECK_ERR(bypass_notify_wait(ping, 0), -EINVAL);
	CHECK_ERR(bypass_notify_ring(ping), -EINVAL);
	CHECK_ERR(bypass_notify_try(ping), -EINVAL);
	CHECK_ERR(bypass_notify_arm(ping), -EINVAL);
	CHECK_ERR(bypass_notify_fd(ping), -EINVAL);
	CHECK_ERR(bypass_notify_open(a, pa, &bad), -EINVAL);
	CHECK_ERR(bypass_notify_close(ping), 0);
	CHECK_ERR(bypass_notify_ring(pong), 0);

	CHECK_ERR(bypass_notify_close(pong), 0);
	CHECK_ERR(bypass_arena_close(a), 0);
	return 0;
}
