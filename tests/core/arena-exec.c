/* SPDX-License-Identifier: MIT */
/*
 * arena-exec: an arena shared with a separate program (fork + exec of
 * helper-attach), its descriptor passed with bypass_send_fds.  Proves the
 * helper maps it at the creator's address, sees data written here (found
 * through root 0), and that what it allocates and writes (published at
 * root 1) is visible here at the same pointer, and the shared bump
 * allocator hands this process no block that overlaps the helper's.
 */
#include <bypass/core.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>

#include "harness.h"
#include "core/testutil.h"

int main(int argc, char **argv)
{
	(void)argc;
	test_timeout(60);
	char helper[4096];
	test_helper_path(helper, sizeof(helper), argv[0], "core", "helper-attach");
	if (access(helper, X_OK))
		TEST_FAIL("helper %s not found", helper);

	for (int round = 0; round < 2; round++) {
		bypass_arena *a;
		struct bypass_arena_opts o = { .size = (size_t)(round + 1) << 20,
					       .name = "arena-exec" };
		CHECK_ERR(bypass_arena_create(&o, &a), 0);
		char *hello;
		CHECK_ERR(bypass_arena_alloc(a, 32, 0, (void **)&hello), 0);
		strcpy(hello, "hello from the creator");
		CHECK_ERR(bypass_arena_set_root(a, 0, hello), 0);

		int sv[2];
		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			char s[16];
			fcntl(sv[1], F_SETFD, 0);
			snprintf(s, sizeof(s), "%d", sv[1]);
			execl(helper, helper, s, (char *)NULL);
			TEST_FAIL("exec %s: %s", helper, strerror(errno));
		}
		close(sv[1]);
		int fd = bypass_arena_fd(a);
		uint64_t info[2] = { (uintptr_t)bypass_arena_base(a), bypass_arena_size(a) };
		CHECK_EQ(bypass_send_fds(sv[0], &fd, 1, info, sizeof(info)), (int)sizeof(info));
		char c;
		CHECK_EQ(read(sv[0], &c, 1), 1);
		wait_child(pid);
		close(sv[0]);

		char *reply;
		CHECK_ERR(bypass_arena_get_root(a, 1, (void **)&reply), 0);
		CHECK(bypass_arena_contains(a, reply, 64));
		char want[64];
		snprintf(want, sizeof(want), "hello from pid %d", (int)pid);
		if (strcmp(reply, want))
			TEST_FAIL("root 1 holds \"%.64s\", want \"%s\"", reply, want);
		/* The helper's block is taken: ours comes after it. */
		char *mine;
		CHECK_ERR(bypass_arena_alloc(a, 64, 0, (void **)&mine), 0);
		CHECK(mine >= reply + 64);
		CHECK_ERR(bypass_arena_close(a), 0);
	}
	return test_pass("core/arena-exec");
}
