/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier (issue 35), in both fault modes: a region 8x the
 * budget of compressible, incompressible and zero pages (written zeros)
 * round trips through the pool and the file; the budget holds with the
 * pool counted; rewriting, turning the tier off (the pool emptied: the
 * file has every page) and unmapping (the pool freed) keep every byte.  Then a region of
 * incompressible data only: nothing enters the pool.  Bad arguments.
 */
#include "tier-util.h"

#define BUDGET (64 * PAGE)
#define NPAGES 512ul

/* Page i's kind: 0, 2 compressible, 1 incompressible, 3 zeros. */
static void fill(char *pg, uint64_t i, uint64_t v)
{
	switch (i % 4) {
	case 1:
		fill_page(pg, i, v);
		break;
	case 3:
		memset(pg, 0, PAGE);
		break;
	default: { /* a few distinct words, repeated: compresses well */
		uint64_t *w = (uint64_t *)pg;
		for (size_t k = 0; k < PAGE / 8; k++)
			w[k] = k % 64 ? (i << 8 | v) : pat(i, v, k);
	}
	}
}

static bool ok(const char *pg, uint64_t i, uint64_t v)
{
	static char want[PAGE];
	fill(want, i, v);
	return memcmp(pg, want, PAGE) == 0;
}

static struct bypass_pager_tier_stats tstats(bypass_pager *p)
{
	struct bypass_pager_tier_stats t;
	CHECK_EQ(bypass_pager_tier_stats(p, &t), 0);
	return t;
}

static void check_all(char *m, int mode, const char *when, uint64_t (*ver)(uint64_t))
{
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!ok(m + i * PAGE, i, ver(i)))
			TEST_FAIL("%s: page %lu (kind %lu) wrong %s", mode_name(mode),
				  (unsigned long)i, (unsigned long)(i % 4), when);
}

static uint64_t v0(uint64_t i)
{
	(void)i;
	return 0;
}

static uint64_t v1(uint64_t i)
{
	return i % 8 < 4 ? 1 : 0;
}

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 0);
	struct bypass_pager_tier_config tc = { 0 };
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill(m + i * PAGE, i, 0);
	struct bypass_pager_tier_stats t1 = tstats(p);
	struct bypass_pager_stats s1 = stats_of(p);
	CHECK(t1.stored > 0);   /* the compressible and zero pages */
	CHECK(t1.rejected > 0); /* the incompressible ones */
	CHECK(t1.pool_bytes > 0);
	CHECK(t1.pool_bytes <= BUDGET / 2); /* its share: 50% */
	CHECK(t1.comp_bytes < t1.pool_pages * PAGE * 60 / 100);
	CHECK(s1.resident_peak <= BUDGET / PAGE); /* the pool counted */

	for (int pass = 0; pass < 2; pass++)
		check_all(m, mode, "after eviction", v0);
	struct bypass_pager_tier_stats t2 = tstats(p);
	CHECK(t2.swapin_pool > 0);
	CHECK(t2.swapin_file > 0);
	CHECK(t2.dropped > 0); /* the pool is smaller than what compresses */
	CHECK(stats_of(p).resident_peak <= BUDGET / PAGE);

	/* rewrite half (of every kind), in reverse */
	for (uint64_t i = NPAGES; i-- > 0;)
		if (v1(i))
			fill(m + i * PAGE, i, 1);
	check_all(m, mode, "after rewrite", v1);
	CHECK(stats_of(p).resident_peak <= BUDGET / PAGE);

	/* off: the pool emptied; every page still right, from the file */
	CHECK_EQ(bypass_pager_tier(p, NULL), 0);
	struct bypass_pager_tier_stats t3 = tstats(p);
	CHECK_EQ(t3.pool_bytes, 0);
	CHECK_EQ(t3.pool_pages, 0);
	check_all(m, mode, "after the tier was turned off", v1);
	CHECK_EQ(tstats(p).stored, t3.stored); /* off: nothing stored */

	/* on again, then unmap with pages in the pool: all of it freed */
	CHECK_EQ(bypass_pager_tier(p, &tc), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill(m + i * PAGE, i, 2);
	CHECK(tstats(p).pool_pages > 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	struct bypass_pager_tier_stats t4 = tstats(p);
	CHECK_EQ(t4.pool_pages, 0);
	CHECK_EQ(t4.pool_bytes, 0);
	CHECK_EQ(stats_of(p).resident_pages, 0);
	CHECK_EQ(stats_of(p).swap_used, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: %lu stored, %lu rejected, %lu dropped, swap-ins %lu pool %lu file",
		 mode_name(mode), (unsigned long)t4.stored, (unsigned long)t4.rejected,
		 (unsigned long)t4.dropped, (unsigned long)t4.swapin_pool,
		 (unsigned long)t4.swapin_file);
}

/* Incompressible data only: nothing in the pool, every byte back. */
static void run_random(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET, NPAGES * PAGE);
	CHECK_EQ(bypass_pager_tier(p, &(struct bypass_pager_tier_config){ 0 }), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 7);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 7))
			TEST_FAIL("%s: random page %lu wrong", mode_name(mode), (unsigned long)i);
	struct bypass_pager_tier_stats t = tstats(p);
	CHECK_EQ(t.stored, 0);
	CHECK_EQ(t.pool_bytes, 0);
	CHECK(t.rejected >= NPAGES - BUDGET / PAGE);
	CHECK(t.swapin_file > 0);
	CHECK(stats_of(p).resident_peak <= BUDGET / PAGE);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

static void bad_args(void)
{
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET, NPAGES * PAGE);
	struct bypass_pager_tier_config c = { 0 };
	struct bypass_pager_tier_stats st;
	CHECK_EQ(bypass_pager_tier(NULL, &c), -EINVAL);
	CHECK_EQ(bypass_pager_tier_stats(NULL, &st), -EINVAL);
	CHECK_EQ(bypass_pager_tier_stats(p, NULL), -EINVAL);
	c.share_pct = 4;
	CHECK_EQ(bypass_pager_tier(p, &c), -EINVAL);
	c.share_pct = 91;
	CHECK_EQ(bypass_pager_tier(p, &c), -EINVAL);
	c.share_pct = 0;
	c.accept_pct = 9;
	CHECK_EQ(bypass_pager_tier(p, &c), -EINVAL);
	c.accept_pct = 96;
	CHECK_EQ(bypass_pager_tier(p, &c), -EINVAL);
	c.accept_pct = 0;
	c.flags = 2; /* bit 0 is BYPASS_PAGER_TIER_FIXED */
	CHECK_EQ(bypass_pager_tier(p, &c), -EINVAL);
	c.flags = 0;
	c.reserved[3] = 1;
	CHECK_EQ(bypass_pager_tier(p, &c), -EINVAL);
	/* never on: stats are zeros, off is a no-op */
	CHECK_EQ(bypass_pager_tier_stats(p, &st), 0);
	CHECK_EQ(st.stored, 0);
	CHECK_EQ(bypass_pager_tier(p, NULL), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	bad_args();
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	run_random(BYPASS_PAGER_UPCALL);
	run_random(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tier-roundtrip");
}
