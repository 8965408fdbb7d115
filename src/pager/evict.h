/* SPDX-License-Identifier: MIT */
/*
 * The budget and eviction (evict.c): reservations, fork's part, the
 * process tree's share of the budget; swap slots and write-back
 * (writeback.c).
 */
#ifndef BYPASS_PAGER_EVICT_H
#define BYPASS_PAGER_EVICT_H

#include "pager/struct.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct bypass_pager;
struct pg;

/* The pager is a member of a process tree's ledger (tree.c). */
static inline bool bp_pager_tree(struct bypass_pager *p)
{
	return atomic_load_explicit(&p->tree, memory_order_relaxed) != NULL;
}
void bp_tree_uncharge(struct bypass_pager *p, uint32_t n);
/* n pages are no longer resident: the budget's count, and the tree's. */
static inline void bp_bud_sub(struct bypass_pager *p, uint32_t n)
{
	atomic_fetch_sub(&p->bud.resident, n);
	if (bp_unlikely(bp_pager_tree(p)))
		bp_tree_uncharge(p, n);
}
/* Room for the process tree: up to n of our own pages evicted (tree.c). */
uint32_t bp_evict_for_tree(struct bypass_pager *p, uint32_t n, bool block);

/* Reserve n pages of the budget, evicting if needed (may sleep).  With
 * must = false, only succeeds if no eviction is needed. */
int bp_pager_reserve(struct bypass_pager *p, uint32_t n, bool must);
void bp_pager_unreserve(struct bypass_pager *p, uint32_t n);
/* Reserve n pages only if that keeps the resident pages at or below the
 * high watermark (speculative pages: fault-around). */
int bp_pager_reserve_below_high(struct bypass_pager *p, uint32_t n);
/* The same for prefetched pages, evicting (never a PRIORITY page) to stay
 * at or below the high watermark if the evict lock is free; -EAGAIN. */
int bp_pager_reserve_prefetch(struct bypass_pager *p, uint32_t n);
/*
 * Discard [a, a + len) of p (page-aligned, inside one region): the pages'
 * data is forgotten and they read as zeros afterwards, with nothing written
 * or read: a resident page leaves the page table (MADV_DONTNEED), its list
 * and the budget, a swapped page its slot and its copy in the compressed
 * pool (bp_slot_free).  Takes the evict lock: no eviction round or
 * write-back completion runs meanwhile.  A page that is locked (a fault or
 * the prefetcher is on it), pinned, parked by the access sampler or under
 * write-back keeps its data.  Returns how many pages kept it (0: the whole
 * range reads as zeros), or -EINVAL (the heap's purge, the preload's
 * madvise(MADV_DONTNEED)).
 */
int bp_pager_discard(struct bypass_pager *p, uintptr_t a, size_t len);
/* Free a page's swap slot (page lock held). */
void bp_slot_free(struct bypass_pager *p, struct pg *pg);
/* Wait for every write-back in flight and finish it (evict lock held). */
void bp_evict_drain(struct bypass_pager *p);
/* Take the evict lock and finish every write-back in flight (tests: the
 * resident pages then no longer depend on how fast the disk wrote). */
void bp_evict_settle(struct bypass_pager *p);
/*
 * The calling thread is about to wait in a system call that the kernel
 * does not restart after task work (epoll_wait and its siblings: the pager
 * preload's wrappers).  The ring has no IORING_SETUP_COOP_TASKRUN (another
 * thread may wait for the completions: see reap()), so the completion of a
 * write-back this thread submitted (in a fault) comes as task work with
 * TWA_SIGNAL, which ends such a wait with EINTR though no signal came.
 * settle_mine takes p's evict lock and finishes this thread's write-backs
 * in p (their completions run in its own wait there); mine_maybe says
 * whether any write-back of this thread is in flight (a count per thread
 * that the reaper of each completion lowers: exact once reaped, see
 * writeback.c); mine_reap reaps p's completions that are there without
 * waiting (only if the evict lock is free), then answers as mine_maybe.
 */
bool bp_evict_mine_maybe(void);
bool bp_evict_mine_reap(struct bypass_pager *p);
void bp_evict_settle_mine(struct bypass_pager *p);
/*
 * Fork (fork.c): begin sets the forking flag (reservations succeed at once,
 * above the budget if need be, and the access sampler parks nothing), then
 * takes the evict lock: from then on no page leaves the page table.  End,
 * in the parent: the flag cleared, eviction back within the budget, the
 * lock released; in the child (child = true): the flag cleared and the
 * lock reset, nothing else.
 */
void bp_evict_fork_begin(struct bypass_pager *p);
void bp_evict_fork_end(struct bypass_pager *p, bool child);
bool bp_evict_forking(struct bypass_pager *p);
int bp_evict_init(struct bypass_pager *p);
void bp_evict_fini(struct bypass_pager *p);
/* A fork child keeping p: its own ring and pidfd (the parent's are the
 * parent's). */
void bp_evict_child(struct bypass_pager *p);
void bp_pager_progress(struct bypass_pager *p);

#endif
