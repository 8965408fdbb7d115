/* SPDX-License-Identifier: MIT */
/*
 * A page of a region that the application mlock()s cannot be discarded
 * (MADV_DONTNEED refuses locked memory), and a madvise() over a range that
 * includes it discards the pages before it and then fails.  The pager must
 * keep exactly the locked page resident and evict its neighbours properly:
 * no neighbour may read back as zeros.  After munlock() the page is evicted
 * like any other; every page keeps its data throughout.
 */
#include "util.h"

#include <sys/syscall.h>

#define BUDGET_PAGES 16ul
#define NPAGES 64ul

static void check_all(char *m, uint64_t upto, const char *when)
{
	for (uint64_t i = 0; i < upto; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("%s: page %lu %s", when, (unsigned long)i,
				  page_zero(m + i * PAGE) ? "reads as zeros" : "is wrong");
}

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, 4 * NPAGES * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < 4; i++)
		fill_page(m + i * PAGE, i, 1);
	/* the system call: AddressSanitizer's mlock() does nothing */
	if (syscall(SYS_mlock, m + 2 * PAGE, PAGE) < 0) {
		int e = errno;
		bypass_pager_destroy(p);
		tmpdir_cleanup();
		SKIP("mlock: %s (RLIMIT_MEMLOCK?)", strerror(e));
	}
	/* Pages 0-3 are the first victims, written back together and then
	 * dropped in one range that includes the locked page. */
	for (uint64_t i = 4; i < NPAGES; i++) {
		fill_page(m + i * PAGE, i, 1);
		check_all(m, 2, "while page 2 is locked");
	}
	check_all(m, NPAGES, "while page 2 is locked");
	CHECK(present_pages(m + 2 * PAGE, PAGE) == 1);
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.resident_peak <= BUDGET_PAGES);
	CHECK(st.evictions > 0);

	CHECK_EQ(syscall(SYS_munlock, m + 2 * PAGE, PAGE), 0);
	for (int pass = 0; pass < 3; pass++)
		for (uint64_t i = 0; i < NPAGES; i++)
			if (i != 2)
				fill_page(m + i * PAGE, i, 1);
	check_all(m, NPAGES, "after munlock");
	CHECK(stats_of(p).resident_peak <= BUDGET_PAGES);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(60);
	bypass_set_log_level(BYPASS_LOG_NONE); /* the failing madvise is logged */
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/mlock");
}
