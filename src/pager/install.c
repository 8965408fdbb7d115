/* SPDX-License-Identifier: MIT */
/*
 * Installing pages (issue 34, B2): one function puts data into a region's
 * page table and updates the pager's record of the pages (state, flags,
 * slot, the LRU lists, the counters), whoever read the data: a first-touch
 * fault, a swap-in, the prefetcher, the access sampler.  The kernel's
 * mfill_atomic_install_pte() shape.  The callers take the page locks, each
 * its own way (a blocking lock on the faulting page and trylocks on its
 * neighbours, trylocks on a run held across an asynchronous read, one lock
 * in the sampler), so this function asserts them instead of taking them.
 */
#include "pager/install.h"
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/evict.h"
#include "pager/lru.h"
#include "pager/tier.h"
#include "pager/uffd.h"
#include "core/syscall.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ checks */

#ifndef NDEBUG
static __attribute__((noreturn)) void unlocked(const struct bp_install *in, uint32_t j,
					       const char *how)
{
	static const char *const from[] = { "first touch", "swap-in", "prefetch",
					    "sampler put-back" };
	char buf[200];
	size_t o = 0;
	const char *parts[] = { "bypass: pager: installing a page (", from[in->from & 3],
				") whose lock ", how, "\n" };
	for (unsigned i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t n = strlen(parts[i]);
		if (o + n > sizeof(buf))
			n = sizeof(buf) - o;
		memcpy(buf + o, parts[i], n);
		o += n;
	}
	(void)j;
	ssize_t w = bp_sys_write(STDERR_FILENO, buf, o);
	(void)w;
	abort();
}
#endif

/* Debug builds: every page of the run is locked, by this thread where the
 * lock-rank record knows (rank.h: bp_rank_holds). */
static void assert_locked(struct bypass_pager *p, const struct bp_install *in)
{
#ifndef NDEBUG
	for (uint32_t j = 0; j < in->k; j++) {
		struct pg *pg = pg_of(p, in->id0 + j);
		if (!(atomic_load_explicit(&pg->w, memory_order_relaxed) & PW_LOCK))
			unlocked(in, j, "is not held");
		if (!bp_rank_holds(pg))
			unlocked(in, j, "is held by another thread");
	}
#else
	(void)p;
	(void)in;
#endif
}

/* ------------------------------------------------------------ the copy */

static bool is_probe(const struct bp_install *in, uint32_t j)
{
	return in->probe && (in->id0 + j) % in->probe == in->probe - 1;
}

/* Whether page j is to be mapped writable and dirty. */
static bool wants_dirty(const struct bp_install *in, uint32_t j)
{
	return j < in->nw && !is_probe(in, j);
}

/*
 * Unprotect the pages of the first n that are to be dirty (mapped
 * write-protected by the copy), a range at a time; dirty[j] says which
 * were.  Returns how many.
 */
static uint32_t unprotect(int uffd, const struct bp_install *in, uint32_t n, bool *dirty)
{
	uint32_t got = 0;
	for (uint32_t j = 0; j < n;) {
		if (!wants_dirty(in, j)) {
			dirty[j++] = false;
			continue;
		}
		uint32_t e = j + 1;
		while (e < n && wants_dirty(in, e))
			e++;
		bool ok = bp_uffd_wp(uffd, region_addr(in->r, in->id0 + j),
				     (size_t)(e - j) * PG_SIZE, false, in->wake) == 0;
		for (; j < e; j++) {
			dirty[j] = ok; /* else mapped clean: a write faults (wp) */
			got += ok;
		}
	}
	return got;
}

/* ------------------------------------------------------------ the record */

/* A page that was SWAPPED or ZERO, now mapped. */
static void mark_new(struct bypass_pager *p, const struct bp_install *in, uint32_t j,
		     bool dirty, uint32_t seq)
{
	uint32_t id = in->id0 + j;
	struct pg *pg = pg_of(p, id);
	uint32_t shadow = pg->prev; /* the refault shadow while SWAPPED */
	if (dirty) {
		bp_slot_free(p, pg);
		pg_set(pg, PW_DIRTY);
	} else {
		pg_set(pg, in->from == BP_INSTALL_PREFETCH ? PW_WP | PW_PF : PW_WP);
	}
	pg_set_state(pg, PS_RESIDENT);
	if (in->from == BP_INSTALL_SWAPIN && j == 0) {
		bp_lru_add_refault(p, id, seq - shadow);
		bp_tier_note_refault(p, seq - shadow);
	} else {
		bp_lru_add(p, id, false);
	}
}

