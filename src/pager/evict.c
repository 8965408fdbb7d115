/* SPDX-License-Identifier: MIT */
/*
 * The budget and eviction: reservations, victim choice, the evict loop,
 * dropping pages, the tier's staging, fork's part (swap slots and the
 * write-back ring: writeback.c).
 *
 * Eviction runs in whichever thread needs room (often inside its SIGBUS
 * handler), one thread at a time per pager (the evict lock).  A round
 * drops its clean victims, write-protects its dirty ones and puts them
 * under write-back (writeback.c); a later round (in any thread) reaps the
 * completions and drops those pages.
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/share.h"
#include "pager/fault.h"
#include "pager/evict.h"
#include "pager/writeback.h"
#include "pager/lru.h"
#include "pager/uffd.h"
#include "pager/policy.h"
#include "pager/tier.h"
#include "pager/tree.h"
#include "core/syscall.h"
#include "core/uring.h"
#include "core/fdhigh.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define STUCK_NS 10000000000ull /* give up on a fault after 10 s of no progress */

/* ------------------------------------------------------------ the budget */

void bp_pager_progress(struct bypass_pager *p)
{
	atomic_fetch_add(&p->bud.progress, 1);
	if (atomic_load(&p->bud.waiters))
		bp_futex_wake(&p->bud.progress, INT_MAX, false);
}

void bp_pager_unreserve(struct bypass_pager *p, uint32_t n)
{
	bp_bud_sub(p, n);
	bp_pager_progress(p);
}

static void sort_u32(uint32_t *a, uint32_t n)
{
	static const uint32_t gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
	for (unsigned g = 0; g < BP_ARRAY_SIZE(gaps); g++) {
		uint32_t gap = gaps[g];
		for (uint32_t i = gap; i < n; i++) {
			uint32_t v = a[i], j = i;
			for (; j >= gap && a[j - gap] > v; j -= gap)
				a[j] = a[j - gap];
			a[j] = v;
		}
	}
}

/*
 * Discard n locked resident pages whose data is safe (in their slot, or
 * zeros when they have none), coalescing neighbours into one range, all in
 * one process_madvise() where the kernel has it.  Unlocks them.
 */
void bp_evict_drop(struct bypass_pager *p, struct ectx *c, const uint32_t *ids,
		       uint32_t n, bool clean)
{
	if (!n)
		return;
	struct iovec *iov = p->ev.dropv;
	uint32_t niov = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct region *r = ectx_region(p, c, ids[i]);
		uintptr_t a = region_addr(r, ids[i]);
		if (niov && (uintptr_t)iov[niov - 1].iov_base + iov[niov - 1].iov_len == a &&
		    i && ectx_region(p, c, ids[i - 1]) == r) {
			iov[niov - 1].iov_len += PG_SIZE;
		} else {
			iov[niov].iov_base = (void *)a;
			iov[niov].iov_len = PG_SIZE;
			niov++;
		}
	}
	size_t total = (size_t)n * PG_SIZE;
	long done = -1;
	if (p->ev.pidfd >= 0) {
		done = bp_sys_ret(bp_syscall5(SYS_process_madvise, p->ev.pidfd, iov, (size_t)niov,
						  MADV_DONTNEED, 0u));
		if (done < 0 && (errno == ENOSYS || errno == EINVAL || errno == EPERM)) {
			bp_info("bypass: pager: process_madvise(MADV_DONTNEED): %s; "
				"using madvise per range", strerror(errno));
			p->ev.pidfd = -1; /* not closed: another thread may be in it */
		}
	}
	/*
	 * Without process_madvise (or when it failed), one madvise per range.
	 * A range that fails (a page of it is mlock()ed: EINVAL) may have been
	 * discarded up to the page that failed, so its pages are retried one
	 * by one: exactly those that cannot be discarded stay resident.  The
	 * system call itself, never the symbol madvise: under the pager
	 * preload that is the preload's own madvise, which zeroes a region's
	 * range by writing it (and so faults on the pages locked here: a
	 * deadlock, seen on Linux 6.1 from the fork handler's eviction).
	 */
	bool retry = done != (long)total;
	uint32_t dropped = 0;
	for (uint32_t k = 0, i = 0; k < niov; k++) {
		char *base = iov[k].iov_base;
		uint32_t cnt = (uint32_t)(iov[k].iov_len >> PG_SHIFT);
		bool range_ok = !retry || bp_sys_ret(bp_syscall3(SYS_madvise, base, iov[k].iov_len, MADV_DONTNEED)) == 0;
		if (!range_ok)
			bp_err("bypass: pager: madvise(%p, %zu, DONTNEED): %s; those pages "
			       "that cannot be discarded stay resident", (void *)base,
			       iov[k].iov_len, strerror(errno));
		for (uint32_t j = 0; j < cnt; j++, i++) {
			struct pg *pg = pg_of(p, ids[i]);
			if (!range_ok && bp_sys_ret(bp_syscall3(SYS_madvise, base + (size_t)j * PG_SIZE,
						 PG_SIZE, MADV_DONTNEED)) < 0) {
				pg_set_state(pg, PS_RESIDENT);
				bp_pg_unlock(pg);
				bp_lru_add(p, ids[i], false);
				continue;
			}
			uint32_t seq = atomic_fetch_add_explicit(&p->ev.seq, 1,
								 memory_order_relaxed);
			pg_clear(pg, PW_DIRTY | PW_WP | PW_REF | PW_REDIRTY | PW_PF | PW_PFAGED);
			if (pg->slot) {
				pg->prev = seq; /* the refault shadow */
				pg_set_state(pg, PS_SWAPPED);
			} else {
				pg_set_state(pg, PS_ZERO); /* read, never written: zeros */
			}
			bp_pg_unlock(pg);
			dropped++;
		}
	}
	if (!dropped)
		return;
	bp_bud_sub(p, dropped);
	stat_add(&ST(p).evict, dropped);
	if (clean)
		stat_add(&ST(p).evict_clean, dropped);
	bp_pager_progress(p);
}

