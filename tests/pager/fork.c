/* SPDX-License-Identifier: MIT */
/*
 * What a forked child gets: the parent's regions, every byte (resident,
 * evicted and never-touched pages alike), as private memory: its writes
 * are its own, the parent's later writes and evictions do not reach it, it
 * can fork again.  Usually (issue 32) the fork reads nothing back: the
 * child keeps the pager, reads the evicted pages from the parent's swap
 * slots (held copy-on-write), pins, evicts into its own file, and stays
 * within its budget while it reads and rewrites everything; the parent
 * read nothing at the fork and never went above its budget.  Where the
 * fork reads back instead (handler threads under ThreadSanitizer), every
 * call on the inherited pager but destroy returns -ECHILD.  Either way the
 * child can create and use a pager of its own, and the parent's data,
 * budget and counters stay right, also when it forks while another thread
 * faults and evicts, and with three children alive while it rewrites
 * everything.  A child that execs drops its hold on the parent's slots
 * (collected while the program it exec'd still runs).  posix_spawn (no
 * fork handlers) works beside the regions.  Upcall and handler modes.
 * TEST_LABELS: threads
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_share_collect, bp_share_holders */

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
	/* kept: the fork read nothing back, the pager is the child's now */
	bool kept = p->cfg.gen == bp_fork_gen();
	struct bypass_pager_stats s0 = stats_of(p);
	check_all("child", v);
	if (kept) {
		struct bypass_pager_stats s1 = stats_of(p);
		CHECK(s1.faults_swapin > s0.faults_swapin); /* from the parent's slots */
		CHECK_EQ(bypass_pager_pin(p, m, 3 * PAGE, BYPASS_PAGER_PIN_WRITE), 0);
		CHECK_EQ(bypass_pager_unpin(p, m, 3 * PAGE), 0);
	} else {
		void *x;
		CHECK_ERR(bypass_pager_map(p, PAGE, 0, &x), -ECHILD);
		CHECK_ERR(bypass_pager_unmap(p, m, PAGE), -ECHILD);
		CHECK_ERR(bypass_pager_pin(p, m, PAGE, 0), -ECHILD);
		CHECK_ERR(bypass_pager_unpin(p, m, PAGE), -ECHILD);
	}
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
	if (kept) { /* within its budget while it read and rewrote it all */
		struct bypass_pager_stats st = stats_of(p);
		if (st.resident_peak > BUDGET_PAGES)
			TEST_FAIL("child: %llu pages resident at the peak, budget %lu",
				  (unsigned long long)st.resident_peak, BUDGET_PAGES);
		CHECK(st.evictions > 0);
		CHECK_EQ(st.write_errors, 0);
	}
	CHECK_EQ(bypass_pager_destroy(p), 0);
	if (!kept)
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

/* Set once the faulter runs: ASan's runtime of this compiler takes its
 * allocator's locks while a new thread starts and has no fork handler for
 * them, so a fork at that moment leaves them held in the child (whose own
 * new threads then hang in their start-up).  Nothing of the pager's. */
static atomic_int faulting;

static void *faulter(void *arg)
{
	(void)arg;
	uint64_t seed = 42;
	atomic_store(&faulting, 1);
	while (!atomic_load(&stop)) {
		uint64_t i = xorshift(&seed) % NDATA;
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("parent page %lu wrong while forking", (unsigned long)i);
		fill_page(m + i * PAGE, i, 1);
	}
	return NULL;
}

/* Bytes read from swap before a fork (rd0): a fork that kept the pager
 * (a holder in its registry now) read none. */
static void after_fork(bypass_pager *p, uint64_t rd0)
{
	struct bypass_pager_stats st = stats_of(p);
	if (st.resident_pages > BUDGET_PAGES)
		TEST_FAIL("%llu pages resident after fork, budget %lu",
			  (unsigned long long)st.resident_pages, BUDGET_PAGES);
	if (bp_share_holders(p) && st.bytes_read != rd0)
		TEST_FAIL("the fork read %llu bytes back",
			  (unsigned long long)(st.bytes_read - rd0));
}

