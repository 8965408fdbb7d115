/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier's staging window and the cold hint (issue 35): an
 * eviction batch larger than the window (BP_TIER_STAGE, 64 pages) whose
 * lowest page ids are cold (BYPASS_PAGER_ADV_DONTNEED: the file only).
 * The cold pages must not take the window: the other pages of the batch
 * are staged and compressed (here they do not compress, so each staged
 * one is counted as rejected).  Before, only the first 64 pages of a
 * batch by id were staged, cold ones included, and a batch of 76 cold
 * and 52 other pages staged none of the 52.  Upcall mode: the faulting
 * thread evicts, so the batch is the same every run.
 */
#include "tier-util.h"

#define BUDGET 512ul /* pages; batch 128: high 256, low 128 */
#define BATCH 128u
#define NPAGES 1024ul
#define NCOLD 128ul  /* pages [0, NCOLD) are cold */
#define FIRST 512ul  /* the other pages from here */
#define NOTHER 180ul

/* Random bytes: LZ4 cannot shrink them. */
static void fill_random(char *pg, uint64_t *seed)
{
	uint64_t *w = (uint64_t *)pg;
	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = xorshift(seed);
}

int main(void)
{
	test_timeout(60);
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_size = NPAGES * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .batch = BATCH,
	};
	bypass_pager *p = tier_on(try_pager(&c), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	CHECK_EQ(bypass_pager_advise(p, m, NCOLD * PAGE, BYPASS_PAGER_ADV_DONTNEED), 0);

	/* the others first (below the high watermark), then the cold ones:
	 * the first eviction takes every resident cold page, then the oldest
	 * others, in one batch sorted by id (cold first) */
	uint64_t seed = 11;
	for (uint64_t i = FIRST; i < FIRST + NOTHER; i++)
		fill_random(m + i * PAGE, &seed);
	for (uint64_t i = 0; i < NCOLD; i++)
		tier_fill(m + i * PAGE, i, 1);
	struct bypass_pager_tier_stats t = tier_stats(p);
	struct bypass_pager_stats s = stats_of(p);
	TEST_LOG("%llu evicted: %llu cold to the file, %llu others staged and rejected, "
		 "%llu stored", (unsigned long long)s.evictions, (unsigned long long)t.cold,
		 (unsigned long long)t.rejected, (unsigned long long)t.stored);
	CHECK(t.cold > 64);   /* the batch began with more cold pages than the window */
	CHECK(t.rejected > 0); /* and the others after them were staged all the same */
	CHECK_EQ(t.stored, 0); /* cold pages never go in, the others do not compress */

	/* every page reads back */
	seed = 11;
	char want[PAGE];
	for (uint64_t i = FIRST; i < FIRST + NOTHER; i++) {
		fill_random(want, &seed);
		if (memcmp(m + i * PAGE, want, PAGE))
			TEST_FAIL("page %lu wrong", (unsigned long)i);
	}
	for (uint64_t i = 0; i < NCOLD; i++)
		if (!tier_ok(m + i * PAGE, i, 1))
			TEST_FAIL("cold page %lu wrong", (unsigned long)i);
	CHECK(stats_of(p).resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/tier-window");
}
