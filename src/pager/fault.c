/* SPDX-License-Identifier: MIT */
/*
 * Serving page faults: bp_pager_serve(), called from the faulting thread's
 * SIGBUS handler (upcall mode) or a handler thread reading the userfaultfd
 * (handler mode), both in dispatch.c.  Here: the bounce buffers,
 * write-protect resolution, zero fill, fault-around and swap-in.
 */
#include "pager/page.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/share.h"
#include "pager/fault.h"
#include "pager/engine.h"
#include "pager/read.h"
#include "pager/evict.h"
#include "pager/sample.h"
#include "pager/uffd.h"
#include "pager/install.h"
#include "pager/policy.h"
#include "pager/heat.h" /* access heat: bp_heat_fault() */

#include <string.h>

/* Zeros for first-touch fills: one page, or a fault-around range. */
static const char zero_pages[PG_MAX_FA * PG_SIZE] __attribute__((aligned(4096)));
#define zero_page zero_pages

/* ------------------------------------------------------------ bounce */

static char *bounce_get(struct bypass_pager *p, unsigned *slot)
{
	unsigned words = (p->srv.nbounce + 63) / 64;
	for (unsigned spins = 0;; spins++) {
		for (unsigned i = 0; i < words; i++) {
			uint64_t m = atomic_load_explicit(&p->srv.bounce_map[i], memory_order_relaxed);
			while (~m) {
				unsigned b = (unsigned)__builtin_ctzll(~m);
				if (i * 64 + b >= p->srv.nbounce)
					break;
				if (atomic_compare_exchange_weak_explicit(
					    &p->srv.bounce_map[i], &m, m | (1ull << b),
					    memory_order_acquire, memory_order_relaxed)) {
					*slot = i * 64 + b;
					return p->srv.bounce + (size_t)*slot * p->cfg.ra * PG_SIZE;
				}
			}
		}
		/* More threads are reading swap than there are buffers. */
		if (spins < 16)
			bp_cpu_relax();
		else
			sched_yield();
	}
}

static void bounce_put(struct bypass_pager *p, unsigned slot)
{
	atomic_fetch_and_explicit(&p->srv.bounce_map[slot / 64], ~(1ull << (slot % 64)),
				  memory_order_release);
}

/* ------------------------------------------------------------ serving */

/* A write to a clean (write-protected) resident page: it becomes dirty. */
static int resolve_wp(struct bypass_pager *p, struct region *r, struct pg *pg,
		      uintptr_t pa)
{
	int e = bp_uffd_wp(r->uffd, pa, PG_SIZE, false, false);
	if (e)
		return e;
	if (pg_state(atomic_load(&pg->w)) == PS_WRITEBACK)
		pg_set(pg, PW_REDIRTY); /* its slot is freed when the write ends */
	else
		bp_slot_free(p, pg);
	pg_clear(pg, PW_WP);
	pg_set(pg, PW_DIRTY | PW_REF);
	return 0;
}

/*
 * A fault on a page bypass thinks is mapped: another thread served it
 * between the fault and our lock, or the application discarded it behind
 * our back (MADV_DONTNEED: anonymous memory then reads as zeros).  A copy
 * tells the two apart: it fails with EEXIST on a mapped page.  A write to
 * a mapped dirty page that faults is a write-protection the pager did not
 * ask for: a forked child protects every page it inherits (share.c), the
 * dirty ones too; unprotected here (another thread's race: a no-op).
 */
static int resolve_other(struct bypass_pager *p, struct region *r, struct pg *pg,
			 uintptr_t pa, bool write)
{
	int e = bp_uffd_copy(r->uffd, pa, zero_page, PG_SIZE, false, false);
	if (e == -EEXIST)
		return write && !(atomic_load(&pg->w) & PW_WP)
			       ? bp_uffd_wp(r->uffd, pa, PG_SIZE, false, false)
			       : 0;
	if (e)
		return e;
	bp_debug("bypass: pager: page %#lx was discarded behind the pager's back",
		 (unsigned long)pa);
	if (pg_state(atomic_load(&pg->w)) == PS_WRITEBACK)
		pg_set(pg, PW_REDIRTY);
	else
		bp_slot_free(p, pg);
	pg_clear(pg, PW_WP);
	pg_set(pg, PW_DIRTY);
	return 0;
}

