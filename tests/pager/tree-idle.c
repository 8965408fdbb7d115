/* SPDX-License-Identifier: MIT */
/*
 * tree-idle: room in the process tree's budget is taken from an idle
 * member first, whoever holds more (issue 32, item 3: "a process that
 * needs room takes it from the tree's coldest pages").
 *
 * A member that has needed no room for 100 ms is idle (tree.c, IDLE_NS);
 * its pages are the tree's coldest at a process's grain.  Before, a member
 * needing room asked only a member holding more than itself and otherwise
 * evicted its own: Redis's idle server and its BGSAVE child split the
 * budget in half for the whole save, the child reading its copy of the
 * data set with half the memory (1.65x the faults and CPU of the
 * per-process scope).
 *
 * Two pagers of this process on one ledger (as the preload joins a
 * process's pager; tree-threads does the same): the first fills 100 pages
 * of a 256-page budget and then does nothing for 300 ms (longer than
 * IDLE_NS: idle by definition, not a timing check); the second then writes
 * 300 pages, so it holds the most when the tree fills.  Checked: the
 * second asked the first (its slot counts the asks it made: with the old
 * rule it evicted its own pages and asked nobody), the first's ledger
 * thread answered and evicted pages for it, the tree stayed within its budget +
 * slack, and every page of both reads back.  No timing in any check.
 * TEST_LABELS: threads
 */
#include "tree-util.h"

#include <sched.h>
#include <time.h>

#define BUDGET_PAGES 256ul /* slack: 64 pages (the ledger's least) */
#define IDLE_PAGES 100ul
#define BUSY_PAGES 300ul

int main(void)
{
	test_timeout(120);
	(void)tmpdir();
	int fd;
	struct bp_ledger *L = tree_ledger(BUDGET_PAGES, &fd);
	bypass_pager *idle = tree_pager(L, BYPASS_PAGER_UPCALL, BUDGET_PAGES, 16 << 20);
	bypass_pager *busy = tree_pager(L, BYPASS_PAGER_UPCALL, BUDGET_PAGES, 16 << 20);
	CHECK(idle && busy);
	char *a, *b;
	CHECK_EQ(bypass_pager_map(idle, IDLE_PAGES * PAGE, 0, (void **)&a), 0);
	CHECK_EQ(bypass_pager_map(busy, BUSY_PAGES * PAGE, 0, (void **)&b), 0);
	for (uint64_t i = 0; i < IDLE_PAGES; i++)
		fill_page(a + i * PAGE, i, 1);
	struct bp_tree_stats si, sb;
	bp_tree_stats(idle, &si);
	CHECK_EQ(si.total_pages, IDLE_PAGES); /* fitted: no room was needed */

	struct timespec ts = { 0, 300000000 }; /* > IDLE_NS: the first is idle now */
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	for (uint64_t i = 0; i < BUSY_PAGES; i++)
		fill_page(b + i * PAGE, i, 2);
	bp_tree_stats(busy, &sb);
	if (!sb.asks_made)
		TEST_FAIL("the member needing room (holding %lu pages) asked nobody: it evicted "
			  "its own %lu pages instead of the idle member's",
			  (unsigned long)stats_of(busy).resident_pages,
			  (unsigned long)sb.own_pages);
	for (;;) { /* its ledger thread answers (asked: deterministic) */
		bp_tree_stats(idle, &si);
		if (si.answered)
			break;
		sched_yield();
	}
	/* pages its thread dropped or put under write-back; the latter stay
	 * resident until their writes are reaped, which may be later (not
	 * checked: it failed once in ctest -j2, resident still 100) */
	CHECK(si.served_pages > 0);
	uint64_t idle_resident = stats_of(idle).resident_pages;
	if (sb.peak_pages > sb.budget_pages + sb.slack_pages)
		TEST_FAIL("the tree's peak %lu pages is above its budget %lu + slack %lu",
			  (unsigned long)sb.peak_pages, (unsigned long)sb.budget_pages,
			  (unsigned long)sb.slack_pages);
	for (uint64_t i = 0; i < IDLE_PAGES; i++)
		if (!page_ok(a + i * PAGE, i, 1))
			TEST_FAIL("idle member's page %lu does not read back", (unsigned long)i);
	for (uint64_t i = 0; i < BUSY_PAGES; i++)
		if (!page_ok(b + i * PAGE, i, 2))
			TEST_FAIL("busy member's page %lu does not read back", (unsigned long)i);
	printf("  the busy member asked the idle one %lu time(s) (own pages evicted %lu); the "
	       "idle one served %lu pages (%lu of its %lu resident then)\n",
	       (unsigned long)sb.asks_made, (unsigned long)sb.own_pages,
	       (unsigned long)si.served_pages, (unsigned long)idle_resident,
	       IDLE_PAGES);
	CHECK_EQ(bypass_pager_unmap(idle, a, IDLE_PAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(busy, b, BUSY_PAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(busy), 0);
	CHECK_EQ(bypass_pager_destroy(idle), 0);
	tree_close(L, fd);
	tmpdir_cleanup();
	return test_pass("pager/tree-idle");
}
