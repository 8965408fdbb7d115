/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier is write-back (issue 35), both fault modes: a page
 * that compresses is kept in the pool only, never written to the file
 * while the pool keeps it (bytes_written stays 0 while every evicted page
 * fits in the pool; write-through wrote each); the pool writes a page to
 * its slot only when it must forget it: cutting the pool's share, then
 * turning the tier off, each page then read back from the file right.
 * Rewritten pages (their pool copies freed) and a second round through the
 * pool are right too.
 */
#include "tier-util.h"

#define BUDGET (64 * PAGE)
#define NPAGES 192ul

static void check(char *m, int mode, uint64_t v, const char *when)
{
	tier_check_all(m, NPAGES, mode_name(mode), v, when);
}

static void fill(char *m, uint64_t v)
{
	for (uint64_t i = 0; i < NPAGES; i++)
		tier_fill(m + i * PAGE, i, v);
}

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	fill(m, 1);
	check(m, mode, 1, "after the first pass");
	struct bypass_pager_stats s = stats_of(p);
	struct bypass_pager_tier_stats t = tier_stats(p);
	CHECK(s.evictions > 0);
	CHECK(t.stored > 0 && t.swapin_pool > 0);
	/* 192 pages of ~15% fit in the pool (half of 64 pages): none written */
	if (s.bytes_written)
		TEST_FAIL("%s: %lu bytes written to the file though the pool kept every "
			  "evicted page (%lu stored, %lu rejected, %lu dropped)",
			  mode_name(mode), (unsigned long)s.bytes_written,
			  (unsigned long)t.stored, (unsigned long)t.rejected,
			  (unsigned long)t.dropped);
	CHECK_EQ(t.swapin_file, 0);
	CHECK(t.pool_only > 0 && t.pool_only <= t.stored);
	CHECK_EQ(t.pool_writes, 0);

	/* the pool's share cut to 5%: most pool-only pages written, then read
	 * back from the file */
	CHECK_EQ(bypass_pager_tier(p, &(struct bypass_pager_tier_config){ .share_pct = 5 }), 0);
	CHECK(stats_of(p).bytes_written > 0);
	check(m, mode, 1, "after the pool shrank");
	check(m, mode, 1, "read again");
	t = tier_stats(p);
	CHECK(t.dropped > 0);
	CHECK(t.swapin_file > 0);
	CHECK(t.pool_writes > 0 && t.pool_writes <= t.pool_only);

	/* rewritten: the old copies freed, the new ones in the pool */
	CHECK_EQ(bypass_pager_tier(p, &(struct bypass_pager_tier_config){ 0 }), 0);
	fill(m, 2);
	check(m, mode, 2, "rewritten");

	/* the tier off: the pool emptied, every page written first */
	CHECK_EQ(bypass_pager_tier(p, NULL), 0);
	t = tier_stats(p);
	CHECK_EQ(t.pool_pages, 0);
	CHECK_EQ(t.pool_bytes, 0);
	check(m, mode, 2, "after the tier was turned off");
	CHECK_EQ(stats_of(p).write_errors, 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: %lu stored (%lu pool-only, %lu of them written later), %lu dropped, "
		 "%lu swap-ins from the pool, %lu from the file",
		 mode_name(mode), (unsigned long)t.stored, (unsigned long)t.pool_only,
		 (unsigned long)t.pool_writes, (unsigned long)t.dropped,
		 (unsigned long)t.swapin_pool, (unsigned long)t.swapin_file);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tier-writeback");
}
