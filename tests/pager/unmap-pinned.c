/* SPDX-License-Identifier: MIT */
/*
 * Unmapping pinned pages: pins nest, but the pager counts pinned pages, not
 * pins, so unmapping a region whose pages are pinned (once or several
 * times) gives back exactly those pages.  Afterwards nothing is pinned and
 * half the budget can be pinned again, in both fault modes.
 */
#include "util.h"

#define BUDGET_PAGES 32ul
#define NPAGES 64ul

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, 2 * NPAGES * PAGE);
	char *m, *n;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 3);

	/* page 0 pinned three times, pages 1-3 once, page 40 twice */
	for (int k = 0; k < 3; k++)
		CHECK_EQ(bypass_pager_pin(p, m, PAGE, 0), 0);
	CHECK_EQ(bypass_pager_pin(p, m + PAGE, 3 * PAGE, BYPASS_PAGER_PIN_WRITE), 0);
	CHECK_EQ(bypass_pager_pin(p, m + 40 * PAGE, PAGE, 0), 0);
	CHECK_EQ(bypass_pager_pin(p, m + 40 * PAGE, PAGE, 0), 0);
	CHECK_EQ(stats_of(p).pinned_pages, 5);

	/* a partial unmap of pinned pages: pages 0-7 */
	CHECK_EQ(bypass_pager_unmap(p, m, 8 * PAGE), 0);
	CHECK_EQ(stats_of(p).pinned_pages, 1);
	/* the rest of the region */
	CHECK_EQ(bypass_pager_unmap(p, m + 8 * PAGE, (NPAGES - 8) * PAGE), 0);
	struct bypass_pager_stats st = stats_of(p);
	CHECK_EQ(st.pinned_pages, 0);
	CHECK_EQ(st.resident_pages, 0);

	/* half the budget can be pinned again, and no more */
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&n), 0);
	CHECK_EQ(bypass_pager_pin(p, n, BUDGET_PAGES / 2 * PAGE, 0), 0);
	CHECK_EQ(stats_of(p).pinned_pages, BUDGET_PAGES / 2);
	CHECK_ERR(bypass_pager_pin(p, n + BUDGET_PAGES / 2 * PAGE, PAGE, 0), -ENOMEM);
	CHECK_EQ(bypass_pager_unpin(p, n, BUDGET_PAGES / 2 * PAGE), 0);
	CHECK_EQ(stats_of(p).pinned_pages, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/unmap-pinned");
}
