/* SPDX-License-Identifier: MIT */
/*
 * The budget and eviction: swap slots, write-back through the
 * pager's io_uring, and dropping pages.
 *
 * Eviction runs in whichever thread needs room (often inside its SIGBUS
 * handler), one thread at a time per pager (the evict lock).  That is why
 * the pager has its own ring, created with the pager, rather than the
 * per-thread rings of core: a per-thread ring is created on first use with
 * calloc, which a signal handler must not call, and since one evictor runs
 * at a time a per-pager ring is never contended.  Write-back is
 * asynchronous: a round write-protects its dirty victims, submits their
 * writes and returns; the next round (in any thread) reaps the completions
 * and drops the pages.  A write to a page under write-back takes a
 * write-protect fault that marks it re-dirtied; it is then kept.
 *
 * io_uring posts an O_DIRECT completion through the task work of the thread
 * that submitted it, and a thread blocked in a kernel-mode fault on a
 * handler-served region runs none until the handler thread serves it.  If
 * the handler thread then needs room that only that thread's write-backs
 * can free, neither moves again.  So in a pager with a handler thread, only
 * the handler thread (which never touches region memory) writes back
 * asynchronously; other threads write synchronously (pwritev).
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
#include "pager/lru.h"
#include "pager/uffd.h"
#include "pager/policy.h"
#include "pager/tier.h"
#include "pager/tree.h"
#include "core/syscall.h"
#include "core/uring.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WB_RECORDS 128u
#define WB_MAX_PAGES 64u
#define RING_ENTRIES 256u
#define STUCK_NS 10000000000ull /* give up on a fault after 10 s of no progress */

struct ectx {
	struct regtab *t;
	struct region *cache;
};

static struct region *ectx_region(struct bypass_pager *p, struct ectx *c, uint32_t id)
{
	struct region *r = c->cache;
	if (r && region_has_id(r, id))
		return r;
	r = bp_tab_find_id(c->t, p, id);
	if (r)
		c->cache = r;
	return r;
}

/* ------------------------------------------------------------ slots */

/* Slots of word w in use: ours, or held by forked descendants (share.c). */
static uint64_t slot_busy(struct bypass_pager *p, uint32_t w)
{
	return atomic_load_explicit(&p->swap.slotmap[w], memory_order_relaxed) |
	       bp_share_busy(p, w);
}

static bool slot_take(struct bypass_pager *p, uint32_t s)
{
	uint64_t bit = 1ull << (s % 64);
	if (s >= p->swap.nslots || (slot_busy(p, s / 64) & bit))
		return false;
	/* Only the evictor sets bits, so nobody else can take it now. */
	atomic_fetch_or_explicit(&p->swap.slotmap[s / 64], bit, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->swap.used, 1, memory_order_relaxed);
	return true;
}

/* Next fit from the cursor within [0, end) slots; PG_NONE if all busy. */
static uint32_t slot_search(struct bypass_pager *p, uint32_t end)
{
	uint32_t words = (end + 63) / 64;
	uint32_t cur = p->swap.cursor < end ? p->swap.cursor : 0;
	uint32_t w = cur / 64;
	uint64_t low = ~0ull << (cur % 64);
	for (uint32_t i = 0; i <= words; i++) {
		uint64_t m = ~slot_busy(p, w);
		if (i == 0)
			m &= low;
		if (w == words - 1 && end % 64)
			m &= ~(~0ull << (end % 64));
		if (m) {
			uint32_t s = w * 64 + (uint32_t)__builtin_ctzll(m);
			slot_take(p, s);
			p->swap.cursor = s + 1 < end ? s + 1 : 0;
			return s;
		}
		w = w + 1 == words ? 0 : w + 1;
	}
	return PG_NONE;
}

/*
 * Next fit from the cursor: successive victims get successive slots.  The
 * sized part of the file first; past it (slots forked children hold keep
 * the sized part full) after giving back what gone children held.
 */
