/* SPDX-License-Identifier: MIT */
/*
 * The table of regions, read by page-fault handlers without locks.
 *
 * Writers (map, unmap) publish a new sorted snapshot and then wait until
 * every reader that could still hold the old one has left its read
 * section, in the manner of SRCU: readers count themselves in one of two
 * counters chosen by a phase; a writer flips the phase and waits for each
 * counter to drain in turn.  A reader that loaded the phase before the flip
 * but counted itself after the writer saw its counter at zero loads the
 * table after the writer stored the new one (all seq_cst), so it cannot
 * hold the old snapshot.
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/table.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/engine.h"
#include "core/syscall.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic(struct regtab *) g_tab;
static _Atomic unsigned g_phase;
static struct {
	_Atomic long n;
	char pad[BP_CACHELINE - sizeof(long)];
} g_readers[2] __attribute__((aligned(BP_CACHELINE)));
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* A child forked while another thread maps or unmaps must not inherit
 * g_lock held: it may create pagers of its own.  (fork.c calls these from
 * its fork handlers, after it has prepared the pagers: a map holds its
 * pager's lock while it takes g_lock.) */
void bp_tab_fork_prepare(void)
{
	bp_mutex_lock(&g_lock, BP_RANK_TABLE);
}

void bp_tab_fork_parent(void)
{
	bp_mutex_unlock(&g_lock, BP_RANK_TABLE);
}

/*
 * The child has the regions' memory and a single thread.  The regions of
 * pagers the fork kept (share.c: the child pages them itself, keep() says
 * which) stay; the others are forgotten (fork.c made every page of them
 * resident first: ordinary memory here, the child's to unmap), so that a
 * pager or mapping created in the child at a recycled address is not
 * mistaken for the parent's.
 */
void bp_tab_fork_child(bool (*keep)(const struct region *r))
{
	/* taken by this thread in bp_tab_fork_prepare: unlocked, not re-made
	 * (a re-init leaves it held in TSan's eyes: false lock-order reports
	 * once the child forks again) */
	pthread_mutex_unlock(&g_lock);
	/* Readers counted by the parent's other threads do not exist here. */
	atomic_store(&g_readers[0].n, 0);
	atomic_store(&g_readers[1].n, 0);
	struct regtab *t = atomic_load(&g_tab);
	if (!t)
		return;
	size_t k = 0, k2 = 0;
	for (size_t i = 0; i < t->n; i++) /* in place: order kept in both */
		if (keep(t->r[i]))
			t->r[k++] = t->r[i];
	for (size_t i = 0; i < t->n; i++)
		if (keep(t->by_id[i]))
			t->by_id[k2++] = t->by_id[i];
		else
			bp_region_free(t->by_id[i]);
	if (!k) {
		atomic_store(&g_tab, NULL);
		bp_pg_free(t);
		return;
	}
	/* by_id follows r[] in the same block: move it down next to r[k] */
	memmove(t->r + k, t->by_id, k * sizeof(t->r[0]));
	t->by_id = t->r + k;
	t->n = k;
}

unsigned bp_tab_enter(void)
{
	unsigned idx = atomic_load(&g_phase) & 1;
	atomic_fetch_add(&g_readers[idx].n, 1);
	return idx;
}

void bp_tab_leave(unsigned idx)
{
	atomic_fetch_sub(&g_readers[idx].n, 1);
}

struct regtab *bp_tab_get(void)
{
	return atomic_load(&g_tab);
}

