/* SPDX-License-Identifier: MIT */
/*
 * Per-thread io_uring rings: one per user and thread, created lazily, not
 * shared between threads, rebuilt in a forked child (whose use leaves the
 * parent's ring intact), bad arguments rejected.
 * TEST_LABELS: threads
 */
#include "harness.h"
#include "core/internal.h"

#include <liburing.h>
#include <pthread.h>

static int nop_roundtrip(struct io_uring *r, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, tag);
	int n = io_uring_submit_and_wait(r, 1);
	if (n < 0)
		return n;
	struct io_uring_cqe *cqe;
	int e = io_uring_peek_cqe(r, &cqe);
	if (e)
		return e;
	uint64_t got = io_uring_cqe_get_data64(cqe);
	io_uring_cqe_seen(r, cqe);
	return got == tag ? 0 : -EIO;
}

/*
 * All threads hold their rings at once: a ring torn down at thread exit is
 * unmapped by liburing with a raw system call that ThreadSanitizer does not
 * see, so a later ring at the same address would look like a race to it.
 */
static pthread_barrier_t all_up, all_done;

static void *thread_fn(void *arg)
{
	struct io_uring *mine, **main_ring = arg;
	void *ret = NULL;
	if (bp_thread_ring_peek(BP_RING_BATCH) != NULL)
		ret = (void *)1;
	else if (bp_thread_ring(BP_RING_BATCH, NULL, &mine) || mine == *main_ring)
		ret = (void *)2;
	pthread_barrier_wait(&all_up);
	for (int i = 0; i < 100 && !ret; i++)
		if (nop_roundtrip(mine, (uint64_t)i + 7))
			ret = (void *)3;
	pthread_barrier_wait(&all_done);
	return ret;
}

int main(void)
{
	test_timeout(60);
	struct io_uring *a, *b, *a2;
	CHECK(bp_thread_ring_peek(BP_RING_BATCH) == NULL);
	int r = bp_thread_ring(BP_RING_BATCH, NULL, &a);
	if (r == -ENOSYS || r == -EPERM)
		SKIP("io_uring unavailable: %s", strerror(-r));
	CHECK_EQ(r, 0);
	CHECK(bp_thread_ring(BP_RING_PAGER, NULL, &b) == 0);
	CHECK(a != b);
	CHECK(bp_thread_ring(BP_RING_BATCH, NULL, &a2) == 0);
	CHECK(a == a2);
	CHECK(bp_thread_ring_peek(BP_RING_BATCH) == a);
	CHECK_EQ(nop_roundtrip(a, 1), 0);

	/* An entry queued on one user's ring is not submitted by another's. */
	struct io_uring_sqe *sqe = io_uring_get_sqe(a);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, 99);
	CHECK_EQ(nop_roundtrip(b, 2), 0);
	CHECK_EQ(io_uring_sq_ready(a), 1);
	CHECK(io_uring_submit_and_wait(a, 1) == 1);
	struct io_uring_cqe *cqe;
	CHECK(io_uring_peek_cqe(a, &cqe) == 0);
	CHECK_EQ(io_uring_cqe_get_data64(cqe), 99);
	io_uring_cqe_seen(a, cqe);

	pthread_t t[3];
	pthread_barrier_init(&all_up, NULL, 3);
	pthread_barrier_init(&all_done, NULL, 3);
	for (int i = 0; i < 3; i++)
		CHECK(pthread_create(&t[i], NULL, thread_fn, &a) == 0);
	for (int i = 0; i < 3; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		CHECK(ret == NULL);
	}

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bp_pid();
		struct io_uring *c;
		CHECK(bp_thread_ring(BP_RING_BATCH, NULL, &c) == 0);
		for (int i = 0; i < 100; i++)
			CHECK_EQ(nop_roundtrip(c, 1000 + (uint64_t)i), 0);
		_exit(0);
	}
	wait_child(pid);
	CHECK_EQ(nop_roundtrip(a, 3), 0);

	bp_thread_ring_close(BP_RING_BATCH);
	CHECK(bp_thread_ring_peek(BP_RING_BATCH) == NULL);
	CHECK_ERR(bp_thread_ring(BP_RING_USERS, NULL, &a), -EINVAL);
	CHECK_ERR(bp_thread_ring(BP_RING_BATCH, NULL, NULL), -EINVAL);
	return test_pass("core/thread-ring");
}
