/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier under threads (issue 35), both fault modes: four
 * threads rewrite their own pages, version after version, while the
 * budget makes every round evict into the pool and the pool write its
 * oldest pages to the file, so that pages are written while being
 * compressed or dropped; every page ends at its last version.
 * TEST_LABELS: threads
 */
#include "tier-util.h"

#include <pthread.h>

#define BUDGET (48 * PAGE)
#define NPAGES 384ul
#define NTHR 4
#define ROUNDS 6

static char *m;

static void *worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;
	for (uint64_t v = 1; v <= ROUNDS; v++) {
		for (uint64_t i = t; i < NPAGES; i += NTHR) {
			if (!tier_ok(m + i * PAGE, i, v - 1) && !(v == 1))
				TEST_FAIL("page %lu not version %lu", (unsigned long)i,
					  (unsigned long)(v - 1));
			tier_fill(m + i * PAGE, i, v);
		}
	}
	return NULL;
}

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 25);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	pthread_t th[NTHR];
	for (uintptr_t t = 0; t < NTHR; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, worker, (void *)t), 0);
	for (int t = 0; t < NTHR; t++)
		pthread_join(th[t], NULL);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!tier_ok(m + i * PAGE, i, ROUNDS))
			TEST_FAIL("%s: page %lu not at its last version", mode_name(mode),
				  (unsigned long)i);
	struct bypass_pager_tier_stats t;
	CHECK_EQ(bypass_pager_tier_stats(p, &t), 0);
	CHECK(t.stored > 0);
	CHECK(t.swapin_pool > 0);
	CHECK(t.dropped > 0);
	CHECK(stats_of(p).resident_peak <= BUDGET / PAGE);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: %lu stored, %lu dropped, %lu swap-ins from the pool",
		 mode_name(mode), (unsigned long)t.stored, (unsigned long)t.dropped,
		 (unsigned long)t.swapin_pool);
}

int main(void)
{
	test_timeout(120);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tier-threads");
}
