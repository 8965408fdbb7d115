/* SPDX-License-Identifier: MIT */
/*
 * race-conserve: several ringers and several consumers on one doorbell, in
 * each wait mode.  Three threads ring; three threads consume through their
 * own handles (one waits FOREVER, one waits with short timeouts, one polls
 * the armed eventfd and calls try).  Proves conservation: the rings consumed
 * add up to exactly the rings made (each ring returned once, none lost, no
 * phantom), and that destroy then ends every consumer with -EINVAL.
 *
 * TEST_LABELS: threads
 */
#include <bypass/notify.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"
#include "core/testutil.h"

#define NRINGERS 3
#define NCONSUMERS 3

static _Atomic long consumed;
static long per_ringer;

struct consumer {
	bypass_doorbell *h;
	int kind; /* 0 FOREVER, 1 timeouts, 2 eventfd */
	long got;
};

/*
 * A ringer rings per_ringer times, or stops after MIN_RINGS once BUDGET_NS
 * have passed (a loaded 2-CPU machine must not make the test take minutes;
 * tests stay well under 10 s); the rings it made are counted.
 */
#define MIN_RINGS 5000
#define BUDGET_NS 300000000ull

struct ringer_arg {
	bypass_doorbell *h;
	long made;
};

static void *ringer(void *p)
{
	struct ringer_arg *r = p;
	uint64_t t0 = test_now_ns();
	long i;
	for (i = 0; i < per_ringer; i++) {
		if (i >= MIN_RINGS && (i & 255) == 0 && test_now_ns() - t0 > BUDGET_NS)
			break;
		CHECK_ERR(bypass_notify_ring(r->h), 0);
		if ((i & 255) == 0)
			sched_yield();
	}
	r->made = i;
	return NULL;
}

static void *consumer(void *p)
{
	struct consumer *c = p;
	int fd = c->kind == 2 ? bypass_notify_fd(c->h) : -1;
	for (;;) {
		int n;
		if (c->kind == 0) {
			n = bypass_notify_wait(c->h, BYPASS_FOREVER);
		} else if (c->kind == 1) {
			n = bypass_notify_wait(c->h, 20000);
			if (n == -ETIMEDOUT)
				continue;
		} else {
			n = bypass_notify_try(c->h);
			if (n == -EAGAIN) {
				n = bypass_notify_arm(c->h);
				if (n == 0 || n == 1) {
					struct pollfd pf = { .fd = fd, .events = POLLIN };
					int e;
					do
						e = poll(&pf, 1, -1);
					while (e < 0 && errno == EINTR);
					CHECK_EQ(e, 1);
					continue;
				}
			}
		}
		if (n == -EINVAL)
			break;
		if (n <= 0)
			TEST_FAIL("consumer %d: %d", c->kind, n);
		c->got += n;
		atomic_fetch_add(&consumed, n);
	}
	return NULL;
}

static void one_mode(bypass_arena *a, int mode)
{
	struct bypass_notify_opts o = { .mode = mode, .spin_ns = 5000 };
	bypass_doorbell *main_h;
	CHECK_ERR(bypass_notify_create_in(a, &o, &main_h), 0);
	void *addr = bypass_notify_addr(main_h);
	atomic_store(&consumed, 0);

	struct consumer c[NCONSUMERS];
	pthread_t ct[NCONSUMERS], rt[NRINGERS];
	bypass_doorbell *rh[NRINGERS];
	struct ringer_arg ra[NRINGERS];
	for (int i = 0; i < NCONSUMERS; i++) {
		c[i] = (struct consumer){ .kind = i };
		CHECK_ERR(bypass_notify_open(a, addr, &c[i].h), 0);
		CHECK_ERR(bypass_notify_set_mode(c[i].h, mode, 5000), 0);
		CHECK_EQ(pthread_create(&ct[i], NULL, consumer, &c[i]), 0);
	}
	for (int i = 0; i < NRINGERS; i++) {
		/* Ringers share main_h, or use their own handles. */
		if (i == 0)
			rh[i] = main_h;
		else
			CHECK_ERR(bypass_notify_open(a, addr, &rh[i]), 0);
		ra[i] = (struct ringer_arg){ .h = rh[i] };
		CHECK_EQ(pthread_create(&rt[i], NULL, ringer, &ra[i]), 0);
	}
	long made = 0;
	for (int i = 0; i < NRINGERS; i++) {
		CHECK_EQ(pthread_join(rt[i], NULL), 0);
		made += ra[i].made;
	}
	while (atomic_load(&consumed) < made)
		test_sleep_ms(1);
	test_sleep_ms(5);
	CHECK_ERR(bypass_notify_destroy(main_h), 0);
	long total = 0;
	for (int i = 0; i < NCONSUMERS; i++) {
		CHECK_EQ(pthread_join(ct[i], NULL), 0);
		total += c[i].got;
		CHECK_ERR(bypass_notify_close(c[i].h), 0);
	}
	for (int i = 1; i < NRINGERS; i++)
		CHECK_ERR(bypass_notify_close(rh[i]), 0);
	TEST_LOG("mode %d: made %ld, consumed %ld (%ld/%ld/%ld)", mode, made, total,
		 c[0].got, c[1].got, c[2].got);
	CHECK_EQ(total, made);
}

int main(void)
{
	test_timeout(280);
	per_ringer = TEST_TSAN ? 10000 : 200000;
	bypass_arena *a;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	for (int round = 0; round < 2; round++)
		for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++)
			one_mode(a, m);
	CHECK_ERR(bypass_arena_close(a), 0);
	return test_pass("notify/race-conserve");
}
