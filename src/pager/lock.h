/* SPDX-License-Identifier: MIT */
/*
 * The pager's locks (lock.c): the signal-safe futex mutex, the LRU shards'
 * spin lock and the page lock, with the flag updates of pg.w.
 *
 * Everything reachable from a page fault runs in a signal handler (upcall
 * mode) that may have interrupted any code of the application, so the fault
 * path uses no malloc, no stdio and no pthread locks: only atomics, futexes
 * and system calls.  The locks, in the order they nest:
 *
 *   evict lock  ->  page lock (a bit in pg.w)  ->  LRU lock
 *
 * (all of them ranked: enum bp_rank in pager/rank.h).  A fault takes the
 * lock of the page it serves (and of readahead pages, with trylock), then
 * may trylock the evict lock to make room (never a blocking take under a
 * page lock).
 * The evictor trylocks its victims, and locks the pages of a finished
 * write-back one at a time.  Pages under write-back are unlocked (state
 * WRITEBACK) so that a write to them can be served during the I/O.
 */
#ifndef BYPASS_PAGER_LOCK_H
#define BYPASS_PAGER_LOCK_H

#include "pager/page.h"
#include "pager/rank.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A futex mutex that is safe in signal handlers (Drepper's three states),
 * of the given rank (set before its first use; 0: unchecked). */
struct plock {
	_Atomic uint32_t v;
	enum bp_rank rank;
};
void bp_plock_lock(struct plock *l);
bool bp_plock_trylock(struct plock *l);
void bp_plock_unlock(struct plock *l);
/* A take in an order another lock serializes (fork.c: every pager's,
 * under the fork lock): recorded, not checked. */
void bp_plock_lock_serialized(struct plock *l);

/* A spinlock for short sections that never sleep or fault: the LRU
 * shards' (rank LRU). */
struct spin {
	_Atomic uint32_t v;
};
void bp_spin_lock(struct spin *s);
void bp_spin_unlock(struct spin *s);

void bp_pg_lock(struct pg *pg);
/* bp_pg_lock() of a page in state WRITEBACK by the evictor (rank PAGE_WB) */
void bp_pg_lock_wb(struct pg *pg);
bool bp_pg_trylock(struct pg *pg);
void bp_pg_unlock(struct pg *pg);
/* Set/clear flag bits of a page (any thread). */
static inline void pg_set(struct pg *pg, uint32_t bits)
{
	atomic_fetch_or_explicit(&pg->w, bits, memory_order_relaxed);
}
static inline void pg_clear(struct pg *pg, uint32_t bits)
{
	atomic_fetch_and_explicit(&pg->w, ~bits, memory_order_relaxed);
}
static inline void pg_set_state(struct pg *pg, unsigned st)
{
	uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(
		&pg->w, &w, (w & ~PW_STATE) | (st << PW_STATE_SHIFT),
		memory_order_release, memory_order_relaxed))
		;
}

#endif
