/* SPDX-License-Identifier: MIT */
/*
 * Eviction and swap-in round trips, in both fault modes: fill a region 8x
 * the budget with checksummed pages, read it all back (twice: the second
 * pass reads pages that are clean and must be dropped without writing),
 * rewrite half and check again.
 */
#include "util.h"

#define BUDGET (64 * PAGE)
#define NPAGES 512ul

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET, NPAGES * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);

	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 0);
	struct bypass_pager_stats s1 = stats_of(p);
	CHECK_EQ(s1.faults_zero + s1.faultaround_pages, NPAGES);
	CHECK(s1.evictions >= NPAGES - BUDGET / PAGE);
	CHECK(s1.resident_peak <= BUDGET / PAGE);
	CHECK(s1.bytes_written >= (NPAGES - BUDGET / PAGE) * PAGE);

	struct bypass_pager_stats s2 = s1;
	for (int pass = 0; pass < 2; pass++) {
		s2 = stats_of(p);
		for (uint64_t i = 0; i < NPAGES; i++)
			if (!page_ok(m + i * PAGE, i, 0))
				TEST_FAIL("%s: page %lu wrong after eviction (pass %d)",
					  mode_name(mode), (unsigned long)i, pass);
	}
	struct bypass_pager_stats s2b = stats_of(p);
	CHECK(s2b.faults_swapin > 0);
	CHECK(s2b.bytes_read >= s2b.faults_swapin * PAGE);
	/* The second read-only pass evicts clean pages only: no writes but
	 * those of the (at most a budget of) pages still being written when
	 * it began. */
	CHECK(s2b.evictions_clean - s2.evictions_clean >= NPAGES - 2 * BUDGET / PAGE);
	CHECK(s2b.bytes_written - s2.bytes_written <= BUDGET);
	CHECK(s2b.resident_peak <= BUDGET / PAGE);
	s2 = s2b;

	/* Rewrite every other page in reverse order, then verify all. */
	for (uint64_t i = NPAGES; i-- > 0;)
		if (i % 2 == 0)
			fill_page(m + i * PAGE, i, 1);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, i % 2 == 0))
			TEST_FAIL("%s: page %lu wrong after rewrite", mode_name(mode),
				  (unsigned long)i);
	struct bypass_pager_stats s3 = stats_of(p);
	CHECK(s3.bytes_written > s2.bytes_written);
	CHECK(s3.resident_pages <= BUDGET / PAGE);
	CHECK(s3.resident_peak <= BUDGET / PAGE);

	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(stats_of(p).resident_pages, 0);
	CHECK_EQ(stats_of(p).swap_used, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: %lu zero, %lu swap-in (+%lu readahead), %lu evicted (%lu clean)",
		 mode_name(mode), (unsigned long)s3.faults_zero,
		 (unsigned long)s3.faults_swapin, (unsigned long)s3.readahead_pages,
		 (unsigned long)s3.evictions, (unsigned long)s3.evictions_clean);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/roundtrip");
}
