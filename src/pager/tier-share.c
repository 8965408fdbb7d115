/* SPDX-License-Identifier: MIT */
/*
 * The compressed pool's share of the budget adapts to what it saves
 * (issue 35).  The rule is ARC's, with the shadows the pager keeps, judged
 * once per window of evictions, one step at a time:
 *
 *  - a swap-in from the file of a copy the pool forgot within the last
 *    step's worth of copies (a ghost) says a pool one step bigger would
 *    have had it: grow;
 *  - a swap-in of a page evicted within the last step's worth of evictions
 *    (its refault distance, install.c) says one step more resident memory
 *    would have kept it mapped: shrink, once these near refaults have paid
 *    for the step down (below);
 *  - a pool that wrote more copies to the file (forgotten before they were
 *    read) than it served swap-ins saves nothing and costs a compression,
 *    a decompression and a write per page: shrink.
 *
 * Ghosts against near refaults, each weighed by what it would save: a
 * near refault comes from the pool (a page evicted that recently still
 * has its copy there), so more resident memory saves it a swap-in from the
 * pool; a ghost read from the file would have been a swap-in from the
 * pool, which saves a file read less a pool swap-in.  With a file read
 * ~8x a pool swap-in (issue 35: 35-50 us a read on this VM's disk, a few
 * us a fault and an LZ4 decompression), a ghost weighs
 * BP_TIER_GHOST_WEIGHT (7) near refaults.  ARC counts both alike; that
 * shrank GNU sort's pool to its floor and traded 300k pool swap-ins for
 * 40k more file reads (notes of issue 35's session).  A constant, not a
 * timing: the rule is the same on every machine and testable on made-up
 * sequences.
 *
 * A step down is not free: the pool forgets a step's worth of copies, and
 * writes the pool-only ones to the file first, each a decompression and
 * an O_DIRECT write (about a file read: BP_TIER_WRITE_WEIGHT, 8, near
 * refaults).  Stepping down at once, the share swung up and down around
 * SQLite's working set (50 moves a run, 2-3k copies written, 0.18-0.28 s
 * of a 1.6 s run; none with the share fixed), so near refaults pay rent
 * before they buy a step down: the near refaults over the weighed ghosts,
 * summed over the windows since the last move (a window whose ghosts win
 * clears the sum), must exceed what the step down would write now.  A
 * pool a step or more below its cap (slack) would give the pages nothing
 * by a lower cap, so near refaults do not lower it then.  The writes rule
 * (more written than served) applies only when the ghosts do not ask for
 * more.  A window with fewer than BP_TIER_WIN_MIN events keeps the share.
 * The cap stays within the API's range (5 .. 90% of the budget); a cap
 * lowered is reached by the evictor's next round shrinking the pool
 * (evict.c), a cap raised by the pool taking slabs as evictions come.
 * BYPASS_PAGER_TIER_FIXED keeps the share the API set.
 */
#include "pager/page.h"
#include "pager/struct.h"
#include "pager/tier-int.h"

uint32_t bp_tier_share_next(uint32_t cap, uint32_t step, uint32_t lo, uint32_t hi,
			    const struct bp_tier_window *w, uint64_t *rent)
{
	if (w->hits + w->writes + w->ghosts + w->near < BP_TIER_WIN_MIN)
		return cap;
	uint64_t grow = w->ghosts * BP_TIER_GHOST_WEIGHT, shrink = w->near;
	uint32_t down = cap >= lo + step ? cap - step : (cap < lo ? cap : lo);
	if (grow > shrink) {
		*rent = 0;
		return cap + step <= hi ? cap + step : (cap > hi ? cap : hi);
	}
	if (shrink > grow && !w->slack) {
		*rent += shrink - grow;
		if (*rent > w->cost) {
			*rent = 0;
			return down;
		}
	}
	if (w->writes > w->hits) {
		*rent = 0;
		return down;
	}
	return cap;
}

void bp_tier_ghost(struct bp_tier *t, uint32_t s)
{
	uint32_t g = atomic_fetch_add_explicit(&t->forgets, 1, memory_order_relaxed) + 1;
	if (t->ghost && s < t->nent)
		atomic_store_explicit(&t->ghost[s], g ? g : 1, memory_order_relaxed);
}

