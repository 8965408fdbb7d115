/* SPDX-License-Identifier: MIT */
/*
 * Write-back: swap slots, and writing evicted pages to them through the
 * pager's io_uring (evict.c chooses the victims and drops pages).
 *
 * The evictor (one thread at a time per pager: the evict lock) uses the
 * pager's own ring, created with the pager, rather than the per-thread
 * rings of core: a per-thread ring is created on first use with calloc,
 * which a signal handler must not call, and since one evictor runs at a
 * time a per-pager ring is never contended.  Write-back is asynchronous: a
 * round write-protects its dirty victims, submits their writes and
 * returns; the next round (in any thread) reaps the completions
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
#include "pager/tier.h"
#include "core/syscall.h"
#include "core/uring.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define WB_RECORDS 128u
#define RING_ENTRIES 256u

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


/* ------------------------------------------------------------ write-back */

/*
 * Write-backs in flight per submitting thread: a word per thread that has
 * some, (tid << 32) | count, in a table of the process (static memory, so
 * a thread that exits with writes in flight leaves nothing dangling: its
 * word is freed when its last write is reaped).  The submitter counts up
 * before the write goes to the ring (wb_count_up: its record's used is
 * then 2 + the word's index); whoever reaps the completion counts down
 * (finish_wb, any thread), and the word is freed (0) with its last write.
 * A thread finding every word taken writes synchronously (bp_wb_submit).
 *
 * Why the count is exact for the pager preload's wrappers (evict.h): an
 * O_DIRECT write's completion is posted to the CQ ring by task work that
 * io_uring queues on the submitting thread (TWA_SIGNAL: the ring has no
 * IORING_SETUP_COOP_TASKRUN), and that task work is what ends a wait
 * with EINTR.  A reaper sees the CQE only after that task work posted it,
 * and counts down only after seeing it; so when the submitter reads a
 * count of 0 in user space, every completion of its write-backs has run
 * in its own task work, which the kernel finishes (with the notification
 * flag cleared) before it returns to user space: no task work of the
 * pager's is left to interrupt its next call.  A count above 0 may include
 * completions already posted but not reaped: bp_evict_mine_reap() reaps
 * those without waiting.  (A submitter that exits first: io_uring posts
 * the completion through its fallback work; the count falls as well.)
 *
 * The word is the thread's tid with the count, so a word freed and taken
 * by another thread is never counted up by the first (wb_count_up compares
 * the tid).  In a fork child the table is cleared (bp_wb_child): the
 * parent's write-backs are not the child's; a child that forgot the pager
 * (fork.c) does not clear it, but its thread's word is of another fork
 * generation, which the thread then ignores.
 */
#define WB_THREADS 256u
static _Atomic uint64_t wb_threads[WB_THREADS];
/* 1 + the index of the calling thread's word, or 0; the tid and the fork
 * generation it was taken in (a fork child's thread has a new tid). */
static __thread uint32_t wb_at __attribute__((tls_model("initial-exec")));
static __thread uint32_t wb_me __attribute__((tls_model("initial-exec")));
static __thread unsigned wb_gen __attribute__((tls_model("initial-exec")));

/* One more write-back of the calling thread (tid me) in flight: 1 + the
 * index of its word, or 0 if every word is another thread's. */
static uint32_t wb_count_up(pid_t me)
{
	uint32_t tid = (uint32_t)me;
	unsigned gen = bp_fork_gen_fast();
	if (wb_at && wb_gen == gen) {
		_Atomic uint64_t *a = &wb_threads[wb_at - 1];
		uint64_t w = atomic_load_explicit(a, memory_order_relaxed);
		while ((uint32_t)(w >> 32) == tid && wb_me == tid)
			if (atomic_compare_exchange_weak_explicit(a, &w, w + 1,
								  memory_order_release,
								  memory_order_relaxed))
				return wb_at;
	}
	for (uint32_t k = 0; k < WB_THREADS; k++) {
		uint32_t j = (tid + k) % WB_THREADS;
		uint64_t free_word = 0;
		if (atomic_compare_exchange_strong_explicit(&wb_threads[j], &free_word,
							    ((uint64_t)tid << 32) | 1,
							    memory_order_release,
							    memory_order_relaxed)) {
			wb_at = j + 1;
			wb_me = tid;
			wb_gen = gen;
			return wb_at;
		}
	}
	return 0;
}

