/* SPDX-License-Identifier: MIT */
/*
 * Locks that work inside a signal handler: futexes and atomics only.  A
 * thread may block on them while serving a page fault, so none of them is
 * ever held across an access to region memory.  Each has a rank (rank.c).
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/stats.h"

#include <limits.h>
#include <sched.h>

#define SPINS 200

static void plock_take(struct plock *l)
{
	uint32_t c = 0;
	if (atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
						    memory_order_relaxed))
		return;
	for (int i = 0; i < SPINS; i++) {
		bp_cpu_relax();
		c = 0;
		if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
							    memory_order_relaxed))
			return;
	}
	/* 2 = locked, maybe with sleepers. */
	c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
	while (c != 0) {
		bp_futex_wait(&l->v, 2, -1, false);
		c = atomic_exchange_explicit(&l->v, 2, memory_order_acquire);
	}
}

void bp_plock_lock(struct plock *l)
{
	if (l->rank)
		bp_rank_check(l->rank);
	plock_take(l);
	if (l->rank)
		bp_rank_push(l->rank, l);
}

void bp_plock_lock_serialized(struct plock *l)
{
	plock_take(l);
	if (l->rank)
		bp_rank_push(l->rank, l);
}

bool bp_plock_trylock(struct plock *l)
{
	uint32_t c = 0;
	bool got = atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
							   memory_order_relaxed);
	if (got && l->rank)
		bp_rank_push(l->rank, l);
	return got;
}

void bp_plock_unlock(struct plock *l)
{
	if (l->rank)
		bp_rank_pop(l->rank, l);
	if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)
		bp_futex_wake(&l->v, 1, false);
}

void bp_spin_lock(struct spin *s)
{
	bp_rank_check(BP_RANK_LRU);
	for (unsigned i = 0;; i++) {
		uint32_t z = 0;
		if (atomic_load_explicit(&s->v, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(&s->v, &z, 1, memory_order_acquire,
							  memory_order_relaxed)) {
			bp_rank_push(BP_RANK_LRU, s);
			return;
		}
		if (i < 1000)
			bp_cpu_relax();
		else
			sched_yield(); /* the holder was preempted */
	}
}

void bp_spin_unlock(struct spin *s)
{
	bp_rank_pop(BP_RANK_LRU, s);
	atomic_store_explicit(&s->v, 0, memory_order_release);
}

static bool pg_try(struct pg *pg)
{
	uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
	while (!(w & PW_LOCK)) {
		if (atomic_compare_exchange_weak_explicit(&pg->w, &w, w | PW_LOCK,
							  memory_order_acquire,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

bool bp_pg_trylock(struct pg *pg)
{
	bool got = pg_try(pg);
	if (got)
		bp_rank_push(BP_RANK_PAGE, pg);
	return got;
}

static void pg_take(struct pg *pg)
{
	for (int i = 0; i < SPINS; i++) {
		if (pg_try(pg))
			return;
		bp_cpu_relax();
	}
	for (;;) {
		uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
		if (!(w & PW_LOCK)) {
			if (atomic_compare_exchange_weak_explicit(&pg->w, &w, w | PW_LOCK,
								  memory_order_acquire,
								  memory_order_relaxed))
				return;
			continue;
		}
		if (!(w & PW_WAIT) &&
		    !atomic_compare_exchange_weak_explicit(&pg->w, &w, w | PW_WAIT,
							   memory_order_relaxed,
							   memory_order_relaxed))
			continue;
		/* Other bits of the word change too: a spurious return is fine. */
		bp_futex_wait(&pg->w, w | PW_WAIT, -1, false);
	}
}

void bp_pg_lock(struct pg *pg)
{
	bp_rank_check(BP_RANK_PAGE);
	pg_take(pg);
	bp_rank_push(BP_RANK_PAGE, pg);
}

void bp_pg_lock_wb(struct pg *pg)
{
	bp_rank_check(BP_RANK_PAGE_WB);
	pg_take(pg);
	bp_rank_push(BP_RANK_PAGE_WB, pg);
}

void bp_pg_unlock(struct pg *pg)
{
	bp_rank_pop(BP_RANK_PAGE, pg); /* or PAGE_WB: found by its address */
	uint32_t w = atomic_fetch_and_explicit(&pg->w, ~(PW_LOCK | PW_WAIT),
					       memory_order_release);
	if (w & PW_WAIT)
		bp_futex_wake(&pg->w, INT_MAX, false);
}

/* ------------------------------------------------------------ shards */

static _Atomic unsigned next_shard;
static __thread unsigned my_shard __attribute__((tls_model("initial-exec")));

unsigned bp_stat_shard(void)
{
	unsigned s = my_shard;
	if (!s) { /* 0: not numbered yet; async-signal-safe (an atomic) */
		s = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
			    PG_STAT_SHARDS + 1;
		my_shard = s;
	}
	return s - 1;
}