void bp_tier_ghost_read(struct bp_tier *t, uint32_t s)
{
	if (!t->ghost)
		return;
	uint32_t g = atomic_load_explicit(&t->ghost[s], memory_order_relaxed);
	if (!g)
		return;
	atomic_store_explicit(&t->ghost[s], 0, memory_order_relaxed); /* once */
	uint32_t ago = atomic_load_explicit(&t->forgets, memory_order_relaxed) - g;
	if (ago < atomic_load_explicit(&t->span, memory_order_relaxed))
		atomic_fetch_add_explicit(&t->ghost_hits, 1, memory_order_relaxed);
}

void bp_tier_note_refault(struct bypass_pager *p, uint32_t dist)
{
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	if (t && dist < atomic_load_explicit(&t->near_step, memory_order_relaxed) && bp_tier_on(t))
		atomic_fetch_add_explicit(&t->near, 1, memory_order_relaxed);
}

static struct bp_tier_window now_counts(const struct bp_tier *t)
{
	return (struct bp_tier_window){
		.hits = atomic_load_explicit(&t->swapin_pool, memory_order_relaxed),
		.writes = atomic_load_explicit(&t->pool_writes, memory_order_relaxed),
		.ghosts = atomic_load_explicit(&t->ghost_hits, memory_order_relaxed),
		.near = atomic_load_explicit(&t->near, memory_order_relaxed),
	};
}

void bp_tier_share_tick(struct bp_tier *t, uint32_t n)
{
	if (t->fixed || (t->win_ev += n) < t->win_len)
		return;
	t->win_ev = 0;
	struct bp_tier_window c = now_counts(t), w = {
		.hits = c.hits - t->last.hits,
		.writes = c.writes - t->last.writes,
		.ghosts = c.ghosts - t->last.ghosts,
		.near = c.near - t->last.near,
	};
	t->last = c;
	uint64_t mem = atomic_load_explicit(&t->pages_mem, memory_order_relaxed);
	uint64_t held = atomic_load_explicit(&t->pool_pages, memory_order_relaxed);
	/* a step down's cost: the memory it takes from the pool now (what
	 * the pool holds above the lower cap, at most a step), at the pool's
	 * copies a page, the pool-only share of them written first */
	uint32_t low = t->cap > t->step ? t->cap - t->step : 0;
	uint64_t over = mem > low ? mem - low : 0;
	uint64_t stored = atomic_load_explicit(&t->stored, memory_order_relaxed);
	uint64_t only = atomic_load_explicit(&t->pool_only, memory_order_relaxed);
	over = over < t->step ? over : t->step;
	w.slack = !over;
	if (mem && stored)
		w.cost = BP_TIER_WRITE_WEIGHT * (over * held / mem) * only / stored;
	uint32_t cap = bp_tier_share_next(t->cap, t->step, t->cap_lo, t->cap_hi, &w, &t->rent);
	if (cap != t->cap) {
		t->cap = cap;
		atomic_fetch_add_explicit(&t->moves, 1, memory_order_relaxed);
	}
	/* a step's worth of copies: the step's pages at the pool's ratio */
	uint64_t span = mem && held > mem ? (uint64_t)t->step * held / mem : t->step;
	atomic_store_explicit(&t->span, (uint32_t)(span < UINT32_MAX ? span : UINT32_MAX),
			      memory_order_relaxed);
}

void bp_tier_share_reset(struct bypass_pager *p, struct bp_tier *t, bool fixed)
{
	uint32_t b = p->cfg.budget;
	uint32_t lo = (uint32_t)((uint64_t)b * 5 / 100), hi = (uint32_t)((uint64_t)b * 90 / 100);
	lo -= lo % TIER_SLAB_PAGES;
	hi -= hi % TIER_SLAB_PAGES;
	t->cap_lo = lo < TIER_SLAB_PAGES ? TIER_SLAB_PAGES : lo;
	t->cap_hi = hi < t->cap_lo ? t->cap_lo : hi;
	/* 64 steps over the budget: from the default half to either bound in
	 * about 30 windows */
	uint32_t step = b / 64;
	step -= step % TIER_SLAB_PAGES;
	t->step = step < TIER_SLAB_PAGES ? TIER_SLAB_PAGES : step;
	t->win_len = b / 8 > 512 ? b / 8 : 512;
	t->win_ev = 0;
	t->rent = 0;
	t->fixed = fixed;
	atomic_store_explicit(&t->near_step, fixed ? 0 : t->step, memory_order_relaxed);
	t->last = now_counts(t);
	if (!atomic_load_explicit(&t->span, memory_order_relaxed))
		atomic_store_explicit(&t->span, t->step, memory_order_relaxed);
}