static uint32_t slot_alloc(struct bypass_pager *p)
{
	uint32_t s = slot_search(p, p->swap.pages);
	if (s == PG_NONE && p->swap.nslots > p->swap.pages) {
		if (bp_share_collect(p))
			s = slot_search(p, p->swap.pages);
		if (s == PG_NONE)
			s = slot_search(p, p->swap.nslots);
	}
	return s;
}

void bp_slot_free(struct bypass_pager *p, struct pg *pg)
{
	uint32_t s1 = pg->slot;
	if (!s1)
		return;
	pg->slot = 0;
	if (slot_level(s1) != p->lin.depth) { /* an ancestor's: our hold on it */
		bp_share_drop(p, s1);
		return;
	}
	uint32_t s = slot_index(s1);
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	if (t) /* its data in the pool freed first: the slot may be reused next */
		bp_tier_forget(p, t, s);
	atomic_fetch_and_explicit(&p->swap.slotmap[s / 64], ~(1ull << (s % 64)),
				  memory_order_relaxed);
	atomic_fetch_sub_explicit(&p->swap.used, 1, memory_order_relaxed);
}


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
static void drop_pages(struct bypass_pager *p, struct ectx *c, const uint32_t *ids,
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

/* ------------------------------------------------------------ write-back */

/* A write finished: drop its pages unless they were written meanwhile. */
static uint32_t finish_wb(struct bypass_pager *p, struct ectx *c, struct wb *b, int res)
{
	bool ok = res == (int)(b->n * PG_SIZE);
	if (ok) {
		stat_add(&ST(p).wr, (uint64_t)b->n * PG_SIZE);
	} else {
		stat_add(&ST(p).wr_err, b->n);
		bp_err("bypass: pager: writing %u pages to swap: %s", b->n,
		       res < 0 ? strerror(-res) : "short write");
	}
	uint32_t *drop = p->ev.reap_ids, ndrop = 0;
	for (uint32_t i = 0; i < b->n; i++) {
		uint32_t id = b->ids[i];
		struct pg *pg = pg_of(p, id);
		bp_pg_lock_wb(pg);
		atomic_fetch_sub(&p->bud.writeback, 1);
		uint32_t w = atomic_load(&pg->w);
		pg_set_state(pg, PS_RESIDENT);
		if (!ectx_region(p, c, id)) { /* being unmapped: it cleans up */
			bp_pg_unlock(pg);
			continue;
		}
		if (!ok || (w & PW_REDIRTY)) {
			bp_slot_free(p, pg);
			pg_clear(pg, PW_REDIRTY);
			pg_set(pg, PW_DIRTY);
			bp_pg_unlock(pg);
			bp_lru_add(p, id, false);
			continue;
		}
		pg_clear(pg, PW_DIRTY); /* the slot holds it now */
		if (w >> PW_PIN_SHIFT) {
			bp_pg_unlock(pg);
			continue;
		}
		drop[ndrop++] = id;
	}
	drop_pages(p, c, drop, ndrop, false);
	b->used = 0;
	p->ev.wb_inflight--;
	return ndrop;
}

/*
 * Reap finished writes; with wait, wait up to 1 ms for one.  Never longer:
 * io_uring posts an O_DIRECT completion through the task work of the thread
 * that submitted it, which may be asleep where task work cannot run (a
 * kernel-mode fault on a handler-thread region, waiting for us); the caller
 * then evicts more pages itself, whose completions it can reap.
 */
static uint32_t reap(struct bypass_pager *p, struct ectx *c, bool wait)
{
	uint32_t freed = 0;
	bool got = false;
	while (p->ev.wb_inflight) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 1000000 };
		int e = wait && !got ? io_uring_wait_cqe_timeout(&p->ev.ring, &cqe, &ts)
				     : io_uring_peek_cqe(&p->ev.ring, &cqe);
		if (e == -EINTR)
			continue;
		if (e) /* -EAGAIN: none yet; -ETIME: timed out */
			break;
		uint32_t ri = (uint32_t)cqe->user_data;
		int res = cqe->res;
		io_uring_cqe_seen(&p->ev.ring, cqe);
		freed += finish_wb(p, c, &p->ev.wbs[ri], res);
		got = true;
	}
	return freed;
}