/* ------------------------------------------------------------ the tier */

/*
 * The compressed tier (tier.c): of the n locked, write-protected dirty
 * victims v, the first BP_TIER_STAGE that are not under the DONTNEED hint
 * (cold: not expected back soon; the file only, counted) are staged, and
 * compressed now; bp_wb_submit() keeps in the pool, and only there, each
 * whose copy the pool takes, and writes the others to the file.  The cold
 * pages are passed over, not counted against the window (a batch that
 * began with cold pages staged none of the others after them).  Returns
 * how many were staged; at[k] is the place in v of the k-th (increasing),
 * whose compressed copy is the tier's k-th.
 */
static uint32_t tier_stage(struct bypass_pager *p, struct ectx *c, const uint32_t *v, uint32_t n,
			   uint32_t *at)
{
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	if (!bp_tier_on(t) || !n)
		return 0;
	void *addrs[BP_TIER_STAGE];
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++) {
		/* decided once, here: the hint may change while the page is
		 * written back, the staged list may not */
		if (atomic_load_explicit(&pg_of(p, v[i])->w, memory_order_relaxed) & PW_COLD) {
			bp_tier_count_cold(t); /* DONTNEED: the file only */
		} else if (m < BP_TIER_STAGE) {
			at[m] = i;
			addrs[m++] = (void *)region_addr(ectx_region(p, c, v[i]), v[i]);
		}
	}
	if (!m)
		return 0;
	return bp_tier_compress_pages(t, addrs, m) ? m : 0;
}

/*
 * Clean victims whose data is in the file only (read from it, or their pool
 * copy forgotten while they were resident) go into the pool as clean copies
 * (the file keeps its copy): their next swap-in decompresses instead of
 * reading the file.  Not those the prefetcher brought that were never used,
 * not cold ones, only write-protected ones (their data stays as it is while
 * they are locked).  At most a stage's worth a round.
 */
