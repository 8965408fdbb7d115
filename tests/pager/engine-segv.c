/* SPDX-License-Identifier: MIT */
/*
 * The adaptive engine's SIGSEGV rule (bp_engine_segv) across regions at a
 * recycled address.  While a region moves between engines it is PROT_NONE,
 * and a thread that faults on it then takes a SIGSEGV that the pager
 * retries; the same access failing again with no switch in between is a
 * real one (the program's own bug), which must reach the program.  The
 * record of the last retry once named the region's own switch count, which
 * a region made at the same address (here: the piece an unmap leaves)
 * counts from 0 again, so the first SIGSEGV of a switch of the new region
 * passed for a real one and killed the program (policy-unmap's rare
 * segfault).  Deterministic: the switches are forced one at a time and the
 * rule is asked directly.
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_engine_force, bp_engine_segv, the table */

#define BUDGET (16 * PAGE)
#define NPAGES 8ul

static struct region *region_at(uintptr_t a)
{
	unsigned idx = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), a);
	bp_tab_leave(idx);
	return r;
}

int main(void)
{
	test_timeout(60);
	struct bypass_pager_config c = { .budget = BUDGET, .swap_size = 4 * NPAGES * PAGE,
					 .mode = BYPASS_PAGER_ADAPTIVE };
	bypass_pager *p = try_pager(&c);
	CHECK(p != NULL);
	CHECK_EQ(bp_engine_force(p, BP_ENGINE_UPCALL), 0); /* no switch but ours */
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	uintptr_t x = (uintptr_t)m + 4 * PAGE; /* in the piece that stays */

	/* one switch of the first region (to the pool: its count goes 0 -> 2) */
	CHECK_EQ(bp_engine_force(p, BP_ENGINE_POOL), 0);
	struct region *r1 = region_at(x);
	CHECK(r1 != NULL);
	CHECK_EQ(atomic_load(&r1->switch_seq), 2u);
	/* a SIGSEGV at x after that switch ended: retried; the same again
	 * with no switch between: real */
	CHECK_EQ(bp_engine_segv(r1, x), 1);
	CHECK_EQ(bp_engine_segv(r1, x), 0);
	CHECK_EQ(bp_engine_segv(r1, x + PAGE), 1); /* another address: retried */
	CHECK_EQ(bp_engine_segv(r1, x), 1);

	/* unmap the first page: the rest is a new region at the same
	 * addresses, its count from 0; one switch takes it to 2 as well */
	CHECK_EQ(bypass_pager_unmap(p, m, PAGE), 0);
	struct region *r2 = region_at(x);
	CHECK(r2 != NULL && r2 != r1);
	CHECK_EQ(atomic_load(&r2->switch_seq), 0u);
	CHECK_EQ(bp_engine_force(p, BP_ENGINE_UPCALL), 0);
	CHECK_EQ(atomic_load(&r2->switch_seq), 2u);
	/* the first SIGSEGV at x since that switch: retried, whatever the
	 * old region's record said (the bug: taken for a real one) */
	CHECK_EQ(bp_engine_segv(r2, x), 1);
	CHECK_EQ(bp_engine_segv(r2, x), 0);

	/* every page of the piece still right, served after both switches */
	for (size_t i = 1; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu wrong after the switches", i);
	CHECK_EQ(bypass_pager_unmap(p, m + PAGE, (NPAGES - 1) * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/engine-segv");
}
