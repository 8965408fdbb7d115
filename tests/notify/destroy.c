/* SPDX-License-Identifier: MIT */
/*
 * destroy: bypass_notify_destroy ends the doorbell for every handle.
 * Proves, for another handle of this process (bypass_notify_open on an
 * arena doorbell) and for a forked process: waiters asleep in other threads
 * (in each mode) and a thread blocked in poll on the armed eventfd wake up
 * and get -EINVAL; afterwards ring, try, wait, arm, fd, set_handler,
 * peer_alive and send all return -EINVAL, open refuses the address, and
 * close still releases the handle.  A consumer racing with destroy never
 * gets a ring that nobody made (destroy's wake-up is not a ring).
 *
 * TEST_LABELS: threads
 */
#include <bypass/notify.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "harness.h"
#include "notify/notify_internal.h"
#include "core/testutil.h"

static void cb(bypass_doorbell *db, unsigned n, void *arg)
{
	(void)db, (void)n, (void)arg;
}

static void all_einval(bypass_doorbell *h)
{
	CHECK_ERR(bypass_notify_ring(h), -EINVAL);
	CHECK_ERR(bypass_notify_try(h), -EINVAL);
	CHECK_ERR(bypass_notify_wait(h, 0), -EINVAL);
	CHECK_ERR(bypass_notify_wait(h, 1000000), -EINVAL);
	CHECK_ERR(bypass_notify_wait(h, BYPASS_FOREVER), -EINVAL);
	CHECK_ERR(bypass_notify_arm(h), -EINVAL);
	CHECK_ERR(bypass_notify_fd(h), -EINVAL);
	CHECK_ERR(bypass_notify_set_handler(h, cb, NULL), -EINVAL);
	CHECK_ERR(bypass_notify_peer_alive(h), -EINVAL);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_ERR(bypass_notify_send(sv[0], h), -EINVAL);
	close(sv[0]);
	close(sv[1]);
}

static void wait_sleepers(bypass_doorbell *db, unsigned n)
{
	struct db_shared *sh = bypass_notify_addr(db);
	while (atomic_load(&sh->ww.sleepers) < n)
		test_sleep_ms(1);
}

/* A forked child sleeps on the doorbell; the parent destroys it. */
static void cross_process(void)
{
	bypass_doorbell *db;
	struct bypass_notify_opts o = { .mode = BYPASS_WAIT_SLEEP };
	CHECK_ERR(bypass_notify_create(&o, &db), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK_ERR(bypass_notify_wait(db, BYPASS_FOREVER), -EINVAL);
		all_einval(db);
		CHECK_ERR(bypass_notify_close(db), 0);
		_exit(0);
	}
	wait_sleepers(db, 1);
	CHECK_ERR(bypass_notify_destroy(db), 0);
	wait_child(pid);
}

struct waiter {
	bypass_doorbell *h;
	int64_t timeout;
	_Atomic int result;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;
	atomic_store(&w->result, bypass_notify_wait(w->h, w->timeout));
	return NULL;
}

static void *poll_thread(void *p)
{
	struct waiter *w = p;
	int fd = bypass_notify_fd(w->h);
	CHECK(fd >= 0);
	CHECK_EQ(bypass_notify_arm(w->h), 0);
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	int r;
	do
		r = poll(&pf, 1, -1); /* a hang is caught by the alarm */
	while (r < 0 && errno == EINTR);
	CHECK_EQ(r, 1);
	atomic_store(&w->result, bypass_notify_try(w->h));
	return NULL;
}

