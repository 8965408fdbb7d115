/* SPDX-License-Identifier: MIT */
/*
 * A sequential stream's readahead window evicts for itself (issue 20): a
 * swap-in that continues a stream reserves the whole window as the
 * faulting page is reserved, evicting for it, instead of reading ahead
 * only where the budget had room already.  Before, a window larger than the
 * room the watermarks leave (budget - low) never fitted and every fault of
 * the stream read one page.
 *
 * NPAGES pages at a budget of BUDGET are written (version 1), then read in
 * order twice and written in order once, with no wait for the write-backs
 * in flight, at watermarks that leave 2 pages of room (high = the budget,
 * low = the budget - 2) and at the defaults.  Checked: the passes read
 * ahead most of their pages, the resident peak stays within the budget,
 * every byte holds its last version.  Upcall mode, and handler mode where
 * allowed.  (Before the eviction for a window waited for room for all of
 * it, such a window stalled for the 10 s of "no progress": this test would
 * run past its time limit.)
 */
#include "util.h"

#define BUDGET 64ul
#define NPAGES 512ul
#define RA 16u

static bypass_pager *make_pager(int mode, bool tight)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_size = NPAGES * PAGE, .mode = mode,
		.readahead = RA,
	};
	if (tight) {
		c.high_watermark = BUDGET * PAGE;
		c.low_watermark = (BUDGET - 2) * PAGE;
	}
	return try_pager(&c);
}

static void check_pass(bypass_pager *p, char *m, uint64_t v, const char *what,
		       struct bypass_pager_stats *before)
{
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("%s: page %lu does not hold version %lu", what,
				  (unsigned long)i, (unsigned long)v);
	struct bypass_pager_stats s = stats_of(p);
	uint64_t ra = s.readahead_pages - before->readahead_pages;
	uint64_t swapin = s.faults_swapin - before->faults_swapin;
	TEST_LOG("  %s: %lu swap-in faults, %lu pages read ahead", what,
		 (unsigned long)swapin, (unsigned long)ra);
	/* most pages came with a window (the first windows ramp up 2, 4, 8) */
	CHECK(ra >= NPAGES / 2);
	CHECK(s.resident_peak <= BUDGET);
	*before = s;
}

static void run(int mode, bool tight)
{
	bypass_pager *p = make_pager(mode, tight);
	if (!p) {
		TEST_LOG("%s: not allowed here (needs CAP_SYS_PTRACE or "
			 "vm.unprivileged_userfaultfd), skipped", mode_name(mode));
		return;
	}
	TEST_LOG("%s, watermarks %s:", mode_name(mode),
		 tight ? "high = budget, low = budget - 2" : "the defaults");
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	struct bypass_pager_stats s = stats_of(p);
	check_pass(p, m, 1, "read pass 1", &s);
	check_pass(p, m, 1, "read pass 2", &s);
	/* a write stream: its windows are mapped dirty after the first ones */
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 2);
	check_pass(p, m, 2, "write pass, then read", &s);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL, true);
	run(BYPASS_PAGER_UPCALL, false);
	run(BYPASS_PAGER_HANDLER, true);
	tmpdir_cleanup();
	return test_pass("pager/readahead-evict");
}