/*
 * Set in a thread when it submits a write-back to the ring: their
 * completions come as its task work (see bp_evict_settle_mine()).  Cleared
 * only there, when none of them is left in flight.
 */
static __thread bool wb_submitted __attribute__((tls_model("initial-exec")));

/* Of the write-backs in flight, were all (all) or any (!all) submitted by
 * the calling thread? */
static bool wb_mine(struct bypass_pager *p, bool all)
{
	pid_t me = bp_tid();
	for (uint32_t i = 0; i < p->ev.nwb; i++)
		if (p->ev.wbs[i].used && (p->ev.wbs[i].tid == me) != all)
			return !all;
	return all;
}

bool bp_evict_mine_maybe(void)
{
	return wb_submitted;
}

void bp_evict_settle_mine(struct bypass_pager *p)
{
	if (!wb_submitted)
		return;
	bp_plock_lock(&p->ev.lock);
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	while (wb_mine(p, false)) {
		if (io_uring_sq_ready(&p->ev.ring))
			io_uring_submit(&p->ev.ring);
		reap(p, &c, true);
	}
	wb_submitted = false;
	bp_tab_leave(idx);
	bp_plock_unlock(&p->ev.lock);
}

static struct wb *wb_get(struct bypass_pager *p, struct ectx *c, uint32_t *idx)
{
	for (;;) {
		for (uint32_t i = 0; i < p->ev.nwb; i++)
			if (!p->ev.wbs[i].used) {
				p->ev.wbs[i].used = 1;
				*idx = i;
				return &p->ev.wbs[i];
			}
		io_uring_submit(&p->ev.ring);
		reap(p, c, true);
	}
}

/*
 * A write-back done in the calling thread; its result as a completion's.
 * The system call itself, not libc's pwritev: a sanitizer's wrapper would
 * take the kernel's read of the pages for a race with the threads that
 * wrote them, but those writes are ordered by the write-protection.
 */
static int write_sync(struct bypass_pager *p, const struct iovec *iov, uint32_t niov,
		      uint32_t slot)
{
	long n;
	do /* x86-64 and other 64-bit ABIs: the offset, and 0 for its high half */
		n = bp_sys_ret(bp_syscall5(SYS_pwritev, p->swap.fd, iov, (unsigned long)niov,
					       (unsigned long)slot * PG_SIZE, 0ul));
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int)n;
}

/*
 * Write n locked, write-protected dirty pages (sorted by id) to fresh
 * slots: runs of consecutive slots become one writev (the staged ones,
 * v[at[0]], v[at[1]], ... (increasing), also into the compressed pool:
 * tier_stage()).  The pages are unlocked in state WRITEBACK (and, for a
 * synchronous write-back, finished before this returns).
 */
