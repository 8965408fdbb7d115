/* SPDX-License-Identifier: MIT */
/*
 * Clean pages read from the file go back into the pool when they are
 * evicted (issue 35: GNU sort under the tier re-read pages the pool had
 * forgotten from the file at every pass, a clean eviction dropping them
 * again).  Both fault modes: a region twice the budget written
 * compressible (into the pool), the tier turned off (the pool's copies
 * written to the file) and on again, the region read twice in a scattered
 * order (no read-ahead: the RANDOM hint).  The first pass reads the
 * evicted pages from the file; their clean evictions put them back in the
 * pool (readmitted); the second pass reads them from the pool.  Every page
 * checked in both passes.  Counts of pages, no timing.
 */
#include "tier-util.h"

#define BUDGET (64 * PAGE)
#define NPAGES 128ul

static void pass(char *m, int mode, const char *when)
{
	/* 37 is prime to NPAGES: every page once, scattered */
	for (uint64_t k = 0; k < NPAGES; k++) {
		uint64_t i = k * 37 % NPAGES;
		if (!tier_ok(m + i * PAGE, i, 1))
			TEST_FAIL("%s: page %lu wrong %s", mode_name(mode), (unsigned long)i, when);
	}
}

static void run(int mode)
{
	bypass_pager *p = tier_on_flags(new_pager(mode, BUDGET, NPAGES * PAGE), 50,
					BYPASS_PAGER_TIER_FIXED);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	CHECK_EQ(bypass_pager_advise(p, m, NPAGES * PAGE, BYPASS_PAGER_ADV_RANDOM), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		tier_fill(m + i * PAGE, i, 1);
	/* the pool's copies to the file, the pool empty; then on again */
	CHECK_EQ(bypass_pager_tier(p, NULL), 0);
	tier_on_flags(p, 50, BYPASS_PAGER_TIER_FIXED);
	struct bypass_pager_tier_stats t0 = tier_stats(p);
	CHECK_EQ(t0.pool_pages, 0);

	pass(m, mode, "in the first pass");
	struct bypass_pager_tier_stats t1 = tier_stats(p);
	pass(m, mode, "in the second pass");
	struct bypass_pager_tier_stats t2 = tier_stats(p);
	uint64_t file1 = t1.swapin_file - t0.swapin_file, pool1 = t1.swapin_pool - t0.swapin_pool;
	uint64_t file2 = t2.swapin_file - t1.swapin_file, pool2 = t2.swapin_pool - t1.swapin_pool;
	TEST_LOG("%s: first pass %lu from the file, %lu from the pool; %lu readmitted; second "
		 "pass %lu from the file, %lu from the pool",
		 mode_name(mode), (unsigned long)file1, (unsigned long)pool1,
		 (unsigned long)t1.readmitted, (unsigned long)file2, (unsigned long)pool2);
	/* the first pass reads what the budget did not keep from the file */
	CHECK(file1 >= NPAGES - BUDGET / PAGE);
	CHECK(t1.readmitted > 0);
	/* the second pass: what the first evicted, from the pool */
	CHECK(file2 + pool2 >= NPAGES / 4);
	CHECK(file2 * 8 <= file2 + pool2);
	CHECK(stats_of(p).resident_peak <= BUDGET / PAGE);

	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	return 0;
}
