/* SPDX-License-Identifier: MIT */
/*
 * A thread's write-backs in two pagers: settling one pager
 * (bp_evict_settle_mine) keeps the other's "maybe" (bp_evict_mine_maybe),
 * which the pager preload's epoll wrappers ask before they wait (issue 32,
 * item 3).  With one per-thread flag, settling pager A cleared it while
 * this thread's write-backs were still in flight in pager B.  Upcall mode:
 * the faulting thread (this one) submits the write-backs itself.
 */
#include "util.h"
#include "pager/evict.h"
#include "pager/writeback.h"

#define BUDGET (16 * PAGE)
#define NPAGES 128ul

/* Fill a region of p past its budget: this thread evicts and writes back. */
static char *fill(bypass_pager *p)
{
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	return m;
}

int main(void)
{
	test_timeout(60);
	bypass_pager *a = new_pager(BYPASS_PAGER_UPCALL, BUDGET, NPAGES * PAGE);
	bypass_pager *b = new_pager(BYPASS_PAGER_UPCALL, BUDGET, NPAGES * PAGE);
	char *ma = fill(a), *mb = fill(b);
	/* the last round's writes in b are not reaped until b's next round
	 * (only this thread evicts there): in flight, and this thread's,
	 * unless that round found them all done; then another pass */
	for (int pass = 0; pass < 20 && !bp_wb_mine(b, false); pass++)
		for (uint64_t i = 0; i < NPAGES; i++)
			fill_page(mb + i * PAGE, i, 1);
	if (!bp_wb_mine(b, false))
		SKIP("no write-back of this thread left in flight in the second pager");
	CHECK(bp_evict_mine_maybe());
	bp_evict_settle_mine(a);
	CHECK(!bp_wb_mine(a, false));
	if (!bp_evict_mine_maybe())
		TEST_FAIL("settling the first pager forgot this thread's write-backs in the second");
	bp_evict_settle_mine(b);
	CHECK(!bp_wb_mine(b, false));
	CHECK(!bp_evict_mine_maybe());
	for (uint64_t i = 0; i < NPAGES; i++)
		CHECK(page_ok(ma + i * PAGE, i, 1) && page_ok(mb + i * PAGE, i, 1));
	CHECK_EQ(bypass_pager_unmap(a, ma, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(b, mb, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(a), 0);
	CHECK_EQ(bypass_pager_destroy(b), 0);
	return test_pass("pager/writeback-mine");
}
