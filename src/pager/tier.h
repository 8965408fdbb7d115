/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier (tier.c): evicted pages compressed with LZ4 into a
 * pool of memory counted in the budget, between the resident pages and
 * the swap file.  See docs/pager.md, "Compressed tier".
 *
 * Write-through: an evicted page that compresses is written to its swap
 * slot as before and kept compressed in the pool as well, under that slot;
 * the pool's table says, per slot of the pager's own file, whether a copy
 * is in memory.  Whatever reads the file (the prefetcher, a forked child)
 * finds the data there; a swap-in finds it in the pool first.  The pool
 * shrinks by forgetting its oldest copies.
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
/* Copy the n locked, write-protected pages at addrs into the staging
 * buffer (evict lock); returns it, or NULL (then nothing is stored). */
char *bp_tier_stage(struct bp_tier *t, void *const *addrs, uint32_t n);
/* Compress one page as the round's victim number idx (evict lock): the
 * compressed size if it is worth keeping, else -1 (the file only). */
int bp_tier_compress(struct bp_tier *t, const char *page, uint32_t idx);
/* Keep victim idx's compressed copy as slot s's, for page id (evict lock;
 * s just given to the page, page locked): true if kept (false: it did not
 * compress, or no room in the pool or under the budget). */
bool bp_tier_commit(struct bypass_pager *p, struct bp_tier *t, uint32_t s, uint32_t id,
		    uint32_t idx);
/* Slot s's page into dst (PG_SIZE bytes) if the pool holds it: 1; 0 if
 * not (read the file); -EIO if the data does not decompress.  Any
 * context; the page's lock held. */
int bp_tier_load(struct bp_tier *t, uint32_t s, char *dst);
/* Slot s is freed (its page's lock held): its pool entry too. */
void bp_tier_forget(struct bypass_pager *p, struct bp_tier *t, uint32_t s);
/* Forget the pool's oldest copies (the file has them) until it holds at
 * most target pages of memory (evict lock); pages of memory freed. */
uint32_t bp_tier_shrink(struct bypass_pager *p, struct bp_tier *t, uint32_t target);
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

#endif