static void submit_writeback(struct bypass_pager *p, struct ectx *c, const uint32_t *v,
			     uint32_t n, const uint32_t *at, uint32_t staged)
{
	struct bp_tier *t = staged ? atomic_load_explicit(&p->tier, memory_order_acquire) : NULL;
	uint32_t i = 0, sk = 0; /* sk: the next staged page, at[sk] */
	bool queued = false;
	bool sync = atomic_load_explicit(&p->ev.sync_wb, memory_order_relaxed) &&
		    !bp_pager_in_handler_thread();
	while (i < n) {
		uint32_t s = slot_alloc(p);
		if (s == PG_NONE) {
			/* Cannot happen: regions never exceed the swap size. */
			bp_err("bypass: pager: no free swap slot");
			for (; i < n; i++) {
				bp_pg_unlock(pg_of(p, v[i]));
				bp_lru_add(p, v[i], false);
			}
			break;
		}
		uint32_t ri;
		struct wb *b = wb_get(p, c, &ri);
		uint32_t cnt = 0, niov = 0;
		for (; i < n && cnt < WB_MAX_PAGES; i++, cnt++) {
			if (cnt && !slot_take(p, s + cnt))
				break;
			struct region *r = ectx_region(p, c, v[i]);
			uintptr_t a = region_addr(r, v[i]);
			pg_of(p, v[i])->slot = slot_make(p->lin.depth, s + cnt);
			if (sk < staged && at[sk] == i) /* a compressed copy in the pool too */
				bp_tier_commit(p, t, s + cnt, v[i], sk++);
			b->ids[cnt] = v[i];
			if (niov && (uintptr_t)b->iov[niov - 1].iov_base +
						b->iov[niov - 1].iov_len == a) {
				b->iov[niov - 1].iov_len += PG_SIZE;
			} else {
				b->iov[niov].iov_base = (void *)a;
				b->iov[niov].iov_len = PG_SIZE;
				niov++;
			}
		}
		p->swap.cursor = s + cnt < p->swap.nslots ? s + cnt : 0;
		b->n = cnt;
		atomic_fetch_add(&p->bud.writeback, cnt);
		for (uint32_t k = 0; k < cnt; k++) {
			struct pg *pg = pg_of(p, b->ids[k]);
			pg_clear(pg, PW_REDIRTY);
			pg_set_state(pg, PS_WRITEBACK);
			bp_pg_unlock(pg);
		}
		if (sync) {
			p->ev.wb_inflight++;
			finish_wb(p, c, b, write_sync(p, b->iov, niov, s));
			continue;
		}
		struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ev.ring);
		if (!sqe) {
			io_uring_submit(&p->ev.ring);
			sqe = io_uring_get_sqe(&p->ev.ring);
		}
		io_uring_prep_writev(sqe, p->swap.fd, b->iov, niov, (uint64_t)s * PG_SIZE);
		b->tid = bp_tid(); /* its completion runs in this thread's task work */
		wb_submitted = true;
		b->t0 = bypass_now_ns();
		io_uring_sqe_set_data64(sqe, ri);
		p->ev.wb_inflight++;
		queued = true;
	}
	if (queued)
		io_uring_submit(&p->ev.ring);
}

/* ------------------------------------------------------------ the tier */

/*
 * The compressed tier (tier.c), write-through: of the n locked,
 * write-protected dirty victims v, the first BP_TIER_STAGE that are not
 * under the DONTNEED hint (cold: not expected back soon; the file only,
 * counted) are staged, and those that compress are compressed now;
 * submit_writeback() puts each in the pool under the slot it gives the
 * page, then writes the page to the file as before.  The file always has
 * the data: whatever reads slots from the file (the prefetcher, a forked
 * child) reads it right, and the pool shrinks by forgetting.  The cold
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
	const char *buf = bp_tier_stage(t, addrs, m);
	if (!buf)
		return 0;
	for (uint32_t k = 0; k < m; k++)
		bp_tier_compress(t, buf + (size_t)k * PG_SIZE, k);
	return m;
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
	drop_pages(p, c, clean, nclean, true);

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
	submit_writeback(p, c, v, kept, at, staged);
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
	uint32_t done = reap(p, &c, false);
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
	 * put more under way meanwhile (see reap()), unless this thread
	 * submitted every write in flight: their completions run in its own
	 * wait, so it only waits (a forced round would take pages the policy
	 * keeps, such as clock's referenced ones, whenever a write is slower
	 * than reap()'s wait). */
	for (int tries = 0; need && atomic_load(&p->bud.resident) + need > p->cfg.budget && tries < 100;
	     tries++) {
		uint32_t got = reap(p, &c, true);
		if (atomic_load(&p->bud.resident) + need <= p->cfg.budget)
			break;
		if (!got && p->ev.wb_inflight && wb_mine(p, true))
			continue;
		uint32_t n = evict_round(p, &c, true, 0);
		done += got + n;
		if (!got && !n && !p->ev.wb_inflight)
			break;
	}
	bp_tab_leave(idx);
	return done;
}

void bp_evict_drain(struct bypass_pager *p)
{
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	while (p->ev.wb_inflight)
		reap(p, &c, true);
	bp_tab_leave(idx);
}

