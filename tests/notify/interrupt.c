/* SPDX-License-Identifier: MIT */
/*
 * interrupt: interrupt mode inside one process.  Proves:
 *  - a thread busy in a compute loop (no system calls) has its callback run,
 *    on that thread, with the right doorbell and argument, and the counts
 *    passed to it add up to exactly the rings made (coalescing loses none);
 *  - rings made before set_handler are delivered once it registers;
 *  - while a handler is registered, wait and try return -EBUSY, and another
 *    live thread gets -EBUSY from set_handler (to register or unregister);
 *  - set_handler(NULL) unregisters: rings are then left for wait;
 *  - closing the receiver's handle from another thread frees the doorbell
 *    for the other handles;
 *  - a receiver thread that exited can be replaced by another thread;
 *  - at most 64 doorbells per process have handlers (-EAGAIN beyond);
 *  - signals are still recognised after 2^24 re-registrations;
 *  - bypass_notify_set_signal chooses the signal (real-time ones only,
 *    before the handler is installed; -EBUSY after it, with another one),
 *    and the environment does not (BYPASS_NOTIFY_SIGNAL is not read).
 *
 * TEST_LABELS: threads
 */
#include <bypass/notify.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "harness.h"
#include "core/testutil.h"

struct ctx {
	bypass_doorbell *db;
	_Atomic long sum;
	_Atomic long calls;
	_Atomic int bad;
	_Atomic int tid;
	_Atomic int registered;
	_Atomic int stop;
	int unregister;     /* set_handler(NULL) before the thread ends */
	int reg_result;
};

static void cb(bypass_doorbell *db, unsigned count, void *arg)
{
	struct ctx *c = arg;
	if (db != c->db || count == 0 ||
	    (int)syscall(SYS_gettid) != atomic_load(&c->tid))
		atomic_store(&c->bad, 1);
	atomic_fetch_add(&c->sum, (long)count);
	atomic_fetch_add(&c->calls, 1);
}

static volatile uint64_t sink;

static void *receiver(void *p)
{
	struct ctx *c = p;
	atomic_store(&c->tid, (int)syscall(SYS_gettid));
	c->reg_result = bypass_notify_set_handler(c->db, cb, c);
	atomic_store(&c->registered, 1);
	/* Busy: pure computation, no system calls. */
	uint64_t x = 1;
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed))
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
	if (c->unregister)
		CHECK_ERR(bypass_notify_set_handler(c->db, NULL, NULL), 0);
	return NULL;
}

static void start(struct ctx *c, pthread_t *t, bypass_doorbell *db, int unregister)
{
	memset(c, 0, sizeof(*c));
	c->db = db;
	c->unregister = unregister;
	CHECK_EQ(pthread_create(t, NULL, receiver, c), 0);
	while (!atomic_load(&c->registered))
		test_sleep_ms(1);
	CHECK_ERR(c->reg_result, 0);
}

static void wait_sum(struct ctx *c, long want)
{
	while (atomic_load(&c->sum) < want)
		test_sleep_ms(1);
	test_sleep_ms(10);
	CHECK_EQ(atomic_load(&c->sum), want);
	CHECK_EQ(atomic_load(&c->bad), 0);
}