static void tier_readmit(struct bypass_pager *p, struct ectx *c, struct bp_tier *t,
			 const uint32_t *clean, uint32_t nclean)
{
	void *addrs[BP_TIER_STAGE];
	uint32_t ids[BP_TIER_STAGE], slots[BP_TIER_STAGE], m = 0;
	for (uint32_t i = 0; i < nclean && m < BP_TIER_STAGE; i++) {
		struct pg *pg = pg_of(p, clean[i]);
		uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
		uint32_t s1 = pg->slot;
		if ((w & (PW_PF | PW_COLD | PW_PARK)) || !(w & PW_WP) || !s1 ||
		    slot_level(s1) != p->lin.depth || bp_tier_has(t, slot_index(s1)))
			continue;
		ids[m] = clean[i];
		slots[m] = slot_index(s1);
		addrs[m++] = (void *)region_addr(ectx_region(p, c, clean[i]), clean[i]);
	}
	if (m)
		bp_tier_readmit(p, t, ids, slots, addrs, m);
}

/* ------------------------------------------------------------ eviction */

/*
 * One round: up to a batch of victims dropped or put under write-back, down
 * to low pages counting the pages already under write-back (with force: a
 * batch more, whatever the level).
 */
static uint32_t evict_round(struct bypass_pager *p, struct ectx *c, bool force, uint32_t low)
{
	uint32_t res = atomic_load(&p->bud.resident), wb = atomic_load(&p->bud.writeback);
	if (res <= wb + (force ? 0 : low))
		return 0;
	uint32_t want = res - wb - (force ? 0 : low);
	if (want > p->cfg.batch)
		want = p->cfg.batch;
	uint32_t *v = p->ev.victims, *clean = p->ev.clean_ids;
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	uint32_t shrunk = 0;
	if (t && bp_tier_pages(t) > (bp_tier_on(t) ? bp_tier_cap(t) : 0))
		shrunk = bp_tier_shrink(p, t, bp_tier_on(t) ? bp_tier_cap(t) : 0);
	uint32_t n = bp_select_victims(p, want, v);
	if (!n) /* nothing resident to take: the pool's oldest forgotten */
		return t && bp_tier_pages(t) ? shrunk + bp_tier_shrink(p, t, bp_tier_pages(t) - 1)
					    : shrunk;
	sort_u32(v, n);
	uint32_t ndirty = 0, nclean = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct pg *pg = pg_of(p, v[i]);
		if (!ectx_region(p, c, v[i])) { /* being unmapped */
			bp_pg_unlock(pg);
			continue;
		}
		if (atomic_load(&pg->w) & PW_DIRTY)
			v[ndirty++] = v[i];
		else
			clean[nclean++] = v[i];
	}
	if (nclean && bp_tier_on(t))
		tier_readmit(p, c, t, clean, nclean);
	bp_evict_drop(p, c, clean, nclean, true);

	/* Write-protect dirty runs, so that a write during write-back is
	 * caught; a run that cannot be protected stays resident. */
	uint32_t kept = 0;
	for (uint32_t i = 0; i < ndirty;) {
		struct region *r = ectx_region(p, c, v[i]);
		uint32_t j = i + 1;
		while (j < ndirty && v[j] == v[j - 1] + 1 && ectx_region(p, c, v[j]) == r)
			j++;
		int e = bp_uffd_wp(r->uffd, region_addr(r, v[i]), (size_t)(j - i) * PG_SIZE,
				true, false);
		for (uint32_t k = i; k < j; k++) {
			if (e) {
				bp_pg_unlock(pg_of(p, v[k]));
				bp_lru_add(p, v[k], false);
			} else {
				pg_set(pg_of(p, v[k]), PW_WP);
				v[kept++] = v[k];
			}
		}
		if (e)
			bp_err("bypass: pager: write-protect %u pages: %s", j - i, strerror(-e));
		i = j;
	}
	uint32_t at[BP_TIER_STAGE];
	uint32_t staged = tier_stage(p, c, v, kept, at);
	bp_wb_submit(p, c, v, kept, at, staged);
	return nclean + kept;
}

/*
 * Evict down to the low watermark (evict lock held).  With need pages, also
 * wait for write-backs (and take more victims) until the budget has room for
 * them (a readahead window may want more than the watermarks free).  For a
 * window (need > 1), the write-backs go on down to room for two: the next
 * window of the stream then finds its room written back while this one was
 * read, instead of waiting for its own writes before its read.
 * Returns pages dropped or put under write-back.
 */
