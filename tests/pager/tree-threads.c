/* SPDX-License-Identifier: MIT */
/*
 * tree-threads: two pagers of one process share one process-tree ledger
 * (issue 32, item 3; through the internal API, as the preload joins a
 * process's pager), and threads fault in both at once: each pager's
 * faulting threads reserve room in the tree, evict their own pages or ask
 * the other pager's ledger thread to evict its pages, while that pager's
 * own threads fault too.  Each region is 1.5 budgets, so the tree is
 * always full.  Checked: the ledger's peak never went above the budget +
 * its slack (no fork here: nothing is charged above it but the bounded
 * fallback), its total at the end is what the two pagers hold, and every
 * page reads back the last version its thread wrote.  Both fault modes
 * (handler mode where it is allowed).  No timing in any check.
 * TEST_LABELS: threads
 */
#include "tree-util.h"

#include <pthread.h>

#define BUDGET_PAGES 256ul /* slack: 64 pages (the ledger's least) */
#define NPAGES 384ul       /* per pager: 1.5 budgets */
#define NTHR 2             /* per pager */
#define ROUNDS 4

struct job {
	char *m;
	uint64_t t;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	for (uint64_t v = 1; v <= ROUNDS; v++) {
		for (uint64_t i = j->t; i < NPAGES; i += NTHR) {
			if (v > 1 && !page_ok(j->m + i * PAGE, i, v - 1))
				TEST_FAIL("page %lu is not version %lu", (unsigned long)i,
					  (unsigned long)(v - 1));
			fill_page(j->m + i * PAGE, i, v);
		}
	}
	return NULL;
}

static void run(int mode)
{
	int fd;
	struct bp_ledger *L = tree_ledger(BUDGET_PAGES, &fd);
	bypass_pager *p[2];
	char *m[2];
	for (int k = 0; k < 2; k++) {
		p[k] = tree_pager(L, mode, BUDGET_PAGES, 4 * NPAGES * PAGE);
		if (!p[k]) {
			CHECK_EQ(k, 0);
			tree_close(L, fd);
			return;
		}
		CHECK_EQ(bypass_pager_map(p[k], NPAGES * PAGE, 0, (void **)&m[k]), 0);
	}
	struct bp_tree_stats st;
	bp_tree_stats(p[0], &st);
	CHECK_EQ(st.members, 2);
	pthread_t t[2 * NTHR];
	struct job j[2 * NTHR];
	for (int k = 0; k < 2 * NTHR; k++) {
		j[k] = (struct job){ m[k / NTHR], (uint64_t)(k % NTHR) };
		CHECK_EQ(pthread_create(&t[k], NULL, worker, &j[k]), 0);
	}
	for (int k = 0; k < 2 * NTHR; k++)
		CHECK_EQ(pthread_join(t[k], NULL), 0);
	for (int k = 0; k < 2; k++)
		for (uint64_t i = 0; i < NPAGES; i++)
			if (!page_ok(m[k] + i * PAGE, i, ROUNDS))
				TEST_FAIL("%s: pager %d page %lu is not version %d", mode_name(mode),
					  k, (unsigned long)i, ROUNDS);
	bp_tree_stats(p[0], &st);
	uint64_t held = stats_of(p[0]).resident_pages + stats_of(p[1]).resident_pages;
	if (st.peak_pages > st.budget_pages + st.slack_pages)
		TEST_FAIL("%s: the tree's peak %lu pages is above its budget %lu + slack %lu",
			  mode_name(mode), (unsigned long)st.peak_pages,
			  (unsigned long)st.budget_pages, (unsigned long)st.slack_pages);
	CHECK_EQ(st.total_pages, held);
	struct bp_tree_stats st1;
	bp_tree_stats(p[1], &st1);
	printf("  %s: peak %lu of %lu + %lu pages, %lu asks (%lu timed out), %lu over the "
	       "budget, answered %lu + %lu\n",
	       mode_name(mode), (unsigned long)st.peak_pages, (unsigned long)st.budget_pages,
	       (unsigned long)st.slack_pages, (unsigned long)st.asks,
	       (unsigned long)st.ask_timeouts, (unsigned long)st.over_pages,
	       (unsigned long)st.answered, (unsigned long)st1.answered);
	for (int k = 0; k < 2; k++) {
		CHECK_EQ(bypass_pager_unmap(p[k], m[k], NPAGES * PAGE), 0);
		CHECK_EQ(bypass_pager_destroy(p[k]), 0);
	}
	tree_close(L, fd);
}

int main(void)
{
	test_timeout(240);
	(void)tmpdir();
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tree-threads");
}
