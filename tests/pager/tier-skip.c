/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier skips pages that will not compress (issue 35: the
 * tier's cost on incompressible data), in both fault modes: a region 8x
 * the budget written with random bytes, then rewritten compressible, then
 * random again.  Random: after a few failures in a row, most evicted pages
 * go to the file untried (skipped, counted in rejected too).  Compressible:
 * the first page tried compresses and the tier resumes (the pool takes
 * nearly every page; a bounded few skipped).  Random again: it skips
 * again.  Every page round-trips after each phase.  The stats' skipped
 * is the count.  Counts of pages, no timing.
 */
#include "tier-util.h"
#include "pager/pager_internal.h"
#include "pager/tier.h"
#include "pager/tier-int.h"

#define BUDGET (64 * PAGE)
#define NPAGES 512ul

static uint64_t skipped(bypass_pager *p)
{
	return bp_tier_skipped(atomic_load(&p->tier));
}

static void check_random(const char *m, int mode, uint64_t v, const char *when)
{
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("%s: random page %lu not version %lu %s", mode_name(mode),
				  (unsigned long)i, (unsigned long)v, when);
}

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	/* the region spans at most this many of the skip's chunks */
	uint64_t chunks = NPAGES * PAGE / (1ul << TIER_SKIP_SHIFT) + 1;

	/* random: skipped after TIER_SKIP_AFTER failures a chunk, then all
	 * but one in TIER_SKIP_EVERY */
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	struct bypass_pager_tier_stats t1 = tier_stats(p);
	uint64_t k1 = skipped(p), tried1 = t1.rejected - k1;
	TEST_LOG("%s: random: %lu rejected, %lu of them skipped, %lu stored", mode_name(mode),
		 (unsigned long)t1.rejected, (unsigned long)k1, (unsigned long)t1.stored);
	CHECK_EQ(t1.stored, 0);
	CHECK_EQ(t1.skipped, k1); /* the public counter is the internal one */
	CHECK(t1.rejected >= NPAGES - BUDGET / PAGE);
	CHECK(tried1 <= chunks * TIER_SKIP_AFTER + t1.rejected / TIER_SKIP_EVERY + chunks);
	CHECK(k1 * 4 >= t1.rejected * 3);
	check_random(m, mode, 1, "after the random pass");

	/* compressible: the first page tried compresses, the chunk resumes */
	struct bypass_pager_tier_stats t2a = tier_stats(p);
	uint64_t k2a = skipped(p);
	for (uint64_t i = 0; i < NPAGES; i++)
		tier_fill(m + i * PAGE, i, 2);
	tier_check_all(m, NPAGES, mode_name(mode), 2, "after the compressible pass");
	struct bypass_pager_tier_stats t2 = tier_stats(p);
	uint64_t k2 = skipped(p) - k2a, stored2 = t2.stored - t2a.stored;
	TEST_LOG("%s: compressible: %lu stored, %lu rejected, %lu of them skipped",
		 mode_name(mode), (unsigned long)stored2,
		 (unsigned long)(t2.rejected - t2a.rejected), (unsigned long)k2);
	/* skipped: at most the random pages still resident when it began
	 * (the budget's), and less than a try's worth a chunk */
	CHECK(k2 <= BUDGET / PAGE + chunks * TIER_SKIP_EVERY);
	CHECK(stored2 >= NPAGES - 2 * BUDGET / PAGE - chunks * TIER_SKIP_EVERY);

	/* random again: skipping again */
	uint64_t k3a = skipped(p);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 3);
	check_random(m, mode, 3, "after the second random pass");
	uint64_t k3 = skipped(p) - k3a;
	CHECK_EQ(tier_stats(p).skipped, k3a + k3);
	TEST_LOG("%s: random again: %lu skipped", mode_name(mode), (unsigned long)k3);
	CHECK(k3 * 2 >= NPAGES);
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
