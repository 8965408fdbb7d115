/* SPDX-License-Identifier: MIT */
/*
 * Heat enabled, disabled, reset and read over and over on a live pager
 * while 4 threads fault through checksummed pages at 8x the budget (upcall
 * and adaptive engines): no page is lost or corrupted, every call answers,
 * and the sampler counts the faults.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>

#define NTHREADS 4
#define PER 64ul   /* pages per thread */
#define BUDGET 32ul

static char *base;
static _Atomic bool stop;
static _Atomic uint64_t rounds[NTHREADS];

static void *worker(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	char *m = base + t * PER * PAGE;
	uint64_t seed = t + 1, v = 0;
	for (uint64_t i = 0; i < PER; i++)
		fill_page(m + i * PAGE, t * PER + i, 0);
	while (!atomic_load(&stop)) {
		v++;
		for (uint64_t i = 0; i < PER; i++) {
			uint64_t k = xorshift(&seed) % PER;
			/* every page holds version v - 1 or v: check, then bump */
			if (!page_ok(m + k * PAGE, t * PER + k, v - 1) &&
			    !page_ok(m + k * PAGE, t * PER + k, v))
				TEST_FAIL("thread %lu page %lu corrupted", (unsigned long)t,
					  (unsigned long)k);
			if (i % 4 == 0)
				fill_page(m + k * PAGE, t * PER + k, v);
		}
		/* bring every page to version v */
		for (uint64_t k = 0; k < PER; k++)
			if (!page_ok(m + k * PAGE, t * PER + k, v))
				fill_page(m + k * PAGE, t * PER + k, v);
		atomic_fetch_add(&rounds[t], 1);
	}
	return NULL;
}

static void run(int mode)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(),
		.swap_size = 2 * NTHREADS * PER * PAGE, .mode = mode,
		.flags = BYPASS_PAGER_SWAP_TEMP,
	};
	bypass_pager *p;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	CHECK_EQ(bypass_pager_map(p, NTHREADS * PER * PAGE, 0, (void **)&base), 0);
	atomic_store(&stop, false);
	pthread_t th[NTHREADS];
	for (uintptr_t t = 0; t < NTHREADS; t++) {
		atomic_store(&rounds[t], 0);
		CHECK_EQ(pthread_create(&th[t], NULL, worker, (void *)t), 0);
	}
	uint64_t faults = 0;
	for (int i = 0; i < 40; i++) {
		struct bypass_pager_heat_config hc = {
			.sources = i % 3 == 0 ? 0 : BYPASS_PAGER_HEAT_FAULTS,
			.interval_ms = 10 + (unsigned)(i % 4) * 5,
		};
		CHECK_EQ(bypass_pager_heat_enable(p, &hc), 0);
		struct bypass_pager_heat_stats st;
		CHECK_EQ(bypass_pager_heat_stats(p, &st), 0);
		uint64_t want = st.samples + 2;
		while (st.samples < want) {
			struct bypass_pager_heat_range r[8];
			int n = bypass_pager_heat_ranges(p, i & 1, r, 8);
			CHECK(n >= 0 && n <= 8);
			for (int k = 0; k < n; k++)
				CHECK((char *)r[k].addr >= base &&
				      (char *)r[k].addr + r[k].length <= base + NTHREADS * PER * PAGE);
			usleep(2000);
			CHECK_EQ(bypass_pager_heat_stats(p, &st), 0);
		}
		faults += st.fault_accessed;
		if (i % 5 == 4)
			CHECK_EQ(bypass_pager_heat_reset(p), 0);
		CHECK_EQ(bypass_pager_heat_disable(p), 0);
	}
	/* the workers made progress with heat on and off */
	uint64_t before[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		before[t] = atomic_load(&rounds[t]);
	for (int t = 0; t < NTHREADS; t++)
		while (atomic_load(&rounds[t]) < before[t] + 2)
			usleep(1000);
	atomic_store(&stop, true);
	for (int t = 0; t < NTHREADS; t++)
		CHECK_EQ(pthread_join(th[t], NULL), 0);
	TEST_LOG("%s: %llu page-intervals with faults seen over 40 enables",
		 mode == BYPASS_PAGER_UPCALL ? "upcall" : "adaptive", (unsigned long long)faults);
	CHECK(faults > 0);
	/* destroy with heat enabled */
	struct bypass_pager_heat_config hc = { .interval_ms = 10 };
	CHECK_EQ(bypass_pager_heat_enable(p, &hc), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(240);
	unsetenv("BYPASS_PAGER_HEAT");
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_ADAPTIVE);
	tmpdir_cleanup();
	return test_pass("pager/heat-threads");
}