static void stop(struct ctx *c, pthread_t t)
{
	atomic_store(&c->stop, 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	/*
	 * pthread_join returns when the thread's tid word is cleared, a little
	 * before the kernel has released the thread: until then tgkill(tid, 0)
	 * still finds it, and the library rightly treats it as alive.  Wait for
	 * the kernel (no time limit here: the test's own timeout bounds it).
	 */
	int tid = atomic_load(&c->tid);
	while (tid && (syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH))
		sched_yield();
}

static void busy_receiver(void)
{
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	struct ctx c;
	pthread_t t;
	start(&c, &t, db, 1);

	/* The receiver owns the rings. */
	CHECK_ERR(bypass_notify_wait(db, 0), -EBUSY);
	CHECK_ERR(bypass_notify_wait(db, BYPASS_FOREVER), -EBUSY);
	CHECK_ERR(bypass_notify_wait(db, 1000000), -EBUSY);
	CHECK_ERR(bypass_notify_try(db), -EBUSY);
	/* Another live thread may not take it over, nor unregister it. */
	CHECK_ERR(bypass_notify_set_handler(db, cb, &c), -EBUSY);
	CHECK_ERR(bypass_notify_set_handler(db, NULL, NULL), -EBUSY);

	const long N = TEST_TSAN ? 2000 : 20000;
	for (long i = 0; i < N; i++) {
		CHECK_ERR(bypass_notify_ring(db), 0);
		if ((i & 15) == 0)
			sched_yield();
	}
	wait_sum(&c, N);
	long calls = atomic_load(&c.calls);
	CHECK(calls >= 1 && calls <= N);
	TEST_LOG("%ld rings -> %ld callbacks", N, calls);

	/* A second burst, after a pause. */
	for (int i = 0; i < 5; i++)
		CHECK_ERR(bypass_notify_ring(db), 0);
	wait_sum(&c, N + 5);

	stop(&c, t);
	/* Unregistered: rings stay for wait and try. */
	CHECK_ERR(bypass_notify_wait(db, 0), -ETIMEDOUT);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_wait(db, BYPASS_FOREVER), 2);
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_try(db), 1);
	test_sleep_ms(5);
	CHECK_EQ(atomic_load(&c.sum), N + 5);
	/* Unregistering again, or when never registered, is harmless. */
	CHECK_ERR(bypass_notify_set_handler(db, NULL, NULL), 0);

	/* Rings made before registering are delivered at registration. */
	for (int i = 0; i < 3; i++)
		CHECK_ERR(bypass_notify_ring(db), 0);
	start(&c, &t, db, 1);
	wait_sum(&c, 3);
	stop(&c, t);
	CHECK_ERR(bypass_notify_try(db), -EAGAIN);
	CHECK_ERR(bypass_notify_close(db), 0);
}

static void dead_receiver(void)
{
	bypass_arena *a;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	bypass_doorbell *h1, *h2;
	CHECK_ERR(bypass_notify_create_in(a, NULL, &h1), 0);
	CHECK_ERR(bypass_notify_open(a, bypass_notify_addr(h1), &h2), 0);

	/*
	 * The receiver registers through h1; this thread closes h1 (no ring
	 * in flight) while the receiver still runs: that releases the
	 * registration, and h2 works as a plain doorbell again.
	 */
	struct ctx c;
	pthread_t t;
	start(&c, &t, h1, 0);
	CHECK_ERR(bypass_notify_wait(h2, 0), -EBUSY);
	CHECK_ERR(bypass_notify_ring(h2), 0);
	wait_sum(&c, 1);
	CHECK_ERR(bypass_notify_close(h1), 0);
	CHECK_ERR(bypass_notify_wait(h2, 0), -ETIMEDOUT);
	CHECK_ERR(bypass_notify_ring(h2), 0);
	CHECK_EQ(bypass_notify_wait(h2, BYPASS_FOREVER), 1);
	stop(&c, t);
	CHECK_EQ(atomic_load(&c.sum), 1);

	/* A receiver that ended without unregistering can be replaced. */
	start(&c, &t, h2, 0);
	stop(&c, t);
	struct ctx me;
	memset(&me, 0, sizeof(me));
	me.db = h2;
	atomic_store(&me.tid, (int)syscall(SYS_gettid));
	CHECK_ERR(bypass_notify_set_handler(h2, cb, &me), 0);
	/* A ring from the receiver thread itself interrupts it at once. */
	CHECK_ERR(bypass_notify_ring(h2), 0);
	wait_sum(&me, 1);
	CHECK_ERR(bypass_notify_set_handler(h2, NULL, NULL), 0);
	CHECK_ERR(bypass_notify_ring(h2), 0);
	CHECK_EQ(bypass_notify_try(h2), 1);
	CHECK_EQ(atomic_load(&c.sum), 0);
	CHECK_ERR(bypass_notify_close(h2), 0);
	CHECK_ERR(bypass_arena_close(a), 0);
}

