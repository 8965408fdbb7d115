/* SPDX-License-Identifier: MIT */
/*
 * Refault activation (lru.c, bp_lru_add_refault: Linux's workingset rule).
 * A page read back from swap whose refault distance (pages evicted since it
 * was) is within the active lists' length goes to the active list; one read
 * back later goes to the inactive list, like any new page.  On GNU sort
 * under the preload (docs/pager.md, "Thrashing without waste") the rule is
 * worth about a sixth of the pages read: without it, 187k pages read
 * against 158k.  Checked here on resident pages put back on the lists
 * through the function the swap-in path calls, with the active lists made
 * 40 pages long: distances 0, 10 and 40 activate, 41 and 5000 do not; a
 * page on a list already is left where it is.
 */
#include "util.h"
#include "pager/pager_internal.h"

#define BUDGET 256ul /* pages: high watermark 192, no eviction below */
#define NPAGES 100ul
#define NACTIVE 40u

static uint32_t w_of(bypass_pager *p, uint32_t id)
{
	return atomic_load(&pg_of(p, id)->w);
}

int main(void)
{
	test_timeout(60);
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, 4 * BUDGET * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	CHECK_EQ(stats_of(p).evictions, 0); /* all resident, on the inactive lists */

	unsigned ti = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), (uintptr_t)m);
	CHECK(r != NULL);
	uint32_t id0 = region_id(r, (uintptr_t)m);
	bp_tab_leave(ti);
	for (uint32_t i = 0; i < NPAGES; i++) {
		uint32_t w = w_of(p, id0 + i);
		CHECK((w & PW_LRU) && !(w & PW_ACTIVE));
	}
	/* the active lists: NACTIVE pages */
	for (uint32_t i = 0; i < NACTIVE; i++) {
		bp_lru_del(p, id0 + i);
		bp_lru_add(p, id0 + i, true);
		CHECK(w_of(p, id0 + i) & PW_ACTIVE);
	}

	/* distance within the active lists' length: active */
	const uint32_t near[] = { 0, 10, NACTIVE };
	const uint32_t far[] = { NACTIVE + 1, 5000 };
	uint32_t id = id0 + 50;
	for (unsigned k = 0; k < sizeof(near) / sizeof(near[0]); k++, id++) {
		bp_lru_del(p, id);
		CHECK(!(w_of(p, id) & PW_LRU));
		bp_lru_add_refault(p, id, near[k]);
		uint32_t w = w_of(p, id);
		if (!(w & PW_LRU) || !(w & PW_ACTIVE))
			TEST_FAIL("a page read back at distance %u (active lists %u pages) is %s",
				  near[k], NACTIVE + k, (w & PW_LRU) ? "inactive" : "on no list");
	}
	/* beyond it: inactive (the active lists are 43 pages long now) */
	for (unsigned k = 0; k < sizeof(far) / sizeof(far[0]); k++, id++) {
		bp_lru_del(p, id);
		bp_lru_add_refault(p, id, far[k] + 3);
		uint32_t w = w_of(p, id);
		if (!(w & PW_LRU) || (w & PW_ACTIVE))
			TEST_FAIL("a page read back at distance %u (active lists %u pages) is %s",
				  far[k] + 3, NACTIVE + 3, (w & PW_LRU) ? "active" : "on no list");
	}
	/* a page on a list already stays where it is */
	bp_lru_add_refault(p, id0 + 60, 0);
	CHECK(!(w_of(p, id0 + 60) & PW_ACTIVE));
	bp_lru_add_refault(p, id0 + 1, 5000);
	CHECK(w_of(p, id0 + 1) & PW_ACTIVE);

	/* the pager still works on them: evicted and read back, data intact */
	char *scan;
	CHECK_EQ(bypass_pager_map(p, 3 * BUDGET * PAGE, 0, (void **)&scan), 0);
	for (size_t i = 0; i < 3 * BUDGET; i++)
		fill_page(scan + i * PAGE, 1000 + i, 1);
	for (size_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu lost its data", i);
	CHECK(stats_of(p).faults_swapin > 0);
	CHECK(stats_of(p).resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	TEST_LOG("refault activation: distances 0-%u active, %u and %u inactive", NACTIVE,
		 NACTIVE + 4, 5003u);
	return 0;
}
