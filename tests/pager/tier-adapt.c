/* SPDX-License-Identifier: MIT */
/*
 * The compressed pool's share adapts to what it saves (issue 35): pages
 * written once and never read back (a pool whose copies are all forgotten,
 * and written to the file, before anything reads them) make the pool
 * shrink below the share it was given; with BYPASS_PAGER_TIER_FIXED it
 * stays full at that share and its share never moves.  Every page is then
 * read back right.  Upcall mode: the faulting thread evicts, so the
 * windows are the same every run.
 */
#include "tier-util.h"

#define BUDGET (512 * PAGE) /* the pool's default share: 256 pages */
#define NPAGES 6144ul

/* Page i: a word in 4 differs (about a third of a page under LZ4: some
 * 3 copies per page of the pool, which 6144 pages overflow). */
static void fill(char *pg, uint64_t i)
{
	uint64_t *w = (uint64_t *)pg;
	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = k % 4 ? i : pat(i, 1, k);
}

static struct bypass_pager_tier_stats run(unsigned flags)
{
	bypass_pager *p = tier_on_flags(new_pager(BYPASS_PAGER_UPCALL, BUDGET, NPAGES * PAGE), 0,
					flags);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill(m + i * PAGE, i);
	struct bypass_pager_tier_stats t = tier_stats(p);
	for (uint64_t i = 0; i < NPAGES; i++) {
		char want[PAGE];
		fill(want, i);
		if (memcmp(m + i * PAGE, want, PAGE))
			TEST_FAIL("%s: page %lu read back wrong", flags ? "fixed" : "adaptive",
				  (unsigned long)i);
	}
	CHECK_EQ(stats_of(p).write_errors, 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: pool %lu pages of memory at the end of the writes, share moved %lu "
		 "times; %lu stored, %lu written later, %lu swap-ins from the pool",
		 flags ? "fixed" : "adaptive", (unsigned long)(t.pool_bytes / PAGE),
		 (unsigned long)t.share_moves, (unsigned long)t.stored,
		 (unsigned long)t.pool_writes, (unsigned long)t.swapin_pool);
	return t;
}

int main(void)
{
	test_timeout(60);
	const uint64_t half = BUDGET / PAGE / 2;
	struct bypass_pager_tier_stats f = run(BYPASS_PAGER_TIER_FIXED);
	CHECK_EQ(f.share_moves, 0);
	CHECK(f.pool_writes > 0);          /* the pool was full and forgot */
	CHECK(f.pool_bytes / PAGE + 8 > half); /* and stayed at its share */
	struct bypass_pager_tier_stats a = run(0);
	CHECK(a.share_moves >= 4);
	if (a.pool_bytes / PAGE + 4 * 8 > half) /* 4 steps of 8 pages at least */
		TEST_FAIL("the pool holds %lu pages of memory, its share %lu: it wrote %lu "
			  "copies and served %lu swap-ins, and did not shrink",
			  (unsigned long)(a.pool_bytes / PAGE), (unsigned long)half,
			  (unsigned long)a.pool_writes, (unsigned long)a.swapin_pool);
	tmpdir_cleanup();
	return test_pass("pager/tier-adapt");
}