/* Sleeping waiters in other threads, on other handles, in each mode. */
static void other_threads(bypass_arena *a, int mode)
{
	struct bypass_notify_opts o = { .mode = mode };
	bypass_doorbell *h1, *h2, *h3;
	CHECK_ERR(bypass_notify_create_in(a, &o, &h1), 0);
	void *addr = bypass_notify_addr(h1);
	CHECK_ERR(bypass_notify_open(a, addr, &h2), 0);
	CHECK_ERR(bypass_notify_open(a, addr, &h3), 0);
	CHECK_ERR(bypass_notify_set_mode(h2, mode, 0), 0);

	struct waiter w[3] = {
		{ .h = h2, .timeout = BYPASS_FOREVER },
		{ .h = h2, .timeout = 60000000000ll },
		{ .h = h3 },
	};
	pthread_t t[3];
	CHECK_EQ(pthread_create(&t[0], NULL, wait_thread, &w[0]), 0);
	CHECK_EQ(pthread_create(&t[1], NULL, wait_thread, &w[1]), 0);
	CHECK_EQ(pthread_create(&t[2], NULL, poll_thread, &w[2]), 0);
	if (mode != BYPASS_WAIT_SPIN)
		wait_sleepers(h1, 2);
	struct db_shared *sh = addr;
	while (!atomic_load(&sh->efd_armed))
		test_sleep_ms(1);
	test_sleep_ms(10);
	CHECK_ERR(bypass_notify_destroy(h1), 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(pthread_join(t[i], NULL), 0);
		CHECK_ERR(atomic_load(&w[i].result), -EINVAL);
	}
	all_einval(h2);
	all_einval(h3);
	bypass_doorbell *h4;
	CHECK_ERR(bypass_notify_open(a, addr, &h4), -EINVAL);
	CHECK_ERR(bypass_notify_close(h2), 0);
	CHECK_ERR(bypass_notify_destroy(h3), 0); /* already ended: releases */
}

/* A consumer racing with destroy gets -EAGAIN/-ETIMEDOUT, then -EINVAL. */
struct racer {
	bypass_doorbell *h;
	int use_wait;
	_Atomic int started;
};

static void *race_thread(void *p)
{
	struct racer *r = p;
	atomic_store(&r->started, 1);
	for (unsigned i = 1;; i++) {
		if ((i & 63) == 0) /* let the destroyer run on a busy machine */
			sched_yield();
		int n = r->use_wait ? bypass_notify_wait(r->h, 1000000)
				    : bypass_notify_try(r->h);
		if (n == -EINVAL)
			break;
		if (n != (r->use_wait ? -ETIMEDOUT : -EAGAIN))
			TEST_FAIL("consumer racing with destroy got %d", n);
	}
	return NULL;
}

static void destroy_race(bypass_arena *a, int use_wait, int iters)
{
	struct bypass_notify_opts o = { .mode = BYPASS_WAIT_SPIN };
	for (int i = 0; i < iters; i++) {
		bypass_doorbell *h1, *h2;
		CHECK_ERR(bypass_notify_create_in(a, &o, &h1), 0);
		CHECK_ERR(bypass_notify_open(a, bypass_notify_addr(h1), &h2), 0);
		/* try spins; wait mostly sleeps (the destroyer needs a CPU) */
		CHECK_ERR(bypass_notify_set_mode(h2, use_wait ? BYPASS_WAIT_ADAPTIVE
						   : BYPASS_WAIT_SPIN, 2000), 0);
		struct racer r = { .h = h2, .use_wait = use_wait };
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, race_thread, &r), 0);
		while (!atomic_load(&r.started))
			sched_yield();
		for (int k = 0; k < (i & 127); k++)
			__builtin_ia32_pause();
		CHECK_ERR(bypass_notify_destroy(h1), 0);
		CHECK_EQ(pthread_join(t, NULL), 0);
		CHECK_ERR(bypass_notify_close(h2), 0);
	}
}

int main(void)
{
	test_timeout(120);
	cross_process(); /* before any thread */

	bypass_arena *a;
	struct bypass_arena_opts ao = { .size = 8 << 20 };
	CHECK_ERR(bypass_arena_create(&ao, &a), 0);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %d", m);
		other_threads(a, m);
	}
	int iters = TEST_TSAN ? 200 : 2000;
	destroy_race(a, 0, iters);
	destroy_race(a, 1, iters);
	CHECK_ERR(bypass_arena_close(a), 0);

	/* A doorbell of its own (not in an arena): destroy, then it is gone
	 * for a handle received over a socket too. */
	bypass_doorbell *db, *copy;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_ERR(bypass_notify_send(sv[0], db), 0);
	CHECK_ERR(bypass_notify_recv(sv[1], &copy), 0);
	CHECK_ERR(bypass_notify_ring(copy), 0);
	CHECK_EQ(bypass_notify_try(db), 1);
	CHECK_ERR(bypass_notify_send(sv[0], db), 0);
	CHECK_ERR(bypass_notify_destroy(db), 0);
	all_einval(copy);
	/* A doorbell sent before it was destroyed arrives dead. */
	bypass_doorbell *late;
	CHECK_ERR(bypass_notify_recv(sv[1], &late), -EINVAL);
	CHECK_ERR(bypass_notify_close(copy), 0);
	close(sv[0]);
	close(sv[1]);
	return test_pass("notify/destroy");
}
