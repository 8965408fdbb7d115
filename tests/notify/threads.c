/* SPDX-License-Identifier: MIT */
/*
 * threads: ring and wait across threads of one process, in each wait mode.
 * Proves that a waiter already asleep on the futex (seen in the doorbell's
 * sleeper count) is woken by a ring from another thread, that a waiter with a
 * timeout gets the ring rather than -ETIMEDOUT, and that with several
 * waiters each ring is returned to exactly one of them.
 *
 * TEST_LABELS: threads
 */
#include <bypass/notify.h>
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"
#include "notify/notify_internal.h"
#include "core/testutil.h"

struct waiter {
	bypass_doorbell *db;
	int64_t timeout;
	_Atomic int result;
	_Atomic int *returned;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;
	int r = bypass_notify_wait(w->db, w->timeout);
	atomic_store(&w->result, r);
	if (w->returned)
		atomic_fetch_add(w->returned, 1);
	return NULL;
}

/* Until n threads sleep on the doorbell's futex. */
static void wait_sleepers(bypass_doorbell *db, unsigned n)
{
	struct db_shared *sh = bypass_notify_addr(db);
	while (atomic_load(&sh->ww.sleepers) < n)
		test_sleep_ms(1);
}

static void one_mode(int mode)
{
	struct bypass_notify_opts o = { .mode = mode, .spin_ns = 2000 };
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(&o, &db), 0);

	/* A FOREVER waiter, asleep (or spinning) before the ring. */
	struct waiter w = { .db = db, .timeout = BYPASS_FOREVER, .result = 0 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, wait_thread, &w), 0);
	if (mode != BYPASS_WAIT_SPIN)
		wait_sleepers(db, 1);
	else
		test_sleep_ms(20);
	CHECK_EQ(atomic_load(&w.result), 0);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(atomic_load(&w.result), 1);

	/* A waiter with a (long) timeout gets the ring, not -ETIMEDOUT. */
	w.timeout = 30000000000ll;
	atomic_store(&w.result, 0);
	CHECK_EQ(pthread_create(&t, NULL, wait_thread, &w), 0);
	test_sleep_ms(10);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(atomic_load(&w.result), 1);

	/* Several waiters: each ring goes to exactly one of them. */
	enum { NW = 3 };
	struct waiter ws[NW];
	pthread_t ts[NW];
	_Atomic int returned = 0;
	for (int i = 0; i < NW; i++) {
		ws[i] = (struct waiter){ .db = db, .timeout = BYPASS_FOREVER,
					 .returned = &returned };
		CHECK_EQ(pthread_create(&ts[i], NULL, wait_thread, &ws[i]), 0);
	}
	if (mode != BYPASS_WAIT_SPIN)
		wait_sleepers(db, NW);
	for (int i = 0; i < NW; i++) {
		CHECK_ERR(bypass_notify_ring(db), 0);
		while (atomic_load(&returned) < i + 1)
			test_sleep_ms(1);
		/* Nobody else returns for that one ring. */
		test_sleep_ms(5);
		CHECK_EQ(atomic_load(&returned), i + 1);
	}
	for (int i = 0; i < NW; i++) {
		CHECK_EQ(pthread_join(ts[i], NULL), 0);
		CHECK_EQ(atomic_load(&ws[i].result), 1);
	}
	CHECK_ERR(bypass_notify_try(db), -EAGAIN);
	CHECK_ERR(bypass_notify_close(db), 0);
}

int main(void)
{
	test_timeout(120);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %d", m);
		one_mode(m);
	}
	return test_pass("notify/threads");
}
