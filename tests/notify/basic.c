/* SPDX-License-Identifier: MIT */
/*
 * basic: one thread, one doorbell, in each wait mode.  Proves that rings are
 * counted and consumed once (try returns the count, then -EAGAIN; wait
 * returns every pending ring at once), and the timeout contract: 0 does not
 * wait, a positive timeout returns -ETIMEDOUT after (not before) it and not
 * much later, BYPASS_FOREVER returns at once when rings are pending, and any
 * other negative timeout is -EINVAL.  Also: the default backend is "futex",
 * a thread-only doorbell's peer is "alive", set_mode switches modes.
 */
#include <bypass/notify.h>
#include <stdint.h>

#include "harness.h"
#include "core/testutil.h"

static const char *mode_name[] = { "adaptive", "sleep", "spin" };

static void check_timed_out(bypass_doorbell *db, int64_t ns)
{
	uint64_t t0 = test_now_ns();
	CHECK_ERR(bypass_notify_wait(db, ns), -ETIMEDOUT);
	uint64_t dt = test_now_ns() - t0;
	/* Not before the timeout (1 ms of slack for clock granularity)... */
	if (dt + 1000000 < (uint64_t)ns)
		TEST_FAIL("wait(%lld ns) returned after only %llu ns", (long long)ns,
			  (unsigned long long)dt);
	/* ...and not a hang: generous, a loaded machine may be slow. */
	if (dt > (uint64_t)ns + 5000000000ull)
		TEST_FAIL("wait(%lld ns) took %llu ns", (long long)ns,
			  (unsigned long long)dt);
}

static void one_mode(int mode)
{
	struct bypass_notify_opts o = { .mode = mode, .spin_ns = 5000 };
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(&o, &db), 0);
	CHECK(db != NULL);
	CHECK(bypass_notify_addr(db) != NULL);
	CHECK(!strcmp(bypass_notify_backend(db), "futex"));
	CHECK_EQ(bypass_notify_peer_alive(db), 1);

	/* Nothing pending. */
	CHECK_ERR(bypass_notify_try(db), -EAGAIN);
	CHECK_ERR(bypass_notify_wait(db, 0), -ETIMEDOUT);

	/* One ring, consumed once. */
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_try(db), 1);
	CHECK_ERR(bypass_notify_try(db), -EAGAIN);

	/* Rings accumulate; try and wait return them all at once. */
	for (int i = 0; i < 5; i++)
		CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_try(db), 5);
	CHECK_ERR(bypass_notify_try(db), -EAGAIN);
	for (int i = 0; i < 7; i++)
		CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_wait(db, 0), 7);
	CHECK_ERR(bypass_notify_wait(db, 0), -ETIMEDOUT);
	for (int i = 0; i < 1000; i++)
		CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_wait(db, BYPASS_FOREVER), 1000);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_wait(db, 1000000), 1);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_wait(db, INT64_MAX), 1);

	/* Timeouts with nothing pending. */
	check_timed_out(db, 1);
	check_timed_out(db, 1000000);     /* 1 ms */
	check_timed_out(db, 50000000);    /* 50 ms */

	/* Bad negative timeouts, with and without rings pending. */
	CHECK_ERR(bypass_notify_wait(db, -2), -EINVAL);
	CHECK_ERR(bypass_notify_wait(db, INT64_MIN), -EINVAL);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_ERR(bypass_notify_wait(db, -2), -EINVAL);
	CHECK_ERR(bypass_notify_wait(db, -1000000000), -EINVAL);
	CHECK_EQ(bypass_notify_try(db), 1); /* the ring was not consumed */

	CHECK_ERR(bypass_notify_close(db), 0);
}

int main(void)
{
	test_timeout(60);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %s", mode_name[m]);
		one_mode(m);
	}

	/* Default options, and switching the mode of a live handle. */
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		CHECK_ERR(bypass_notify_set_mode(db, m, m == BYPASS_WAIT_ADAPTIVE ? 1000 : 0), 0);
		check_timed_out(db, 20000000);
		CHECK_ERR(bypass_notify_ring(db), 0);
		CHECK_ERR(bypass_notify_ring(db), 0);
		CHECK_EQ(bypass_notify_wait(db, 20000000), 2);
	}
	CHECK_ERR(bypass_notify_set_mode(db, 3, 0), -EINVAL);
	CHECK_ERR(bypass_notify_set_mode(db, -1, 0), -EINVAL);
	CHECK_ERR(bypass_notify_destroy(db), 0);

	/* "auto" and "futex" name the same backend. */
	struct bypass_notify_opts o = { .backend = "auto" };
	CHECK_ERR(bypass_notify_create(&o, &db), 0);
	CHECK(!strcmp(bypass_notify_backend(db), "futex"));
	CHECK_ERR(bypass_notify_close(db), 0);
	o.backend = "futex";
	CHECK_ERR(bypass_notify_create(&o, &db), 0);
	CHECK(!strcmp(bypass_notify_backend(db), "futex"));
	CHECK_ERR(bypass_notify_close(db), 0);
	return test_pass("notify/basic");
}