static uint32_t evict_run(struct bypass_pager *p, uint32_t need)
{
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	uint32_t done = bp_wb_reap(p, &c, false);
	uint32_t low = p->cfg.low;
	if (need > 1 && p->cfg.budget > 4 * need && p->cfg.budget - 2 * need < low)
		low = p->cfg.budget - 2 * need;
	for (int round = 0; round < 64; round++) {
		uint32_t n = evict_round(p, &c, false, low);
		if (!n)
			break;
		done += n;
	}
	/* The budget is full of pages under write-back: wait for some, and
	 * put more under way meanwhile (see bp_wb_reap()), unless this thread
	 * submitted every write in flight: their completions run in its own
	 * wait, so it only waits (a forced round would take pages the policy
	 * keeps, such as clock's referenced ones, whenever a write is slower
	 * than bp_wb_reap()'s wait). */
	for (int tries = 0; need && atomic_load(&p->bud.resident) + need > p->cfg.budget && tries < 100;
	     tries++) {
		uint32_t got = bp_wb_reap(p, &c, true);
		if (atomic_load(&p->bud.resident) + need <= p->cfg.budget)
			break;
		if (!got && p->ev.wb_inflight && bp_wb_mine(p, true))
			continue;
		uint32_t n = evict_round(p, &c, true, 0);
		done += got + n;
		if (!got && !n && !p->ev.wb_inflight)
			break;
	}
	bp_tab_leave(idx);
	return done;
}

static void wait_progress(struct bypass_pager *p, uint32_t seen)
{
	atomic_fetch_add(&p->bud.waiters, 1);
	if (atomic_load(&p->bud.progress) == seen)
		bp_futex_wait(&p->bud.progress, seen, 1000000, false);
	atomic_fetch_sub(&p->bud.waiters, 1);
}

int bp_pager_reserve_below_high(struct bypass_pager *p, uint32_t n)
{
	if (bp_unlikely(bp_pager_tree(p)))
		return bp_tree_reserve(p, n, false, p->cfg.high);
	uint32_t r = atomic_load(&p->bud.resident);
	while (r + n <= p->cfg.high)
		if (atomic_compare_exchange_weak(&p->bud.resident, &r, r + n)) {
			uint64_t peak = atomic_load_explicit(&p->bud.peak, memory_order_relaxed);
			while (r + n > peak && !atomic_compare_exchange_weak(&p->bud.peak, &peak, r + n))
				;
			return 0;
		}
	return -EAGAIN;
}

int bp_pager_reserve_prefetch(struct bypass_pager *p, uint32_t n)
{
	if (!bp_pager_reserve_below_high(p, n))
		return 0;
	if (n > p->cfg.high - p->cfg.low || !bp_plock_trylock(&p->ev.lock))
		return -EAGAIN;
	/* Rounds of a batch (whatever the watermarks) until n more pages
	 * fit below the high watermark, sparing PRIORITY pages. */
	p->ev.noprio = true;
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	bp_wb_reap(p, &c, false);
	int e = -EAGAIN, empty = 0;
	for (int round = 0; round < 8; round++) {
		if (!bp_pager_reserve_below_high(p, n)) {
			e = 0;
			break;
		}
		uint32_t res = atomic_load(&p->bud.resident), wb = atomic_load(&p->bud.writeback);
		if (res - wb + n <= p->cfg.high) { /* room once write-backs end */
			bp_wb_reap(p, &c, true);
			continue;
		}
		/* a round may find only unused prefetched pages, which it
		 * passes once (PW_PFAGED): the next one can take them */
		if (!evict_round(p, &c, true, 0) && ++empty == 2)
			break;
	}
	bp_tab_leave(idx);
	p->ev.noprio = false;
	bp_plock_unlock(&p->ev.lock);
	return e;
}

/* A fork is being prepared (bp_evict_fork_begin, or the gate closed by
 * bp_share_prepare): take the room at once, above the budget if need be
 * (nothing may be evicted until the fork: the forking thread holds the
 * evict lock, and may itself be the one faulting). */