/* A parked page (RESIDENT or WRITEBACK, on its list) back in the page
 * table; dirty: mapped writable. */
static void mark_parked(struct bypass_pager *p, const struct bp_install *in, bool dirty)
{
	struct pg *pg = pg_of(p, in->id0);
	uint32_t w = atomic_load(&pg->w);
	if (dirty) {
		if (!(w & PW_DIRTY)) { /* a write to a clean page: as resolve_wp() */
			if (pg_state(w) == PS_WRITEBACK)
				pg_set(pg, PW_REDIRTY);
			else
				bp_slot_free(p, pg);
			pg_clear(pg, PW_WP);
			pg_set(pg, PW_DIRTY);
		} else {
			pg_clear(pg, PW_WP);
		}
	}
	pg_clear(pg, PW_PARK);
	if (in->ref)
		pg_set(pg, PW_REF);
}

static void count(struct bypass_pager *p, const struct bp_install *in, uint32_t done,
		  uint32_t nd)
{
	switch (in->from) {
	case BP_INSTALL_ZERO:
		stat_add(&ST(p).zero, 1);
		if (done > 1)
			stat_add(&ST(p).fa, done - 1);
		break;
	case BP_INSTALL_SWAPIN:
		stat_add(&ST(p).rd, (uint64_t)done * PG_SIZE);
		stat_add(&ST(p).swapin, 1);
		stat_add(&ST(p).ra, done - 1);
		if (nd > 1) /* readahead pages mapped dirty: the write mode */
			stat_add(&ST(p).ra_dirty, nd - 1);
		break;
	case BP_INSTALL_PREFETCH:
		stat_add(&ST(p).rd, (uint64_t)done * PG_SIZE);
		stat_add(&ST(p).pf, done);
		if (nd)
			stat_add(&ST(p).ra_dirty, nd);
		break;
	default: /* PARKED: the sampler counts its hits */
		break;
	}
}

/* ------------------------------------------------------------ install */

int bp_install(struct bypass_pager *p, const struct bp_install *in, uint32_t *mapped,
	       uint32_t *dirty)
{
	assert_locked(p, in);
	struct region *r = in->r;
	int uffd = atomic_load(&r->uffd);
	uint32_t k = in->k, nd = 0;
	bool all = true; /* every page to be dirty: copied writable */
	for (uint32_t j = 0; j < k && all; j++)
		all = wants_dirty(in, j);
	size_t bytes = 0;
	int e = bp_uffd_copy_prefix(uffd, region_addr(r, in->id0), in->src, (size_t)k * PG_SIZE,
				    !all, in->wake, &bytes);
	uint32_t done = (uint32_t)(bytes >> PG_SHIFT);
	if (in->from == BP_INSTALL_PARKED) {
		if (e == -EEXIST) /* mapped already (another thread's put-back) */
			e = 0;
		if (e && !in->mark_on_error)
			return e;
		bool d = wants_dirty(in, 0);
		mark_parked(p, in, d);
		if (mapped)
			*mapped = e ? 0 : 1;
		if (dirty)
			*dirty = !e && d;
		return e;
	}
	if (in->from == BP_INSTALL_ZERO ? !done : e != 0) {
		if (mapped)
			*mapped = 0;
		if (dirty)
			*dirty = 0;
		return e;
	}
	if (in->from != BP_INSTALL_ZERO)
		done = k;
	/* the pages to be dirty among those copied write-protected */
	bool d[PG_MAX_RUN];
	if (all) {
		nd = done;
	} else if (in->nw) {
		nd = unprotect(uffd, in, done, d);
	}
	uint32_t seq = atomic_load_explicit(&p->ev.seq, memory_order_relaxed);
	for (uint32_t j = 0; j < done; j++)
		mark_new(p, in, j, all || (in->nw && d[j]), seq);
	count(p, in, done, nd);
	if (mapped)
		*mapped = done;
	if (dirty)
		*dirty = nd;
	return 0;
}
