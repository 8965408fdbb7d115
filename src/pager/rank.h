/* SPDX-License-Identifier: MIT */
/*
 * The lock ranks (rank.c): every lock of the pager and of its preload, the
 * order they nest in, the debug check, and pthread mutexes with a rank.
 */
#ifndef BYPASS_PAGER_RANK_H
#define BYPASS_PAGER_RANK_H

#include "core/internal.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/*
 * Every lock of the pager and of its preload has a rank; a thread takes
 * locks in increasing rank only (rank.c: checked in debug builds, and
 * where bp_rank_enable() or the preload's BYPASS_PAGER_LOCK_RANKS=1 turns
 * the check on; an out-of-order blocking take aborts naming both locks).
 * A trylock may be taken in any order (it cannot wait): recorded only.
 *
 *   JEMALLOC    entering the preload's heap allocator once its extent
 *               hooks are set (heap.c, alloc.c): its hook runs inside it
 *               and takes the heap lock, so nothing under the heap lock
 *               may enter it (issue 32's Redis hang)
 *   PP_PAGER    the preload's pager creation (init.c pager_lock)
 *   PP_HEAP     the preload's heap lock (heap.c), in jemalloc's hook
 *   FORK        fork.c's list of pagers (the fork handlers take every
 *               pager's locks under it, in list order: unchecked)
 *   PAGER       p->lock: map, unmap, policies, engine switches, threads
 *   HEAT        access heat's lock (h->lock), under p->lock
 *   EVICT       the evict lock; a fault only trylocks it under its page
 *               lock, the evictor locks pages under it (finish_wb)
 *   PAGE        a page lock; never two blocking (the others: trylock)
 *   PAGE_WB     the lock of a page under write-back, taken by the evictor
 *               (finish_wb) under the evict lock and maybe the faulting
 *               thread's own page lock, several at once (the evict lock
 *               serializes that): whoever else holds a WRITEBACK page's
 *               lock waits for nothing (a write to it marks it re-dirtied)
 *   LRU         an LRU shard's spin lock (lru.c, sample.c)
 *   TABLE       the region table's writers' lock (table.c)
 *   DAMON, POLREG, PP_TABLE, PP_RESERVE   leaves: nothing is taken under
 *               them (damon.c, the policy registry, the preload's table of
 *               regions, its reserve)
 *
 * A fault served in the faulting thread is a frame of its own (it may
 * interrupt any code): entered with EVICT..TABLE held it aborts; inside,
 * takes are checked against the frame's own.
 */
enum bp_rank {
	BP_RANK_NONE = 0,
	BP_RANK_JEMALLOC,
	BP_RANK_PP_PAGER,
	BP_RANK_PP_HEAP,
	BP_RANK_FORK,
	BP_RANK_PAGER,
	BP_RANK_HEAT,
	BP_RANK_EVICT,
	BP_RANK_PAGE,
	BP_RANK_PAGE_WB,
	BP_RANK_LRU,
	BP_RANK_TABLE,
	BP_RANK_DAMON,
	BP_RANK_POLREG,
	BP_RANK_PP_TABLE,
	BP_RANK_PP_RESERVE,
	BP_RANK_N
};
extern _Atomic bool bp_rank_on;
void bp_rank_enable(bool on);
const char *bp_rank_name(enum bp_rank r);
void bp_rank_check_slow(enum bp_rank r);
void bp_rank_push_slow(enum bp_rank r, const void *lock);
void bp_rank_pop_slow(enum bp_rank r, const void *lock);
/* Before a blocking take of rank r: abort if this thread holds r or above. */
static inline void bp_rank_check(enum bp_rank r)
{
	if (bp_unlikely(atomic_load_explicit(&bp_rank_on, memory_order_relaxed)))
		bp_rank_check_slow(r);
}
/* After a take (blocking or try) of lock, and before its release. */
static inline void bp_rank_push(enum bp_rank r, const void *lock)
{
	if (bp_unlikely(atomic_load_explicit(&bp_rank_on, memory_order_relaxed)))
		bp_rank_push_slow(r, lock);
}
static inline void bp_rank_pop(enum bp_rank r, const void *lock)
{
	if (bp_unlikely(atomic_load_explicit(&bp_rank_on, memory_order_relaxed)))
		bp_rank_pop_slow(r, lock);
}
/* Whether this thread holds lock in its current frame, as far as the
 * record tells: true also when it cannot tell (the check off, or more
 * locks held than it records).  For assertions that a caller holds a lock
 * (install.c); turn the check on before the locks asked about are taken
 * (bp_rank_enable() while a thread holds one would make it answer false). */
bool bp_rank_holds(const void *lock);
/* A page fault served in this thread (a signal handler): a frame. */
unsigned bp_rank_frame_enter(void);
void bp_rank_frame_leave(unsigned saved);
/* Locks held in the current frame (tests). */
unsigned bp_rank_held(void);
/* A fork child: nothing is held (the fork handlers' locks are reset). */
void bp_rank_fork_child(void);
/* The fork handlers' locks held from the end of prepare to the parent
 * handler (true, then false): a fault in between is allowed (glibc's
 * fork touches the program's memory then), since a fork being prepared
 * takes room at once and serves without those locks (fault.c). */
void bp_rank_fork_held(bool held);

/* pthread mutexes with a rank */
static inline void bp_mutex_lock(pthread_mutex_t *m, enum bp_rank r)
{
	bp_rank_check(r);
	pthread_mutex_lock(m);
	bp_rank_push(r, m);
}
static inline void bp_mutex_unlock(pthread_mutex_t *m, enum bp_rank r)
{
	bp_rank_pop(r, m);
	pthread_mutex_unlock(m);
}

#endif
