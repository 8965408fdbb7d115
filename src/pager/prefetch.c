/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous prefetch: a thread per pager (started the first time a
 * policy or a hint needs it) reads swapped pages ahead of the faulting
 * threads with io_uring, several reads in flight, and installs them with
 * UFFDIO_COPY, write-protected (clean: their slot keeps its copy).  Except
 * in an ascending write stream: when at least 3/4 of the prefetched pages
 * the stream passed took a write-protect fault (each one an upcall;
 * pf_write_mode), runs are installed writable and dirty (their slots
 * freed) but for one page in 16, which stays clean as a probe of whether
 * the stream still writes (the synchronous readahead's write mode, fault.c,
 * keeps one probe per window).
 *
 * The fault path, in a signal handler, asks for pages through a bounded
 * lock-free queue (Vyukov's, with a sequence number per cell) and wakes
 * the thread with a futex only when it sleeps.  The thread takes each page
 * with a trylock (a page locked by a fault is that fault's), reserves room
 * for it below the high watermark (evicting, never a PRIORITY page, if
 * needed), keeps it locked while its read is in flight (a thread faulting
 * on it waits for the read instead of reading it again), and stays in a
 * region-table read section for the whole request so that no region it
 * reads into can be unmapped under it.
 *
 * The stream detector (bp_pf_stream) decides what to ask for: per region,
 * the last fault, the stride of the stream (+1 ascending, -1 descending,
 * another constant stride) and a window that doubles while faults follow
 * the stream, up to a ceiling that halves when prefetched pages of the
 * region are evicted unused and grows back slowly while none are
 * (bp_pf_window), never above bp_pf_max() pages.
 */
#include "pager/page.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/share.h"
#include "pager/engine.h"
#include "pager/evict.h"
#include "pager/tier.h"
#include "pager/lru.h"
#include "pager/uffd.h"
#include "pager/install.h"
#include "pager/policy.h"
#include "core/syscall.h"
#include "core/uring.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PF_QLEN 256u   /* queued requests */
#define PF_QD 8u       /* reads in flight */
#define PF_RUN 128u    /* pages per read */
#define PF_WIN0 8u     /* first window, in strides */
#define PF_MAX_STRIDE 512 /* pages between two faults of a stride stream */
#define PF_STRIDE_STEPS 32u /* strided pages asked for at once */
#define PF_KEEP_SHARE 64u /* idle read buffers kept: 1/64 of the budget */

struct pf_cell {
	_Atomic uint32_t seq;
	_Atomic uint32_t id, n;
};

struct pf_read {
	uint32_t id0, k;
	struct region *r;
	unsigned tab;   /* the region table read section this read holds */
	char *buf;
	uint32_t slot1; /* the run's first slot */
	bool pool;      /* some of its pages are in the compressed pool */
};

struct bp_pf {
	struct pf_cell q[PF_QLEN];
	_Atomic uint32_t head __attribute__((aligned(BP_CACHELINE)));
	uint32_t tail __attribute__((aligned(BP_CACHELINE))); /* the thread's */
	_Atomic uint32_t wake, sleeping;
	_Atomic uint32_t idle_tail; /* asleep with nothing to do: 1 + the
				       requests taken so far (bp_pf_idle) */
	_Atomic bool stop;
	struct bp_thread thread;
	struct bypass_pager *p;
	struct io_uring ring;
	char *bufs;
	struct pf_read rd[PF_QD];
	bool rd_busy[PF_QD];
	uint32_t used[PF_QD]; /* pages of each buffer written since its last trim */
	uint32_t inflight;
	uint32_t cur, end; /* the request being read: [cur, end) */
	bool gated;        /* inside the fork's gate while reads are in flight */
};

void bp_pf_mark_used(struct bypass_pager *p, struct pg *pg)
{
	if (atomic_fetch_and_explicit(&pg->w, ~PW_PF, memory_order_relaxed) & PW_PF)
		stat_add(&ST(p).pf_used, 1);
}

bool bp_pf_idle(struct bypass_pager *p)
{
	struct bp_pf *pf = atomic_load(&p->pf);
	if (!pf)
		return true;
	/* asleep with no read in flight, and no request pushed since it took
	 * its last (a push takes a ticket from head first) */
	uint32_t t = atomic_load(&pf->idle_tail);
	return t && t - 1 == atomic_load(&pf->head);
}

uint32_t bp_pf_max(const struct bypass_pager *p)
{
	uint32_t m = p->cfg.budget / 4;
	return m < PG_MAX_PF ? m : PG_MAX_PF;
}

/* ------------------------------------------------------------ the queue */

bool bp_pf_push(struct bypass_pager *p, uint32_t id, uint32_t n)
{
	struct bp_pf *pf = atomic_load_explicit(&p->pf, memory_order_acquire);
	if (!pf || !n)
		return false;
	uint32_t pos = atomic_load_explicit(&pf->head, memory_order_relaxed);
	struct pf_cell *c;
	for (;;) {
		c = &pf->q[pos % PF_QLEN];
		uint32_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		int32_t dif = (int32_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&pf->head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (dif < 0) {
			return false; /* full */
		} else {
			pos = atomic_load_explicit(&pf->head, memory_order_relaxed);
		}
	}
	atomic_store_explicit(&c->id, id, memory_order_relaxed);
	atomic_store_explicit(&c->n, n, memory_order_relaxed);
	atomic_store(&c->seq, pos + 1); /* seq_cst: against the sleeper's check */
	if (atomic_load(&pf->sleeping)) {
		atomic_fetch_add(&pf->wake, 1);
		bp_futex_wake(&pf->wake, 1, false);
	}
	return true;
}

static bool pf_ready(struct bp_pf *pf)
{
	uint32_t seq = atomic_load(&pf->q[pf->tail % PF_QLEN].seq);
	return (int32_t)(seq - (pf->tail + 1)) >= 0;
}

static bool pf_pop(struct bp_pf *pf, uint32_t *id, uint32_t *n)
{
	struct pf_cell *c = &pf->q[pf->tail % PF_QLEN];
	if (!pf_ready(pf))
		return false; /* empty, or a producer is between its two steps */
	*id = atomic_load_explicit(&c->id, memory_order_relaxed);
	*n = atomic_load_explicit(&c->n, memory_order_relaxed);
	atomic_store_explicit(&c->seq, pf->tail + PF_QLEN, memory_order_release);
	pf->tail++;
	return true;
}

/* ------------------------------------------------------------ the thread */

/* Lock page id for a prefetch: swapped, unlocked, in a live region. */
static bool pf_lock(struct bypass_pager *p, uint32_t id)
{
	struct pg *pg = pg_of(p, id);
	uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
	if (pg_state(w) != PS_SWAPPED || (w & PW_LOCK) || !bp_pg_trylock(pg))
		return false;
	if (pg_state(atomic_load(&pg->w)) == PS_SWAPPED && pg->slot)
		return true;
	bp_pg_unlock(pg);
	return false;
}

static void pf_unlock_run(struct bypass_pager *p, uint32_t id0, uint32_t k)
{
	for (uint32_t j = 0; j < k; j++)
		bp_pg_unlock(pg_of(p, id0 + j));
}

/*
 * Write mode: install a run writable and dirty, but for its probes?  Only
 * in an ascending stream.  Entering: at least 8 prefetched pages the stream
 * has passed (those installed clean, less the ones still ahead of it) and
 * write-protect faults on at least 3/4 as many prefetched pages (counted
 * since the region's stream began, halved beyond PF_WMODE_DECAY).  Leaving:
 * the stream passed the last probe installed and did not write it.  The
 * probes: every page whose id is PF_PROBE - 1 modulo PF_PROBE stays clean,
 * so that a stream that stops writing is seen within that many pages.  Only
 * the prefetch thread decides; the fault path only counts (hints).
 */
#define PF_WMODE_DECAY 256u
#define PF_PROBE 16u

static bool pf_write_mode(struct bypass_pager *p, struct region *r)
{
	if (atomic_load_explicit(&r->pf_stride, memory_order_relaxed) != 1)
		return false;
	bool wmode = atomic_load_explicit(&r->pf_wmode, memory_order_relaxed);
	uint32_t last = atomic_load_explicit(&r->pf_last, memory_order_relaxed);
	if (wmode) {
		uint32_t probe = atomic_load_explicit(&r->pf_probe, memory_order_relaxed);
		if (probe && last >= probe && region_has_id(r, probe - 1)) {
			uint32_t w = atomic_load_explicit(&pg_of(p, probe - 1)->w,
							  memory_order_relaxed);
			if (pg_state(w) == PS_RESIDENT && (w & PW_WP)) {
				wmode = false; /* passed and not written */
				atomic_store_explicit(&r->pf_clean, 0, memory_order_relaxed);
				atomic_store_explicit(&r->pf_wp, 0, memory_order_relaxed);
			}
		}
	} else {
		uint32_t clean = atomic_load_explicit(&r->pf_clean, memory_order_relaxed);
		uint32_t wp = atomic_load_explicit(&r->pf_wp, memory_order_relaxed);
		uint32_t next = atomic_load_explicit(&r->pf_next, memory_order_relaxed);
		uint32_t ahead = next > last ? next - last : 0;
		uint32_t passed = clean > ahead ? clean - ahead : 0;
		wmode = passed >= 8 && 4 * (uint64_t)wp >= 3 * (uint64_t)passed;
	}
	atomic_store_explicit(&r->pf_wmode, wmode, memory_order_relaxed);
	return wmode;
}

/* Pages of a run installed clean: the evidence for pf_write_mode(). */
static void pf_note_clean(struct region *r, uint32_t n)
{
	uint32_t clean = atomic_fetch_add_explicit(&r->pf_clean, n, memory_order_relaxed) + n;
	if (clean > PF_WMODE_DECAY) {
		atomic_store_explicit(&r->pf_clean, clean / 2, memory_order_relaxed);
		atomic_store_explicit(&r->pf_wp,
				      atomic_load_explicit(&r->pf_wp, memory_order_relaxed) / 2,
				      memory_order_relaxed);
	}
}

static bool pf_is_probe(uint32_t id)
{
	return id % PF_PROBE == PF_PROBE - 1;
}

/* A read finished: install its pages, or give them up. */
static void pf_complete(struct bypass_pager *p, struct pf_read *rd, int res)
{
	struct region *r = rd->r;
	bool ok = res == (int)(rd->k * PG_SIZE);
	bool entered = false;
	bool wmode = ok && pf_write_mode(p, r);
	if (ok && r->adaptive) {
		/* without waiting: a switch waits for the faults in
		 * flight, which may wait for these pages */
		entered = bp_engine_enter_nowait(r);
		ok = entered;
	}
	/* installed write-protected; in write mode all but the probes are
	 * then unprotected (mapped dirty: written, most likely), a range at
	 * a time; a range that cannot be stays clean (a write faults: wp) */
	uint32_t nw = 0;
	if (ok && bp_install(p, &(struct bp_install){ .r = r, .src = rd->buf, .id0 = rd->id0,
						     .k = rd->k, .nw = wmode ? rd->k : 0,
						     .probe = PF_PROBE,
						     .from = BP_INSTALL_PREFETCH, .wake = true },
			     NULL, &nw) != 0)
		ok = false;
	if (entered)
		bp_engine_leave(r);
	if (!ok) {
		if (res < 0)
			bp_debug("bypass: pager: prefetch read of %u pages: %s", rd->k,
				 strerror(-res));
		pf_unlock_run(p, rd->id0, rd->k);
		bp_pager_unreserve(p, rd->k);
	} else {
		uint32_t probe = 0; /* the last probe of the run, + 1 */
		for (uint32_t j = 0; wmode && j < rd->k; j++)
			if (pf_is_probe(rd->id0 + j))
				probe = rd->id0 + j + 1;
		pf_unlock_run(p, rd->id0, rd->k);
		if (probe)
			atomic_store_explicit(&r->pf_probe, probe, memory_order_relaxed);
		pf_note_clean(r, rd->k - nw);
	}
	bp_tab_leave(rd->tab);
}

/*
 * The compressed tier: the pages of the run (our own slots only) whose
 * copy is in the pool, decompressed into rd->buf, over what the file had
 * (a pool-only copy is the only right one: tier.h).  The run's pages are
 * locked: their entries stay.  Returns how many, or -EIO.
 */
static int pf_from_pool(struct bypass_pager *p, struct pf_read *rd)
{
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	if (!t || slot_level(rd->slot1) != p->lin.depth)
		return 0;
	uint32_t s0 = slot_index(rd->slot1);
	int n = 0;
	for (uint32_t i = 0; i < rd->k; i++) {
		int got = bp_tier_load(t, s0 + i, rd->buf + (size_t)i * PG_SIZE);
		if (got < 0)
			return got;
		n += got;
	}
	return n;
}

static void pf_count_pool(struct bypass_pager *p, int n)
{
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	if (t && n > 0)
		bp_tier_count_reads(t, (uint32_t)n, 0);
}

static void pf_reap_one(struct bypass_pager *p, struct bp_pf *pf)
{
	struct io_uring_cqe *cqe;
	int e;
	do
		e = io_uring_wait_cqe(&pf->ring, &cqe);
	while (e == -EINTR);
	if (e) {
		bp_err("bypass: pager: prefetch: io_uring_wait_cqe: %s", strerror(-e));
		return;
	}
	uint32_t i = (uint32_t)cqe->user_data;
	int res = cqe->res;
	io_uring_cqe_seen(&pf->ring, cqe);
	if (pf->rd[i].pool && res == (int)(pf->rd[i].k * PG_SIZE)) {
		int got = pf_from_pool(p, &pf->rd[i]);
		if (got < 0)
			res = got;
		pf_count_pool(p, got);
	}
	pf_complete(p, &pf->rd[i], res);
	pf->rd_busy[i] = false;
	if (!--pf->inflight && pf->gated) {
		bp_gate_leave(p);
		pf->gated = false;
	}
}

/*
 * Start one read from the current request: the next run of swapped pages
 * with consecutive slots, locked, with room reserved.  Each read holds a
 * region-table read section of its own until it is installed, so that its
 * region cannot go away meanwhile and an unmap waits for one read at most.
 * Returns false when the request is done (or there is no room: the rest
 * of it is dropped; the next fault of the stream asks again).
 */
static bool pf_start_read_in(struct bypass_pager *p, struct bp_pf *pf)
{
	while (pf->cur < pf->end) {
		unsigned ti = bp_tab_enter();
		struct regtab *t = bp_tab_get();
		uint32_t cur = pf->cur;
		struct region *r = t ? bp_tab_find_id(t, p, cur) : NULL;
		if (!r || !pf_lock(p, cur)) {
			bp_tab_leave(ti);
			pf->cur++;
			continue;
		}
		uint32_t slot1 = pg_of(p, cur)->slot, k = 1;
		/* no longer than bp_pager_reserve_prefetch() makes room for at
		 * the high watermark (high - low): a longer run was refused
		 * there and the rest of the request dropped */
		uint32_t maxrun = p->cfg.high - p->cfg.low < PF_RUN ? p->cfg.high - p->cfg.low : PF_RUN;
		while (k < maxrun && cur + k < pf->end && region_has_id(r, cur + k) &&
		       pf_lock(p, cur + k)) {
			if (pg_of(p, cur + k)->slot != slot1 + k) {
				bp_pg_unlock(pg_of(p, cur + k));
				break;
			}
			k++;
		}
		if (bp_pager_reserve_prefetch(p, k)) {
			pf_unlock_run(p, cur, k);
			bp_tab_leave(ti);
			pf->cur = pf->end;
			return false;
		}
		uint32_t i = 0;
		while (pf->rd_busy[i])
			i++;
		struct pf_read *rd = &pf->rd[i];
		*rd = (struct pf_read){ .id0 = cur, .k = k, .r = r, .tab = ti, .buf = rd->buf,
					.slot1 = slot1 };
		if (pf->used[i] < k)
			pf->used[i] = k;
		/* all of the run in the compressed pool: no read */
		int pool = pf_from_pool(p, rd);
		if (pool < 0 || pool == (int)k) {
			pf_count_pool(p, pool);
			pf->cur += k;
			pf_complete(p, rd, pool < 0 ? pool : (int)(k * PG_SIZE));
			return true;
		}
		rd->pool = pool > 0; /* read, then the pool's pages over it */
		struct io_uring_sqe *sqe = io_uring_get_sqe(&pf->ring);
		if (!sqe) {
			io_uring_submit(&pf->ring);
			sqe = io_uring_get_sqe(&pf->ring);
		}
		io_uring_prep_read(sqe, bp_share_fd(p, slot1), rd->buf, k * (unsigned)PG_SIZE,
				   (uint64_t)slot_index(slot1) * PG_SIZE);
		io_uring_sqe_set_data64(sqe, i);
		pf->rd_busy[i] = true;
		pf->inflight++;
		pf->cur += k;
		return true;
	}
	return false;
}

/* pf_start_read_in() inside the fork's gate (share.c) for as long as reads
 * are in flight: a fork waits for them; while one is prepared, requests
 * are dropped (the next fault of a stream asks again). */
static bool pf_start_read(struct bypass_pager *p, struct bp_pf *pf)
{
	if (!pf->gated) {
		if (!bp_gate_tryenter(p)) {
			pf->cur = pf->end;
			return false;
		}
		pf->gated = true;
	}
	bool started = pf_start_read_in(p, pf);
	if (!pf->inflight) {
		bp_gate_leave(p);
		pf->gated = false;
	}
	return started;
}

/*
 * The read buffers follow the budget: the pages of a read in flight are
 * counted in it (bp_pager_reserve_prefetch), but what a burst of reads
 * left in the buffers is a copy outside it (0.8 MiB of SQLite's 28 MiB
 * peak at a 16 MiB budget, window 7).  So when the thread goes to sleep
 * (nothing in flight) it gives back, with one madvise, all but
 * 1/PF_KEEP_SHARE of the budget of them: reads take the lowest free
 * buffer, so the buffers kept are the first ones, which the next burst
 * reuses without a fault; a burst that needs more zero-fills them again.
 */
static void pf_trim(struct bypass_pager *p, struct bp_pf *pf)
{
	uint32_t keep = p->cfg.budget / PF_KEEP_SHARE, sum = 0;
	char *lo = NULL, *hi = NULL;
	for (uint32_t i = 0; i < PF_QD; i++) {
		uint32_t k = keep > sum ? keep - sum : 0; /* of this buffer */
		if (pf->used[i] <= k) {
			sum += pf->used[i];
			continue;
		}
		if (!lo)
			lo = pf->rd[i].buf + (size_t)k * PG_SIZE;
		hi = pf->rd[i].buf + (size_t)pf->used[i] * PG_SIZE;
		sum += k;
		pf->used[i] = k;
	}
	if (lo)
		bp_sys_madvise(lo, (size_t)(hi - lo), MADV_DONTNEED);
}

/*
 * The thread: keep up to PF_QD reads in flight, taking requests from the
 * queue as the current one runs out; sleep when there is nothing to read.
 */
static void *pf_main(void *arg)
{
	bp_enter_for_good(); /* the library's own thread */
	struct bp_pf *pf = arg; /* not p->pf: bp_pf_stop() clears that first */
	struct bypass_pager *p = pf->p;
	while (!atomic_load(&pf->stop)) {
		bool started = false;
		while (pf->inflight < PF_QD) {
			if (pf->cur >= pf->end) {
				uint32_t id, n;
				if (!pf_pop(pf, &id, &n))
					break;
				pf->cur = id;
				pf->end = id + (n > PG_MAX_PF ? PG_MAX_PF : n);
				if (pf->end < id)
					pf->end = UINT32_MAX;
			}
			started |= pf_start_read(p, pf);
		}
		if (started)
			io_uring_submit(&pf->ring);
		if (pf->inflight) {
			pf_reap_one(p, pf);
			continue;
		}
		if (!pf_ready(pf))
			pf_trim(p, pf);
		uint32_t seen = atomic_load(&pf->wake);
		atomic_store(&pf->sleeping, 1);
		if (!pf_ready(pf) && !atomic_load(&pf->stop)) {
			atomic_store(&pf->idle_tail, pf->tail + 1);
			bp_futex_wait(&pf->wake, seen, 100000000, false);
			atomic_store(&pf->idle_tail, 0);
		}
		atomic_store(&pf->sleeping, 0);
	}
	while (pf->inflight)
		pf_reap_one(p, pf);
	return NULL;
}

int bp_pf_start(struct bypass_pager *p)
{
	if (atomic_load(&p->pf))
		return 0;
	struct bp_pf *pf = bp_pg_calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	for (uint32_t i = 0; i < PF_QLEN; i++)
		atomic_init(&pf->q[i].seq, i);
	size_t blen = (size_t)PF_QD * PF_RUN * PG_SIZE;
	pf->bufs = bp_sys_mmap(NULL, blen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pf->bufs == MAP_FAILED) {
		bp_pg_free(pf);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < PF_QD; i++)
		pf->rd[i].buf = pf->bufs + (size_t)i * PF_RUN * PG_SIZE;
	int e = bp_uring_init(2 * PF_QD, &pf->ring, NULL);
	if (e < 0) {
		bp_err("bypass: pager: prefetch io_uring_queue_init: %s", strerror(-e));
		bp_sys_munmap(pf->bufs, blen);
		bp_pg_free(pf);
		return e;
	}
	pf->p = p;
	e = bp_thread_start(&pf->thread, pf_main, pf);
	if (e) {
		/* never published: no fault can be pushing into it */
		bp_uring_exit(&pf->ring);
		bp_sys_munmap(pf->bufs, blen);
		bp_pg_free(pf);
		return e;
	}
	/* published only now: a fault that pushes into it (bp_pf_push, no
	 * lock) must never see one that a failed start frees */
	atomic_store(&p->pf, pf);
	bp_debug("bypass: pager: prefetch thread started");
	return 0;
}

void bp_pf_stop(struct bypass_pager *p)
{
	struct bp_pf *pf = atomic_exchange(&p->pf, NULL);
	if (!pf)
		return;
	atomic_store(&pf->stop, true);
	atomic_fetch_add(&pf->wake, 1);
	bp_futex_wake(&pf->wake, 1, false);
	bp_thread_join(&pf->thread);
	bp_uring_exit(&pf->ring);
	bp_sys_munmap(pf->bufs, (size_t)PF_QD * PF_RUN * PG_SIZE);
	bp_pg_free(pf);
}

void bp_pf_forget(struct bypass_pager *p)
{
	struct bp_pf *pf = atomic_exchange(&p->pf, NULL);
	if (!pf)
		return;
	/* the child's copies: the ring's descriptor and mappings, the read
	 * buffers (the thread and its reads are the parent's: only its stack
	 * is here) */
	bp_thread_forget(&pf->thread);
	bp_uring_exit(&pf->ring);
	bp_sys_munmap(pf->bufs, (size_t)PF_QD * PF_RUN * PG_SIZE);
	bp_pg_free(pf);
}

/* ------------------------------------------------------------ streams */

/*
 * The window's rule, additive increase and multiplicative decrease of a
 * ceiling per region (its stream): while none of the pages the region's
 * streams prefetched were evicted unused, a stream's window doubles at each
 * fault that continues the stream (bp_pf_stream: but for writes to its
 * prefetched pages inside the window), up to the ceiling, and the ceiling
 * grows by PF_WIN0 pages at each such fault once the window is at it; when
 * some were lost, the ceiling and the window become half the window.  A window larger than
 * what survives the eviction rate reads pages that are evicted before the
 * stream reaches them (or after the stream moved elsewhere), and reads them
 * again when it does; a sequential scan whose pages all survive stays at
 * maxw.  (Linux's readahead grows its window when the stream reaches the
 * page it marked in the previous window, and starts small again when that
 * page was evicted first.)
 */
uint32_t bp_pf_window(uint32_t w, uint32_t *ceil, uint32_t lost, uint32_t maxw)
{
	uint32_t c = *ceil && *ceil < maxw ? *ceil : maxw;
	if (lost) {
		c = (w < c ? w : c) / 2;
		if (c < PF_WIN0)
			c = PF_WIN0;
		w = c;
	} else if (w < c) {
		w = 2 * w < c ? 2 * w : c;
	} else {
		c = c + PF_WIN0 < maxw ? c + PF_WIN0 : maxw;
		w = c;
	}
	if (c > maxw) /* a small budget */
		c = maxw;
	*ceil = c;
	return w < c ? w : c;
}

/* Victims about to be evicted (the evict lock held): those prefetched and
 * never seen used count against their region's stream (r->pf_lost).  The
 * region table is entered only once such a victim is found: most rounds
 * have none. */
void bp_pf_note_victims(struct bypass_pager *p, const uint32_t *ids, uint32_t n)
{
	uint32_t i = 0;
	while (i < n && !(atomic_load_explicit(&pg_of(p, ids[i])->w, memory_order_relaxed) & PW_PF))
		i++;
	if (i == n)
		return;
	unsigned ti = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	struct region *r = NULL;
	for (; t && i < n; i++) {
		uint32_t id = ids[i];
		if (!(atomic_load_explicit(&pg_of(p, id)->w, memory_order_relaxed) & PW_PF))
			continue;
		if (!r || !region_has_id(r, id))
			r = bp_tab_find_id(t, p, id);
		if (r)
			atomic_fetch_add_explicit(&r->pf_lost, 1, memory_order_relaxed);
	}
	bp_tab_leave(ti);
}

/* The pages the stream passed ([a, b)) that were prefetched: used. */
static void pf_passed(struct bypass_pager *p, uint32_t a, uint32_t b)
{
	if (b - a > PG_MAX_PF)
		a = b - PG_MAX_PF;
	for (uint32_t id = a; id < b; id++) {
		struct pg *pg = pg_of(p, id);
		if (atomic_load_explicit(&pg->w, memory_order_relaxed) & PW_PF)
			bp_pf_mark_used(p, pg);
	}
}

void bp_pf_stream(struct bypass_pager *p, struct region *r, uint32_t id, uint32_t mapped,
		  bool seq, bool wrote)
{
	uint32_t L = atomic_load_explicit(&r->pf_last, memory_order_relaxed);
	uint32_t N = atomic_load_explicit(&r->pf_next, memory_order_relaxed);
	int32_t S = atomic_load_explicit(&r->pf_stride, memory_order_relaxed);
	int32_t cand = atomic_load_explicit(&r->pf_cand, memory_order_relaxed);
	uint32_t W = atomic_load_explicit(&r->pf_win, memory_order_relaxed);
	uint32_t maxw = bp_pf_max(p);
	uint32_t first = r->id0, last = region_id(r, r->end - PG_SIZE);
	int32_t d = (int32_t)(id - L);
	bool cont = false, front = false;
	/* prefetched pages of the region evicted unused since its last fault
	 * (read without a second atomic when there are none: the fast path) */
	uint32_t lost = atomic_load_explicit(&r->pf_lost, memory_order_relaxed);
	if (lost)
		lost = atomic_exchange_explicit(&r->pf_lost, 0, memory_order_relaxed);
	uint32_t ceil = atomic_load_explicit(&r->pf_ceil, memory_order_relaxed);
	if (S && d && d % S == 0) {
		int32_t q = d / S, qn = (int32_t)(N - L) / S;
		cont = q >= 1 && q <= qn;
		front = q == qn; /* at the first page not asked for yet */
	}
	if (cont) {
		/* a write stream takes a write-protect fault on each page of
		 * its window that the prefetcher installed clean: inside the
		 * window that is a use, not the stream moving on, and the
		 * window keeps its size until the stream reaches its front
		 * (before, each such write doubled it) */
		if (front || !wrote || lost)
			W = bp_pf_window(W, &ceil, lost, maxw);
		if (S == 1)
			pf_passed(p, L, id);
		else if (S == -1)
			pf_passed(p, id + 1, L + 1);
		/* pages it had asked for were evicted: ask again from here
		 * (those still resident are skipped by the thread) */
		if (lost && S == 1 && N > id + mapped)
			N = id + mapped;
		else if (lost && S == -1 && N + 1 < id)
			N = id - 1;
	} else if (seq || (d > 0 && id == N)) {
		S = 1; /* ascending: right after what the last fault mapped */
		W = PF_WIN0;
		N = id;
	} else if (d == -1) {
		S = -1;
		W = PF_WIN0;
		N = id - 1;
	} else if (d && d == cand && d >= -PF_MAX_STRIDE && d <= PF_MAX_STRIDE) {
		S = d;
		W = PF_WIN0;
		N = id;
	} else {
		S = 0;
	}
	if (W < PF_WIN0)
		W = PF_WIN0;
	if (W > maxw) /* a small budget */
		W = maxw;
	if (!cont && lost) /* the last stream's loss: the region's ceiling */
		bp_pf_window(atomic_load_explicit(&r->pf_win, memory_order_relaxed), &ceil, lost,
			     maxw);
	if (ceil != atomic_load_explicit(&r->pf_ceil, memory_order_relaxed))
		atomic_store_explicit(&r->pf_ceil, ceil, memory_order_relaxed);
	atomic_store_explicit(&r->pf_cand, d, memory_order_relaxed);
	atomic_store_explicit(&r->pf_last, id, memory_order_relaxed);
	if (!S) {
		/* no stream: an ascending one may start right after this */
		atomic_store_explicit(&r->pf_stride, 0, memory_order_relaxed);
		atomic_store_explicit(&r->pf_next, id + mapped, memory_order_relaxed);
		return;
	}
	if (S == 1) {
		/* up to W pages beyond what this fault mapped */
		uint32_t from = id + mapped > N ? id + mapped : N;
		uint64_t to64 = (uint64_t)id + mapped + W;
		uint32_t to = to64 > (uint64_t)last + 1 ? last + 1 : (uint32_t)to64;
		if (to > from && bp_pf_push(p, from, to - from))
			N = to;
		else if (to > from)
			N = from;
	} else if (S == -1) {
		/* N is the highest page not asked for yet (below the fault;
		 * UINT32_MAX once page 0 is asked for) */
		uint32_t to = N + 1 < id ? N + 1 : id;
		uint32_t from = id - first < W ? first : id - W;
		if (to > from && bp_pf_push(p, from, to - from))
			N = from - 1;
		else if (to > from)
			N = to - 1;
	} else {
		uint32_t steps = W < PF_STRIDE_STEPS ? W : PF_STRIDE_STEPS;
		int64_t pos = (int64_t)id + S;
		int64_t n = (int64_t)N;
		/* continue beyond what was asked already */
		if ((S > 0 && n > pos) || (S < 0 && n < pos))
			pos = n;
		for (uint32_t k = 0; k < steps; k++, pos += S) {
			if (pos < first || pos > last || !bp_pf_push(p, (uint32_t)pos, 1))
				break;
		}
		N = (uint32_t)pos;
	}
	atomic_store_explicit(&r->pf_stride, S, memory_order_relaxed);
	atomic_store_explicit(&r->pf_next, N, memory_order_relaxed);
	atomic_store_explicit(&r->pf_win, W, memory_order_relaxed);
}