/* A write-back counted in word j was reaped (any thread). */
static void wb_count_down(uint32_t j)
{
	uint64_t w = atomic_load_explicit(&wb_threads[j], memory_order_relaxed), n;
	do
		n = (uint32_t)w == 1 ? 0 : w - 1;
	while (!atomic_compare_exchange_weak_explicit(&wb_threads[j], &w, n, memory_order_release,
						      memory_order_relaxed));
}

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
	bp_evict_drop(p, c, drop, ndrop, false);
	if (b->used > 1) /* submitted to the ring: its thread's count */
		wb_count_down(b->used - 2);
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
uint32_t bp_wb_reap(struct bypass_pager *p, struct ectx *c, bool wait)
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

/* Of the write-backs in flight, were all (all) or any (!all) submitted by
 * the calling thread? */
bool bp_wb_mine(struct bypass_pager *p, bool all)
{
	pid_t me = bp_tid();
	for (uint32_t i = 0; i < p->ev.nwb; i++)
		if (p->ev.wbs[i].used && (p->ev.wbs[i].tid == me) != all)
			return !all;
	return all;
}

bool bp_evict_mine_maybe(void)
{
	uint32_t at = wb_at;
	return at && wb_gen == bp_fork_gen_fast() &&
	       (uint32_t)(atomic_load_explicit(&wb_threads[at - 1], memory_order_acquire) >> 32) ==
		       wb_me;
}

bool bp_evict_mine_reap(struct bypass_pager *p)
{
	if (!bp_evict_mine_maybe())
		return false;
	if (!p->ev.ring_live || !io_uring_cq_ready(&p->ev.ring) ||
	    !bp_plock_trylock(&p->ev.lock))
		return true;
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	bp_wb_reap(p, &c, false);
	bp_tab_leave(idx);
	bp_plock_unlock(&p->ev.lock);
	return bp_evict_mine_maybe();
}

void bp_evict_settle_mine(struct bypass_pager *p)
{
	if (!bp_evict_mine_maybe())
		return;
	bp_plock_lock(&p->ev.lock);
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	while (bp_wb_mine(p, false)) {
		if (io_uring_sq_ready(&p->ev.ring))
			io_uring_submit(&p->ev.ring);
		bp_wb_reap(p, &c, true);
	}
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
		bp_wb_reap(p, c, true);
	}
}

/*
 * A write-back done in the calling thread; its result as a completion's.
 * The system call itself, not libc's pwritev: a sanitizer's wrapper would
 * take the kernel's read of the pages for a race with the threads that
 * wrote them, but those writes are ordered by the write-protection.
 */
int bp_wb_write_sync(struct bypass_pager *p, const struct iovec *iov, uint32_t niov,
		     uint32_t slot)
{
	long n;
	do /* x86-64 and other 64-bit ABIs: the offset, and 0 for its high half */
		n = bp_sys_ret(bp_syscall5(SYS_pwritev, p->swap.fd, iov, (unsigned long)niov,
					       (unsigned long)slot * PG_SIZE, 0ul));
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int)n;
}

/* A slot taken by slot_alloc() given back unused (evict lock), the cursor
 * back to it: the next victims' slots follow on without a hole (a hole
 * per round split the file's runs, and readahead with them). */
static void slot_untake(struct bypass_pager *p, uint32_t s)
{
	atomic_fetch_and_explicit(&p->swap.slotmap[s / 64], ~(1ull << (s % 64)),
				  memory_order_relaxed);
	atomic_fetch_sub_explicit(&p->swap.used, 1, memory_order_relaxed);
	p->swap.cursor = s;
}

/*
 * The compressed tier, write-back: each staged victim v[at[k]] whose
 * compressed copy the pool keeps gets a slot and is dropped now, its copy
 * the only one (pool-only: not written to the file).  The others stay in
 * v, in order, for the file; returns how many.
 */
static uint32_t to_pool(struct bypass_pager *p, struct ectx *c, uint32_t *v, uint32_t n,
			const uint32_t *at, uint32_t staged)
{
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	uint32_t pool[BP_TIER_STAGE], npool = 0, m = 0, sk = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (sk < staged && at[sk] == i) {
			uint32_t idx = sk++;
			/* a page that did not compress takes no slot here */
			uint32_t s = bp_tier_compressed(t, idx) ? slot_alloc(p) : PG_NONE;
			if (s != PG_NONE && bp_tier_commit(p, t, s, v[i], idx, true)) {
				/* the pool holds it now: clean, as after a
				 * write-back (a drop that fails keeps it so) */
				pg_of(p, v[i])->slot = slot_make(p->lin.depth, s);
				pg_clear(pg_of(p, v[i]), PW_DIRTY);
				pool[npool++] = v[i];
				continue;
			}
			if (s != PG_NONE)
				slot_untake(p, s);
		}
		v[m++] = v[i];
	}
	bp_evict_drop(p, c, pool, npool, false);
	return m;
}