static void too_many(void)
{
	enum { N = 65 };
	bypass_doorbell *db[N];
	struct ctx c;
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < N; i++)
		CHECK_ERR(bypass_notify_create(NULL, &db[i]), 0);
	for (int i = 0; i < 64; i++)
		CHECK_ERR(bypass_notify_set_handler(db[i], cb, &c), 0);
	CHECK_ERR(bypass_notify_set_handler(db[64], cb, &c), -EAGAIN);
	/* Re-registering one that has a handler takes no new slot. */
	CHECK_ERR(bypass_notify_set_handler(db[3], cb, &c), 0);
	/* Unregistering frees a slot; closing too. */
	CHECK_ERR(bypass_notify_set_handler(db[0], NULL, NULL), 0);
	CHECK_ERR(bypass_notify_set_handler(db[64], cb, &c), 0);
	CHECK_ERR(bypass_notify_set_handler(db[0], cb, &c), -EAGAIN);
	CHECK_ERR(bypass_notify_close(db[1]), 0);
	CHECK_ERR(bypass_notify_set_handler(db[0], cb, &c), 0);
	for (int i = 0; i < N; i++)
		if (i != 1)
			CHECK_ERR(bypass_notify_close(db[i]), 0);
	CHECK_EQ(atomic_load(&c.sum), 0);
}

/*
 * Re-registering bumps a generation that in-flight signals carry (24 bits
 * of it): after 2^24 re-registrations, signals are still recognised.
 */
static void generation_wrap(void)
{
#if defined(__SANITIZE_ADDRESS__) || TEST_TSAN
	TEST_LOG("generation wrap: skipped under sanitizers (too slow)");
#else
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	struct ctx me;
	memset(&me, 0, sizeof(me));
	me.db = db;
	atomic_store(&me.tid, (int)syscall(SYS_gettid));
	for (long i = 0; i < (1l << 24) + 2; i++)
		if (bypass_notify_set_handler(db, cb, &me))
			TEST_FAIL("set_handler failed at %ld", i);
	CHECK_ERR(bypass_notify_ring(db), 0);
	wait_sum(&me, 1);
	CHECK_ERR(bypass_notify_ring(db), 0);
	wait_sum(&me, 2);
	CHECK_ERR(bypass_notify_close(db), 0);
#endif
}

/* bypass_notify_set_signal picks the signal (a real-time one), before the
 * handler is installed; the environment does not. */
static void signal_choice(int set, int want)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char v[16];
		snprintf(v, sizeof(v), "%d", SIGRTMIN + 7);
		setenv("BYPASS_NOTIFY_SIGNAL", v, 1); /* not read */
		if (set)
			CHECK_ERR(bypass_notify_set_signal(set), 0);
		CHECK_ERR(bypass_notify_set_signal(5), -EINVAL); /* SIGTRAP */
		CHECK_ERR(bypass_notify_set_signal(SIGRTMAX + 1), -EINVAL);
		CHECK_ERR(bypass_notify_set_signal(0), -EINVAL);
		CHECK_EQ(bypass_notify_signal(), want);
		bypass_doorbell *db;
		CHECK_ERR(bypass_notify_create(NULL, &db), 0);
		struct ctx me;
		memset(&me, 0, sizeof(me));
		me.db = db;
		atomic_store(&me.tid, (int)syscall(SYS_gettid));
		CHECK_ERR(bypass_notify_set_handler(db, cb, &me), 0);
		struct sigaction sa;
		CHECK_EQ(sigaction(want, NULL, &sa), 0);
		CHECK(sa.sa_flags & SA_SIGINFO);
		/* Installed: the same signal is fine, another is refused. */
		CHECK_ERR(bypass_notify_set_signal(want), 0);
		CHECK_ERR(bypass_notify_set_signal(want == SIGRTMIN + 5 ? SIGRTMIN + 6
									: SIGRTMIN + 5), -EBUSY);
		CHECK_EQ(bypass_notify_signal(), want);
		CHECK_ERR(bypass_notify_ring(db), 0);
		wait_sum(&me, 1);
		CHECK_ERR(bypass_notify_close(db), 0);
		_exit(0);
	}
	wait_child(pid);
}

int main(void)
{
	test_timeout(120);
	signal_choice(SIGRTMIN + 6, SIGRTMIN + 6);
	signal_choice(0, SIGRTMIN + 4); /* the default */
	CHECK_EQ(bypass_notify_signal(), SIGRTMIN + 4);
	busy_receiver();
	dead_receiver();
	too_many();
	generation_wrap();
	return test_pass("notify/interrupt");
}