static int reserve_forking(struct bypass_pager *p, uint32_t n)
{
	uint32_t r = atomic_fetch_add(&p->bud.resident, n) + n;
	uint64_t peak = atomic_load_explicit(&p->bud.peak, memory_order_relaxed);
	while (r > peak && !atomic_compare_exchange_weak(&p->bud.peak, &peak, r))
		;
	bp_tree_charge(p, n); /* above the tree's budget too, counted */
	return 0;
}

/*
 * Room for the process tree (tree.c): free up to n of our own pages.
 * block: wait for the evict lock (the tree's request thread); otherwise a
 * busy lock (another of our threads evicts) waits a little for its
 * progress.  Returns pages dropped or put under write-back; while enough
 * are already under write-back, only waits (1 ms at most) for them.
 */
uint32_t bp_evict_for_tree(struct bypass_pager *p, uint32_t n, bool block)
{
	if (block) {
		bp_plock_lock(&p->ev.lock);
	} else if (!bp_plock_trylock(&p->ev.lock)) {
		wait_progress(p, atomic_load(&p->bud.progress));
		return 0;
	}
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	uint32_t done = bp_wb_reap(p, &c, false);
	if (done < n && atomic_load(&p->bud.writeback) < n)
		done += evict_round(p, &c, true, 0);
	if (done < n && p->ev.wb_inflight)
		done += bp_wb_reap(p, &c, true);
	bp_tab_leave(idx);
	bp_plock_unlock(&p->ev.lock);
	return done;
}

int bp_pager_reserve(struct bypass_pager *p, uint32_t n, bool must)
{
	bool evicted = false;
	uint64_t stuck = 0, said = 0, werr = 0;
	for (;;) {
		if (bp_unlikely(atomic_load(&p->bud.forking) || bp_gate_closed(p)))
			return reserve_forking(p, n);
		if (bp_unlikely(bp_pager_tree(p))) /* one budget for the tree */
			return bp_tree_reserve(p, n, must, p->cfg.budget);
		uint32_t r = atomic_load(&p->bud.resident);
		if (r + n <= p->cfg.budget) {
			if (must && r + n > p->cfg.high && !evicted && bp_plock_trylock(&p->ev.lock)) {
				evict_run(p, 0);
				bp_plock_unlock(&p->ev.lock);
				evicted = true;
				continue;
			}
			if (atomic_compare_exchange_weak(&p->bud.resident, &r, r + n)) {
				uint64_t peak = atomic_load_explicit(&p->bud.peak, memory_order_relaxed);
				while (r + n > peak &&
				       !atomic_compare_exchange_weak(&p->bud.peak, &peak, r + n))
					;
				return 0;
			}
			continue;
		}
		if (!must)
			return -EAGAIN;
		uint32_t seen = atomic_load(&p->bud.progress);
		if (!bp_plock_trylock(&p->ev.lock)) {
			wait_progress(p, seen);
			continue;
		}
		uint32_t done = evict_run(p, n);
		bool busy = p->ev.wb_inflight != 0;
		bp_plock_unlock(&p->ev.lock);
		/* Progress is pages freed, not write-backs started: a write
		 * that fails keeps its page, which the next round picks again. */
		if (atomic_load(&p->bud.progress) != seen) {
			stuck = 0;
			continue;
		}
		/* Nothing freed: write-backs under way or failing, or every
		 * resident page pinned or locked by a thread that is about to
		 * release it.  Write-backs under way with none failed since the
		 * wait began are slow storage: the fault waits for them, as a
		 * kernel swap-in waits for its disk, saying so every STUCK_NS at
		 * the warning level.  (On the shared 2-vCPU VM at load 20-30,
		 * O_DIRECT writes took over 10 s to complete while the block
		 * device had none in flight and their submitter was reaping:
		 * the kernel's completion path, not a lost completion.  Failing
		 * the fault then killed the program with SIGBUS.)  Give up only
		 * when nothing is under way, or a write failed. */
		uint64_t now = bypass_now_ns();
		uint64_t errs = ST_SUM(p, wr_err);
		if (!stuck) {
			stuck = said = now;
			werr = errs;
		} else if (busy && errs == werr) {
			if (now - said > STUCK_NS) {
				bp_warn("bypass: pager: a fault has waited %.0f s for room: %u "
					"resident, %u under write-back, budget %u; waiting for the "
					"writes",
					(double)(now - stuck) / 1e9, atomic_load(&p->bud.resident),
					atomic_load(&p->bud.writeback), p->cfg.budget);
				bp_wb_report(p, BYPASS_LOG_WARN);
				said = now;
			}
		} else if (now - said > STUCK_NS) {
			bp_err("bypass: pager: no page can be evicted (%u resident, %u "
			       "pinned, %u under write-back, budget %u)",
			       atomic_load(&p->bud.resident), atomic_load(&p->bud.pinned),
			       atomic_load(&p->bud.writeback), p->cfg.budget);
			bp_wb_report(p, BYPASS_LOG_ERROR);
			return -ENOMEM;
		}
		if (done || busy)
			continue;
		struct timespec ts = { 0, 100000 };
		bp_sys_nanosleep(&ts, NULL);
	}
}

