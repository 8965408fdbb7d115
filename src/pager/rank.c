/* SPDX-License-Identifier: MIT */
/*
 * Lock ranks (issue 32): every lock the pager and its preload take has a
 * rank (enum bp_rank, pager_internal.h), and a thread takes locks in
 * increasing rank only.  jemalloc's witness model: with the check on, each
 * thread keeps the locks it holds; a blocking take of a rank at or below
 * one it holds aborts with both names (a trylock cannot deadlock: it is
 * recorded, not checked).  On by default in debug builds (no NDEBUG: the
 * ASan and TSan builds, where every pager test runs with it), off in
 * release builds unless bp_rank_enable() turns it on (the preload's
 * BYPASS_PAGER_LOCK_RANKS=1, tests).  Off, a take costs one load and a
 * branch.
 *
 * A page fault served in the faulting thread (upcall mode) runs in a
 * signal handler that may have interrupted any code: it opens a frame.
 * Entering it with a lock of rank BP_RANK_EVICT or above held aborts (the
 * fault may need that lock: a self-deadlock, or a 10 s wait for room that
 * ends in SIGBUS); inside it, takes are checked against the locks taken in
 * the frame only (the interrupted code's locks are not in its way).  Not
 * between the fork handlers' prepare and parent (bp_rank_fork_held): the
 * forking thread holds their locks then, and glibc's fork touches the
 * program's memory; a fork being prepared serves without them.
 *
 * Everything here is async-signal-safe: thread-local arrays (initial-exec),
 * write(2), abort().
 */
#include "pager/rank.h"
#include "core/syscall.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RANK_MAX_HELD 16

#ifdef NDEBUG
_Atomic bool bp_rank_on = false;
#else
_Atomic bool bp_rank_on = true;
#endif

static const char *const names[BP_RANK_N] = {
	[BP_RANK_JEMALLOC] = "jemalloc (the preload's heap allocator)",
	[BP_RANK_PP_PAGER] = "the preload's pager lock (init.c)",
	[BP_RANK_PP_HEAP] = "the preload's heap lock (heap.c)",
	[BP_RANK_FORK] = "the pager's fork lock (fork.c)",
	[BP_RANK_PAGER] = "a pager's lock (p->lock)",
	[BP_RANK_HEAT] = "access heat's lock (heat.c)",
	[BP_RANK_EVICT] = "a pager's evict lock",
	[BP_RANK_PAGE] = "a page lock",
	[BP_RANK_PAGE_WB] = "the lock of a page under write-back",
	[BP_RANK_LRU] = "an LRU shard lock",
	[BP_RANK_TABLE] = "the region table's lock (table.c)",
	[BP_RANK_DAMON] = "DAMON's lock (damon.c)",
	[BP_RANK_POLREG] = "the policy registry's lock (policy.c)",
	[BP_RANK_PP_TABLE] = "the preload's table of regions (regions.c)",
	[BP_RANK_PP_RESERVE] = "the preload's reserve lock (reserve.c)",
};

/* ranks of which a thread may hold several: the pages of a finished
 * write-back, locked together by the evictor under the evict lock (the
 * only taker of several: the evict lock serializes such takes) */
static const bool nests[BP_RANK_N] = {
	[BP_RANK_PAGE_WB] = true,
};

struct held {
	uint8_t rank;
	const void *lock;
};

/* the locks this thread holds, [base, n) in the current frame */
static __thread struct {
	unsigned n, base;
	bool lost; /* more than RANK_MAX_HELD: no more checks in this thread */
	bool fork_held; /* what is held is the fork handlers' (fork.c) */
	struct held h[RANK_MAX_HELD];
} rk __attribute__((tls_model("initial-exec")));

void bp_rank_enable(bool on)
{
	atomic_store(&bp_rank_on, on);
}

const char *bp_rank_name(enum bp_rank r)
{
	return r > 0 && r < BP_RANK_N && names[r] ? names[r] : "an unknown lock";
}

static void put(char *buf, size_t *o, size_t cap, const char *s)
{
	size_t n = strlen(s);
	if (*o + n > cap)
		n = cap - *o;
	memcpy(buf + *o, s, n);
	*o += n;
}