/*
 * A read fault's page mapped dirty (issue 32, item 4: write re-faults).  In
 * a region where most pages the faults map clean (single pages and first
 * touches, not readahead windows or prefetched runs, which keep their own
 * write modes) are written afterwards
 * (GNU sort at 16 MiB: 118k write-protect faults for 161k swap-ins), a
 * read fault's page is mapped writable and dirty at once, as Linux maps an
 * exclusive swapped-in page writable: the write that follows costs no
 * second fault.  The price: a page that is not written after all is
 * written back when evicted.  The evidence (region.sw_clean, sw_wp: the
 * pages faults mapped clean, the write-protect faults on them) is halved
 * as it grows, so it follows the program; in write mode one fault in 16
 * still maps its page clean, the probe, so that the evidence goes
 * on and the mode ends when the program stops writing (within about
 * SW_DECAY / 3 probes).  The probes are chosen among the faults, not by
 * page id: a probe that was written took a write-protect fault, which
 * marks it referenced, so the pages at probe ids stayed resident while
 * the others were evicted, and a read-only pass that followed found no
 * probe to fault on: the mode never ended and every page it read was
 * written back (bench pager.prefetch, read-ahead off: its last scan wrote
 * all of its 32 MiB region, 430 MiB over the rounds against 302).
 */
#define SW_PROBE_SHIFT 4u /* one fault in 16 stays clean in write mode */
#define SW_MIN 16u	  /* pages mapped clean before the mode may start */
#define SW_DECAY 64u	  /* the evidence halved past this */

/* Whether this write-mode fault is a probe: one in 2^SW_PROBE_SHIFT of
 * the thread's, spread evenly (a Weyl sequence: the top bits of a counter
 * stepped by the golden ratio), so that regions whose faults alternate
 * share the probes (a plain counter would give every probe to one of two
 * regions alternating exactly, until that one left the mode).  Per
 * thread: no shared cache line on the fault path. */
static __thread uint32_t sw_weyl __attribute__((tls_model("initial-exec")));

static bool sw_probe(void)
{
	sw_weyl += 0x9e3779b9u;
	return sw_weyl >> (32 - SW_PROBE_SHIFT) == 0;
}

static bool sw_write_mode(struct region *r)
{
	uint32_t clean = atomic_load_explicit(&r->sw_clean, memory_order_relaxed);
	uint32_t wp = atomic_load_explicit(&r->sw_wp, memory_order_relaxed);
	return clean >= SW_MIN && 4 * (uint64_t)wp >= 3 * (uint64_t)clean;
}

static void sw_note(struct region *r, uint32_t clean, uint32_t wp)
{
	uint32_t c = clean ? atomic_fetch_add_explicit(&r->sw_clean, clean, memory_order_relaxed) +
				     clean
			   : atomic_load_explicit(&r->sw_clean, memory_order_relaxed);
	uint32_t w = wp ? atomic_fetch_add_explicit(&r->sw_wp, wp, memory_order_relaxed) + wp
			: atomic_load_explicit(&r->sw_wp, memory_order_relaxed);
	if (c > SW_DECAY || w > SW_DECAY) {
		atomic_store_explicit(&r->sw_clean, c / 2, memory_order_relaxed);
		atomic_store_explicit(&r->sw_wp, w / 2, memory_order_relaxed);
	}
}

/*
 * How many pages a first-touch fault at id installs: fault-around.  When
 * the pages just before it were touched already (an ascending stream, as
 * the kernel's fault-around assumes for file pages), the window is one
 * more than the run of touched pages behind it, so it ramps up 2, 4, 8 ...
 * up to p->cfg.fa; a fault with an untouched page before it installs only its
 * own page.  The window takes the following pages of the region that were
 * never touched (state ZERO) and that it can lock at once; they are locked
 * on return.
 */
