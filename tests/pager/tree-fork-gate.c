/* SPDX-License-Identifier: MIT */
/*
 * tree-fork-gate: a fork while another thread of the process waits for
 * room in the process tree's budget (issue 32, item 3: the tree scope).
 *
 * A fork that keeps the pager (share.c) closes the pager's gate and waits
 * until no thread is inside it; a thread serving a fault is inside while
 * it reserves room.  In a process's own budget a reservation re-checks the
 * gate at every turn and, a fork being prepared, takes its room at once
 * (above the budget, counted).  A reservation in the tree's budget
 * (bp_tree_reserve) checked it only at its entry: one already waiting when
 * the fork began went on waiting for room, and the fork waited for it; with
 * nobody to give room back the fault failed after 10 s (SIGBUS) and only
 * then did the fork go on.
 *
 * Made deterministic through the internal API (one ledger, this process's
 * pager joined to it): the budget is filled, two forked children (each
 * charged with its copies of the parent's pages) stop themselves
 * (SIGSTOP: their ledger threads answer nothing), the parent unmaps its
 * pages (nothing of its own to evict), so the tree stands above its budget
 * by more than the slack: a thread that faults a new page then waits in
 * bp_tree_reserve, asking the stopped children again and again.  Once the
 * ledger counts its asks, the main thread forks.  The fault must be served
 * (its page reads back what the thread wrote) and never fail: a SIGBUS
 * (the reservation gave up, -ENOMEM) fails the test.  No timing in any
 * check.  Not under ThreadSanitizer: the stopped children keep the pager
 * and start their ledger threads, and it refuses new threads in the child
 * of a threaded process.
 */
#include "tree-util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define BUDGET_PAGES 256ul /* slack: 64 pages (the ledger's least) */

static char *fresh;
static atomic_int touched;

static void on_bus(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: pager/tree-fork-gate: the fault that waited for "
				"the tree's room failed (SIGBUS) while a fork was prepared\n";
	ssize_t w = write(2, m, sizeof(m) - 1);
	(void)w;
	_exit(1);
}

static void *toucher(void *arg)
{
	(void)arg;
	fill_page(fresh, 0, 7); /* waits in bp_tree_reserve */
	atomic_store(&touched, 1);
	return NULL;
}

/* A child that keeps the pager (charged with its copies), stopped. */
static pid_t stopped_child(void)
{
	pid_t c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		raise(SIGSTOP);
		_exit(0);
	}
	int st;
	while (waitpid(c, &st, WUNTRACED) < 0)
		CHECK_EQ(errno, EINTR);
	CHECK(WIFSTOPPED(st));
	return c;
}

int main(void)
{
	test_timeout(120);
#if BP_TSAN
	SKIP("ThreadSanitizer: a child that keeps the pager starts its ledger thread, "
	     "and new threads after a threaded process's fork are refused");
#endif
	/* before any pager: core chains the faults it cannot resolve here */
	struct sigaction sa = { .sa_handler = on_bus };
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGBUS, &sa, NULL), 0);
	(void)tmpdir();

	int fd;
	struct bp_ledger *L = tree_ledger(BUDGET_PAGES, &fd);
	bypass_pager *p = tree_pager(L, BYPASS_PAGER_UPCALL, BUDGET_PAGES, 64 << 20);
	CHECK(p);

	char *a;
	CHECK_EQ(bypass_pager_map(p, BUDGET_PAGES * PAGE, 0, (void **)&a), 0);
	for (uint64_t i = 0; i < BUDGET_PAGES; i++)
		fill_page(a + i * PAGE, i, 1);
	pid_t c1 = stopped_child(), c2 = stopped_child();
	CHECK_EQ(bypass_pager_unmap(p, a, BUDGET_PAGES * PAGE), 0);
	struct bp_tree_stats st;
	bp_tree_stats(p, &st);
	if (st.total_pages <= st.budget_pages + st.slack_pages)
		TEST_FAIL("set-up: the tree holds %lu pages, not above its budget %lu + slack %lu",
			  (unsigned long)st.total_pages, (unsigned long)st.budget_pages,
			  (unsigned long)st.slack_pages);
	uint64_t asks0 = st.asks, over0 = st.over_pages;

	CHECK_EQ(bypass_pager_map(p, 16 * PAGE, 0, (void **)&fresh), 0);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, toucher, NULL), 0);
	/* the thread waits for room: it has asked a stopped child */
	for (;;) {
		bp_tree_stats(p, &st);
		if (st.asks > asks0)
			break;
		CHECK(!atomic_load(&touched)); /* no room, so no page yet */
		sched_yield();
	}
	pid_t c3 = fork(); /* waits for the thread to leave the gate */
	CHECK(c3 >= 0);
	if (c3 == 0)
		_exit(0);
	wait_child(c3);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK(atomic_load(&touched));
	CHECK(page_ok(fresh, 0, 7));
	bp_tree_stats(p, &st);
	CHECK(st.over_pages > over0); /* taken above the budget, counted */
	printf("  a fault waiting for the tree's room (%lu asks) took it when the fork "
	       "began; the fork went on\n",
	       (unsigned long)(st.asks - asks0));

	CHECK_EQ(kill(c1, SIGKILL), 0);
	CHECK_EQ(kill(c2, SIGKILL), 0);
	CHECK_EQ(waitpid(c1, NULL, 0), c1);
	CHECK_EQ(waitpid(c2, NULL, 0), c2);
	CHECK_EQ(bypass_pager_unmap(p, fresh, 16 * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tree_close(L, fd);
	tmpdir_cleanup();
	return test_pass("pager/tree-fork-gate");
}
