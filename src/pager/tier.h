/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier (tier.c): evicted pages compressed with LZ4 into a
 * pool of memory counted in the budget, between the resident pages and
 * the swap file.  See docs/pager.md, "Compressed tier".
 *
 * Write-back (pool-only): an evicted page that compresses is kept in the
 * pool under the swap slot it is given, and not written to the file (the
 * entry's dirty flag says the file does not have it); a page that does
 * not compress is written to its slot as before.  The pool writes a
 * pool-only copy to its slot only when it must forget it (shrinking: the
 * pool full, or its share cut), in batches, and all of them before a fork
 * that keeps the pager (the child reads its parent's slots from the
 * parent's file: bp_tier_flush).  Whatever reads our own slots reads
 * through the pool: a swap-in (read.c), the prefetcher (prefetch.c).  A
 * write that fails keeps the pool's copy.
 * The evictor (evict lock) stores and shrinks; a swap-in (under the page
 * lock of every page it reads) loads; whoever frees a slot (under its
 * page's lock) forgets its entry.  An entry is therefore only freed by the
 * holder of its page's lock, and read only by it: a load needs no lock
 * beyond the page's.  The allocator's metadata is under the tier's own
 * spin lock (a leaf: nothing is taken under it, nothing under it touches
 * region memory).
 */
#ifndef BYPASS_PAGER_TIER_H
#define BYPASS_PAGER_TIER_H

#include "pager/struct.h"

struct bp_tier;

#define BP_TIER_STAGE 64u /* pages staged and compressed per eviction round */

/* The tier is on (new evictions go to the pool). */
bool bp_tier_on(const struct bp_tier *t);
/* Compress the n locked, write-protected pages at addrs as the round's
 * victims 0 .. n-1 (evict lock; bp_tier_compress each, but a page whose
 * address's chunk has not compressed lately is tried only one time in
 * TIER_SKIP_EVERY: tier-int.h): false if they could not be (then nothing
 * is stored). */
bool bp_tier_compress_pages(struct bp_tier *t, void *const *addrs, uint32_t n);
/* Compress one page as the round's victim number idx (evict lock): the
 * compressed size if it is worth keeping, else -1 (the file only). */
int bp_tier_compress(struct bp_tier *t, const char *page, uint32_t idx);
/* Pages not tried, their chunk's recent pages not compressing (counted
 * in the stats' rejected too). */
uint64_t bp_tier_skipped(const struct bp_tier *t);
/* bypass_pager_tier_stats@BYPASS_0.1 (tier-abi.c): the first 12 words of
 * the struct (0.1's struct, before skipped and the reserved tail) into st.
 * Default visibility for the versioned name; libbypass.map hides this one. */
__attribute__((visibility("default"))) int bp_tier_stats_v01(struct bypass_pager *p, void *st);
/* The pool holds slot s's data. */
bool bp_tier_has(const struct bp_tier *t, uint32_t s);
/* Clean pages ids[0..n) (locked, write-protected, at addrs, their data in
 * file slots slots[]) compressed into the pool as clean copies (evict lock;
 * n <= BP_TIER_STAGE, before the round's tier staging): how many kept. */
uint32_t bp_tier_readmit(struct bypass_pager *p, struct bp_tier *t, const uint32_t *ids,
			 const uint32_t *slots, void *const *addrs, uint32_t n);
/* Victim idx compressed well enough to be kept (evict lock). */
bool bp_tier_compressed(const struct bp_tier *t, uint32_t idx);
/* Keep victim idx's compressed copy as slot s's, for page id (evict lock;
 * s just given to the page, page locked): true if kept (false: it did not
 * compress, or no room in the pool or under the budget).  pool_only: the
 * page is not written to the file (the copy is the only one). */
bool bp_tier_commit(struct bypass_pager *p, struct bp_tier *t, uint32_t s, uint32_t id,
		    uint32_t idx, bool pool_only);
/* Slot s's page into dst (PG_SIZE bytes) if the pool holds it: 1; 0 if
 * not (read the file); -EIO if the data does not decompress.  Any
 * context; the page's lock held. */
int bp_tier_load(struct bp_tier *t, uint32_t s, char *dst);
/* Slot s is freed (its page's lock held): its pool entry too. */
void bp_tier_forget(struct bypass_pager *p, struct bp_tier *t, uint32_t s);
/* Forget the pool's oldest copies until it holds at most target pages of
 * memory (evict lock), writing the pool-only ones to their slots first;
 * pages of memory freed. */
uint32_t bp_tier_shrink(struct bypass_pager *p, struct bp_tier *t, uint32_t target);
/* Write every pool-only copy to its slot, keeping it in the pool (evict
 * lock held, nobody inside the pager: a fork's prepare): 0, or -EIO if
 * one could not be written (the fork then reads back instead). */
int bp_tier_flush(struct bypass_pager *p, struct bp_tier *t);
/* The pool's memory in pages, and its cap. */
uint32_t bp_tier_pages(const struct bp_tier *t);
uint32_t bp_tier_cap(const struct bp_tier *t);
/* Count a page sent to the file by the DONTNEED hint. */
void bp_tier_count_cold(struct bp_tier *t);
/* Count a swap-in's pages from each tier. */
void bp_tier_count_reads(struct bp_tier *t, uint32_t pool, uint32_t file);
/* A forked child keeping the pager: its own file is new, so the pool's
 * copies (the parent's slots, read from the parent's file now) are
 * forgotten and the table sized for the child's slots. */
void bp_tier_child(struct bypass_pager *p, struct bp_tier *t);
void bp_tier_free(struct bp_tier *t);

/*
 * The pool's share adapts (tier-share.c): what the pool did over a window
 * of evictions, and the rule that moves its cap one step from it.
 */
struct bp_tier_window {
	uint64_t hits;   /* swap-ins from the pool */
	uint64_t writes; /* pool-only copies written to the file (forgotten) */
	uint64_t ghosts; /* swap-ins from the file of copies the pool forgot
			    within a step's worth of copies: a pool one step
			    bigger would have had them */
	uint64_t near;   /* swap-ins of pages evicted within a step's worth
			    of evictions: one step more resident memory
			    would have kept them */
	uint64_t cost;   /* what a step down costs now, in near refaults:
			    the pool-only copies it writes to the file,
			    each weighed BP_TIER_WRITE_WEIGHT */
	bool slack;      /* the pool holds less than its cap less a step: a
			    step down would give the pages nothing now */
};
#define BP_TIER_WIN_MIN 8u /* events a window needs to move the share */
/* A ghost read against near refaults: a file read saved, less the pool's
 * swap-in it becomes, in pool swap-ins (tier-share.c) */
#define BP_TIER_GHOST_WEIGHT 7u
/* A pool-only copy a step down forgets: a decompression and a file write,
 * weighed as a file read against a pool swap-in (tier-share.c) */
#define BP_TIER_WRITE_WEIGHT 8u
/* The cap after window w: cap + step (ghosts, weighed, over near
 * refaults), cap - step (without slack, the near refaults over weighed
 * ghosts, summed in *rent over the windows since the last move, over w's
 * cost; or more writes than hits) or cap, within [lo, hi].  *rent: the
 * caller's, 0 at first. */
uint32_t bp_tier_share_next(uint32_t cap, uint32_t step, uint32_t lo, uint32_t hi,
			    const struct bp_tier_window *w, uint64_t *rent);
/* A swap-in of a page evicted dist evictions ago (install.c): counted
 * for the share if within a step. */
void bp_tier_note_refault(struct bypass_pager *p, uint32_t dist);

#endif