/* A child that execs: the program it runs holds nothing of ours. */
static void exec_child(bypass_pager *p, const char *self)
{
	bp_share_collect(p); /* the children before were all waited for */
	CHECK_EQ(bp_share_holders(p), 0);
	int ready[2], hold[2];
	CHECK_EQ(pipe(ready), 0);
	CHECK_EQ(pipe(hold), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		char a[16], b[16];
		snprintf(a, sizeof(a), "%d", ready[1]);
		snprintf(b, sizeof(b), "%d", hold[0]);
		execl(self, self, "sleeper", a, b, (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	close(hold[0]);
	CHECK_EQ(bp_share_holders(p), 1);
	char c;
	CHECK_EQ(read(ready[0], &c, 1), 1); /* the new program runs */
	CHECK_EQ(bp_share_collect(p), 1);
	CHECK_EQ(bp_share_holders(p), 0);
	close(hold[1]); /* it may end now */
	close(ready[0]);
	wait_child(pid);
	printf("  a child that exec'd holds no slot any more (collected while it ran)\n");
}

static void run(int mode, const char *self)
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
	after_fork(p, s0.bytes_read);
	bool kept = bp_share_holders(p) != 0;
	printf("  %s: the fork %s\n", mode == BYPASS_PAGER_UPCALL ? "upcall" : "handler",
	       kept ? "kept the pager: nothing read back" : "read the evicted pages back");
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
		after_fork(p, stats_of(p).bytes_read);
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

	/* again, while a thread faults and evicts: its fault while a fork is
	 * prepared takes its room above the budget (evict.c, reserve_forking:
	 * nothing may be evicted then), so the peak that says no fork read
	 * its swap back is read before it starts (17 of 16 once, under load) */
	uint64_t peak0 = stats_of(p).resident_peak;
	atomic_store(&stop, 0);
	pthread_t t;
	atomic_store(&faulting, 0);
	CHECK_EQ(pthread_create(&t, NULL, faulter, NULL), 0);
	while (!atomic_load(&faulting))
		sched_yield();
	for (int k = 0; k < 5; k++) {
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			child(p, 1, -1);
		wait_child(pid);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	after_fork(p, stats_of(p).bytes_read);
	uint64_t rd1 = stats_of(p).bytes_read;
	if (kept)
		exec_child(p, self);

	/* posix_spawn: no fork handlers, the child shares nothing it needs */
	char *argv[] = { "true", NULL };
	pid_t sp;
	if (posix_spawnp(&sp, "true", NULL, NULL, argv, environ) == 0)
		wait_child(sp);
	if (kept && stats_of(p).bytes_read != rd1)
		TEST_FAIL("the exec'd child or posix_spawn read %llu bytes back",
			  (unsigned long long)(stats_of(p).bytes_read - rd1));
	check_all("parent", 1);
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.resident_pages <= BUDGET_PAGES);
	if (kept && peak0 > BUDGET_PAGES) /* no fork read its swap back */
		TEST_FAIL("parent: %llu pages resident at the peak, budget %lu",
			  (unsigned long long)peak0, BUDGET_PAGES);
	CHECK_EQ(st.write_errors, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "sleeper")) { /* exec_child()'s program */
		int ready = atoi(argv[2]), hold = atoi(argv[3]);
		char c;
		if (write(ready, "x", 1) != 1)
			return 1;
		while (read(hold, &c, 1) > 0)
			;
		return 0;
	}
	test_timeout(120);
	const char *self = "/proc/self/exe";
	run(BYPASS_PAGER_UPCALL, self);
	run(BYPASS_PAGER_HANDLER, self);
	tmpdir_cleanup();
	return test_pass("pager/fork");
}
