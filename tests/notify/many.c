/* SPDX-License-Identifier: MIT */
/*
 * many: hundreds of doorbells at once (half with their own shared page,
 * half in one arena; wait modes mixed), rung by two threads in opposite
 * orders and consumed by four threads that each own a quarter of them.
 * Proves doorbells are independent (no ring lands on the wrong one, none is
 * lost: every doorbell yields exactly its rings) and that closing them all
 * gives back every descriptor.
 *
 * TEST_LABELS: threads
 */
#include <bypass/notify.h>
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"
#include "core/testutil.h"

#define NDB 320
#define NCONS 4
#define NRING 2

static bypass_doorbell *db[NDB];
static long got[NDB];
static int rounds; /* rings per doorbell per ringer */

static void *ringer(void *p)
{
	int id = (int)(intptr_t)p;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < NDB; i++) {
			int k = id ? NDB - 1 - i : i;
			CHECK_ERR(bypass_notify_ring(db[k]), 0);
		}
		/* Let the consumers catch up and fall asleep now and then. */
		if (r % 4 == 0)
			test_sleep_ms(1);
	}
	return NULL;
}

static void *consumer(void *p)
{
	int id = (int)(intptr_t)p;
	long want = (long)rounds * NRING;
	for (int left = 1; left;) {
		left = 0;
		for (int i = id; i < NDB; i += NCONS) {
			if (got[i] == want)
				continue;
			int n = bypass_notify_wait(db[i], BYPASS_FOREVER);
			if (n <= 0)
				TEST_FAIL("doorbell %d: wait returned %d", i, n);
			got[i] += n;
			if (got[i] > want)
				TEST_FAIL("doorbell %d: %ld rings, only %ld made", i, got[i], want);
			left |= got[i] < want;
		}
	}
	return NULL;
}

int main(void)
{
	test_timeout(240);
	rounds = TEST_TSAN ? 20 : 200;
	int fds_before = test_count_fds();
	bypass_arena *a;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	for (int i = 0; i < NDB; i++) {
		/* Mostly sleeping and adaptive waiters; a few spinning ones. */
		struct bypass_notify_opts o = {
			.mode = i % 16 == 0 ? BYPASS_WAIT_SPIN : i % 2 ? BYPASS_WAIT_SLEEP
							       : BYPASS_WAIT_ADAPTIVE,
			.spin_ns = 2000,
		};
		if (i & 2)
			CHECK_ERR(bypass_notify_create_in(a, &o, &db[i]), 0);
		else
			CHECK_ERR(bypass_notify_create(&o, &db[i]), 0);
	}
	pthread_t rt[NRING], ct[NCONS];
	for (int i = 0; i < NCONS; i++)
		CHECK_EQ(pthread_create(&ct[i], NULL, consumer, (void *)(intptr_t)i), 0);
	for (int i = 0; i < NRING; i++)
		CHECK_EQ(pthread_create(&rt[i], NULL, ringer, (void *)(intptr_t)i), 0);
	for (int i = 0; i < NRING; i++)
		CHECK_EQ(pthread_join(rt[i], NULL), 0);
	for (int i = 0; i < NCONS; i++)
		CHECK_EQ(pthread_join(ct[i], NULL), 0);
	for (int i = 0; i < NDB; i++) {
		CHECK_EQ(got[i], (long)rounds * NRING);
		CHECK_ERR(bypass_notify_try(db[i]), -EAGAIN);
		CHECK_ERR(bypass_notify_close(db[i]), 0);
	}
	CHECK_ERR(bypass_arena_close(a), 0);
	CHECK_EQ(test_count_fds(), fds_before);
	return test_pass("notify/many");
}