void bp_evict_settle(struct bypass_pager *p)
{
	bp_plock_lock(&p->ev.lock);
	bp_evict_drain(p);
	bp_plock_unlock(&p->ev.lock);
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
	reap(p, &c, false);
	int e = -EAGAIN, empty = 0;
	for (int round = 0; round < 8; round++) {
		if (!bp_pager_reserve_below_high(p, n)) {
			e = 0;
			break;
		}
		uint32_t res = atomic_load(&p->bud.resident), wb = atomic_load(&p->bud.writeback);
		if (res - wb + n <= p->cfg.high) { /* room once write-backs end */
			reap(p, &c, true);
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
 * Where the write-backs in flight stand, for a fault that waits long for
 * room: per submitting thread, how many writes and pages, the oldest's age,
 * and what that thread does now (state, wait channel, system call: an
 * O_DIRECT completion is posted by the submitter's task work, so a
 * submitter asleep where task work cannot run would hold them; one seen in
 * an interruptible wait or reaping means the kernel's I/O path is slow).
 * System calls and fixed buffers only: the caller may be a fault's signal
 * handler.  Written at the given log level, and only if it is on.
 */
static void wb_report(struct bypass_pager *p, int level)
{
	if (bp_log_level() < level)
		return;
	if (!bp_plock_trylock(&p->ev.lock)) {
		bp_log(level, "bypass: pager: %u write-backs in flight (the evict lock is held)",
		       p->ev.wb_inflight);
		return;
	}
	struct {
		pid_t tid;
		uint32_t recs, pages;
		uint64_t t0;
	} by[8];
	uint32_t nby = 0, other = 0;
	for (uint32_t i = 0; i < p->ev.nwb; i++) {
		struct wb *b = &p->ev.wbs[i];
		if (!b->used)
			continue;
		uint32_t k = 0;
		while (k < nby && by[k].tid != b->tid)
			k++;
		if (k == nby) {
			if (nby == 8) {
				other++;
				continue;
			}
			by[nby++] = (__typeof__(by[0])){ b->tid, 0, 0, b->t0 };
		}
		by[k].recs++;
		by[k].pages += b->n;
		if (b->t0 < by[k].t0)
			by[k].t0 = b->t0;
	}
	uint64_t now = bypass_now_ns();
	bp_log(level,
	       "bypass: pager: %u write-backs in flight (%u pages); ring: %u completions "
	       "unreaped, %u entries unsubmitted%s",
	       p->ev.wb_inflight, atomic_load(&p->bud.writeback), io_uring_cq_ready(&p->ev.ring),
	       io_uring_sq_ready(&p->ev.ring), other ? "; more submitters than shown" : "");
	for (uint32_t k = 0; k < nby; k++) {
		char path[64], stat[160] = "", wchan[64] = "", sc[64] = "";
		static const char *const what[3] = { "stat", "wchan", "syscall" };
		char *buf[3] = { stat, wchan, sc };
		size_t len[3] = { sizeof(stat), sizeof(wchan), sizeof(sc) };
		for (int f = 0; f < 3; f++) {
			snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)by[k].tid, what[f]);
			int fd = bp_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
			if (fd < 0) {
				snprintf(buf[f], len[f], "(%s)", strerror(-fd));
				continue;
			}
			ssize_t r = bp_sys_read(fd, buf[f], len[f] - 1);
			bp_sys_close(fd);
			buf[f][r > 0 ? r : 0] = 0;
			for (char *q = buf[f]; *q; q++)
				if (*q == '\n')
					*q = ' ';
		}
		/* the state is the field after the command's closing parenthesis */
		char *st = strrchr(stat, ')');
		bp_log(level,
		       "bypass: pager:   thread %d submitted %u of them (%u pages), the oldest "
		       "%.1f s ago; it is now: state%.3s, wchan %s, syscall %.40s",
		       (int)by[k].tid, by[k].recs, by[k].pages, (double)(now - by[k].t0) / 1e9,
		       st ? st + 1 : " ?", wchan, sc);
	}
	bp_plock_unlock(&p->ev.lock);
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
	uint32_t done = reap(p, &c, false);
	if (done < n && atomic_load(&p->bud.writeback) < n)
		done += evict_round(p, &c, true, 0);
	if (done < n && p->ev.wb_inflight)
		done += reap(p, &c, true);
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
				wb_report(p, BYPASS_LOG_WARN);
				said = now;
			}
		} else if (now - said > STUCK_NS) {
			bp_err("bypass: pager: no page can be evicted (%u resident, %u "
			       "pinned, %u under write-back, budget %u)",
			       atomic_load(&p->bud.resident), atomic_load(&p->bud.pinned),
			       atomic_load(&p->bud.writeback), p->cfg.budget);
			wb_report(p, BYPASS_LOG_ERROR);
			return -ENOMEM;
		}
		if (done || busy)
			continue;
		struct timespec ts = { 0, 100000 };
		bp_sys_nanosleep(&ts, NULL);
	}
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
	p->ev.nwb = WB_RECORDS;
	uint32_t scratch = p->cfg.batch > WB_MAX_PAGES ? p->cfg.batch : WB_MAX_PAGES;
	p->ev.wbs = bp_pg_calloc(p->ev.nwb, sizeof(*p->ev.wbs));
	p->ev.wb_ids = bp_pg_calloc((size_t)p->ev.nwb * WB_MAX_PAGES, sizeof(uint32_t));
	p->ev.wb_iov = bp_pg_calloc((size_t)p->ev.nwb * WB_MAX_PAGES, sizeof(struct iovec));
	p->ev.victims = bp_pg_calloc(p->cfg.batch, sizeof(uint32_t));
	p->ev.clean_ids = bp_pg_calloc(p->cfg.batch, sizeof(uint32_t));
	p->ev.reap_ids = bp_pg_calloc(WB_MAX_PAGES, sizeof(uint32_t));
	p->ev.dropv = bp_pg_calloc(scratch, sizeof(struct iovec));
	if (!p->ev.wbs || !p->ev.wb_ids || !p->ev.wb_iov || !p->ev.victims || !p->ev.clean_ids ||
	    !p->ev.reap_ids || !p->ev.dropv)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->ev.nwb; i++) {
		p->ev.wbs[i].ids = p->ev.wb_ids + (size_t)i * WB_MAX_PAGES;
		p->ev.wbs[i].iov = p->ev.wb_iov + (size_t)i * WB_MAX_PAGES;
	}
	int e = bp_uring_init(RING_ENTRIES, &p->ev.ring, NULL);
	if (e < 0) {
		bp_err("bypass: pager: io_uring_queue_init: %s", strerror(-e));
		return e;
	}
	p->ev.ring_live = true;
	return 0;
}

