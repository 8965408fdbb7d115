/* SPDX-License-Identifier: MIT */
/*
 * Operations on a range of a pager's regions: pinning (bypass_pager_pin,
 * bypass_pager_unpin) and discarding (bypass_pager_discard).  pager.c keeps
 * the pager's life and its regions' mapping.
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/map.h"
#include "pager/share.h"
#include "pager/fork.h"
#include "pager/fault.h"
#include "pager/engine.h"
#include "pager/setup.h"
#include "pager/read.h"
#include "pager/evict.h"
#include "pager/lru.h"
#include "pager/sample.h"
#include "pager/uffd.h"
#include "pager/policy.h"
#include "core/syscall.h"
#include "core/uring.h"
#include "pager/heat.h" /* access heat: the hooks below */
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------------------ pinning */

static int pin_page(struct bypass_pager *p, struct region *r, uintptr_t a, bool write)
{
	uint32_t id = region_id(r, a);
	struct pg *pg = pg_of(p, id);
	for (;;) {
		bp_pg_lock(pg);
		uint32_t w = atomic_load(&pg->w);
		unsigned st = pg_state(w);
		if (st == PS_RESIDENT || st == PS_WRITEBACK) {
			if ((write && (w & PW_WP)) || (w & PW_PARK)) { /* mapped first */
				bp_pg_unlock(pg);
				int e = bp_pager_serve(r, a, write, atomic_load(&r->handler));
				if (e && e != -EAGAIN)
					return e;
				continue;
			}
			uint32_t pins = w >> PW_PIN_SHIFT;
			if (pins == PW_PIN_MAX) {
				bp_pg_unlock(pg);
				return -ENOMEM;
			}
			if (!pins) {
				uint32_t n = atomic_load(&p->bud.pinned);
				do {
					if (n + 1 > p->cfg.budget / 2) {
						bp_pg_unlock(pg);
						bp_err("bypass: pager: pinning more than half the "
						       "budget (%u pages)", p->cfg.budget / 2);
						return -ENOMEM;
					}
				} while (!atomic_compare_exchange_weak(&p->bud.pinned, &n, n + 1));
				bp_lru_del(p, id);
			}
			atomic_fetch_add(&pg->w, PW_PIN_ONE);
			pg_set(pg, PW_REF);
			bp_pf_mark_used(p, pg);
			bp_pg_unlock(pg);
			return 0;
		}
		bp_pg_unlock(pg);
		int e = bp_pager_serve(r, a, write, atomic_load(&r->handler));
		if (e && e != -EAGAIN) /* EAGAIN: an engine switch; again */
			return e == -ENOMEM ? e : -EIO;
	}
}

static void unpin_page(struct bypass_pager *p, struct region *r, uintptr_t a)
{
	uint32_t id = region_id(r, a);
	struct pg *pg = pg_of(p, id);
	bp_pg_lock(pg);
	uint32_t w = atomic_load(&pg->w);
	if (w >> PW_PIN_SHIFT) {
		w = atomic_fetch_sub(&pg->w, PW_PIN_ONE) - PW_PIN_ONE;
		if (!(w >> PW_PIN_SHIFT)) {
			atomic_fetch_sub(&p->bud.pinned, 1);
			if (pg_state(w) == PS_RESIDENT)
				bp_lru_add(p, id, false);
		}
	}
	bp_pg_unlock(pg);
}

/* Check that [start, end) lies in regions of p; 0 or -EINVAL. */
static int range_check(struct bypass_pager *p, struct regtab *t, uintptr_t start,
		       uintptr_t end)
{
	for (uintptr_t a = start; a < end;) {
		struct region *r = bp_tab_find(t, a);
		if (!r || r->pager != p)
			return -EINVAL;
		a = r->end;
	}
	return 0;
}

/* The pages of [addr, addr + length): 0, 1 if there are none, or -errno. */
static int page_range(struct bypass_pager *p, void *addr, size_t length, uintptr_t *start,
		      uintptr_t *end)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	if (!length)
		return 1;
	*start = (uintptr_t)addr & ~(PG_SIZE - 1);
	*end = ((uintptr_t)addr + length + PG_SIZE - 1) & ~(PG_SIZE - 1);
	return *end < *start ? -EINVAL : 0;
}