/* ------------------------------------------------------------ discard */

/* The locked resident pages ids[0..n) (consecutive) leave the page table
 * and the budget: zeros from now on; unlocked.  Returns how many could not
 * (the madvise failed: they keep their data, on their list again). */
static uint32_t discard_resident(struct bypass_pager *p, struct region *r, const uint32_t *ids,
				 uint32_t n)
{
	if (!n)
		return 0;
	bool ok = bp_sys_madvise((void *)region_addr(r, ids[0]), (size_t)n * PG_SIZE,
				 MADV_DONTNEED) == 0;
	for (uint32_t i = 0; i < n; i++) {
		struct pg *pg = pg_of(p, ids[i]);
		if (ok) {
			bp_lru_del(p, ids[i]);
			bp_slot_free(p, pg);
			pg_clear(pg, PW_DIRTY | PW_WP | PW_REF | PW_REDIRTY | PW_PF | PW_PFAGED);
			pg_set_state(pg, PS_ZERO);
		}
		bp_pg_unlock(pg);
	}
	if (!ok)
		return n;
	bp_bud_sub(p, n);
	return 0;
}

int bp_pager_discard(struct bypass_pager *p, uintptr_t a, size_t len)
{
	if ((a | len) & (PG_SIZE - 1) || a + len < a)
		return -EINVAL;
	if (!len)
		return 0;
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	struct region *r = t ? bp_tab_find(t, a) : NULL;
	if (!r || r->pager != p || a + len > r->end) {
		bp_tab_leave(idx);
		return -EINVAL;
	}
	uint32_t id0 = region_id(r, a), n = (uint32_t)(len >> PG_SHIFT), left = 0;
	uint32_t *run = p->ev.victims, nrun = 0, freed = 0;
	/* No eviction round, write-back completion or fork in between: the
	 * evict lock, waited for while another thread evicts, but never
	 * while a fork is being prepared (its thread sets the flag, then takes
	 * the lock, then the allocator's fork locks, which a heap purge
	 * holds: the discard gives up instead, every page kept). */
	if (!bp_gate_tryenter(p)) {
		bp_tab_leave(idx);
		return (int)n;
	}
	while (!bp_plock_trylock(&p->ev.lock)) {
		if (bp_evict_forking(p)) {
			bp_gate_leave(p);
			bp_tab_leave(idx);
			return (int)n;
		}
		wait_progress(p, atomic_load(&p->bud.progress));
	}
	for (uint32_t id = id0; id < id0 + n; id++) {
		struct pg *pg = pg_of(p, id);
		uint32_t w = atomic_load(&pg->w);
		bool take = pg_state(w) != PS_ZERO && bp_pg_trylock(pg);
		if (take) {
			w = atomic_load(&pg->w);
			if ((w >> PW_PIN_SHIFT) || (w & PW_PARK) || pg_state(w) == PS_WRITEBACK) {
				bp_pg_unlock(pg); /* in use, or its data elsewhere: kept */
				left++;
				take = false;
			} else if (pg_state(w) == PS_SWAPPED) {
				bp_slot_free(p, pg); /* and its copy in the pool */
				pg_set_state(pg, PS_ZERO);
				bp_pg_unlock(pg);
				take = false;
			}
		} else if (pg_state(atomic_load(&pg->w)) != PS_ZERO) {
			left++; /* locked: a fault or the prefetcher has it */
		}
		/* resident: into the run (one madvise for consecutive pages) */
		if (take && pg_state(w) == PS_RESIDENT) {
			if (nrun && (run[nrun - 1] + 1 != id || nrun == p->cfg.batch)) {
				freed += nrun;
				left += discard_resident(p, r, run, nrun);
				nrun = 0;
			}
			run[nrun++] = id;
		} else if (take) {
			bp_pg_unlock(pg);
		}
	}
	freed += nrun;
	left += discard_resident(p, r, run, nrun);
	bp_plock_unlock(&p->ev.lock);
	bp_gate_leave(p);
	bp_tab_leave(idx);
	if (freed)
		bp_pager_progress(p);
	return (int)left;
}

