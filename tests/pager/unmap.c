/* SPDX-License-Identifier: MIT */
/*
 * Partial unmaps: unmap the middle, then the ends, of a region whose pages
 * are partly evicted; the rest keeps its data, the hole is unmapped,
 * the counters give back its pages and swap, and a region mapped afterwards
 * (reusing its page ids and swap) reads as zeros.  Bad unmaps are refused
 * and change nothing.
 */
#include "util.h"

#define BUDGET_PAGES 16ul
#define NPAGES 64ul


static void check_range(char *m, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		if (!page_ok(m + i * PAGE, i, 7))
			TEST_FAIL("page %lu lost its data", (unsigned long)i);
}

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, 2 * NPAGES * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 7);
	CHECK_EQ(stats_of(p).mapped_pages, NPAGES);

	/* bad unmaps: unaligned, outside, spanning past the end, foreign */
	CHECK_ERR(bypass_pager_unmap(p, m + 1, PAGE), -EINVAL);
	CHECK_ERR(bypass_pager_unmap(p, m, PAGE + 1), -EINVAL);
	CHECK_ERR(bypass_pager_unmap(p, m, 0), -EINVAL);
	CHECK_ERR(bypass_pager_unmap(p, m + (NPAGES - 1) * PAGE, 2 * PAGE), -EINVAL);
	char local[2 * PAGE];
	CHECK_ERR(bypass_pager_unmap(p, (void *)(((uintptr_t)local + PAGE) & ~(PAGE - 1)), PAGE),
		  -EINVAL);
	CHECK_ERR(bypass_pager_unmap(NULL, m, PAGE), -EINVAL);
	bypass_pager *q = new_pager(mode, BUDGET_PAGES * PAGE, NPAGES * PAGE);
	CHECK_ERR(bypass_pager_unmap(q, m, PAGE), -EINVAL);
	CHECK_EQ(bypass_pager_destroy(q), 0);
	check_range(m, 0, NPAGES);

	/* the middle */
	CHECK_EQ(bypass_pager_unmap(p, m + 16 * PAGE, 16 * PAGE), 0);
	CHECK(absent(m + 20 * PAGE) && absent(m + 31 * PAGE));
	check_range(m, 0, 16);
	check_range(m, 32, NPAGES);
	struct bypass_pager_stats st = stats_of(p);
	CHECK_EQ(st.mapped_pages, NPAGES - 16);
	CHECK(st.resident_pages <= BUDGET_PAGES);
	CHECK(st.swap_used <= NPAGES - 16);
	/* an unmap across the hole is refused */
	CHECK_ERR(bypass_pager_unmap(p, m + 8 * PAGE, 32 * PAGE), -EINVAL);

	/* the ends of the two pieces */
	CHECK_EQ(bypass_pager_unmap(p, m, 8 * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(p, m + 56 * PAGE, 8 * PAGE), 0);
	CHECK(absent(m) && absent(m + 60 * PAGE));
	check_range(m, 8, 16);
	check_range(m, 32, 56);

	/* a new region reuses the ids and swap of the hole: zeros only */
	char *n;
	CHECK_EQ(bypass_pager_map(p, 24 * PAGE, 0, (void **)&n), 0);
	for (uint64_t i = 0; i < 24; i++)
		if (!page_zero(n + i * PAGE))
			TEST_FAIL("new region page %lu is not zero", (unsigned long)i);
	for (uint64_t i = 0; i < 24; i++)
		fill_page(n + i * PAGE, 1000 + i, 1);
	check_range(m, 8, 16);
	check_range(m, 32, 56);
	for (uint64_t i = 0; i < 24; i++)
		CHECK(page_ok(n + i * PAGE, 1000 + i, 1));

	CHECK_EQ(bypass_pager_unmap(p, m + 8 * PAGE, 8 * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(p, m + 32 * PAGE, 24 * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(p, n, 24 * PAGE), 0);
	st = stats_of(p);
	CHECK_EQ(st.mapped_pages, 0);
	CHECK_EQ(st.resident_pages, 0);
	CHECK_EQ(st.swap_used, 0);
	CHECK_EQ(st.pinned_pages, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/unmap");
}