int bypass_pager_pin(bypass_pager *p, void *addr, size_t length, unsigned flags)
{
	if (flags & ~BYPASS_PAGER_PIN_WRITE)
		return -EINVAL;
	uintptr_t start, end;
	int e = page_range(p, addr, length, &start, &end);
	if (e)
		return e < 0 ? e : 0;
	/* An engine switch never starts while a pin is under way or pages
	 * are pinned; one that started before is waited for below.  A fork
	 * waits for the pin (the gate). */
	bp_gate_enter(p);
	atomic_fetch_add(&p->eng.pinning, 1);
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	e = range_check(p, t, start, end);
	for (uintptr_t a = start; !e && a < end; a += PG_SIZE) {
		e = pin_page(p, bp_tab_find(t, a), a, flags & BYPASS_PAGER_PIN_WRITE);
		if (e) /* undo: nothing stays pinned */
			for (uintptr_t b = start; b < a; b += PG_SIZE)
				unpin_page(p, bp_tab_find(t, b), b);
	}
	for (uintptr_t a = start; !e && a < end;) {
		struct region *r = bp_tab_find(t, a);
		if (r->adaptive)
			bp_engine_wait(r);
		a = r->end;
	}
	bp_tab_leave(idx);
	atomic_fetch_sub(&p->eng.pinning, 1);
	bp_gate_leave(p);
	return e;
}

int bypass_pager_unpin(bypass_pager *p, void *addr, size_t length)
{
	uintptr_t start, end;
	int e = page_range(p, addr, length, &start, &end);
	if (e)
		return e < 0 ? e : 0;
	bp_gate_enter(p);
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	e = range_check(p, t, start, end);
	for (uintptr_t a = start; !e && a < end; a += PG_SIZE) {
		struct region *r = bp_tab_find(t, a);
		if (!(atomic_load(&pg_of(p, region_id(r, a))->w) >> PW_PIN_SHIFT))
			e = -EINVAL;
	}
	for (uintptr_t a = start; !e && a < end; a += PG_SIZE)
		unpin_page(p, bp_tab_find(t, a), a);
	bp_tab_leave(idx);
	bp_gate_leave(p);
	return e;
}

/* ------------------------------------------------------------ discard */

/*
 * [a, b) of one region: bp_pager_discard(); the pages it kept (in use) are
 * zeroed by writing.  A range with some kept pages is discarded again by
 * halves, down to single pages, so that only kept pages are written (those
 * discarded meanwhile are ZERO: the second pass skips them).
 */
static int discard_in(struct bypass_pager *p, uintptr_t a, uintptr_t b)
{
	int left = bp_pager_discard(p, a, b - a);
	if (left <= 0)
		return left;
	uintptr_t n = (b - a) >> PG_SHIFT;
	if ((uintptr_t)left >= n) { /* all kept (one page, or a fork under way) */
		memset((void *)a, 0, b - a);
		return 0;
	}
	uintptr_t m = a + ((n / 2) << PG_SHIFT);
	int e = discard_in(p, a, m);
	return e ? e : discard_in(p, m, b);
}

int bypass_pager_discard(bypass_pager *p, void *addr, size_t length)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	uintptr_t start = (uintptr_t)addr, end = start + length;
	if (!length || (start | length) & (PG_SIZE - 1) || end < start)
		return -EINVAL;
	unsigned idx = bp_tab_enter();
	e = range_check(p, bp_tab_get(), start, end);
	bp_tab_leave(idx);
	/* region by region (bp_pager_discard takes one); a region unmapped
	 * meanwhile is the program's race, as with munmap and madvise */
	for (uintptr_t a = start; !e && a < end;) {
		idx = bp_tab_enter();
		struct regtab *t = bp_tab_get();
		struct region *r = t ? bp_tab_find(t, a) : NULL;
		uintptr_t b = r && r->end < end ? r->end : end;
		bp_tab_leave(idx);
		e = discard_in(p, a, b);
		a = b;
	}
	return e;
}
