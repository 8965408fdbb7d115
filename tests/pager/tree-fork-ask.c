/* SPDX-License-Identifier: MIT */
/*
 * tree-fork-ask: the process tree's ledger asks a forked child for room
 * while the child's fork handlers are still running (issue 32, item 3; the
 * Redis BGSAVE hang of the tree scope, fixed by a22df12).
 *
 * A child that keeps the pager (share.c) takes a slot in the tree's ledger
 * in the pager's fork child handler (bp_tree_child), charged with its
 * copies of the parent's resident pages, so it is at once the member
 * holding the most, and the parent's next fault asks it to evict.  Its
 * ledger thread must not serve that ask before the rest of the handler has
 * made the pager the child's own: until then its ring is the parent's (the
 * memory of the rings is shared with it), its write-back records and
 * process descriptor are the parent's, its userfaultfds the parent's
 * (write-protecting through them protects the parent's pages), and the
 * re-arming resets what an eviction in flight counts, without the evict
 * lock.  Before a22df12 the thread started in bp_tree_child; asked at once
 * it evicted during the re-arming, and Redis's child waited for ever for
 * write-backs that were never in its new ring (3 of 7 runs).
 *
 * Made deterministic with the test-only hook at the end of bp_tree_child
 * (bp_tree_test_child_hook, NULL in every other program): in the child it
 * waits until the parent has asked (the ledger counts the ask); then, if a
 * thread of the child already runs (/proc/self/task: only the forking
 * thread exists in a fork child until one is started, and the pager's own
 * threads start after this point), it waits until that thread has served
 * the ask, and records that it did.  With the fix no thread runs there, the
 * ask waits in the ledger until the thread starts after the handlers, and
 * the child must find it served no ask early.  The parent makes sure the
 * child is asked: it waits until the child's slot is charged, unmaps half
 * of its pages (the child holds more than it), and faults a new page with
 * the tree above its budget + slack.  Checked: the child's thread served
 * no ask inside the handlers; every page reads back in both processes (the
 * child's evicted by its thread); both processes end.  Upcall and handler
 * modes.  No timing in any check (a hang is caught by the test's alarm).
 * Not under ThreadSanitizer: a child that keeps the pager starts its
 * ledger thread, and new threads after a threaded process's fork are
 * refused there (as tree-fork-gate).
 */
#include "tree-util.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define BUDGET_PAGES 256ul /* slack: 64 pages (the ledger's least) */

static uint64_t asks_at_fork;
static uint64_t served_early; /* in the child: asks served inside the handler */
static int threads_in_handler;

static int threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* In the fork child, inside the pager's fork child handler, after
 * bp_tree_child took the child's slot. */
static void child_hook(struct bypass_pager *p)
{
	alarm(120); /* the child's own guard: alarms are not inherited */
	struct bp_tree_stats st;
	for (;;) { /* the parent asks us: we hold the most */
		bp_tree_stats(p, &st);
		if (st.asks > asks_at_fork)
			break;
		sched_yield();
	}
	threads_in_handler = threads_now();
	if (threads_in_handler == 1)
		return; /* nothing of ours can serve it before the handlers end */
	for (;;) { /* a thread of ours runs already: it serves the ask now */
		bp_tree_stats(p, &st);
		if (st.answered)
			break;
		sched_yield();
	}
	served_early = st.answered;
}

static void child_main(bypass_pager *p, char *a)
{
	if (threads_in_handler < 1)
		TEST_FAIL("child: /proc/self/task could not be read in the fork handler");
	if (served_early)
		TEST_FAIL("child: its ledger thread served %lu ask(s) inside the fork's handlers, "
			  "before the pager was re-armed (its ring, write-back records, process "
			  "descriptor and userfaultfds still the parent's)",
			  (unsigned long)served_early);
	for (uint64_t i = 0; i < BUDGET_PAGES; i++)
		if (!page_ok(a + i * PAGE, i, 1))
			TEST_FAIL("child: page %lu does not read back what the parent wrote",
				  (unsigned long)i);
	for (uint64_t i = 0; i < BUDGET_PAGES; i++)
		fill_page(a + i * PAGE, i, 2);
	for (uint64_t i = 0; i < BUDGET_PAGES; i++)
		if (!page_ok(a + i * PAGE, i, 2))
			TEST_FAIL("child: page %lu is not what the child wrote", (unsigned long)i);
	/* the ask waiting in our slot is served once our thread runs (after
	 * the handlers): a thread that never starts hangs here (the alarm) */
	for (;;) {
		struct bp_tree_stats st;
		bp_tree_stats(p, &st);
		if (st.answered)
			break;
		sched_yield();
	}
	CHECK_EQ(bypass_pager_destroy(p), 0);
	_exit(0);
}

