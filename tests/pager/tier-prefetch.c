/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier beside the prefetcher (issue 35), both fault modes:
 * the prefetcher reads evicted pages by itself (the "prefetch" policy's
 * streams, the WILLNEED hint), and a page the pool keeps is not in the
 * file (pool-only): the prefetcher reads through the pool.  Compressible
 * pages, evicted, then read in streams and brought back with WILLNEED:
 * every byte right (with the prefetcher reading the file only, pages
 * came back wrong).
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "tier-util.h"

#define BUDGET (64 * PAGE)
#define NPAGES 512ul

static void check(char *m, int mode, uint64_t v, const char *when)
{
	tier_check_all(m, NPAGES, mode_name(mode), v, when);
}

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 0);
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (int v = 0; v < 3; v++) {
		for (uint64_t i = 0; i < NPAGES; i++)
			tier_fill(m + i * PAGE, i, (uint64_t)v);
		check(m, mode, (uint64_t)v, "in a stream");
		check(m, mode, (uint64_t)v, "in a second stream");
		/* the first pages are evicted by now: WILLNEED brings them in */
		CHECK_EQ(bypass_pager_advise(p, m, 32 * PAGE, BYPASS_PAGER_ADV_WILLNEED), 0);
		check(m, mode, (uint64_t)v, "after WILLNEED");
	}
	struct bypass_pager_stats s = stats_of(p);
	struct bypass_pager_tier_stats t;
	CHECK_EQ(bypass_pager_tier_stats(p, &t), 0);
	CHECK(t.stored > 0);
	CHECK(s.prefetch_pages > 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: %lu prefetched, %lu stored in the pool, %lu swap-ins from it",
		 mode_name(mode), (unsigned long)s.prefetch_pages, (unsigned long)t.stored,
		 (unsigned long)t.swapin_pool);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tier-prefetch");
}
