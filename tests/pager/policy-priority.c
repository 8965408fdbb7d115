/* SPDX-License-Identifier: MIT */
/*
 * PRIORITY pages are evicted only when nothing else is left, also when
 * every other resident page is referenced.  2Q gives a referenced page at
 * the inactive tail a second chance (it loses its bit and is activated);
 * a round in which every page had its bit set finds no victim on its first
 * pass, but those pages are still there to evict.  The evictor took
 * PRIORITY pages in that case (it fell back to them after one empty pass),
 * which showed under BYPASS_PAGER_HEAT=all (the written source marks every
 * written page referenced each interval) as pager/policy-hints losing
 * PRIORITY pages.  Here the reference bits come from write-protect faults:
 * pages read (clean) and then written are all referenced.  Upcall mode, the
 * default 2Q and the prefetch policy.
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "util.h"

#define BUDGET 64ul
#define NP 24ul                /* PRIORITY pages */
#define NO (BUDGET - NP)       /* the rest of the budget */

static void run(const char *policy)
{
	/* the high watermark at the budget: nothing is evicted before it is
	 * full; one page a fault */
	struct bypass_pager_config cf = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(), .swap_size = 8 * BUDGET * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
		.high_watermark = BUDGET * PAGE, .low_watermark = (BUDGET - 8) * PAGE,
		.batch = 8, .readahead = 1, .fault_around = 1,
	};
	bypass_pager *p;
	CHECK_EQ(bypass_pager_create(&cf, &p), 0);
	if (policy)
		CHECK_EQ(bypass_pager_set_policy(p, policy), 0);
	/* page ids by region: pad 0-31 (never touched), PRIORITY 32-55, the
	 * rest from 56: the PRIORITY pages share an LRU shard (runs of 32
	 * ids) with referenced pages, the shard where the evictor's cursor
	 * stands after a pass over all of them */
	char *pad, *pr, *o;
	CHECK_EQ(bypass_pager_map(p, 32 * PAGE, 0, (void **)&pad), 0);
	CHECK_EQ(bypass_pager_map(p, NP * PAGE, 0, (void **)&pr), 0);
	CHECK_EQ(bypass_pager_map(p, 2 * BUDGET * PAGE, 0, (void **)&o), 0);
	CHECK_EQ(bypass_pager_advise(p, pr, NP * PAGE, BYPASS_PAGER_ADV_PRIORITY), 0);
	for (size_t i = 0; i < NP; i++)
		fill_page(pr + i * PAGE, i, 1);
	volatile char c;
	for (size_t i = 0; i < NO; i++) /* read: clean, write-protected */
		c = o[i * PAGE];
	(void)c;
	CHECK_EQ(stats_of(p).evictions, 0);
	for (size_t i = 0; i < NO; i++) /* a write-protect fault each: referenced */
		fill_page(o + i * PAGE, 1000 + i, 1);
	CHECK_EQ(stats_of(p).faults_wp, NO);
	/* more pages than the budget holds: evictions, never of PRIORITY */
	for (size_t i = NO; i < 2 * BUDGET; i++) {
		fill_page(o + i * PAGE, 1000 + i, 1);
		size_t have = present_pages(pr, NP * PAGE);
		if (have != NP)
			TEST_FAIL("%s: %zu of %zu PRIORITY pages evicted while %zu other pages "
				  "were resident (page %zu written)", policy ? policy : "2q",
				  NP - have, NP, present_pages(o, 2 * BUDGET * PAGE), i);
	}
	CHECK(stats_of(p).evictions > 0);
	CHECK(stats_of(p).resident_peak <= BUDGET);
	for (size_t i = 0; i < NP; i++)
		if (!page_ok(pr + i * PAGE, i, 1))
			TEST_FAIL("PRIORITY page %zu has wrong data", i);
	for (size_t i = 0; i < 2 * BUDGET; i++)
		if (!page_ok(o + i * PAGE, 1000 + i, 1))
			TEST_FAIL("page %zu has wrong data", i);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: ok", policy ? policy : "2q");
}

int main(void)
{
	unsetenv("BYPASS_PAGER_HEAT");
	run(NULL);
	run("prefetch");
	tmpdir_cleanup();
	return test_pass("pager/policy-priority");
}
