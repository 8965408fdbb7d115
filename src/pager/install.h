/* SPDX-License-Identifier: MIT */
/*
 * Installing pages (install.c): the one place that puts data into a
 * region's page table and makes the pager's record say so (issue 34, B2;
 * the kernel's mfill_atomic_install_pte shape).  Used by the fault path
 * (first touch and swap-in, fault.c; pinning goes through it), the
 * prefetcher (prefetch.c) and the access sampler (sample.c).
 */
#ifndef BYPASS_PAGER_INSTALL_H
#define BYPASS_PAGER_INSTALL_H

#include <stdbool.h>
#include <stdint.h>

struct bypass_pager;
struct region;

/* Where the data comes from, which says what the pages were and what is
 * counted. */
enum bp_install_from {
	BP_INSTALL_ZERO,     /* first touch (state ZERO): zeros; a prefix may be
				mapped (a page mapped already stops the copy) */
	BP_INSTALL_SWAPIN,   /* a fault's read of slots (state SWAPPED); the
				first page is the faulting one */
	BP_INSTALL_PREFETCH, /* the prefetcher's read of slots (state SWAPPED) */
	BP_INSTALL_PARKED,   /* the access sampler's parking slot: one page,
				RESIDENT or WRITEBACK with PW_PARK, put back */
};

struct bp_install {
	struct region *r;
	const void *src;        /* k pages of data */
	uint32_t id0, k;        /* pages [id0, id0 + k) of r, k >= 1 */
	/* Pages [0, nw) are mapped writable and dirty (their slot freed: the
	 * data is newer than it), but for the probes: with probe > 0, a page
	 * whose id % probe == probe - 1 stays clean (the prefetcher's write
	 * mode).  Every other page is mapped write-protected and clean (its
	 * slot keeps its copy).  A range that cannot be unprotected stays
	 * clean. */
	uint32_t nw, probe;
	uint8_t from;           /* enum bp_install_from */
	bool wake;              /* wake the threads waiting on the pages */
	bool ref;               /* PARKED: the page was accessed (PW_REF) */
	/* PARKED: the page's record is updated even when the copy failed (the
	 * sampler's put-back: its parking slot is given up either way) */
	bool mark_on_error;
};

/*
 * Install in->k pages: copy them into the page table with the write
 * protection in->nw and in->probe ask for, then set each page's state and
 * flags, free the slots of the pages mapped dirty, put the pages on the
 * LRU lists (not PARKED: it never left them) and count them.  The caller
 * holds every page's lock (asserted in debug builds: pg.w's lock bit, and
 * the lock-rank record where it has the page) and has reserved their room
 * in the budget; the locks are not released, the room is not given back
 * (see *mapped).  Signal context.  Returns 0 or -errno (nothing recorded,
 * but for PARKED's mark_on_error and a first touch's prefix); *mapped
 * (may be NULL): the pages mapped, a prefix for ZERO; *dirty (may be
 * NULL): how many of them were mapped dirty.
 */
int bp_install(struct bypass_pager *p, const struct bp_install *in, uint32_t *mapped,
	       uint32_t *dirty);

#endif
