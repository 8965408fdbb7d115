/* SPDX-License-Identifier: MIT */
/*
 * lock-ranks: the lock-rank check (issue 32; src/pager/rank.c, enum
 * bp_rank in pager_internal.h).  Each case runs in a child with the check
 * turned on (it is on by default in debug builds only): takes in rank
 * order pass; a planted out-of-order take aborts, and the message names
 * both locks; a trylock in any order passes; two blocking page locks
 * abort, the pages of a write-back nest; a page fault on pager memory
 * with the evict lock held aborts (instead of waiting for room it can
 * never get); entering jemalloc with the preload's heap lock held aborts
 * (issue 32's Redis hang, as the check sees it); the check turned off lets
 * the same take through.
 */
#include "util.h"
#include "pager/pager_internal.h"

#include <pthread.h>
#include <sys/wait.h>

struct result {
	int status;
	char msg[1024];
};

static struct result in_child(void (*fn)(void))
{
	int p[2];
	if (pipe(p))
		TEST_FAIL("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		TEST_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], STDERR_FILENO);
		bp_rank_enable(true);
		fn();
		if (bp_rank_held() != 0) {
			fprintf(stderr, "locks still recorded: %u\n", bp_rank_held());
			_exit(3);
		}
		_exit(0);
	}
	close(p[1]);
	struct result r = { 0, "" };
	size_t n = 0;
	for (;;) {
		ssize_t k = read(p[0], r.msg + n, sizeof(r.msg) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	r.msg[n] = 0;
	close(p[0]);
	while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR)
		;
	return r;
}

static void expect_pass(const char *what, void (*fn)(void))
{
	struct result r = in_child(fn);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		TEST_FAIL("%s: the child did not pass (status %#x): %s", what, r.status, r.msg);
	printf("  %s: passes\n", what);
}

static void expect_abort(const char *what, void (*fn)(void), const char *name1,
			 const char *name2)
{
	struct result r = in_child(fn);
	if (!WIFSIGNALED(r.status) || WTERMSIG(r.status) != SIGABRT)
		TEST_FAIL("%s: no abort (status %#x): %s", what, r.status, r.msg);
	if (!strstr(r.msg, "lock order violated") || !strstr(r.msg, name1) ||
	    !strstr(r.msg, name2))
		TEST_FAIL("%s: the message does not name \"%s\" and \"%s\": %s", what, name1, name2,
			  r.msg);
	printf("  %s: aborts: %s", what, r.msg);
}

static pthread_mutex_t m_pager = PTHREAD_MUTEX_INITIALIZER;
static struct plock l_evict = { 0, BP_RANK_EVICT };
static struct pg pa, pb;

static void in_order(void)
{
	bp_mutex_lock(&m_pager, BP_RANK_PAGER);
	bp_plock_lock(&l_evict);
	bp_pg_lock(&pa);
	bp_pg_unlock(&pa);
	bp_plock_unlock(&l_evict);
	bp_mutex_unlock(&m_pager, BP_RANK_PAGER);
}

static void out_of_order(void)
{
	bp_plock_lock(&l_evict);
	bp_mutex_lock(&m_pager, BP_RANK_PAGER); /* planted: below the evict lock */
	_exit(0);
}

static void try_any_order(void)
{
	bp_pg_lock(&pa);
	if (!bp_plock_trylock(&l_evict)) /* a fault making room: it cannot wait */
		_exit(4);
	bp_plock_unlock(&l_evict);
	bp_pg_unlock(&pa);
}

static void two_pages(void)
{
	bp_pg_lock(&pa);
	bp_pg_lock(&pb);
	_exit(0);
}

static void writeback_pages(void)
{
	bp_plock_lock(&l_evict);
	bp_pg_lock(&pa); /* the faulting thread's own page ... */
	bp_plock_unlock(&l_evict);
	bp_pg_unlock(&pa);
	bp_plock_lock(&l_evict); /* ... and the evictor's write-back pages */
	bp_pg_lock_wb(&pa);
	bp_pg_lock_wb(&pb);
	bp_pg_unlock(&pb);
	bp_pg_unlock(&pa);
	bp_plock_unlock(&l_evict);
}

static void jemalloc_under_heap_lock(void)
{
	static pthread_mutex_t heap = PTHREAD_MUTEX_INITIALIZER;
	bp_mutex_lock(&heap, BP_RANK_PP_HEAP);
	bp_rank_check(BP_RANK_JEMALLOC); /* what alloc.c does before the next allocator */
	_exit(0);
}

static void checks_off(void)
{
	bp_rank_enable(false);
	bp_plock_lock(&l_evict);
	bp_mutex_lock(&m_pager, BP_RANK_PAGER);
	bp_mutex_unlock(&m_pager, BP_RANK_PAGER);
	bp_plock_unlock(&l_evict);
}

/* a pager whose first pages are evicted */
static bypass_pager *evicted(char **m)
{
	struct bypass_pager_config c = { .budget = 16 * PAGE, .swap_size = 64 * PAGE,
					 .mode = BYPASS_PAGER_UPCALL };
	bypass_pager *p = try_pager(&c);
	if (bypass_pager_map(p, 64 * PAGE, 0, (void **)m))
		_exit(5);
	for (size_t i = 0; i < 64; i++)
		(*m)[i * PAGE] = (char)i;
	bp_evict_settle(p);
	return p;
}

static void fault_holding_evict(void)
{
	char *m;
	bypass_pager *p = evicted(&m);
	bp_plock_lock(&p->ev.lock);
	if (((volatile char *)m)[0] != 0) /* evicted: its fault may need the lock */
		_exit(6);
	_exit(0);
}

static void fault_holding_pager_lock(void)
{
	char *m;
	bypass_pager *p = evicted(&m);
	/* a fault in a frame of its own: the interrupted code's lock (below
	 * the evict lock) is not in its way */
	bp_mutex_lock(&m_pager, BP_RANK_PAGER);
	for (size_t i = 0; i < 64; i++)
		if (((volatile char *)m)[i * PAGE] != (char)i)
			_exit(7);
	bp_mutex_unlock(&m_pager, BP_RANK_PAGER);
	bypass_pager_destroy(p);
}

int main(void)
{
	test_timeout(60);
	tmpdir(); /* shared by the children */
	expect_pass("pager lock, evict lock, page lock in order", in_order);
	expect_abort("the evict lock, then a pager's lock", out_of_order, "a pager's lock",
		     "a pager's evict lock");
	expect_pass("a trylock of the evict lock under a page lock", try_any_order);
	expect_abort("two blocking page locks", two_pages, "taking a page lock",
		     "while holding a page lock");
	expect_pass("write-back pages under the evict lock", writeback_pages);
	expect_abort("jemalloc entered under the heap lock", jemalloc_under_heap_lock,
		     "jemalloc", "the preload's heap lock");
	expect_pass("the check turned off", checks_off);
	expect_abort("a page fault holding the evict lock", fault_holding_evict,
		     "a page fault on pager memory", "a pager's evict lock");
	expect_pass("page faults holding a lock below the evict lock", fault_holding_pager_lock);
	tmpdir_cleanup();
	return test_pass("pager/lock-ranks");
}
