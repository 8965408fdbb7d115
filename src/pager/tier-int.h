/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier's insides, shared by tier.c (the arena, its slabs,
 * the load and store of copies) and tier-write.c (the pool's write path:
 * shrinking, which writes pool-only copies before forgetting them, and the
 * flush before a fork).  Nothing outside these two files includes it.
 */
#ifndef BYPASS_PAGER_TIER_INT_H
#define BYPASS_PAGER_TIER_INT_H

#include "pager/tier.h"
#include "pager/lock.h"

#include <liburing.h>
#include <stdatomic.h>
#include <string.h>

#define TIER_SLAB 16384u
#define TIER_SLAB_PAGES (TIER_SLAB / PG_SIZE)
#define TIER_GRAIN 64u
#define TIER_HDR 16u
#define TIER_MAXOBJ (TIER_SLAB / TIER_GRAIN) /* 256: an entry's object bits */
#define TIER_NCLASS 64u                      /* up to 4096 bytes */
#define TNONE UINT32_MAX
/* An entry's flag: the pool's copy is the only one (the slot in the file
 * was never written, or holds older data): written there before the pool
 * forgets it (write_held), and before a fork (bp_tier_flush). */
#define TIER_DIRTY 0x80000000u

static inline uint32_t ent_obj(uint32_t e)
{
	return e & ~TIER_DIRTY;
}

struct tslab {
	uint32_t prev, next;   /* its class's list (room), or the free stack */
	uint32_t aprev, anext; /* the age list (in use) */
	uint16_t cls;          /* 0: free */
	uint16_t used;
	uint64_t map[TIER_MAXOBJ / 64];
};

/*
 * Pages that do not compress, remembered by their address's 2 MiB chunk
 * (tier.c; evict lock): after TIER_SKIP_AFTER in a row fail, only one in
 * TIER_SKIP_EVERY of the chunk's is tried, the others go to the file
 * untried, until one compresses again.  Chunks share an entry modulo
 * TIER_SKIP_N (no tags: a compressible chunk's successes keep a shared
 * entry trying).
 */
#define TIER_SKIP_SHIFT 21u
#define TIER_SKIP_N 1024u
#define TIER_SKIP_AFTER 8u
#define TIER_SKIP_EVERY 16u

struct tier_skip {
	uint8_t fails; /* in a row, up to TIER_SKIP_AFTER */
	uint8_t tick;  /* pages skipped since the last try */
};

struct tobj { /* an object's header */
	uint32_t slot, id, len, pad;
};

struct bp_tier {
	_Atomic bool on;
	uint32_t cap;    /* pages of memory the pool may hold */
	uint32_t accept; /* largest compressed size kept */
	/* the arena and its slabs (lock) */
	_Atomic uint32_t lock;
	char *arena;
	size_t arena_len;
	uint32_t nslabs, hi; /* slabs reserved, slabs ever used */
	struct tslab *slabs;
	uint32_t free_head;
	uint32_t part[TIER_NCLASS];
	uint32_t age_head, age_tail;
	/* slot of our own file -> slab * TIER_MAXOBJ + object + 1 (0: none) */
	_Atomic uint32_t *ent;
	uint32_t nent;
	/* the evictor's scratch (evict lock) */
	char *stage; /* BP_TIER_STAGE pages, page-aligned */
	char *cbuf;  /* their compressed copies, PG_SIZE apart */
	int clen[BP_TIER_STAGE]; /* -1: not worth keeping */
	struct tier_skip skip[TIER_SKIP_N];
	void *lz4state;
	/* the pool's writes to the file, all of a batch at once (tier-write.c;
	 * evict lock); not made or failed: pwritev */
	struct io_uring ring;
	bool ring_live;
	/* counters */
	_Atomic uint64_t pages_mem, pool_pages, comp_bytes, stored, rejected, dropped,
		swapin_pool, swapin_file, cold, pool_only, pool_writes,
		skipped; /* of rejected: not tried (struct tier_skip) */
	/* the share's adaptation (tier-share.c) */
	bool fixed;              /* off: cap stays what the API set */
	uint32_t cap_lo, cap_hi; /* its bounds (the API's 5 .. 90%) */
	uint32_t step;           /* pages of memory per move */
	uint32_t win_len, win_ev; /* evictions per window, this window's so far */
	_Atomic uint32_t span;   /* a step's worth of copies (ghost reach) */
	_Atomic uint64_t readmitted; /* clean copies taken at eviction */
	_Atomic uint32_t near_step; /* step, or 0 when fixed (fault threads read it) */
	_Atomic uint32_t forgets; /* copies forgotten by shrinking: ghost stamps */
	_Atomic uint32_t *ghost; /* slot -> forgets when the pool forgot its copy */
	_Atomic uint64_t near, ghost_hits, moves;
	struct bp_tier_window last; /* the counters at the window's start */
	uint64_t rent; /* near refaults over weighed ghosts since the last move */
};

