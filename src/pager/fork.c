/* SPDX-License-Identifier: MIT */
/*
 * fork(): a child sees the parent's regions, every byte, copy-on-write as
 * without the pager, its writes its own.
 *
 * The kernel copies what is in the page table; an evicted page is only in
 * the swap file, and the child does not inherit the userfaultfd
 * registrations that would serve it (no UFFD_FEATURE_EVENT_FORK: see
 * docs/pager.md, "Fork", for why an atfork handler and not that).  Two
 * ways, chosen per pager when the fork is prepared:
 *
 * Shared slots (share.c; issue 32), the usual way: nothing is read back.
 * The child keeps the pager, one level down: a userfaultfd of its own
 * registered over the regions before the program's code runs, the parent's
 * swap slots read from the parent's file and held copy-on-write (a bitmap
 * per descendant in a registry both processes share), its own evictions
 * into a file of its own, its own budget (the pages resident at the fork
 * count against it).  Both processes stay within their budgets.
 *
 *   prepare  the pager's lock; the gate closed (no serve, pin, prefetch
 *            read or sampling inside: no page lock held), the parked pages
 *            put back, the evict lock, the write-backs finished; the
 *            child's entries claimed and filled; the table's lock.
 *   parent   the locks released, the gate opened.
 *   child    the table keeps the regions; bp_share_child() re-arms the
 *            pager (a failure aborts the child: it would read zeros).
 *
 * Reading back, the old way, where sharing cannot work: an adaptive pager
 * (two userfaultfds that switch), access heat, a swap file that is not
 * SWAP_TEMP's unnamed one (the child has nowhere to make its own), a
 * lineage of PG_LEVELS processes, a full registry; and handler threads
 * under ThreadSanitizer (no threads in a threaded process's child):
 *
 *   prepare  the pager's lock, the forking flag and the evict lock
 *            (bp_evict_fork_begin: no eviction, no parking; faults take
 *            room at once, above the budget if need be), then each page
 *            of its regions under the page lock: a swapped-out or parked
 *            page is read back (a fault served by this thread); then the
 *            region table's lock (table.c).
 *   parent   the locks released, each pager evicted back within its budget
 *            (the pages read back are clean: dropped without a write).
 *   child    the regions forgotten (table.c): ordinary memory here,
 *            outside any budget; the pager is the parent's (every call but
 *            destroy returns -ECHILD), its locks reset so that destroy works.
 *
 * vfork() and posix_spawn() run no fork handlers and need none: the child
 * shares the parent's memory until it execs.
 *
 * Lock order: g_lock here, then each pager's lock, its evict lock, page
 * locks (one at a time), the table's lock (every pager's, in list order:
 * recorded, not checked, rank.c).  A pager is in the list from the end of
 * its creation to the start of its destruction.
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/share.h"
#include "pager/fork.h"
#include "pager/fault.h"
#include "pager/evict.h"
#include "pager/policy.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct bypass_pager **g_list; /* live pagers (g_lock) */
static size_t g_n, g_cap;

/* Page id of r resident (fetch_all); *arg counts the failures. */
static void fetch_one(struct bypass_pager *p, struct region *r, uint32_t id, void *arg)
{
	struct pg *pg = pg_of(p, id);
	/* under the page lock: a fault or a parking in flight ends first,
	 * and none starts a parking after it */
	bp_pg_lock(pg);
	uint32_t w = atomic_load(&pg->w);
	bool out = pg_state(w) == PS_SWAPPED || (w & PW_PARK);
	bp_pg_unlock(pg);
	if (!out)
		return;
	int e;
	do
		e = bp_pager_serve(r, region_addr(r, id), false, atomic_load(&r->handler));
	while (e == -EAGAIN);
	if (e)
		(*(uint32_t *)arg)++;
}

/* Make every page of p's regions resident (p's lock, forking, evict lock
 * held).  A page that cannot be read back is reported: the child would
 * find zeros there. */
static void fetch_all(struct bypass_pager *p)
{
	uint32_t failed = 0;
	bp_tab_each_page(p, fetch_one, &failed);
	if (failed)
		bp_err("bypass: pager: fork: %u pages could not be read back; the child "
		       "finds zeros there", failed);
}

/* The handlers run in the program's thread: inside bypass, so that the
 * library's own mmap (a child's new buffers) and the like never become a
 * preload's decisions (a region). */
static void fork_prepare(void)
{
	bp_enter();
	bp_mutex_lock(&g_lock, BP_RANK_FORK);
	unsigned gen = bp_fork_gen();
	for (size_t i = 0; i < g_n; i++) {
		struct bypass_pager *p = g_list[i];
		if (p->cfg.gen != gen)
			continue; /* a parent's, in a read-back child: not mapped here */
		/* every pager's locks at once, in list order under g_lock
		 * (which serializes such takes): recorded, not checked */
		pthread_mutex_lock(&p->lock);
		bp_rank_push(BP_RANK_PAGER, &p->lock);
		if (bp_share_prepare(p))
			continue;
		bp_evict_fork_begin(p);
		fetch_all(p);
	}
	bp_tab_fork_prepare();
	bp_rank_fork_held(true); /* glibc's fork may fault now (fork-late) */
	bp_leave();
}

static void fork_parent(void)
{
	bp_enter();
	bp_rank_fork_held(false);
	bp_tab_fork_parent();
	unsigned gen = bp_fork_gen();
	for (size_t i = 0; i < g_n; i++) {
		struct bypass_pager *p = g_list[i];
		if (p->cfg.gen != gen)
			continue;
		if (bp_share_kept(p))
			bp_share_parent(p);
		else
			bp_evict_fork_end(p, false);
		bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	}
	bp_mutex_unlock(&g_lock, BP_RANK_FORK);
	bp_leave();
}

static bool region_kept(const struct region *r)
{
	return bp_share_kept(r->pager) && r->gen == r->pager->cfg.gen;
}

static void fork_child(void)
{
	/* bp_fork_gen() is the child's already (core's handler ran first):
	 * the pagers prepared are those of the generation before, the kept
	 * ones' records still say so */
	bp_enter();
	bp_rank_fork_child(); /* every lock the handlers took is new here */
	bp_tab_fork_child(region_kept);
	for (size_t i = 0; i < g_n; i++) {
		struct bypass_pager *p = g_list[i];
		if (bp_share_kept(p)) {
			int e = bp_share_child(p);
			if (e) {
				/* its evicted pages would read as zeros */
				bp_err("bypass: pager: fork: the child cannot page the "
				       "regions it inherited (%s); it stops here",
				       strerror(-e));
				abort();
			}
			continue;
		}
		if (!bp_evict_forking(p))
			continue;
		bp_evict_fork_end(p, true);
		pthread_mutex_unlock(&p->lock); /* this thread's, from fork_prepare */
	}
	pthread_mutex_unlock(&g_lock); /* the same */
	bp_leave();
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
