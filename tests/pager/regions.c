/* SPDX-License-Identifier: MIT */
/*
 * Several regions per pager and several pagers per process, with separate
 * budgets: interleaved writes beyond every budget, then everything is read
 * back; each pager stays within its own budget.  Destroying a pager unmaps
 * its regions and leaves the other pager's data alone.
 */
#include "util.h"

#define NREG 3

int main(void)
{
	test_timeout(60);
	const uint64_t budget[2] = { 24, 40 }, len[NREG] = { 40, 64, 8 };
	bypass_pager *p[2];
	char *m[2][NREG];
	p[0] = new_pager(BYPASS_PAGER_UPCALL, budget[0] * PAGE, 256 * PAGE);
	p[1] = new_pager(BYPASS_PAGER_UPCALL, budget[1] * PAGE, 256 * PAGE);
	for (int k = 0; k < 2; k++)
		for (int r = 0; r < NREG; r++)
			CHECK_EQ(bypass_pager_map(p[k], len[r] * PAGE, 0, (void **)&m[k][r]), 0);
	/* round-robin over pagers and regions */
	for (uint64_t i = 0; i < 64; i++)
		for (int k = 0; k < 2; k++)
			for (int r = 0; r < NREG; r++)
				if (i < len[r])
					fill_page(m[k][r] + i * PAGE, (uint64_t)(k * 1000 + r * 100) + i, 3);
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < 2; k++)
			for (int r = 0; r < NREG; r++)
				for (uint64_t i = 0; i < len[r]; i++)
					if (!page_ok(m[k][r] + i * PAGE, (uint64_t)(k * 1000 + r * 100) + i, 3))
						TEST_FAIL("pager %d region %d page %lu", k, r, (unsigned long)i);
	for (int k = 0; k < 2; k++) {
		struct bypass_pager_stats st = stats_of(p[k]);
		CHECK(st.resident_peak <= budget[k]);
		CHECK_EQ(st.mapped_pages, 112);
		CHECK(st.evictions > 0);
	}
	CHECK_EQ(bypass_pager_destroy(p[0]), 0);
	for (int r = 0; r < NREG; r++)
		for (uint64_t i = 0; i < len[r]; i++)
			CHECK(page_ok(m[1][r] + i * PAGE, (uint64_t)(1000 + r * 100) + i, 3));
	CHECK_EQ(bypass_pager_destroy(p[1]), 0);
	tmpdir_cleanup();
	return test_pass("pager/regions");
}
