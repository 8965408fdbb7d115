/* SPDX-License-Identifier: MIT */
/*
 * What a forked child gets: the parent's regions, every byte (resident,
 * evicted and never-touched pages alike), as private memory: its writes
 * are its own, the parent's later writes and evictions do not reach it, it
 * can fork again.  Every call on the inherited pager but destroy returns
 * -ECHILD; the child can create and use a pager of its own.  The parent's
 * data, budget and counters stay right: it is back within its budget when
 * fork returns, also when it forks while another thread faults and evicts,
 * and with several children alive at once.  posix_spawn (no fork handlers)
 * works beside the regions.  Upcall and handler modes.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>

#define BUDGET_PAGES 16ul
#define NPAGES 96ul
#define NDATA (3 * NPAGES / 4) /* written; the rest never touched */
#define NKIDS 3

extern char **environ;
static char *m;
static _Atomic int stop;

/* Pages [0, NDATA) hold version v, the rest zeros. */
static void check_all(const char *who, unsigned v)
{
	for (uint64_t i = 0; i < NPAGES; i++)
		if (i < NDATA ? !page_ok(m + i * PAGE, i, v) : !page_zero(m + i * PAGE))
			TEST_FAIL("%s: page %lu is not version %u", who, (unsigned long)i,
				  i < NDATA ? v : 0);
}

static void write_all(unsigned v)
{
	for (uint64_t i = 0; i < NDATA; i++)
		fill_page(m + i * PAGE, i, v);
}

static void grandchild(void)
{
	check_all("grandchild", 2); /* the child's writes */
	write_all(3);
	check_all("grandchild", 3);
	_exit(0);
}

/* The child of a fork at version v: it sees v, writes its own. */
static void child(bypass_pager *p, unsigned v, int go_fd)
{
	check_all("child", v);
	/* the inherited pager */
	void *x;
	CHECK_ERR(bypass_pager_map(p, PAGE, 0, &x), -ECHILD);
	CHECK_ERR(bypass_pager_unmap(p, m, PAGE), -ECHILD);
	CHECK_ERR(bypass_pager_pin(p, m, PAGE, 0), -ECHILD);
	CHECK_ERR(bypass_pager_unpin(p, m, PAGE), -ECHILD);
	if (go_fd >= 0) { /* wait until the parent has rewritten its pages */
		char c;
		CHECK_EQ(read(go_fd, &c, 1), 1);
		check_all("child after the parent's writes", v);
	}
	write_all(2);
	check_all("child", 2);
	pid_t g = fork();
	CHECK(g >= 0);
	if (g == 0)
		grandchild();
	wait_child(g);
	check_all("child after its child", 2);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	CHECK_EQ(munmap(m, NPAGES * PAGE), 0); /* ordinary memory here */

	/* a pager of its own (upcall: ThreadSanitizer refuses new threads
	 * after a fork of a multi-threaded process) */
	bypass_pager *q = new_pager(BYPASS_PAGER_UPCALL, BUDGET_PAGES * PAGE, NPAGES * PAGE);
	char *n;
	CHECK_EQ(bypass_pager_map(q, NPAGES * PAGE, 0, (void **)&n), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(n + i * PAGE, i, 99);
	for (uint64_t i = 0; i < NPAGES; i++)
		CHECK(page_ok(n + i * PAGE, i, 99));
	CHECK(stats_of(q).resident_peak <= BUDGET_PAGES);
	CHECK_EQ(bypass_pager_destroy(q), 0);
	_exit(0);
}

static void *faulter(void *arg)
{
	(void)arg;
	uint64_t seed = 42;
	while (!atomic_load(&stop)) {
		uint64_t i = xorshift(&seed) % NDATA;
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("parent page %lu wrong while forking", (unsigned long)i);
		fill_page(m + i * PAGE, i, 1);
	}
	return NULL;
}

static void after_fork(bypass_pager *p)
{
	struct bypass_pager_stats st = stats_of(p);
	if (st.resident_pages > BUDGET_PAGES)
		TEST_FAIL("%llu pages resident after fork, budget %lu",
			  (unsigned long long)st.resident_pages, BUDGET_PAGES);
}

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, NPAGES * PAGE);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	write_all(1);
	(void)tmpdir();
	struct bypass_pager_stats s0 = stats_of(p);
	CHECK(s0.evictions >= NDATA - BUDGET_PAGES); /* most of it is in swap */

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child(p, 1, -1);
	after_fork(p);
	wait_child(pid);
	check_all("parent", 1);

	/* several children alive at once; the parent rewrites (evicting)
	 * while they wait, and they still see what was there at the fork */
	int go[2];
	CHECK_EQ(pipe(go), 0);
	pid_t kids[NKIDS];
	for (int k = 0; k < NKIDS; k++) {
		kids[k] = fork();
		CHECK(kids[k] >= 0);
		if (kids[k] == 0) {
			close(go[1]);
			child(p, 1, go[0]);
		}
		after_fork(p);
	}
	close(go[0]);
	write_all(4);
	check_all("parent", 4);
	CHECK_EQ(write(go[1], "xxx", NKIDS), NKIDS);
	close(go[1]);
	for (int k = 0; k < NKIDS; k++)
		wait_child(kids[k]);
	check_all("parent", 4);
	write_all(1);

	/* again, while a thread faults and evicts */
	atomic_store(&stop, 0);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, faulter, NULL), 0);
	for (int k = 0; k < 5; k++) {
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			child(p, 1, -1);
		wait_child(pid);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	after_fork(p);

	/* posix_spawn: no fork handlers, the child shares nothing it needs */
	char *argv[] = { "true", NULL };
	pid_t sp;
	if (posix_spawnp(&sp, "true", NULL, NULL, argv, environ) == 0)
		wait_child(sp);
	check_all("parent", 1);
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.resident_pages <= BUDGET_PAGES);
	CHECK_EQ(st.write_errors, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/fork");
}