static void run(int mode)
{
	int fd;
	struct bp_ledger *L = tree_ledger(BUDGET_PAGES, &fd);
	bypass_pager *p = tree_pager(L, mode, BUDGET_PAGES, 64 << 20);
	if (!p) {
		tree_close(L, fd);
		return;
	}

	char *a, *fresh;
	CHECK_EQ(bypass_pager_map(p, BUDGET_PAGES * PAGE, 0, (void **)&a), 0);
	for (uint64_t i = 0; i < BUDGET_PAGES; i++)
		fill_page(a + i * PAGE, i, 1);
	struct bp_tree_stats st;
	bp_tree_stats(p, &st);
	uint32_t own = (uint32_t)st.total_pages; /* every page resident, ours */
	asks_at_fork = st.asks;
	served_early = 0;
	threads_in_handler = 0;
	bp_tree_test_child_hook = child_hook;
	pid_t c1 = fork();
	CHECK(c1 >= 0);
	if (c1 == 0)
		child_main(p, a);
	bp_tree_test_child_hook = NULL;

	/* the child's slot, charged with its copies (in its fork handler) */
	for (;;) {
		bp_tree_stats(p, &st);
		if (st.members == 2 && st.total_pages >= 2ull * own)
			break;
		int s;
		if (waitpid(c1, &s, WNOHANG) == c1)
			TEST_FAIL("%s: the child ended (status %#x) before its slot was charged",
				  mode_name(mode), s);
		sched_yield();
	}
	/* the child holds the most: half of ours unmapped, then a new page
	 * with the tree above its budget + slack asks the child for room */
	CHECK_EQ(bypass_pager_unmap(p, a + BUDGET_PAGES / 2 * PAGE, BUDGET_PAGES / 2 * PAGE), 0);
	bp_tree_stats(p, &st);
	if (st.total_pages <= st.budget_pages + st.slack_pages)
		TEST_FAIL("set-up: the tree holds %lu pages, not above its budget %lu + slack %lu",
			  (unsigned long)st.total_pages, (unsigned long)st.budget_pages,
			  (unsigned long)st.slack_pages);
	CHECK_EQ(bypass_pager_map(p, 16 * PAGE, 0, (void **)&fresh), 0);
	fill_page(fresh, 0, 9);
	CHECK(page_ok(fresh, 0, 9));
	for (uint64_t i = 0; i < BUDGET_PAGES / 2; i++)
		if (!page_ok(a + i * PAGE, i, 1))
			TEST_FAIL("%s: parent: page %lu does not read back", mode_name(mode),
				  (unsigned long)i);
	bp_tree_stats(p, &st);
	uint64_t asks = st.asks - asks_at_fork;
	wait_child(c1);
	printf("  %s: the child was asked inside its fork handler (%lu asks); its ledger "
	       "thread served them only once its pager was its own\n",
	       mode_name(mode), (unsigned long)asks);
	CHECK_EQ(bypass_pager_unmap(p, fresh, 16 * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(p, a, BUDGET_PAGES / 2 * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tree_close(L, fd);
}

int main(void)
{
	test_timeout(240);
#if BP_TSAN
	SKIP("ThreadSanitizer: a child that keeps the pager starts its ledger thread, "
	     "and new threads after a threaded process's fork are refused");
#endif
	(void)tmpdir();
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tree-fork-ask");
}