static uint32_t around_lock(struct bypass_pager *p, struct region *r, uint32_t id,
			    uintptr_t pa)
{
	if (p->cfg.fa <= 1 || (atomic_load_explicit(&pg_of(p, id)->w, memory_order_relaxed) & PW_NORA))
		return 1; /* off, or a RANDOM range */
	uint32_t back = 0, first = r->id0;
	while (back + 1 < p->cfg.fa && id - back > first) {
		uint32_t w = atomic_load_explicit(&pg_of(p, id - back - 1)->w,
						  memory_order_relaxed);
		if (pg_state(w) == PS_ZERO)
			break;
		back++;
	}
	uint32_t maxk = back + 1, left = (uint32_t)((r->end - pa) >> PG_SHIFT);
	if (maxk > left)
		maxk = left;
	uint32_t k = 1;
	while (k < maxk) {
		struct pg *q = pg_of(p, id + k);
		uint32_t w = atomic_load_explicit(&q->w, memory_order_relaxed);
		if (pg_state(w) != PS_ZERO || (w & PW_LOCK) || !bp_pg_trylock(q))
			break;
		if (pg_state(atomic_load(&q->w)) != PS_ZERO) {
			bp_pg_unlock(q);
			break;
		}
		k++;
	}
	return k;
}

static int fill_zero(struct bypass_pager *p, struct region *r, struct pg *pg,
		     uint32_t id, uintptr_t pa, bool write, uint32_t *mapped)
{
	uint32_t k = around_lock(p, r, id, pa);
	int e = bp_pager_reserve(p, 1, true);
	if (!e && k > 1 && bp_pager_reserve_below_high(p, k - 1) != 0) {
		/* Fault-around only where it brings no eviction closer. */
		for (uint32_t j = 1; j < k; j++)
			bp_pg_unlock(pg_of(p, id + j));
		k = 1;
	}
	if (e)
		goto unlock;
	/* A page first read stays write-protected: clean, and dropped
	 * without a write if it is never written.  A page of the range that
	 * is mapped already (EEXIST) or any other error stops the copy: keep
	 * what was mapped; the faulting page itself must have been. */
	uint32_t done = 0;
	e = bp_install(p, &(struct bp_install){ .r = r, .src = zero_pages, .id0 = id, .k = k,
					       .nw = write ? k : 0, .from = BP_INSTALL_ZERO },
		       &done, NULL);
	if (e) {
		bp_pager_unreserve(p, k);
		goto unlock;
	}
	if (done < k)
		bp_pager_unreserve(p, k - done);
	*mapped = done;
	if (!write)
		sw_note(r, done, 0);
unlock:
	for (uint32_t j = 1; j < k; j++)
		bp_pg_unlock(pg_of(p, id + j));
	return e;
}

/*
 * Read a page back.  Readahead, as Linux's: when the fault is where the
 * previous swap-in of the region ended (a sequential stream), the window
 * doubles, up to p->cfg.ra pages; any other fault resets it to one page.  The
 * window takes the following pages of the region that were evicted into
 * the following slots (evicted together, in order), in one read.
 *
 * Only the faulting page of a write fault is mapped writable (dirty); every
 * other page is mapped write-protected and clean (its slot keeps its copy),
 * so that a readahead page that is never written is dropped again without a
 * write, and one that is written becomes dirty through a write-protect
 * fault.  Except in a write stream (ra_write_mode()): when every readahead
 * page of the last window was written, the window is mapped writable and
 * dirty but for its last page, the probe, which stays clean: its
 * write-protect fault says the stream still writes.  A write stream then
 * takes two faults a window instead of one a page; a stream that stops
 * writing costs the write-back of one window of pages it never wrote.
 */
#define RA_WMODE_MIN 3u /* clean readahead pages, all written, that start write mode */

static bool ra_write_mode(struct region *r)
{
	uint32_t clean = atomic_load_explicit(&r->ra_clean, memory_order_relaxed);
	uint32_t wp = atomic_load_explicit(&r->ra_wp, memory_order_relaxed);
	if (atomic_load_explicit(&r->ra_wmode, memory_order_relaxed))
		return clean && wp >= clean; /* the probe was written */
	return clean >= RA_WMODE_MIN && wp >= clean;
}

