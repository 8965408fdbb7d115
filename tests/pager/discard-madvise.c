/* SPDX-License-Identifier: MIT */
/*
 * The pager preload's madvise(MADV_DONTNEED) discards (preload/pager/mem.c
 * through bypass_pager_discard): a region four budgets long, written once
 * (most of it evicted to the swap file), then madvised away, reads as
 * zeros with no page of it read back from swap and none written again; a
 * smaller region written before it keeps its data (read back: the only
 * reads of the run).  Before, the preload wrote the zeros itself: every
 * evicted page of the range was read back and dirtied, then written again
 * (on main at ead639b: 8,225 pages read and 8,314 written, against 128 and
 * 3,200 with the discard).  The compressed tier is off
 * (BYPASS_PAGER_TIER=0): the bytes written are the file's.
 */
#include "preload-util.h"

#define PAGE 4096ul
#define KEEP_PAGES 128ul               /* the region that keeps its data */
#define GONE_PAGES (4 * PP_BUDGET / PAGE) /* the one madvised away */

static void run(void)
{
	unsigned char *keep = pp_region(KEEP_PAGES * PAGE);
	unsigned char *gone = pp_region(GONE_PAGES * PAGE);
	pp_fill(keep, KEEP_PAGES * PAGE, 1);
	pp_fill(gone, GONE_PAGES * PAGE, 2);
	/* a length that is not a page multiple is rounded up, as by Linux */
	CHECK_EQ(madvise(gone, GONE_PAGES * PAGE - 100, MADV_DONTNEED), 0);
	for (size_t i = 0; i < GONE_PAGES * PAGE; i += sizeof(uint64_t))
		if (*(uint64_t *)(gone + i))
			TEST_FAIL("byte %zu of the madvised region is not zero", i);
	size_t at = pp_check(keep, KEEP_PAGES * PAGE, 1);
	if (at != KEEP_PAGES * PAGE)
		TEST_FAIL("byte %zu of the other region lost its data", at);
	CHECK_EQ(munmap(gone, GONE_PAGES * PAGE), 0);
	CHECK_EQ(munmap(keep, KEEP_PAGES * PAGE), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	pp_start(120);
	if (pp_preloaded()) {
		run();
		return 0;
	}
	static const char *const env[] = { "BYPASS_PAGER_TIER=0", NULL };
	pp_run_ok(argv, "run", env);
	int lines;
	long long ev = pp_stat("evictions", &lines), in = pp_stat("faults_swapin", NULL);
	long long rd = pp_stat("bytes_read", NULL), wr = pp_stat("bytes_written", NULL);
	TEST_LOG("stats lines %d, evictions %lld, swap-in faults %lld, read %lld pages, "
		 "written %lld (the regions have %lu)", lines, ev, in, rd / (long long)PAGE,
		 wr / (long long)PAGE, KEEP_PAGES + GONE_PAGES);
	CHECK_EQ(lines, 1);
	CHECK(ev > (long long)(GONE_PAGES / 2)); /* the region was evicted */
	/* the other region's pages at most (with read-ahead, and a few of
	 * the program's own besides), none of the madvised one's */
	if (rd > (long long)((KEEP_PAGES + GONE_PAGES / 16) * PAGE))
		TEST_FAIL("%lld pages read: the madvised pages were read back",
			  rd / (long long)PAGE);
	/* each page written back once at most: none after the madvise */
	if (wr > (long long)((KEEP_PAGES + GONE_PAGES) * PAGE))
		TEST_FAIL("%lld pages written: the madvised pages were written again",
			  wr / (long long)PAGE);
	return test_pass("pager/discard-madvise");
}
