/* SPDX-License-Identifier: MIT */
/*
 * The pager's page: its id space's constants, pg.w's lock, state and flags
 * (changed by lock.c, fault.c, evict.c, lru.c: the rules below), and pg.slot's
 * encoding (share.c's levels).  Part of pager_internal.h's split (issue 34, B3).
 */
#ifndef BYPASS_PAGER_PAGE_H
#define BYPASS_PAGER_PAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define PG_SHIFT 12
#define PG_SIZE ((size_t)1 << PG_SHIFT)
#define PG_MIN_BUDGET 16u  /* pages */
#define PG_MIN_SWAP 16u    /* pages */
#define PG_MAX_RA 64u      /* readahead pages */
#define PG_MAX_FA 64u      /* fault-around pages */
#define PG_MAX_RUN 128u    /* pages one install takes at most (install.h):
			      readahead, fault-around, a prefetch read */
#define PG_NONE UINT32_MAX /* no page id */
#define PG_MAX_THREADS 64u /* handler threads per pager */


/*
 * pg.w: the page lock, its waiters, the state and flags.  Changed only with
 * atomic read-modify-write operations; the state and DIRTY/WP/slot change
 * under the page lock, LRU/ACTIVE under the LRU lock, REF anywhere.
 */
#define PW_LOCK 0x1u
#define PW_WAIT 0x2u
#define PW_STATE_SHIFT 2
#define PW_STATE (0x3u << PW_STATE_SHIFT)
enum pg_state {
	PS_ZERO = 0,      /* no data: never touched, or known to be zeros */
	PS_RESIDENT = 1,  /* mapped */
	PS_SWAPPED = 2,   /* evicted; the data is in slot */
	PS_WRITEBACK = 3, /* mapped and write-protected, being written */
};
#define PW_DIRTY 0x10u   /* resident data that the swap file lacks */
#define PW_WP 0x20u      /* write-protected in the page table */
#define PW_REF 0x40u     /* referenced since it was last scanned (2Q) */
#define PW_ACTIVE 0x80u  /* on the active list (else inactive) */
#define PW_LRU 0x100u    /* on a list */
#define PW_REDIRTY 0x200u /* written during write-back */
#define PW_PF 0x400u     /* installed by the prefetcher, no use seen yet */
/* hints (bypass_pager_advise), kept until replaced or unmapped */
#define PW_PRIO 0x800u   /* PRIORITY: evicted only when nothing else is */
#define PW_COLD 0x1000u  /* DONTNEED: evicted first */
#define PW_NORA 0x2000u  /* RANDOM: no read-ahead, fault-around, prefetch */
#define PW_SEQ 0x4000u   /* SEQUENTIAL: prefetch ahead of faults */
#define PW_HINTS (PW_PRIO | PW_COLD | PW_NORA | PW_SEQ)
#define PW_PFAGED 0x8000u /* PW_PF page the prefetcher's eviction passed once */
#define PW_PARK 0x10000u /* RESIDENT, but its data is in a parking slot of the
			    access sampler (sample.c): not in the page table */
#define PW_PIN_SHIFT 17
#define PW_PIN_ONE (1u << PW_PIN_SHIFT)
#define PW_PIN_MAX 0x7fffu

struct pg {
	_Atomic uint32_t w;
	uint32_t slot;      /* swap slot + 1, 0 = none (page lock) */
	uint32_t prev, next; /* LRU links (LRU lock); prev holds the eviction
				sequence (refault shadow) while SWAPPED */
};

static inline unsigned pg_state(uint32_t w)
{
	return (w & PW_STATE) >> PW_STATE_SHIFT;
}

/*
 * pg.slot: 0 = none, else the level of the swap file (share.c: the
 * process's own, or an ancestor's whose slots it holds since a fork) and
 * the slot + 1.  Level 0 in a process that never forked without reading
 * back: the slot + 1, as before.  Consecutive slots of one file are
 * consecutive values.
 */
#define PG_SLOT_BITS 28
#define PG_SLOT_MASK ((1u << PG_SLOT_BITS) - 1)
#define PG_LEVELS 8u       /* files a process can reference: its own and 7 ancestors' */
#define PG_REF_ENTRIES 32u /* descendants holding slots of one file at a time */
static inline unsigned slot_level(uint32_t s1)
{
	return s1 >> PG_SLOT_BITS;
}
static inline uint32_t slot_index(uint32_t s1)
{
	return (s1 & PG_SLOT_MASK) - 1;
}
static inline uint32_t slot_make(unsigned level, uint32_t s)
{
	return ((uint32_t)level << PG_SLOT_BITS) | (s + 1);
}

#endif
