/* SPDX-License-Identifier: MIT */
/*
 * The built-in policies: "2q" (the evictor's own 2Q, no callbacks),
 * "clock", "prefetch" (2Q plus stream detection and asynchronous
 * prefetch) and "window" (ExtMem's sliding window for CSR graphs).  They
 * are struct bypass_pager_policy like any other, plus hooks into the
 * pager's internals (struct bp_builtin) that let them pick victims by page
 * id; what they pick still goes through the evictor's take().
 */
#include "pager/page.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/policy.h"

#include <stdlib.h>

static int no_args(const char *args)
{
	return args && *args ? -EINVAL : 0;
}

static int init_noargs(bypass_pager *p, const char *args, void **state)
{
	(void)p;
	*state = NULL;
	return no_args(args);
}

/* One past the highest page id of p's regions (evictor: table held). */
static uint32_t ids_end(struct bypass_pager *p)
{
	struct regtab *t = bp_tab_get();
	uint32_t end = 0;
	for (size_t i = 0; t && i < t->n; i++) {
		struct region *r = t->r[i];
		if (r->pager != p)
			continue;
		uint32_t e = r->id0 + (uint32_t)((r->end - r->start) >> PG_SHIFT);
		if (e > end)
			end = e;
	}
	return end;
}

/* ------------------------------------------------------------ 2q */

static const struct bp_builtin bi_2q = { 0 };
static const struct bypass_pager_policy pol_2q = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "2q", .init = init_noargs,
};

/* ------------------------------------------------------------ clock */

/*
 * The clock algorithm over page ids: the hand sweeps the pager's pages;
 * a resident page whose reference bit is set (by a write to a clean page,
 * a fault that found it resident, a pin or an access sample) loses the bit
 * and is passed, the first one without it is the victim.  PRIORITY pages
 * are passed (the evictor takes them only when nothing else is left).
 */
struct clock_st {
	uint32_t hand; /* evict lock */
};

static int clock_init(bypass_pager *p, const char *args, void **state)
{
	(void)p;
	if (no_args(args))
		return -EINVAL;
	*state = bp_pg_calloc(1, sizeof(struct clock_st));
	return *state ? 0 : -ENOMEM;
}

static void clock_fini(void *state)
{
	bp_pg_free(state);
}

static uint32_t clock_victims(struct bypass_pager *p, void *state, uint32_t *ids, uint32_t n,
			      bp_take_fn take)
{
	struct clock_st *c = state;
	uint32_t end = ids_end(p), got = 0;
	if (!end)
		return 0;
	uint64_t steps = 2ull * end + n;
	if (steps > 4ull * p->cfg.budget + 4096)
		steps = 4ull * p->cfg.budget + 4096;
	for (uint64_t s = 0; s < steps && got < n; s++) {
		uint32_t id = c->hand < end ? c->hand : 0;
		c->hand = id + 1;
		struct pg *pg = pg_of(p, id);
		uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
		if (!(w & PW_LRU) || pg_state(w) != PS_RESIDENT || (w & PW_PRIO))
			continue;
		if (w & PW_REF) {
			pg_clear(pg, PW_REF); /* a second chance */
			continue;
		}
		if (take(p, id))
			ids[got++] = id;
	}
	return got;
}

static const struct bp_builtin bi_clock = { .victims = clock_victims };
static const struct bypass_pager_policy pol_clock = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "clock", .init = clock_init,
	.fini = clock_fini,
};

/* ------------------------------------------------------------ prefetch */

static const struct bp_builtin bi_prefetch = { .streams = true, .prefetcher = true };
static const struct bypass_pager_policy pol_prefetch = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "prefetch", .init = init_noargs,
};

/* ------------------------------------------------------------ window */

/*
 * ExtMem's sliding window for CSR graphs.  PRIORITY ranges (the vertex
 * arrays) stay resident: the evictor passes them while anything else is
 * left.  A SEQUENTIAL range (the edge array) is a stream: faults in it
 * prefetch ahead (the SEQUENTIAL hint does that under any policy), and the
 * victims are the pages just behind the stream's last fault, nearest
 * first: a page the stream has passed is the one needed furthest in the
 * future when the stream restarts from the beginning (each PageRank
 * iteration), so the pages at the start of the range that the window left
 * resident are hit again after the wrap.  Behind the start of the range
 * the walk wraps to its end, down to the stream's prefetch front.  What
 * this finds too little of, 2Q supplies.
 */
#define WIN_RANGES 16u

static uint32_t window_victims(struct bypass_pager *p, void *state, uint32_t *ids, uint32_t n,
			       bp_take_fn take)
{
	(void)state;
	uint32_t pairs[2 * WIN_RANGES];
	uint32_t nr = bp_hints_seq(p, pairs, WIN_RANGES), got = 0;
	struct regtab *t = bp_tab_get();
	for (uint32_t i = 0; i < nr && got < n && t; i++) {
		uint32_t a = pairs[2 * i], b = pairs[2 * i + 1];
		struct region *r = bp_tab_find_id(t, p, a);
		if (!r)
			continue;
		uint32_t pos = atomic_load_explicit(&r->pf_last, memory_order_relaxed);
		uint32_t front = atomic_load_explicit(&r->pf_next, memory_order_relaxed);
		if (pos < a || pos >= b)
			continue; /* no stream in this range yet */
		if (front <= pos || front > b)
			front = pos + 1;
		uint64_t budget = 8ull * n + 1024;
		uint32_t id = pos;
		bool wrapped = false;
		while (got < n && budget--) {
			if (id == a) {
				if (wrapped)
					break;
				wrapped = true;
				id = b;
			}
			id--;
			if (wrapped && id < front)
				break;
			uint32_t w = atomic_load_explicit(&pg_of(p, id)->w, memory_order_relaxed);
			if (!(w & PW_LRU) || (w & PW_PRIO))
				continue;
			if (take(p, id))
				ids[got++] = id;
		}
	}
	return got;
}

static const struct bp_builtin bi_window = { .victims = window_victims, .prefetcher = true };
static const struct bypass_pager_policy pol_window = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "window", .init = init_noargs,
};

/* ------------------------------------------------------------ the list */

const struct bypass_pager_policy *const bp_builtin_policies[] = {
	&pol_2q, &pol_clock, &pol_prefetch, &pol_window, NULL,
};

const struct bp_builtin *bp_builtin_of(const struct bypass_pager_policy *pol)
{
	if (pol == &pol_2q)
		return &bi_2q;
	if (pol == &pol_clock)
		return &bi_clock;
	if (pol == &pol_prefetch)
		return &bi_prefetch;
	if (pol == &pol_window)
		return &bi_window;
	return NULL;
}
