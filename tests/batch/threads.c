/* SPDX-License-Identifier: MIT */
/*
 * threads: the engine under several threads, without the preload (so that
 * ThreadSanitizer can watch it): each thread runs segments of the preload's
 * path (bp_bt_segment_begin, bp_bt_tx_data, bp_bt_segment_end) and of the explicit
 * API on its own sockets, and all of them also write tagged records to one
 * shared socket whose small buffer a slow reader drains: its queued and
 * in-flight work moves between threads (cancelled, requeued, adopted).
 * Every record arrives whole, and each writer's records in order.  A write
 * the engine passes back (BT_PASS: no room for it now, what was queued on
 * the descriptor already sent) is written by the writer itself, as the
 * preload's wrappers do.
 * TEST_LABELS: threads
 */
#include <bypass/batch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "batch/util.h"
#include "batch/defer.h"

#define THREADS 4
#define REC 48
#define PER_SEG 3

static int shared[2];
static int rounds = 300;
static atomic_uint passed; /* records the engine passed back to the writer */

struct rec {
	uint32_t magic, writer, seq, sum;
	unsigned char pad[REC - 16];
};

static void make_rec(struct rec *r, uint32_t w, uint32_t s)
{
	memset(r, 0, sizeof(*r));
	r->magic = 0x52454321;
	r->writer = w;
	r->seq = s;
	for (size_t i = 0; i < sizeof(r->pad); i++)
		r->pad[i] = (unsigned char)(w * 31 + s * 7 + i);
	r->sum = w ^ s ^ 0x5a5a5a5a;
}

static void *writer(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg;
	int own[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, own))
		return (void *)1;
	for (int r = 0; r < rounds; r++) {
		struct rec rc;
		/* The preload's path: a segment with writes to two sockets. */
		bp_bt_segment_begin();
		for (int k = 0; k < PER_SEG; k++) {
			make_rec(&rc, w, (uint32_t)(r * PER_SEG + k));
			struct iovec v = { &rc, sizeof(rc) };
			long n = bp_bt_tx_data(shared[0], &v, 1, 0, NULL);
			if (n == BT_PASS) {
				/* No room (the shared socket's bytes queued and
				 * in flight, another thread's among them): what
				 * is queued on it went first, and the caller
				 * writes now, as the preload's wrapper does. */
				atomic_fetch_add(&passed, 1);
				n = (long)write_full(shared[0], &rc, sizeof(rc));
			}
			if (n != (long)sizeof(rc))
				return (void *)2;
		}
		char b = (char)r;
		struct iovec v2 = { &b, 1 };
		long n3 = bp_bt_tx_data(own[0], &v2, 1, 0, NULL);
		if (n3 == BT_PASS) { /* the same: no room (this thread's bytes) */
			atomic_fetch_add(&passed, 1);
			n3 = (long)write_full(own[0], &b, 1);
		}
		if (n3 != 1)
			return (void *)3;
		bp_bt_segment_end();
		char got;
		if (read(own[1], &got, 1) != 1 || got != b)
			return (void *)4;
		/* The explicit API now and then, on the thread's own socket. */
		if (r % 10 == 0) {
			ssize_t res = 0;
			if (bypass_batch_start() || bypass_batch_send(own[0], "xy", 2, 0, &res) ||
			    bypass_batch_flush() != 1 || res != 2)
				return (void *)5;
			char two[2];
			if (read_full(own[1], two, 2) != 2)
				return (void *)6;
		}
	}
	/* Leave nothing queued behind. */
	bp_bt_segment_begin();
	bp_bt_segment_end();
	close(own[0]);
	close(own[1]);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	uint32_t next[THREADS] = { 0 };
	size_t total = (size_t)THREADS * (size_t)rounds * PER_SEG;
	for (size_t n = 0; n < total; n++) {
		struct rec r;
		if (read_full(shared[1], &r, sizeof(r)) != sizeof(r))
			return (void *)10;
		if (r.magic != 0x52454321 || r.writer >= THREADS || r.sum != (r.writer ^ r.seq ^ 0x5a5a5a5a))
			return (void *)11;
		if (r.seq != next[r.writer])
			return (void *)12;
		struct rec want;
		make_rec(&want, r.writer, r.seq);
		if (memcmp(&want, &r, sizeof(r)))
			return (void *)13;
		next[r.writer]++;
		if (n % 32 == 0)
			test_sleep_ms(1); /* slow: the writers' data waits */
	}
	return NULL;
}

int main(void)
{
	test_timeout(240);
	if (TEST_TSAN)
		rounds = 60;
	int r = bypass_batch_start();
	if (r == -ENOSYS || r == -EPERM)
		SKIP("io_uring unavailable: %s", strerror(-r));
	CHECK_ERR(r, 0);
	CHECK_EQ(bypass_batch_flush(), 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, shared) == 0);
	int small = 2048;
	CHECK(setsockopt(shared[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
	pthread_t t[THREADS], rd;
	CHECK(pthread_create(&rd, NULL, reader, NULL) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, writer, (void *)(uintptr_t)i) == 0);
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		if (ret)
			TEST_FAIL("writer %d failed at step %ld", i, (long)(uintptr_t)ret);
	}
	void *ret;
	pthread_join(rd, &ret);
	if (ret)
		TEST_FAIL("reader failed at step %ld", (long)(uintptr_t)ret);
	struct bypass_batch_stats st;
	CHECK_ERR(bypass_batch_stats(&st), 0);
	TEST_LOG("deferred %llu, enters %llu, partial %llu, segments %llu, passed back %u",
		 (unsigned long long)st.deferred, (unsigned long long)st.enters,
		 (unsigned long long)st.partial, (unsigned long long)st.segments,
		 atomic_load(&passed));
	/* the writes to each thread's own socket are deferred every round */
	CHECK(st.deferred >= (uint64_t)THREADS * (uint64_t)rounds);
	close(shared[0]);
	close(shared[1]);
	return test_pass("batch/threads");
}
