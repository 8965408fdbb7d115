/* SPDX-License-Identifier: MIT */
/*
 * exec-arena: doorbells placed in a shared arena (bypass_notify_create_in)
 * and published at root slots, used by an exec'd helper that attaches the
 * arena (bypass_arena_open) and opens them (bypass_notify_open), in each
 * wait mode.  Proves ring/wait across the two programs with exact counts,
 * and that destroying a doorbell here wakes the helper's sleeping waiter
 * with -EINVAL and makes its other calls fail with -EINVAL.  Also: such a
 * doorbell passed with bypass_notify_send and forwarded again by its
 * receiver is still the same doorbell.
 */
#include <bypass/notify.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "harness.h"
#include "notify/notify_internal.h"
#include "core/testutil.h"

#define ROUNDS 2000

static char helper[4096];

static void one_mode(int mode)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	bypass_arena *a;
	struct bypass_arena_opts ao = { .size = 1 << 20, .name = "exec-arena" };
	CHECK_ERR(bypass_arena_create(&ao, &a), 0);
	struct bypass_notify_opts o = { .mode = mode };
	bypass_doorbell *ping, *pong;
	CHECK_ERR(bypass_notify_create_in(a, &o, &ping), 0);
	CHECK_ERR(bypass_notify_create_in(a, &o, &pong), 0);
	CHECK(bypass_arena_contains(a, bypass_notify_addr(ping), 64));
	CHECK_ERR(bypass_arena_set_root(a, 0, bypass_notify_addr(ping)), 0);
	CHECK_ERR(bypass_arena_set_root(a, 1, bypass_notify_addr(pong)), 0);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char s[16], m[16], r[16];
		fcntl(sv[1], F_SETFD, 0);
		snprintf(s, sizeof(s), "%d", sv[1]);
		snprintf(m, sizeof(m), "%d", mode);
		snprintf(r, sizeof(r), "%d", ROUNDS);
		execl(helper, helper, s, m, r, (char *)NULL);
		TEST_FAIL("exec %s: %s", helper, strerror(errno));
	}
	close(sv[1]);
	int afd = bypass_arena_fd(a);
	uint64_t base = (uintptr_t)bypass_arena_base(a);
	CHECK_EQ(bypass_send_fds(sv[0], &afd, 1, &base, sizeof(base)), (int)sizeof(base));

	for (int i = 0; i < ROUNDS; i++) {
		CHECK_ERR(bypass_notify_ring(ping), 0);
		CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 1);
	}
	/* The helper now waits on ping; once it sleeps, destroy ping. */
	struct db_shared *sh = bypass_notify_addr(ping);
	if (mode != BYPASS_WAIT_SPIN)
		while (atomic_load(&sh->ww.sleepers) < 1)
			test_sleep_ms(1);
	else
		test_sleep_ms(20);
	CHECK_ERR(bypass_notify_destroy(ping), 0);
	CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 1);
	wait_child(pid);

	close(sv[0]);
	CHECK_ERR(bypass_notify_close(pong), 0);
	CHECK_ERR(bypass_arena_close(a), 0);
}

/*
 * An arena doorbell passed with bypass_notify_send (which sends the whole
 * arena's descriptor and the doorbell's offset in it), and forwarded again
 * by the process that received it, is still the same doorbell.
 */
static void forwarded(void)
{
	bypass_arena *a;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	bypass_doorbell *orig, *first, *second;
	void *pad;
	CHECK_ERR(bypass_arena_alloc(a, 5000, 0, &pad), 0); /* not in page 1 */
	CHECK_ERR(bypass_notify_create_in(a, NULL, &orig), 0);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_ERR(bypass_notify_send(sv[0], orig), 0);
	CHECK_ERR(bypass_notify_recv(sv[1], &first), 0);
	CHECK_ERR(bypass_notify_send(sv[1], first), 0);
	CHECK_ERR(bypass_notify_recv(sv[0], &second), 0);
	CHECK_ERR(bypass_notify_ring(second), 0);
	CHECK_EQ(bypass_notify_try(orig), 1);
	CHECK_ERR(bypass_notify_ring(orig), 0);
	CHECK_ERR(bypass_notify_ring(first), 0);
	CHECK_EQ(bypass_notify_wait(second, BYPASS_FOREVER), 2);
	CHECK_ERR(bypass_notify_close(second), 0);
	CHECK_ERR(bypass_notify_close(first), 0);
	CHECK_ERR(bypass_notify_close(orig), 0);
	close(sv[0]);
	close(sv[1]);
	CHECK_ERR(bypass_arena_close(a), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	test_timeout(120);
	forwarded();
	test_helper_path(helper, sizeof(helper), argv[0], "notify", "helper-arena");
	if (access(helper, X_OK))
		TEST_FAIL("helper %s not found", helper);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %d", m);
		one_mode(m);
	}
	return test_pass("notify/exec-arena");
}
