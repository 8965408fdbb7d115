/* SPDX-License-Identifier: MIT */
/*
 * fork(): a child sees the parent's regions, every byte, as ordinary
 * private memory, copy-on-write as without the pager.
 *
 * The kernel copies what is in the page table; an evicted page is only in
 * the swap file, and the child does not inherit the userfaultfd
 * registrations that would serve it (no UFFD_FEATURE_EVENT_FORK).  So the
 * fork handlers make every page of every region resident before the fork
 * and keep it so until the fork is done:
 *
 *   prepare  every live pager of this process, in turn: its lock (no map,
 *            unmap, engine switch or policy change), the forking flag and
 *            the evict lock (bp_evict_fork_begin: no eviction, no parking;
 *            faults take room at once, above the budget if need be), then
 *            each page of its regions under the page lock: a swapped-out
 *            or parked page is read back (a fault served by this thread);
 *            then the region table's lock (table.c).
 *   parent   the locks released, each pager evicted back within its budget
 *            (the pages read back are clean: dropped without a write).
 *   child    the region table forgotten (table.c): the regions are
 *            ordinary memory here, outside any budget; the pagers are the
 *            parent's (every call but destroy returns -ECHILD), their locks
 *            reset so that destroy works.
 *
 * The cost: a fork reads back everything evicted, and the parent is above
 * its budget until the fork returns (by the size of what was evicted: a
 * process whose evicted data does not fit in memory cannot fork).  The
 * alternative (a child's userfaultfd serving its missing pages from the
 * parent's swap slots, held until the child exits) is not built; see
 * docs/pager.md.  vfork() and posix_spawn() run no fork handlers and need
 * none: the child shares the parent's memory until it execs.
 *
 * Lock order: g_lock here, then each pager's lock, its evict lock, page
 * locks (one at a time), the table's lock.  A pager is in the list from the
 * end of its creation to the start of its destruction.
 */
#include "pager/policy.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct bypass_pager **g_list; /* live pagers (g_lock) */
static size_t g_n, g_cap;

/* Make every page of p's regions resident (p's lock, forking, evict lock
 * held).  A page that cannot be read back is reported: the child would
 * find zeros there. */
static void fetch_all(struct bypass_pager *p)
{
	unsigned ti = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	uint32_t failed = 0;
	for (size_t i = 0; t && i < t->n; i++) {
		struct region *r = t->r[i];
		if (r->pager != p)
			continue;
		uint32_t n = (uint32_t)((r->end - r->start) >> PG_SHIFT);
		for (uint32_t k = 0; k < n; k++) {
			struct pg *pg = pg_of(p, r->id0 + k);
			/* under the page lock: a fault or a parking in flight
			 * ends first, and none starts a parking after it */
			bp_pg_lock(pg);
			uint32_t w = atomic_load(&pg->w);
			bool out = pg_state(w) == PS_SWAPPED || (w & PW_PARK);
			bp_pg_unlock(pg);
			if (!out)
				continue;
			uintptr_t a = r->start + ((uintptr_t)k << PG_SHIFT);
			int e;
			do
				e = bp_pager_serve(r, a, false, atomic_load(&r->handler));
			while (e == -EAGAIN);
			if (e)
				failed++;
		}
	}
	bp_tab_leave(ti);
	if (failed)
		bp_err("bypass: pager: fork: %u pages could not be read back; the child "
		       "finds zeros there", failed);
}

static void fork_prepare(void)
{
	bp_mutex_lock(&g_lock, BP_RANK_FORK);
	unsigned gen = bp_fork_gen();
	for (size_t i = 0; i < g_n; i++) {
		struct bypass_pager *p = g_list[i];
		if (p->cfg.gen != gen)
			continue; /* a parent's, in a child: not mapped here */
		/* every pager's locks at once, in list order under g_lock
		 * (which serializes such takes): recorded, not checked */
		pthread_mutex_lock(&p->lock);
		bp_rank_push(BP_RANK_PAGER, &p->lock);
		bp_evict_fork_begin(p);
		fetch_all(p);
	}
	bp_tab_fork_prepare();
}

static void fork_parent(void)
{
	bp_tab_fork_parent();
	unsigned gen = bp_fork_gen();
	for (size_t i = 0; i < g_n; i++) {
		struct bypass_pager *p = g_list[i];
		if (p->cfg.gen != gen)
			continue;
		bp_evict_fork_end(p, false);
		bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	}
	bp_mutex_unlock(&g_lock, BP_RANK_FORK);
}

static void fork_child(void)
{
	bp_tab_fork_child();
	/* bp_fork_gen() is the child's already (core's handler ran first):
	 * the pagers prepared are those of the generation before */
	for (size_t i = 0; i < g_n; i++) {
		struct bypass_pager *p = g_list[i];
		if (!bp_evict_forking(p))
			continue;
		bp_evict_fork_end(p, true);
		pthread_mutex_init(&p->lock, NULL);
	}
	pthread_mutex_init(&g_lock, NULL);
	bp_rank_fork_child(); /* every lock the handlers took is new here */
}

static void fork_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int bp_fork_add(struct bypass_pager *p)
{
	pthread_once(&g_once, fork_init);
	int e = 0;
	bp_mutex_lock(&g_lock, BP_RANK_FORK);
	if (g_n == g_cap) {
		size_t cap = g_cap ? 2 * g_cap : 8;
		struct bypass_pager **v = bp_pg_realloc(g_list, cap * sizeof(*v));
		if (v) {
			g_list = v;
			g_cap = cap;
		} else {
			e = -ENOMEM;
		}
	}
	if (!e)
		g_list[g_n++] = p;
	bp_mutex_unlock(&g_lock, BP_RANK_FORK);
	return e;
}

void bp_fork_remove(struct bypass_pager *p)
{
	bp_mutex_lock(&g_lock, BP_RANK_FORK);
	for (size_t i = 0; i < g_n; i++)
		if (g_list[i] == p) {
			g_list[i] = g_list[--g_n];
			break;
		}
	bp_mutex_unlock(&g_lock, BP_RANK_FORK);
}