/* A write-protect fault on page id: one of the last readahead window's? */
static bool ra_note_wp(struct region *r, uint32_t id)
{
	uint32_t from = atomic_load_explicit(&r->ra_from, memory_order_relaxed);
	if (id - from >= atomic_load_explicit(&r->ra_next, memory_order_relaxed) - from)
		return false;
	atomic_fetch_add_explicit(&r->ra_wp, 1, memory_order_relaxed);
	return true;
}

static int swap_in(struct bypass_pager *p, struct region *r, struct pg *pg,
		   uint32_t id, uintptr_t pa, bool write, uint32_t *mapped)
{
	uint32_t slot1 = pg->slot; /* slot + 1 */
	uint32_t win = atomic_load_explicit(&r->ra_win, memory_order_relaxed);
	if (id == atomic_load_explicit(&r->ra_next, memory_order_relaxed))
		win = win < 1 ? 2 : 2 * win;
	else
		win = 1;
	if (win > p->cfg.ra)
		win = p->cfg.ra;
	if (atomic_load_explicit(&pg->w, memory_order_relaxed) & PW_NORA)
		win = 1; /* a RANDOM range */
	uint32_t k = 1, maxk = win;
	uint32_t left = (uint32_t)((r->end - pa) >> PG_SHIFT);
	if (maxk > left)
		maxk = left;
	while (k < maxk) {
		struct pg *q = pg_of(p, id + k);
		uint32_t w = atomic_load_explicit(&q->w, memory_order_relaxed);
		if (pg_state(w) != PS_SWAPPED || (w & PW_LOCK) || !bp_pg_trylock(q))
			break;
		if (pg_state(atomic_load(&q->w)) != PS_SWAPPED || q->slot != slot1 + k) {
			bp_pg_unlock(q);
			break;
		}
		k++;
	}
	/* A window (a stream: win > 1) takes its room as the faulting page
	 * does, evicting for it: a stream's readahead is read anyway.  Not
	 * when pinned pages leave the budget little else to evict: then only
	 * where it needs no eviction. */
	int e = -EAGAIN;
	if (k > 1) {
		e = bp_pager_reserve(p, k, atomic_load(&p->bud.pinned) + 4 * k <= p->cfg.budget);
		if (e) {
			for (uint32_t j = 1; j < k; j++)
				bp_pg_unlock(pg_of(p, id + j));
			k = 1;
		}
	}
	if (e)
		e = bp_pager_reserve(p, 1, true);
	if (e)
		goto unlock;
	/* write mode: pages [0, nw) are mapped writable and dirty */
	bool wmode = k > 1 && ra_write_mode(r);
	uint32_t nw = wmode ? k - 1 : write ? 1 : 0;
	if (k == 1 && !nw && sw_write_mode(r) && !sw_probe())
		nw = 1; /* the region writes what it reads */

	unsigned bslot;
	char *buf = bounce_get(p, &bslot);
	e = bp_swap_read(p, bp_share_fd(p, slot1), buf, (size_t)k * PG_SIZE,
			 (off_t)slot_index(slot1) * (off_t)PG_SIZE);
	/* All write-protected when there is readahead (one copy), then the
	 * pages to write are unprotected (one call); mapped clean if that
	 * fails (writes fault again: wp). */
	uint32_t nd = 0;
	if (!e)
		e = bp_install(p, &(struct bp_install){ .r = r, .src = buf, .id0 = id, .k = k,
						       .nw = nw, .from = BP_INSTALL_SWAPIN },
			       NULL, &nd);
	bounce_put(p, bslot);
	if (nd < nw)
		wmode = false;
	if (e) {
		bp_err("bypass: pager: swap-in of %#lx (%u pages, slot %u of level %u): %s",
		       (unsigned long)pa, k, slot_index(slot1), slot_level(slot1), strerror(-e));
		bp_pager_unreserve(p, k);
		goto unlock;
	}
	*mapped = k;
	if (k == 1 && !nd) /* a single page mapped clean: write evidence */
		sw_note(r, 1, 0);
	/* this window, for the next fault's ra_write_mode() (none: a stream
	 * that starts again learns again) */
	atomic_store_explicit(&r->ra_wp, 0, memory_order_relaxed);
	atomic_store_explicit(&r->ra_from, id + 1, memory_order_relaxed);
	atomic_store_explicit(&r->ra_clean, wmode ? 1 : k - 1, memory_order_relaxed);
	atomic_store_explicit(&r->ra_wmode, wmode, memory_order_relaxed);
	atomic_store_explicit(&r->ra_next, id + k, memory_order_relaxed);
	atomic_store_explicit(&r->ra_win, win, memory_order_relaxed);
unlock:
	for (uint32_t j = 1; j < k; j++)
		bp_pg_unlock(pg_of(p, id + j));
	return e;
}