/* ------------------------------------------------------------ lock */

static inline void tlock(struct bp_tier *t)
{
	for (;;) {
		uint32_t z = 0;
		if (atomic_compare_exchange_weak_explicit(&t->lock, &z, 1, memory_order_acquire,
							  memory_order_relaxed))
			return;
		while (atomic_load_explicit(&t->lock, memory_order_relaxed))
			bp_cpu_relax();
	}
}

static inline void tunlock(struct bp_tier *t)
{
	atomic_store_explicit(&t->lock, 0, memory_order_release);
}

/* ------------------------------------------------------------ slabs */

static inline uint32_t objs_per(unsigned cls)
{
	return TIER_SLAB / (cls * TIER_GRAIN);
}

static inline void age_add(struct bp_tier *t, uint32_t i)
{
	struct tslab *s = &t->slabs[i];
	s->anext = TNONE;
	s->aprev = t->age_tail;
	if (t->age_tail != TNONE)
		t->slabs[t->age_tail].anext = i;
	else
		t->age_head = i;
	t->age_tail = i;
}

static inline void age_del(struct bp_tier *t, uint32_t i)
{
	struct tslab *s = &t->slabs[i];
	if (s->aprev != TNONE)
		t->slabs[s->aprev].anext = s->anext;
	else
		t->age_head = s->anext;
	if (s->anext != TNONE)
		t->slabs[s->anext].aprev = s->aprev;
	else
		t->age_tail = s->aprev;
	s->aprev = s->anext = TNONE;
}

static inline char *obj_addr(struct bp_tier *t, uint32_t slab, uint32_t o)
{
	return t->arena + (size_t)slab * TIER_SLAB + (size_t)o * t->slabs[slab].cls * TIER_GRAIN;
}

/* Slot s's copy was forgotten by shrinking (its page's lock held):
 * remember when, so a read of it from the file says whether a bigger pool
 * would have kept it (tier-share.c). */
void bp_tier_ghost(struct bp_tier *t, uint32_t s);
/* Slot s is reused or freed (its page's lock held): no ghost. */
static inline void ghost_clear(struct bp_tier *t, uint32_t s)
{
	if (t->ghost && atomic_load_explicit(&t->ghost[s], memory_order_relaxed))
		atomic_store_explicit(&t->ghost[s], 0, memory_order_relaxed);
}
/* A read from the file of slot s (not in the pool; its page's lock held):
 * counted if the pool forgot it within a step's worth of copies. */
void bp_tier_ghost_read(struct bp_tier *t, uint32_t s);
/* Judge the window if it is over (evict lock): n more evictions. */
void bp_tier_share_tick(struct bp_tier *t, uint32_t n);
/* The adaptation's bounds and step for the cap the API set (evict lock). */
void bp_tier_share_reset(struct bypass_pager *p, struct bp_tier *t, bool fixed);

/* Drop slot s's entry e (its page's lock held; tier.c). */
void bp_tier_drop_ent(struct bypass_pager *p, struct bp_tier *t, uint32_t s, uint32_t e);
/* Object o's copy into dst (PG_SIZE bytes): 0, or -EIO (tier.c). */
int bp_tier_unpack(const char *o, char *dst);

#endif
