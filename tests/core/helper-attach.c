/* SPDX-License-Identifier: MIT */
/*
 * helper-attach SOCK: the far side of core/arena-exec, an exec'd program.
 * Receives an arena's descriptor and the creator's base address over SOCK,
 * attaches it and checks: the same address and size; the creator's string
 * at root 0 is there; a second attach is -EEXIST; detach + attach again
 * works.  Then it allocates a block, writes a reply in it, publishes it at
 * root 1 and answers one byte on SOCK.  Exit 0 when all held.
 */
#include <bypass/core.h>
#include <stdint.h>

#include "harness.h"
#include "core/testutil.h"

int main(int argc, char **argv)
{
	test_timeout(60);
	if (argc != 2)
		TEST_FAIL("usage: helper-attach SOCK");
	int sock = atoi(argv[1]);
	int fd = -1;
	unsigned nfds = 1;
	uint64_t info[2];
	CHECK_EQ(bypass_recv_fds(sock, &fd, &nfds, info, sizeof(info)), (int)sizeof(info));
	CHECK_EQ(nfds, 1);
	CHECK(fd >= 0);

	bypass_arena *a, *again;
	CHECK_ERR(bypass_arena_open(fd, &a), 0);
	CHECK_EQ((uintptr_t)bypass_arena_base(a), info[0]);
	CHECK_EQ(bypass_arena_size(a), info[1]);
	CHECK(bypass_arena_fd(a) >= 0 && bypass_arena_fd(a) != fd); /* a dup */
	bypass_set_log_level(BYPASS_LOG_NONE);
	CHECK_ERR(bypass_arena_open(fd, &again), -EEXIST);
	CHECK_ERR(bypass_arena_close(a), 0);
	CHECK_ERR(bypass_arena_open(fd, &a), 0);
	CHECK_EQ((uintptr_t)bypass_arena_base(a), info[0]);
	close(fd); /* the arena keeps its own descriptor */

	char *hello;
	CHECK_ERR(bypass_arena_get_root(a, 0, (void **)&hello), 0);
	CHECK(bypass_arena_contains(a, hello, 32));
	if (strcmp(hello, "hello from the creator"))
		TEST_FAIL("root 0 holds \"%.32s\"", hello);
	CHECK_ERR(bypass_arena_get_root(a, 1, (void **)&hello), -ENOENT);

	char *reply;
	CHECK_ERR(bypass_arena_alloc(a, 64, 0, (void **)&reply), 0);
	snprintf(reply, 64, "hello from pid %d", (int)getpid());
	CHECK_ERR(bypass_arena_set_root(a, 1, reply), 0);
	CHECK_EQ(write(sock, "k", 1), 1);
	CHECK_ERR(bypass_arena_close(a), 0);
	return 0;
}
