/* SPDX-License-Identifier: MIT */
/*
 * Every engine, and switching between them while threads fault: several
 * threads write and check checksummed pages of a region 16 times the
 * budget, under upcalls, a pool of handler threads (forced), the adaptive
 * engine, the adaptive engine made to switch every interval
 * (bp_engine_force: flip), and handler mode with several threads (where
 * permitted).  Meanwhile the main thread pins a buffer, has the kernel
 * write into it with read() from a pipe, and unpins it: a pin must never
 * see EFAULT from a switch.
 * TEST_LABELS: threads
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_engine_force */

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define NTHREADS 4
#define NPAGES 256u
#define BUDGET 16u

struct worker {
	char *m;
	int tid;
	_Atomic int *stop;
	uint64_t ops;
	uint32_t version[NPAGES / NTHREADS];
	char err[200];
};

/* Thread tid owns pages tid, tid + NTHREADS, ...: it rewrites a random one
 * of them with a new version after checking the old. */
static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(w->tid + 1);
	const uint32_t mine = NPAGES / NTHREADS;
	for (uint32_t k = 0; k < mine; k++) {
		uint64_t page = (uint64_t)k * NTHREADS + (uint64_t)w->tid;
		fill_page(w->m + page * PAGE, page, 0);
	}
	while (!atomic_load(w->stop) || w->ops < 200) {
		uint32_t k = (uint32_t)(xorshift(&seed) % mine);
		uint64_t page = (uint64_t)k * NTHREADS + (uint64_t)w->tid;
		char *pg = w->m + page * PAGE;
		if (!page_ok(pg, page, w->version[k])) {
			snprintf(w->err, sizeof(w->err), "page %lu lost version %u",
				 (unsigned long)page, w->version[k]);
			return NULL;
		}
		if (xorshift(&seed) & 1)
			fill_page(pg, page, ++w->version[k]);
		w->ops++;
		if (w->ops > 400000)
			break;
	}
	for (uint32_t k = 0; k < mine; k++) {
		uint64_t page = (uint64_t)k * NTHREADS + (uint64_t)w->tid;
		if (!page_ok(w->m + page * PAGE, page, w->version[k])) {
			snprintf(w->err, sizeof(w->err), "at the end: page %lu lost version %u",
				 (unsigned long)page, w->version[k]);
			return NULL;
		}
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run(const char *name, int mode, const char *force, unsigned threads)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(), .swap_size = (NPAGES + 8) * PAGE,
		.mode = mode, .flags = BYPASS_PAGER_SWAP_TEMP, .threads = threads,
	};
	bypass_pager *p = NULL;
	int r = bypass_pager_create(&c, &p);
	if (r == -EPERM && mode == BYPASS_PAGER_HANDLER) {
		printf("%s: skipped (userfaultfd for kernel faults not permitted)\n", name);
		return;
	}
	if (r)
		TEST_FAIL("%s: bypass_pager_create: %s", name, strerror(-r));
	if (force && mode == BYPASS_PAGER_ADAPTIVE)
		CHECK_EQ(bp_engine_force(p, !strcmp(force, "pool") ? BP_ENGINE_POOL
					 : !strcmp(force, "flip") ? BP_ENGINE_FLIP
								  : BP_ENGINE_UPCALL), 0);
	char *m, *buf;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	CHECK_EQ(bypass_pager_map(p, 2 * PAGE, 0, (void **)&buf), 0);
	_Atomic int stop = 0;
	static struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i] = (struct worker){ .m = m, .tid = i, .stop = &stop };
		CHECK_EQ(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	/* pins while the threads fault (and, with flip, while it switches) */
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	double t0 = now_s();
	unsigned pins = 0;
	bool flip = force && !strcmp(force, "flip");
	while (now_s() - t0 < 0.2 || (flip && stats_of(p).engine_switches < 6 &&
				       now_s() - t0 < 5)) {
		CHECK_EQ(bypass_pager_pin(p, buf, 2 * PAGE, BYPASS_PAGER_PIN_WRITE), 0);
		char msg[64];
		int len = snprintf(msg, sizeof(msg), "pinned %u", pins);
		CHECK_EQ(write(pfd[1], msg, (size_t)len), len);
		ssize_t got = read(pfd[0], buf + PAGE - 5, (size_t)len); /* across pages */
		if (got != len)
			TEST_FAIL("%s: read() into a pinned buffer: %zd (%s)", name, got,
				  got < 0 ? strerror(errno) : "short");
		CHECK(!memcmp(buf + PAGE - 5, msg, (size_t)len));
		CHECK_EQ(bypass_pager_unpin(p, buf, 2 * PAGE), 0);
		pins++;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	atomic_store(&stop, 1);
	uint64_t ops = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		if (w[i].err[0])
			TEST_FAIL("%s: thread %d: %s", name, i, w[i].err);
		ops += w[i].ops;
	}
	close(pfd[0]);
	close(pfd[1]);
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.resident_peak <= BUDGET);
	CHECK(st.faults_swapin > 0 && st.evictions > 0);
	if (flip)
		CHECK(st.engine_switches >= 2);
	if (force && !strcmp(force, "pool"))
		CHECK_EQ(st.engine_pool, 1);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	printf("%s: %lu checked accesses by %d threads, %u pins, %lu faults (%lu swap-ins), "
	       "%lu engine switches\n", name, (unsigned long)ops, NTHREADS, pins,
	       (unsigned long)st.lat_count, (unsigned long)st.faults_swapin,
	       (unsigned long)st.engine_switches);
}

/* engines [upcall|pool|adaptive|flip|handler]: all, or one of them */
int main(int argc, char **argv)
{
	test_timeout(120);
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *only = argc > 1 ? argv[1] : NULL;
#define ONE(n) (!only || !strcmp(only, n))
	if (ONE("upcall"))
		run("upcall", BYPASS_PAGER_UPCALL, "upcall", 0);
	if (ONE("pool"))
		run("pool (forced)", BYPASS_PAGER_ADAPTIVE, "pool", 2);
	if (ONE("adaptive"))
		run("adaptive", BYPASS_PAGER_ADAPTIVE, NULL, 0);
	if (ONE("flip"))
		run("adaptive, switching every interval", BYPASS_PAGER_ADAPTIVE, "flip", 2);
	if (ONE("handler"))
		run("handler, 2 threads", BYPASS_PAGER_HANDLER, NULL, 2);
	tmpdir_cleanup();
	return test_pass("pager/engines");
}
