/* SPDX-License-Identifier: MIT */
/*
 * Write-backs that keep failing (a full filesystem under a sparse swap
 * file, here simulated with RLIMIT_FSIZE = 0: every write to the swap file
 * fails with EFBIG).  Dirty pages whose write failed stay resident and
 * dirty, so nothing is lost; once the budget holds nothing but them, a
 * fault that needs room fails (after the pager's 10 s of no progress)
 * instead of retrying the writes forever: bypass_pager_pin() returns
 * -ENOMEM.  When writes work again, every page is still there.
 */
#include "util.h"

#include <sys/resource.h>

#define BUDGET_PAGES 16ul
#define NPAGES 64ul

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, 4 * NPAGES * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	struct rlimit old, none;
	CHECK_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
	none = old;
	none.rlim_cur = 0;
	CHECK_EQ(setrlimit(RLIMIT_FSIZE, &none), 0);

	for (uint64_t i = 0; i < BUDGET_PAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	int r = bypass_pager_pin(p, m + BUDGET_PAGES * PAGE, PAGE, 0);
	struct bypass_pager_stats st = stats_of(p);
	CHECK_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
	CHECK_ERR(r, -ENOMEM);
	CHECK(st.write_errors > 0);
	CHECK_EQ(st.bytes_written, 0);
	CHECK_EQ(st.resident_pages, BUDGET_PAGES);
	CHECK_EQ(st.pinned_pages, 0);

	/* Writes work again: everything is there, and eviction resumes. */
	for (uint64_t i = 0; i < BUDGET_PAGES; i++)
		CHECK(page_ok(m + i * PAGE, i, 1));
	for (uint64_t i = BUDGET_PAGES; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	for (uint64_t i = 0; i < NPAGES; i++)
		CHECK(page_ok(m + i * PAGE, i, 1));
	st = stats_of(p);
	CHECK(st.bytes_written > 0 && st.resident_peak <= BUDGET_PAGES);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(90);
	signal(SIGXFSZ, SIG_IGN); /* the write fails with EFBIG instead */
	bypass_set_log_level(BYPASS_LOG_NONE); /* one error per failed write */
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/write-errors");
}
