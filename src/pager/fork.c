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
 *            child's entries claimed and filled; the page tables of spans
 *            with nothing mapped dropped (below); the table's lock.
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
#include "pager/read.h"
#include "pager/fork.h"
#include "pager/fault.h"
#include "pager/evict.h"
#include "pager/policy.h"
#include "core/syscall.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct bypass_pager **g_list; /* live pagers (g_lock) */
static uint64_t *g_swept;            /* g_list[i]'s evictions at its last sweep */
static size_t g_n, g_cap;

/*
 * Empty page tables (issue 32's fork target).  An evicted page's entry is
 * cleared (MADV_DONTNEED) but the page-table page that held it stays, and
 * fork() copies every page-table page of the regions into the child: with
 * 1 GiB evicted, 512 of them allocated, charged and walked for nothing (the
 * shared-slot fork took 1.7x Linux's at the same resident set, nearly all
 * of it in the kernel's copy_page_range).  Linux frees a page-table page
 * that a MADV_DONTNEED of at least PMD_SIZE leaves empty (CONFIG_PT_RECLAIM,
 * 6.14 on; elsewhere the call changes nothing).  So before a shared-slot
 * fork, each 2 MiB-aligned span of p's regions with no page mapped (every
 * page swapped out or zero by the pager's states, and none present by
 * mincore) gets one MADV_DONTNEED, consecutive spans together: nothing is
 * unmapped, the empty tables go.  Called with the gate closed (fork_prepare:
 * bp_share_prepare), so no page is installed meanwhile.  Skipped when p
 * evicted nothing since its last sweep: no table can have emptied since.
 */
#define PT_SPAN (2ul << 20)
#define PT_PAGES (PT_SPAN / PG_SIZE)

static uint64_t evictions_of(struct bypass_pager *p)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < PG_STAT_SHARDS; i++)
		n += atomic_load_explicit(&p->st[i].evict, memory_order_relaxed);
	return n;
}

/* Is no page of the span at a (page id id) mapped? */
static bool span_empty(struct bypass_pager *p, uintptr_t a, uint32_t id)
{
	for (uint32_t k = 0; k < PT_PAGES; k++) {
		unsigned st = pg_state(atomic_load_explicit(&pg_of(p, id + k)->w,
							    memory_order_relaxed));
		if (st != PS_SWAPPED && st != PS_ZERO)
			return false;
	}
	unsigned char vec[PT_PAGES];
	if (bp_sys_ret(bp_syscall3(SYS_mincore, a, PT_SPAN, (uintptr_t)vec)) < 0)
		return false;
	for (uint32_t k = 0; k < PT_PAGES; k++)
		if (vec[k] & 1)
			return false;
	return true;
}

static void drop_run(uintptr_t a, uintptr_t b)
{
	if (b > a)
		bp_sys_madvise((void *)a, b - a, MADV_DONTNEED);
}

static void sweep_tables(struct bypass_pager *p, uint64_t *swept)
{
	uint64_t ev = evictions_of(p);
	if (ev == *swept)
		return;
	*swept = ev;
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (size_t i = 0; t && i < t->n; i++) {
		struct region *r = t->r[i];
		if (r->pager != p || r->gen != p->cfg.gen)
			continue;
		uintptr_t a = (r->start + PT_SPAN - 1) & ~(PT_SPAN - 1), run = a;
		for (; a + PT_SPAN <= r->end; a += PT_SPAN)
			if (!span_empty(p, a, region_id(r, a))) {
				drop_run(run, a);
				run = a + PT_SPAN;
			}
		drop_run(run, a);
	}
	bp_tab_leave(idx);
}

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
		if (bp_share_prepare(p)) {
			sweep_tables(p, &g_swept[i]);
			continue;
		}
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
	bp_share_fork_fds(); /* the parent's handler threads' epoll descriptors */
	bp_rd_fork_child();  /* and their part in read.c's count of the load */
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
		if (v)
			g_list = v;
		uint64_t *w = v ? bp_pg_realloc(g_swept, cap * sizeof(*w)) : NULL;
		if (w) {
			g_swept = w;
			g_cap = cap;
		} else {
			e = -ENOMEM;
		}
	}
	if (!e) {
		g_swept[g_n] = 0;
		g_list[g_n++] = p;
	}
	bp_mutex_unlock(&g_lock, BP_RANK_FORK);
	return e;
}

void bp_fork_remove(struct bypass_pager *p)
{
	bp_mutex_lock(&g_lock, BP_RANK_FORK);
	for (size_t i = 0; i < g_n; i++)
		if (g_list[i] == p) {
			g_list[i] = g_list[--g_n];
			g_swept[i] = g_swept[g_n];
			break;
		}
	bp_mutex_unlock(&g_lock, BP_RANK_FORK);
}
