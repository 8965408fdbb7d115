/* SPDX-License-Identifier: MIT */
/*
 * What a forked child gets: not the regions (they are MADV_DONTFORK), so an
 * access is a SIGSEGV, never stale or zero-filled data; every call on the
 * inherited pager but destroy returns -ECHILD; the child can create and use
 * a pager of its own.  The parent's data and pager are unaffected, also when
 * it forks while another thread is faulting and evicting.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>

#define BUDGET_PAGES 16ul
#define NPAGES 96ul

static char *m;
static _Atomic int stop;

/* Touching a in a grandchild must kill it (SIGSEGV; under a sanitizer, its
 * report and a non-zero exit), never give it data. */
static void access_dies(volatile char *a)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char c = *a;
		printf("read %d from a region in a forked child\n", c);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
	CHECK(!WIFSIGNALED(st) || WTERMSIG(st) == SIGSEGV);
}

static void child(bypass_pager *p, int mode)
{
	/* the inherited pager */
	void *x;
	CHECK_ERR(bypass_pager_map(p, PAGE, 0, &x), -ECHILD);
	CHECK_ERR(bypass_pager_unmap(p, m, PAGE), -ECHILD);
	CHECK_ERR(bypass_pager_pin(p, m, PAGE, 0), -ECHILD);
	CHECK_ERR(bypass_pager_unpin(p, m, PAGE), -ECHILD);
	/* resident, evicted and untouched pages alike are absent */
	CHECK(absent(m));
	CHECK(absent(m + (NPAGES - 1) * PAGE));
	CHECK(absent(m + (NPAGES / 2) * PAGE));
	access_dies(m);
	CHECK_EQ(bypass_pager_destroy(p), 0);

	/* a pager of its own (upcall: ThreadSanitizer refuses new threads
	 * after a fork of a multi-threaded process) */
	(void)mode;
	bypass_pager *q = new_pager(BYPASS_PAGER_UPCALL, BUDGET_PAGES * PAGE, NPAGES * PAGE);
	char *n;
	CHECK_EQ(bypass_pager_map(q, NPAGES * PAGE, 0, (void **)&n), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(n + i * PAGE, i, 99);
	for (uint64_t i = 0; i < NPAGES; i++)
		CHECK(page_ok(n + i * PAGE, i, 99));
	CHECK_EQ(bypass_pager_destroy(q), 0);
	_exit(0);
}

static void *faulter(void *arg)
{
	(void)arg;
	uint64_t seed = 42;
	while (!atomic_load(&stop)) {
		uint64_t i = xorshift(&seed) % (NPAGES / 2);
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("parent page %lu wrong while forking", (unsigned long)i);
		fill_page(m + i * PAGE, i, 1);
	}
	return NULL;
}

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, NPAGES * PAGE);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES / 2; i++)
		fill_page(m + i * PAGE, i, 1);
	(void)tmpdir();

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child(p, mode);
	wait_child(pid);

	/* again, while a thread faults and evicts */
	atomic_store(&stop, 0);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, faulter, NULL), 0);
	for (int k = 0; k < 5; k++) {
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			child(p, mode);
		wait_child(pid);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);

	for (uint64_t i = 0; i < NPAGES / 2; i++)
		CHECK(page_ok(m + i * PAGE, i, 1));
	for (uint64_t i = NPAGES / 2; i < NPAGES; i++)
		CHECK(page_zero(m + i * PAGE));
	CHECK(stats_of(p).resident_peak <= BUDGET_PAGES);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/fork");
}
