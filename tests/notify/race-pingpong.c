/* SPDX-License-Identifier: MIT */
/*
 * race-pingpong: waker/waiter races.  Two threads bounce a token over two
 * doorbells many thousands of times, in each wait mode and with each way of
 * waiting (FOREVER; short timeouts retried, so rings race with timeouts
 * expiring; try polling; the eventfd with arm + poll + try).  Every wait
 * must return exactly 1: a lost wake-up hangs (caught by the alarm), a
 * duplicated or phantom ring breaks the count.
 *
 * TEST_LABELS: threads
 */
#include <bypass/notify.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"
#include "core/testutil.h"

enum how { FOREVER, TIMEOUTS, TRY, POLL, NHOW };
static const char *how_name[] = { "forever", "timeouts", "try", "poll" };

/*
 * Each configuration runs up to n round trips, but stops after MIN_ROUNDS
 * once BUDGET_NS have passed: on a loaded 2-CPU machine a spinning side can
 * wait a scheduler slice per hand-over (2.4 ms a round trip was seen for
 * spin mode with timeouts at load 15), and tests must stay well under 10 s.
 * The ringing side decides: it lowers the shared limit before it rings the
 * round that becomes the last, so the answering side, which reads the
 * limit after that ring, stops at the same round.
 */
#define MIN_ROUNDS 300
#define BUDGET_NS 250000000ull

struct side {
	bypass_doorbell *in, *out;
	enum how how;
	int first; /* rings before waiting */
	_Atomic long *limit;
	uint64_t t0;
	long done;
	long timeouts;
};

static int recv_one(struct side *s)
{
	int r;
	switch (s->how) {
	case FOREVER:
		return bypass_notify_wait(s->in, BYPASS_FOREVER);
	case TIMEOUTS:
		/* 10 us .. 100 us: short enough to expire often. */
		while ((r = bypass_notify_wait(s->in, 10000 + (s->timeouts % 10) * 10000)) ==
		       -ETIMEDOUT)
			s->timeouts++;
		return r;
	case TRY:
		for (unsigned i = 1; (r = bypass_notify_try(s->in)) == -EAGAIN; i++)
			if ((i & 255) == 0)
				sched_yield();
		return r;
	case POLL: {
		int fd = bypass_notify_fd(s->in);
		CHECK(fd >= 0);
		while ((r = bypass_notify_try(s->in)) == -EAGAIN) {
			int a = bypass_notify_arm(s->in);
			CHECK(a == 0 || a == 1);
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int e;
			do
				e = poll(&p, 1, -1);
			while (e < 0 && errno == EINTR);
			CHECK_EQ(e, 1);
		}
		return r;
	}
	default:
		abort();
	}
}

static void *side_thread(void *p)
{
	struct side *s = p;
	long i;
	for (i = 0; i < atomic_load(s->limit); i++) {
		if (s->first && i >= MIN_ROUNDS && (i & 63) == 0 &&
		    test_now_ns() - s->t0 > BUDGET_NS)
			atomic_store(s->limit, i + 1);
		if (s->first) {
			/* With timeouts: ring after a varying delay, so that
			 * rings land before, during and after expiries. */
			if (s->how == TIMEOUTS)
				for (long k = (i * 7919) % 2048; k > 0; k--)
					__builtin_ia32_pause();
			CHECK_ERR(bypass_notify_ring(s->out), 0);
		}
		int r = recv_one(s);
		if (r != 1)
			TEST_FAIL("round %ld (%s): got %d, want 1", i, how_name[s->how], r);
		if (!s->first)
			CHECK_ERR(bypass_notify_ring(s->out), 0);
	}
	s->done = i;
	return NULL;
}

static void pingpong(int mode_a, int mode_b, enum how how, long n)
{
	bypass_doorbell *a, *b;
	struct bypass_notify_opts oa = { .mode = mode_a, .spin_ns = 5000 };
	struct bypass_notify_opts ob = { .mode = mode_b, .spin_ns = 5000 };
	CHECK_ERR(bypass_notify_create(&oa, &a), 0);
	CHECK_ERR(bypass_notify_create(&ob, &b), 0);
	_Atomic long limit = n;
	uint64_t t0 = test_now_ns();
	struct side p = { .in = b, .out = a, .how = how, .first = 1, .limit = &limit, .t0 = t0 };
	struct side q = { .in = a, .out = b, .how = how, .first = 0, .limit = &limit, .t0 = t0 };
	pthread_t tp, tq;
	CHECK_EQ(pthread_create(&tq, NULL, side_thread, &q), 0);
	CHECK_EQ(pthread_create(&tp, NULL, side_thread, &p), 0);
	CHECK_EQ(pthread_join(tp, NULL), 0);
	CHECK_EQ(pthread_join(tq, NULL), 0);
	CHECK_EQ(p.done, q.done);
	CHECK(p.done >= (n < MIN_ROUNDS ? n : MIN_ROUNDS));
	TEST_LOG("modes %d/%d %-8s %6ld round trips, %.0f ns each, %ld timeouts",
		 mode_a, mode_b, how_name[how], p.done,
		 (double)(test_now_ns() - t0) / (double)p.done, p.timeouts + q.timeouts);
	CHECK_ERR(bypass_notify_try(a), -EAGAIN);
	CHECK_ERR(bypass_notify_try(b), -EAGAIN);
	CHECK_ERR(bypass_notify_close(a), 0);
	CHECK_ERR(bypass_notify_close(b), 0);
}

int main(void)
{
	test_timeout(280);
	long n = TEST_TSAN ? 2000 : 20000;
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++)
		for (int how = FOREVER; how < NHOW; how++)
			pingpong(m, m, how, how == POLL ? n / 4 : n);
	/* Mixed: a sleeping receiver answers a spinning one. */
	pingpong(BYPASS_WAIT_SLEEP, BYPASS_WAIT_SPIN, FOREVER, n);
	pingpong(BYPASS_WAIT_SPIN, BYPASS_WAIT_ADAPTIVE, TIMEOUTS, n);
	return test_pass("notify/race-pingpong");
}