struct region *bp_tab_find(struct regtab *t, uintptr_t addr)
{
	if (!t)
		return NULL;
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct region *r = t->r[mid];
		if (addr < r->start)
			hi = mid;
		else if (addr >= r->end)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

void bp_tab_each_page(struct bypass_pager *p,
		      void (*fn)(struct bypass_pager *p, struct region *r, uint32_t id, void *arg),
		      void *arg)
{
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (size_t i = 0; t && i < t->n; i++) {
		struct region *r = t->r[i];
		if (r->pager != p)
			continue;
		uint32_t n = (uint32_t)((r->end - r->start) >> PG_SHIFT);
		for (uint32_t k = 0; k < n; k++)
			fn(p, r, r->id0 + k, arg);
	}
	bp_tab_leave(idx);
}

/* (pager, first id) order of by_id */
static bool id_before(const struct region *x, const struct region *y)
{
	return (uintptr_t)x->pager < (uintptr_t)y->pager ||
	       (x->pager == y->pager && x->id0 < y->id0);
}

struct region *bp_tab_find_id(struct regtab *t, struct bypass_pager *p, uint32_t id)
{
	if (!t)
		return NULL;
	/* the last region at or before (p, id) */
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct region *r = t->by_id[mid];
		if ((uintptr_t)r->pager < (uintptr_t)p || (r->pager == p && r->id0 <= id))
			lo = mid + 1;
		else
			hi = mid;
	}
	struct region *r = lo ? t->by_id[lo - 1] : NULL;
	return r && r->pager == p && region_has_id(r, id) ? r : NULL;
}

static void synchronize(void)
{
	for (int k = 0; k < 2; k++) {
		unsigned idx = atomic_fetch_add(&g_phase, 1) & 1;
		for (unsigned spins = 0; atomic_load(&g_readers[idx].n) != 0; spins++) {
			if (spins < 100) {
				bp_cpu_relax();
			} else {
				struct timespec ts = { 0, 50000 };
				bp_sys_nanosleep(&ts, NULL);
			}
		}
	}
}

static int cmp_region(const void *a, const void *b)
{
	const struct region *x = *(struct region *const *)a;
	const struct region *y = *(struct region *const *)b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_id(const void *a, const void *b)
{
	const struct region *x = *(struct region *const *)a;
	const struct region *y = *(struct region *const *)b;
	return id_before(x, y) ? -1 : id_before(y, x);
}

static bool dropped(struct region *r, struct region **old, size_t nold)
{
	for (size_t d = 0; d < nold; d++)
		if (r == old[d])
			return true;
	return false;
}

int bp_tab_replace(struct region **old, size_t nold, struct region **add, size_t nadd)
{
	bp_mutex_lock(&g_lock, BP_RANK_TABLE);
	struct regtab *cur = atomic_load(&g_tab);
	size_t n = cur ? cur->n : 0;
	struct regtab *nt = bp_pg_malloc(sizeof(*nt) + 2 * (n + nadd) * sizeof(nt->r[0]));
	if (!nt) {
		bp_mutex_unlock(&g_lock, BP_RANK_TABLE);
		return -ENOMEM;
	}
	nt->by_id = nt->r + n + nadd;
	/* the new ones sorted (few), merged with the old ones kept (sorted
	 * already), in both orders: linear in the table's size, whatever it
	 * holds (an interpreter's arenas can make thousands of small
	 * regions; a sort of the whole table per map made 20,000 small
	 * mmaps 37x slower) */
	qsort(add, nadd, sizeof(add[0]), cmp_region);
	size_t k = 0, j = 0;
	for (size_t i = 0; i < n; i++) {
		struct region *r = cur->r[i];
		if (dropped(r, old, nold))
			continue;
		while (j < nadd && add[j]->start < r->start)
			nt->r[k++] = add[j++];
		nt->r[k++] = r;
	}
	while (j < nadd)
		nt->r[k++] = add[j++];
	qsort(add, nadd, sizeof(add[0]), cmp_id);
	size_t k2 = 0;
	j = 0;
	for (size_t i = 0; i < n; i++) {
		struct region *r = cur->by_id[i];
		if (dropped(r, old, nold))
			continue;
		while (j < nadd && id_before(add[j], r))
			nt->by_id[k2++] = add[j++];
		nt->by_id[k2++] = r;
	}
	while (j < nadd)
		nt->by_id[k2++] = add[j++];
	nt->n = k;
	if (k == 0) {
		bp_pg_free(nt);
		nt = NULL;
	}
	atomic_store(&g_tab, nt);
	synchronize();
	bp_mutex_unlock(&g_lock, BP_RANK_TABLE);
	bp_pg_free(cur);
	return 0;
}
