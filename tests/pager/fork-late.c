/* SPDX-License-Identifier: MIT */
/*
 * A fault of the forking thread after the pager's fork handlers ran.
 * glibc's fork() touches the program's memory between the prepare
 * handlers and the fork system call (its NSS state, malloc's arenas,
 * stdio's list: a preloaded program keeps them in managed memory), and
 * again before the parent handlers; so do the program's own handlers
 * registered before the pager's (prepare handlers run in the reverse
 * order of registration, parent and child handlers in order).  Such a
 * fault finds the pager prepared for the fork: its gate closed, its evict
 * lock held by the faulting thread.  It must be served (a handler thread
 * that waited at the gate hung the fork for ever: Redis under the pager
 * preload, BGSAVE), take room without evicting, and leave the page
 * resident for the child.  Another thread faulting meanwhile waits until
 * the fork is done, without stopping the forking thread's faults from
 * being served (a handler thread that waited at the gate with its fault
 * read no more messages: with one handler thread, the fork hung).  Upcall
 * and handler modes; the pages touched are evicted ones, read and
 * written.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define BUDGET_PAGES 16ul
#define NPAGES 96ul
#define FORKS 12

static char *m;
static uint64_t want_v[NPAGES]; /* each page's version (parent's view) */
static uint64_t touch_r, touch_w, touch_p; /* pages the handlers touch */
static uint64_t touch_o;                    /* the other thread's */
static int prepared, parented;
static atomic_int go, started, done, quit;

/* Another thread of the program: faults when a fork's prepare tells it. */
static void *other(void *arg)
{
	(void)arg;
	for (;;) {
		while (!atomic_load(&go) && !atomic_load(&quit))
			sched_yield();
		if (atomic_load(&quit))
			return NULL;
		atomic_store(&go, 0);
		uint64_t i = touch_o;
		atomic_store(&started, 1);
		if (!page_ok(m + i * PAGE, i, want_v[i]))
			TEST_FAIL("other thread: page %lu wrong", (unsigned long)i);
		atomic_store(&done, 1);
	}
}

static uint64_t evicted_page(uint64_t from)
{
	for (uint64_t k = 0; k < NPAGES; k++) {
		uint64_t i = (from + k) % NPAGES;
		if (!present_pages(m + i * PAGE, PAGE))
			return i;
	}
	TEST_FAIL("no page of %lu is evicted (budget %lu)", NPAGES, BUDGET_PAGES);
}

/* Registered before the pager's handlers: runs after its prepare. */
static void late_prepare(void)
{
	if (!m)
		return;
	prepared++;
	/* the other thread faults first, most often (not needed for a pass:
	 * its fault waits for the fork either way) */
	atomic_store(&started, 0);
	atomic_store(&go, 1);
	while (!atomic_load(&started))
		sched_yield();
	struct timespec ts = { 0, 5000000 };
	nanosleep(&ts, NULL);
	if (!page_ok(m + touch_r * PAGE, touch_r, want_v[touch_r]))
		TEST_FAIL("prepare: page %lu wrong", (unsigned long)touch_r);
	fill_page(m + touch_w * PAGE, touch_w, ++want_v[touch_w]);
}

/* Runs before the pager's parent handler. */
static void early_parent(void)
{
	if (!m)
		return;
	parented++;
	if (!page_ok(m + touch_p * PAGE, touch_p, want_v[touch_p]))
		TEST_FAIL("parent handler: page %lu wrong", (unsigned long)touch_p);
}

static void check_all(const char *who)
{
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, want_v[i]))
			TEST_FAIL("%s: page %lu is not version %lu", who, (unsigned long)i,
				  (unsigned long)want_v[i]);
}

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, NPAGES * PAGE);
	char *a;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&a), 0);
	for (uint64_t i = 0; i < NPAGES; i++) {
		want_v[i] = 1;
		fill_page(a + i * PAGE, i, 1);
	}
	m = a;
	atomic_store(&quit, 0);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, other, NULL), 0);
	uint64_t seed = 7;
	for (int f = 0; f < FORKS; f++) {
		/* three different evicted pages (the pager keeps 16 of 96) */
		touch_r = evicted_page(xorshift(&seed));
		touch_w = evicted_page(touch_r + 1);
		touch_p = evicted_page(touch_w + 1);
		touch_o = evicted_page(touch_p + 1);
		atomic_store(&done, 0);
		int pr = prepared, pa = parented;
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			check_all("child"); /* the prepare's write included */
			_exit(0);
		}
		CHECK_EQ(prepared, pr + 1);
		CHECK_EQ(parented, pa + 1);
		wait_child(pid);
		while (!atomic_load(&done)) /* served once the fork was done */
			sched_yield();
		check_all("parent");
	}
	atomic_store(&quit, 1);
	pthread_join(t, NULL);
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.resident_pages <= BUDGET_PAGES);
	CHECK_EQ(st.write_errors, 0);
	m = NULL;
	CHECK_EQ(bypass_pager_destroy(p), 0);
	printf("  %s: %d forks, each thread's late faults served\n", mode_name(mode), FORKS);
}

int main(void)
{
	test_timeout(120);
	/* before any pager: the pager's handlers, registered by its first
	 * creation, run before these at prepare and after them at parent */
	CHECK_EQ(pthread_atfork(late_prepare, early_parent, NULL), 0);
	(void)tmpdir();
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/fork-late");
}