static void put_num(char *buf, size_t *o, size_t cap, unsigned v)
{
	char d[12];
	int k = 0;
	do
		d[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < 11);
	while (k && *o < cap)
		buf[(*o)++] = d[--k];
}

/* want: the rank being taken, or 0 for a page fault taken in this thread */
static __attribute__((noreturn)) void die(enum bp_rank want, enum bp_rank held)
{
	char buf[512];
	size_t o = 0, cap = sizeof(buf);
	put(buf, &o, cap, "bypass: lock order violated: ");
	if (want) {
		put(buf, &o, cap, "taking ");
		put(buf, &o, cap, bp_rank_name(want));
		put(buf, &o, cap, " (rank ");
		put_num(buf, &o, cap, want);
		put(buf, &o, cap, ")");
	} else {
		put(buf, &o, cap, "a page fault on pager memory, which serving may need,");
	}
	put(buf, &o, cap, " while holding ");
	put(buf, &o, cap, bp_rank_name(held));
	put(buf, &o, cap, " (rank ");
	put_num(buf, &o, cap, held);
	put(buf, &o, cap, "); see enum bp_rank in src/pager/pager_internal.h\n");
	ssize_t w = bp_sys_write(STDERR_FILENO, buf, o);
	(void)w;
	abort();
}

void bp_rank_check_slow(enum bp_rank r)
{
	if (rk.lost)
		return;
	unsigned top = 0; /* the highest rank held in the frame */
	for (unsigned i = rk.base; i < rk.n; i++)
		if (rk.h[i].rank > top)
			top = rk.h[i].rank;
	if (top > r || (top == r && !nests[r]))
		die(r, (enum bp_rank)top);
}

void bp_rank_push_slow(enum bp_rank r, const void *lock)
{
	if (rk.lost)
		return;
	if (rk.n == RANK_MAX_HELD) {
		rk.lost = true;
		return;
	}
	rk.h[rk.n].rank = (uint8_t)r;
	rk.h[rk.n].lock = lock;
	atomic_signal_fence(memory_order_release); /* written before counted */
	rk.n++;
}

void bp_rank_pop_slow(enum bp_rank r, const void *lock)
{
	/* the most recent take of this lock in the frame (by its address: a
	 * page lock is taken at rank PAGE or PAGE_WB); not found: taken
	 * before the check was turned on, or beyond RANK_MAX_HELD */
	(void)r;
	for (unsigned i = rk.n; i-- > rk.base;) {
		if (rk.h[i].lock != lock)
			continue;
		memmove(&rk.h[i], &rk.h[i + 1], (rk.n - i - 1) * sizeof(rk.h[0]));
		atomic_signal_fence(memory_order_release);
		rk.n--;
		return;
	}
}

bool bp_rank_holds(const void *lock)
{
	if (!atomic_load_explicit(&bp_rank_on, memory_order_relaxed) || rk.lost)
		return true;
	for (unsigned i = rk.base; i < rk.n; i++)
		if (rk.h[i].lock == lock)
			return true;
	return false;
}

unsigned bp_rank_frame_enter(void)
{
	unsigned saved = rk.base;
	if (atomic_load_explicit(&bp_rank_on, memory_order_relaxed) && !rk.lost &&
	    !rk.fork_held) {
		for (unsigned i = 0; i < rk.n; i++)
			if (rk.h[i].rank >= BP_RANK_EVICT && rk.h[i].rank <= BP_RANK_TABLE)
				die(BP_RANK_NONE, (enum bp_rank)rk.h[i].rank);
	}
	rk.base = rk.n;
	return saved;
}

void bp_rank_frame_leave(unsigned saved)
{
	/* what the frame took and did not release (it releases all it takes) */
	rk.n = rk.base;
	rk.base = saved;
}

unsigned bp_rank_held(void)
{
	return rk.n - rk.base;
}

void bp_rank_fork_child(void)
{
	/* the forking thread held only what the fork handlers took (fork()
	 * is the program's call, outside bypass), all of it reset here */
	rk.n = rk.base = 0;
	rk.lost = false;
	rk.fork_held = false;
}

void bp_rank_fork_held(bool held)
{
	rk.fork_held = held;
}
