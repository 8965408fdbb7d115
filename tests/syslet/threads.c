/* SPDX-License-Identifier: MIT */
/*
 * Several threads submit and reap on one context at once (both engines),
 * with programs that finish inline, programs that go to workers, and io_uring
 * chains; every completion is reaped exactly once.  Also: a signal sent to
 * the process while programs block on workers is handled by a program
 * thread, never by a worker.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <signal.h>

enum { THREADS = 4 };
static int iters;
static bypass_syslet *S;
static _Atomic uint64_t seen_sum, seen_count;
static int64_t counter;
static char path[256];

static void *submitter(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	char buf[64];
	atom_t inl[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&counter), C(1) } } };
	atom_t wrk[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .flags = BYPASS_SYSLET_ASYNC,
			    .arg = { P(&counter), C(1) } } };
	atom_t orc[3] = {
		{ .nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
		  .arg = { C(AT_FDCWD), P(path), C(O_RDONLY), C(0) } },
		{ .nr = SYS_read, .arg = { R(0), P(buf), C(sizeof(buf)) } },
		{ .nr = SYS_close, .arg = { R(0) } },
	};
	for (int i = 0; i < iters; i++) {
		prog_t p[3] = { prog_of(inl, 1, 0), prog_of(wrk, 1, 0), prog_of(orc, 3, 0) };
		for (int k = 0; k < 3; k++)
			p[k].tag = (id << 32) | (uint64_t)(i * 3 + k + 1);
		int r;
		while ((r = bypass_syslet_submit(S, p, 3)) == -EBUSY) {
			comp_t c[8];
			int n = bypass_syslet_reap(S, c, 8);
			for (int j = 0; j < n; j++) {
				atomic_fetch_add(&seen_sum, c[j].tag);
				atomic_fetch_add(&seen_count, 1);
			}
		}
		CHECK_EQ(r, 3);
		comp_t c[8];
		int n = bypass_syslet_reap(S, c, 8);
		CHECK(n >= 0);
		for (int j = 0; j < n; j++) {
			CHECK(c[j].result >= 0);
			atomic_fetch_add(&seen_sum, c[j].tag);
			atomic_fetch_add(&seen_count, 1);
		}
	}
	return NULL;
}

static _Atomic pid_t handler_tid;
static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&handler_tid, (pid_t)syscall(SYS_gettid));
}

static void signals(bypass_syslet *s)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	char buf[4];
	atom_t a[1] = { { .nr = SYS_read, .arg = { C(pfd[0]), P(buf), C(1) } } };
	prog_t p = prog_of(a, 1, 99);
	/* four workers blocked in read */
	for (int i = 0; i < 4; i++)
		CHECK_EQ(bypass_syslet_run(s, &p, NULL), 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 20; i++) {
		atomic_store(&handler_tid, 0);
		kill(getpid(), SIGUSR1);
		while (!atomic_load(&handler_tid))
			;
		CHECK_EQ(atomic_load(&handler_tid), (pid_t)syscall(SYS_gettid));
	}
	CHECK_EQ(write(pfd[1], "abcd", 4), 4);
	for (int got = 0; got < 4;) {
		comp_t c[4];
		CHECK(bypass_syslet_wait(s, 1, 5000000000ll) >= 1);
		got += bypass_syslet_reap(s, c, 4);
	}
	close(pfd[0]);
	close(pfd[1]);
}

int main(void)
{
	test_timeout(60);
	unsetenv("BYPASS_SYSLET_ENGINE");
	iters = TEST_TSAN ? 100 : 1000;
	char dir[64];
	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	write_file(path, "data", 4);
	uint32_t engines[2] = { BYPASS_SYSLET_ENGINE_WORKERS, BYPASS_SYSLET_ENGINE_URING };
	for (int e = 0; e < 2; e++) {
		S = ctx_for(engines[e], 64);
		if (!S)
			continue;
		atomic_store(&seen_sum, 0);
		atomic_store(&seen_count, 0);
		counter = 0;
		pthread_t t[THREADS];
		for (int i = 0; i < THREADS; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, submitter, (void *)(uintptr_t)(i + 1)), 0);
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		/* what the threads left in the ring */
		uint64_t want_count = (uint64_t)THREADS * (uint64_t)iters * 3, want_sum = 0;
		for (uint64_t id = 1; id <= THREADS; id++)
			for (uint64_t k = 1; k <= (uint64_t)iters * 3; k++)
				want_sum += (id << 32) | k;
		while (atomic_load(&seen_count) < want_count) {
			comp_t c[64];
			int r = bypass_syslet_wait(S, 1, 5000000000ll);
			if (r < 0)
				TEST_FAIL("wait: %d with %llu of %llu seen", r,
					  (unsigned long long)atomic_load(&seen_count),
					  (unsigned long long)want_count);
			r = bypass_syslet_reap(S, c, 64);
			for (int j = 0; j < r; j++) {
				atomic_fetch_add(&seen_sum, c[j].tag);
				atomic_fetch_add(&seen_count, 1);
			}
		}
		CHECK_EQ(atomic_load(&seen_count), want_count);
		CHECK_EQ(atomic_load(&seen_sum), want_sum);
		CHECK_EQ(__atomic_load_n(&counter, __ATOMIC_SEQ_CST), (int64_t)THREADS * iters * 2);
		signals(S);
		CHECK_EQ(bypass_syslet_destroy(S), 0);
		TEST_LOG("%s engine: %d threads x %d x 3 programs", engine_name(engines[e]),
			 THREADS, iters);
	}
	unlink(path);
	rmdir(dir);
	return test_pass("syslet/threads");
}
