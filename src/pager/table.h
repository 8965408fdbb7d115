/* SPDX-License-Identifier: MIT */
/*
 * The regions and the table of every region (table.c): read sections for
 * the fault path, replacement for map and unmap, fork's part.
 */
#ifndef BYPASS_PAGER_TABLE_H
#define BYPASS_PAGER_TABLE_H

#include "core/internal.h"
#include "pager/page.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An adaptive region's serves in flight, counted by thread on cache lines of
 * their own (engine.c): every fault adds and subtracts one, so one shared
 * counter would move between the faulting CPUs twice a fault. */
#define PG_ENG_SLOTS 8u
struct bp_eng_slot {
	_Atomic uint32_t n;
} __attribute__((aligned(64)));

struct region {
	uintptr_t start, end;
	struct bypass_pager *pager;
	uint32_t id0;     /* page id of start */
	_Atomic int uffd; /* the userfaultfd serving it */
	_Atomic bool handler; /* served by handler threads (not upcalls) */
	bool adaptive;    /* its engine may change (engine.c) */
	unsigned gen;     /* fork generation of the process that mapped it */
	/* engine switches (adaptive regions): odd while one is under way;
	 * serves in flight (PG_ENG_SLOTS counters; NULL if not adaptive) */
	_Atomic uint32_t switch_seq;
	struct bp_eng_slot *active;
	/* readahead: the page id where the last swap-in cluster ended and
	 * the current window; a swap-in fault there is sequential */
	_Atomic uint32_t ra_next, ra_win;
	/* readahead of a write stream (fault.c, swap_in): the last window's
	 * readahead pages are [ra_from, ra_next); ra_clean of them were
	 * mapped clean (write-protected), all of them or, in write mode
	 * (ra_wmode), the last one only (the probe); ra_wp counts the
	 * write-protect faults on them since.  Hints only: read and written
	 * without a lock (a wrong guess costs a fault or a write-back). */
	_Atomic uint32_t ra_from, ra_clean, ra_wp;
	_Atomic bool ra_wmode;
	/* write evidence of the region's faults (fault.c, sw_write_mode):
	 * pages the faults mapped clean and write-protect faults on them
	 * (not prefetched ones), halved as they grow.  Hints only, as ra_*. */
	_Atomic uint32_t sw_clean, sw_wp;
	/* the prefetch stream of the region (prefetch.c): the last fault,
	 * the next page not yet asked for in the stream's direction, the
	 * stride (0: no stream), the candidate stride and the window */
	_Atomic uint32_t pf_last, pf_next;
	_Atomic int32_t pf_stride, pf_cand;
	_Atomic uint32_t pf_win;
	/* write evidence for the prefetcher (prefetch.c, pf_write_mode):
	 * prefetched pages installed clean and write-protect faults on
	 * prefetched pages (halved as they grow), write mode, and the last
	 * write-mode run's probe (page id + 1).  Hints only, as ra_*. */
	_Atomic uint32_t pf_clean, pf_wp, pf_probe;
	_Atomic bool pf_wmode;
	/* prefetched pages of the region evicted before any use (lru.c,
	 * bp_select_victims), taken and zeroed by the stream (prefetch.c) */
	_Atomic uint32_t pf_lost;
	/* the largest window known to survive (0: bp_pf_max) */
	_Atomic uint32_t pf_ceil;
};

/* A snapshot of every region of every pager, sorted by address. */
struct regtab {
	size_t n;
	struct region **by_id; /* the same, sorted by pager and first page id */
	struct region *r[];
};

/*
 * Readers (fault handlers, the evictor) enter a read section, load the
 * table, and may use every region in it until they leave.  Writers publish
 * a new table and wait until every reader of the old one has left.
 */
unsigned bp_tab_enter(void);
void bp_tab_leave(unsigned idx);
struct regtab *bp_tab_get(void);
struct region *bp_tab_find(struct regtab *t, uintptr_t addr);
/* The region of pager p holding page id, or NULL. */
struct region *bp_tab_find_id(struct regtab *t, struct bypass_pager *p, uint32_t id);
/*
 * Replace the regions in `old` (nold of them, may be 0) by `add` (nadd) in
 * the table, then wait for readers of the old table.  Returns -ENOMEM.
 */
int bp_tab_replace(struct region **old, size_t nold, struct region **add, size_t nadd);
/* fn(p, r, id, arg) for every page of every region of p, in a read section. */
void bp_tab_each_page(struct bypass_pager *p,
		      void (*fn)(struct bypass_pager *p, struct region *r, uint32_t id, void *arg),
		      void *arg);
/* A fork child: keep the regions keep() accepts, forget the others. */
void bp_tab_fork_child(bool (*keep)(const struct region *r));

static inline uint32_t region_id(const struct region *r, uintptr_t addr)
{
	return r->id0 + (uint32_t)((addr - r->start) >> PG_SHIFT);
}

static inline uintptr_t region_addr(const struct region *r, uint32_t id)
{
	return r->start + ((uintptr_t)(id - r->id0) << PG_SHIFT);
}

static inline bool region_has_id(const struct region *r, uint32_t id)
{
	return id >= r->id0 && id - r->id0 < (r->end - r->start) >> PG_SHIFT;
}

/* table.c's part, called by fork.c's handlers. */
void bp_tab_fork_prepare(void);
void bp_tab_fork_parent(void);

#endif