static inline uint64_t rdtsc(void)
{
	return bypass_rdtscp(NULL);
}

/* bp_pager_serve(); policy false: the policy and the prefetcher not told
 * (the forking thread's own fault, while its fork is prepared). */
static int serve(struct region *r, uintptr_t addr, bool write, bool handler, bool policy)
{
	struct bypass_pager *p = r->pager;
	if (r->adaptive) {
		if (!bp_engine_enter(r))
			return -EAGAIN; /* a switch was under way: retry */
		bp_engine_note_thread(p, bp_serving_tid);
	}
	uint64_t t0 = rdtsc();
	uintptr_t pa = addr & ~(uintptr_t)(PG_SIZE - 1);
	uint32_t id = region_id(r, pa);
	struct pg *pg = pg_of(p, id);
	int e = 0;
	uint32_t mapped = 1;
	unsigned kind;

	bp_pg_lock(pg);
	uint32_t w = atomic_load(&pg->w);
	switch (pg_state(w)) {
	case PS_RESIDENT:
	case PS_WRITEBACK:
		if (w & PW_PARK) { /* an access sample hit (sample.c) */
			e = bp_sample_fault(p, r, pg, id, pa, write);
			kind = BYPASS_PAGER_FAULT_OTHER;
		} else if (write && (w & PW_WP)) {
			e = resolve_wp(p, r, pg, pa);
			stat_add(&ST(p).wp, 1);
			/* the readahead and the prefetcher keep their own */
			if (!ra_note_wp(r, id) && !(w & PW_PF))
				sw_note(r, 0, 1);
			kind = BYPASS_PAGER_FAULT_WP;
		} else {
			e = resolve_other(p, r, pg, pa, write);
			stat_add(&ST(p).other, 1);
			kind = BYPASS_PAGER_FAULT_OTHER;
		}
		break;
	case PS_ZERO:
		e = fill_zero(p, r, pg, id, pa, write, &mapped);
		kind = BYPASS_PAGER_FAULT_ZERO;
		break;
	default: /* PS_SWAPPED */
		e = swap_in(p, r, pg, id, pa, write, &mapped);
		kind = BYPASS_PAGER_FAULT_SWAPIN;
		break;
	}
	if (!e)
		bp_heat_fault(p, id, write); /* access heat (heat.h) */
	bp_pg_unlock(pg);

	uint64_t ns = ((rdtsc() - t0) << 16) / p->cfg.cyc_per_ns_q16;
	unsigned b = ns ? 63 - (unsigned)__builtin_clzll(ns) : 0;
	if (b >= BYPASS_PAGER_HIST)
		b = BYPASS_PAGER_HIST - 1;
	stat_add(&ST(p).hist[b], 1);
	stat_add(&ST(p).lat_count, 1);
	stat_add(&ST(p).lat_sum_ns, ns);
	/* Handler mode: wake the faulting thread(s) only now, with the page
	 * unlocked and counted. */
	if (!e && handler)
		e = bp_uffd_wake(r->uffd, pa, (size_t)mapped * PG_SIZE);
	if (r->adaptive)
		bp_engine_leave(r);
	/* the policy and prefetch, once the thread can go on */
	if (!e && policy)
		bp_policy_fault(p, r, id, kind, write, mapped);
	return e;
}

int bp_pager_serve(struct region *r, uintptr_t addr, bool write, bool handler)
{
	return serve(r, addr, write, handler, true);
}

int bp_pager_serve_forking(struct region *r, uintptr_t addr, bool write)
{
	return serve(r, addr, write, false, false);
}