void bp_evict_child(struct bypass_pager *p)
{
	bp_tree_child(p); /* a slot of its own in the tree's ledger */
	if (p->ev.pidfd_owned >= 0)
		bp_sys_close(p->ev.pidfd_owned);
	p->ev.pidfd_owned = bp_sys_pidfd_open(getpid(), 0);
	p->ev.pidfd = p->ev.pidfd_owned;
	if (!p->ev.ring_live)
		return;
	bp_uring_exit(&p->ev.ring); /* the parent's: mapped shared with it */
	p->ev.ring_live = bp_uring_init(RING_ENTRIES, &p->ev.ring, NULL) >= 0;
	p->ev.wb_inflight = 0;
	for (uint32_t i = 0; i < p->ev.nwb; i++)
		p->ev.wbs[i].used = 0;
	if (!p->ev.ring_live) /* pwritev then, in every thread */
		atomic_store(&p->ev.sync_wb, true);
	struct bp_tier *t = atomic_load(&p->tier);
	if (t)
		bp_tier_child(p, t);
}

void bp_evict_fini(struct bypass_pager *p)
{
	bp_tree_leave(p);
	if (p->ev.ring_live)
		bp_uring_exit(&p->ev.ring);
	p->ev.ring_live = false;
	bp_pg_free(p->ev.wbs);
	bp_pg_free(p->ev.wb_ids);
	bp_pg_free(p->ev.wb_iov);
	bp_pg_free(p->ev.victims);
	bp_pg_free(p->ev.clean_ids);
	bp_pg_free(p->ev.reap_ids);
	bp_pg_free(p->ev.dropv);
	bp_tier_free(atomic_load(&p->tier));
	atomic_store(&p->tier, NULL);
}