/* ------------------------------------------------------------ fork */

void bp_evict_fork_begin(struct bypass_pager *p)
{
	atomic_store(&p->bud.forking, true);
	bp_pager_progress(p); /* faults waiting for room take it now */
	bp_plock_lock_serialized(&p->ev.lock); /* fork.c: every pager's, in turn */
}

bool bp_evict_forking(struct bypass_pager *p)
{
	return atomic_load(&p->bud.forking);
}

void bp_evict_fork_end(struct bypass_pager *p, bool child)
{
	atomic_store(&p->bud.forking, false);
	if (child) { /* a copy nobody uses: its lock free, nothing evicted */
		atomic_store(&p->ev.lock.v, 0);
		return;
	}
	/* Back within the budget: the pages read back for the fork are clean
	 * (their slots kept), so this is mostly dropping them. */
	uint32_t seen = atomic_load(&p->bud.progress);
	for (int tries = 0; atomic_load(&p->bud.resident) > p->cfg.budget && tries < 1000; tries++) {
		uint32_t done = evict_run(p, 1);
		uint32_t now = atomic_load(&p->bud.progress);
		if (!done && now == seen && !p->ev.wb_inflight)
			break; /* pinned or locked: the next faults evict */
		seen = now;
	}
	bp_plock_unlock(&p->ev.lock);
	bp_pager_progress(p);
}

/* ------------------------------------------------------------ setup */

int bp_evict_init(struct bypass_pager *p)
{
	p->ev.lock.rank = BP_RANK_EVICT;
	for (unsigned i = 0; i < PG_LRU_SHARDS; i++)
		for (int k = 0; k < 2; k++)
			p->lists.shard[i].lru[k].head = p->lists.shard[i].lru[k].tail = PG_NONE;
	/* dropv: a round's batch, or one write-back's pages (bp_wb_reap) */
	uint32_t scratch = p->cfg.batch > WB_MAX_PAGES ? p->cfg.batch : WB_MAX_PAGES;
	p->ev.victims = bp_pg_calloc(p->cfg.batch, sizeof(uint32_t));
	p->ev.clean_ids = bp_pg_calloc(p->cfg.batch, sizeof(uint32_t));
	p->ev.dropv = bp_pg_calloc(scratch, sizeof(struct iovec));
	if (!p->ev.victims || !p->ev.clean_ids || !p->ev.dropv)
		return -ENOMEM;
	return bp_wb_init(p);
}

void bp_evict_child(struct bypass_pager *p)
{
	bp_tree_child(p); /* a slot of its own in the tree's ledger */
	if (p->ev.pidfd_owned >= 0)
		bp_sys_close(p->ev.pidfd_owned);
	p->ev.pidfd_owned = bp_fd_lift(bp_sys_pidfd_open(getpid(), 0), true);
	p->ev.pidfd = p->ev.pidfd_owned;
	bp_wb_child(p);
	struct bp_tier *t = atomic_load(&p->tier);
	if (t)
		bp_tier_child(p, t);
}

void bp_evict_fini(struct bypass_pager *p)
{
	bp_tree_leave(p);
	bp_wb_fini(p);
	bp_pg_free(p->ev.victims);
	bp_pg_free(p->ev.clean_ids);
	bp_pg_free(p->ev.dropv);
	bp_tier_free(atomic_load(&p->tier));
	atomic_store(&p->tier, NULL);
}