/*
 * Write n locked, write-protected dirty pages (sorted by id) to fresh
 * slots: runs of consecutive slots become one writev.  The staged ones
 * (v[at[0]], v[at[1]], ... (increasing): tier_stage()) that the pool
 * keeps are not written: to_pool().  The pages are unlocked in state
 * WRITEBACK (and, for a synchronous write-back, finished before this
 * returns).
 */
void bp_wb_submit(struct bypass_pager *p, struct ectx *c, uint32_t *v, uint32_t n,
		  const uint32_t *at, uint32_t staged)
{
	if (staged)
		n = to_pool(p, c, v, n, at, staged);
	uint32_t i = 0;
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
		uint32_t th = sync ? 0 : wb_count_up(bp_tid());
		if (!th) { /* (no word free for this thread: synchronous too) */
			p->ev.wb_inflight++;
			finish_wb(p, c, b, bp_wb_write_sync(p, b->iov, niov, s));
			continue;
		}
		struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ev.ring);
		if (!sqe) {
			io_uring_submit(&p->ev.ring);
			sqe = io_uring_get_sqe(&p->ev.ring);
		}
		io_uring_prep_writev(sqe, p->swap.fd, b->iov, niov, (uint64_t)s * PG_SIZE);
		b->tid = bp_tid(); /* its completion runs in this thread's task work */
		b->used = 1 + th;
		b->t0 = bypass_now_ns();
		io_uring_sqe_set_data64(sqe, ri);
		p->ev.wb_inflight++;
		queued = true;
	}
	if (queued)
		io_uring_submit(&p->ev.ring);
}


void bp_evict_drain(struct bypass_pager *p)
{
	unsigned idx = bp_tab_enter();
	struct ectx c = { bp_tab_get(), NULL };
	while (p->ev.wb_inflight)
		bp_wb_reap(p, &c, true);
	bp_tab_leave(idx);
}

void bp_evict_settle(struct bypass_pager *p)
{
	bp_plock_lock(&p->ev.lock);
	bp_evict_drain(p);
	bp_plock_unlock(&p->ev.lock);
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
void bp_wb_report(struct bypass_pager *p, int level)
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


/* ------------------------------------------------------------ setup */

int bp_wb_init(struct bypass_pager *p)
{
	p->ev.nwb = WB_RECORDS;
	p->ev.wbs = bp_pg_calloc(p->ev.nwb, sizeof(*p->ev.wbs));
	p->ev.wb_ids = bp_pg_calloc((size_t)p->ev.nwb * WB_MAX_PAGES, sizeof(uint32_t));
	p->ev.wb_iov = bp_pg_calloc((size_t)p->ev.nwb * WB_MAX_PAGES, sizeof(struct iovec));
	p->ev.reap_ids = bp_pg_calloc(WB_MAX_PAGES, sizeof(uint32_t));
	if (!p->ev.wbs || !p->ev.wb_ids || !p->ev.wb_iov || !p->ev.reap_ids)
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

void bp_wb_child(struct bypass_pager *p)
{
	/* the only thread: none of the parent's write-backs is ours */
	for (uint32_t j = 0; j < WB_THREADS; j++)
		atomic_store_explicit(&wb_threads[j], 0, memory_order_relaxed);
	wb_at = 0;
	if (!p->ev.ring_live)
		return;
	bp_uring_exit(&p->ev.ring); /* the parent's: mapped shared with it */
	p->ev.ring_live = bp_uring_init(RING_ENTRIES, &p->ev.ring, NULL) >= 0;
	p->ev.wb_inflight = 0;
	for (uint32_t i = 0; i < p->ev.nwb; i++)
		p->ev.wbs[i].used = 0;
	if (!p->ev.ring_live) /* pwritev then, in every thread */
		atomic_store(&p->ev.sync_wb, true);
}

void bp_wb_fini(struct bypass_pager *p)
{
	if (p->ev.ring_live)
		bp_uring_exit(&p->ev.ring);
	p->ev.ring_live = false;
	bp_pg_free(p->ev.wbs);
	bp_pg_free(p->ev.wb_ids);
	bp_pg_free(p->ev.wb_iov);
	bp_pg_free(p->ev.reap_ids);
}
