/* SPDX-License-Identifier: MIT */
/*
 * Serving page faults: in the faulting thread's SIGBUS handler (upcall
 * mode, through core's fault dispatcher) or in a handler thread reading the
 * userfaultfd (handler mode).  Both end in bp_pager_serve().
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/share.h"
#include "pager/fault.h"
#include "pager/engine.h"
#include "pager/read.h"
#include "pager/evict.h"
#include "pager/lru.h"
#include "pager/sample.h"
#include "pager/uffd.h"
#include "pager/install.h"
#include "pager/policy.h"
#include "core/syscall.h"
#include "pager/heat.h" /* access heat: bp_heat_fault() */

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>


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
 * as it grows, so it follows the program; in write mode every SW_PROBE-th
 * page (by id) is still mapped clean, so that the evidence goes on and the
 * mode ends when the program stops writing (within about SW_DECAY / 3
 * probes).
 */
#define SW_PROBE 16u /* one page in this many stays clean in write mode */
#define SW_MIN 16u   /* pages mapped clean before the mode may start */
#define SW_DECAY 64u /* the evidence halved past this */

static bool sw_probe(uint32_t id)
{
	return id % SW_PROBE == SW_PROBE - 1;
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
	if (k == 1 && !nw && !sw_probe(id) && sw_write_mode(r))
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

/* ------------------------------------------------------------ upcall */

static bool fault_is_write(void *uc)
{
#if defined(__x86_64__)
	/* The page-fault error code: bit 1 is set for a write. */
	const ucontext_t *u = uc;
	return (u->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
	(void)uc;
	return true; /* treat it as a write: correct, only less economical */
#endif
}

static int pager_hook(int sig, siginfo_t *si, void *uc)
{
	/* userfaultfd in SIGBUS mode raises BUS_ADRERR at the address; an
	 * adaptive region being switched between engines is PROT_NONE for a
	 * moment (SEGV_ACCERR). */
	bool bus = sig == SIGBUS && si->si_code == BUS_ADRERR;
	bool segv = sig == SIGSEGV && si->si_code == SEGV_ACCERR;
	if ((!bus && !segv) || !bp_tab_get())
		return 0;
	unsigned idx = bp_tab_enter();
	uintptr_t a = (uintptr_t)si->si_addr;
	struct region *r = bp_tab_find(bp_tab_get(), a);
	int handled = 0;
	unsigned frame = 0;
	bool framed = r && bus;
	if (framed) /* a fault of this thread: a lock frame (rank.c) */
		frame = bp_rank_frame_enter();
	/* After fork the child forgets the table (fork.c: its regions are
	 * ordinary memory there); a region of another generation is never
	 * served, its userfaultfd would act on the parent's memory. */
	if (!r || r->gen != bp_fork_gen_fast()) {
		/* not ours */
	} else if (segv) {
		handled = r->adaptive && bp_engine_segv(r, a);
	} else if (!atomic_load_explicit(&r->handler, memory_order_relaxed)) {
		bp_gate_enter(r->pager); /* a fork being prepared: after it */
		int e = bp_pager_serve(r, a, fault_is_write(uc), false);
		bp_gate_leave(r->pager);
		if (!e || e == -EAGAIN)
			handled = 1;
		else
			bp_err("bypass: pager: cannot serve the fault at %#lx: %s",
			       (unsigned long)a, strerror(-e));
	} else if (r->adaptive) {
		/* raised before the region moved to the pool: retry there */
		handled = 1;
	}
	if (framed)
		bp_rank_frame_leave(frame);
	bp_tab_leave(idx);
	return handled;
}

int bp_pager_hook_install(void)
{
	return bp_fault_hook_add(pager_hook);
}

/* ------------------------------------------------------------ handler */

/*
 * Faults that arrived while a fork was being prepared, kept by the handler
 * thread that read them until the gate opens: a handler thread waiting at
 * the gate would read no more messages, and the forking thread's own
 * faults (after the pager's prepare handler) would never be served: with
 * one handler thread, a fork while another thread faults hung.  A thread
 * has at most one fault waiting, so a full list (that many threads
 * faulting at once during one fork) is not expected; it waits at the gate.
 */
#define DEFER_MAX 128

struct hdefer {
	unsigned n;
	int uffd[DEFER_MAX];
	struct uffd_msg m[DEFER_MAX];
};

static void handle_msg(struct bypass_pager *p, int uffd, const struct uffd_msg *m,
		       struct hdefer *d)
{
	if (m->event != UFFD_EVENT_PAGEFAULT)
		return;
	uintptr_t a = (uintptr_t)m->arg.pagefault.address;
	bool write = m->arg.pagefault.flags &
		     (UFFD_PAGEFAULT_FLAG_WRITE | UFFD_PAGEFAULT_FLAG_WP);
	unsigned idx = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), a);
	uintptr_t pa = a & ~(uintptr_t)(PG_SIZE - 1);
	if (r && r->pager == p && atomic_load(&r->handler) && atomic_load(&r->uffd) == uffd) {
		/* who faulted (with UFFD_FEATURE_THREAD_ID; else 0, counted
		 * as this thread) */
		pid_t tid = (pid_t)m->arg.pagefault.feat.ptid;
		bp_serving_tid = tid;
		int e;
		if (bp_gate_owned_by(p, tid)) {
			/* The forking thread, after the pager's prepare
			 * handler (glibc's fork touches the program's heap
			 * then): nobody else is inside the gate, and the
			 * thread waits in the kernel until woken, so it is
			 * served through the closed gate, room taken without
			 * evicting (its evict lock), and woken only once all
			 * is done: the fork then finds no page lock held.
			 * The policy hears nothing of it. */
			e = serve(r, a, write, false, false);
			if (!e)
				e = bp_uffd_wake(uffd, pa, PG_SIZE);
		} else {
			bool in = bp_gate_tryenter(p);
			if (!in && d->n < DEFER_MAX) {
				/* a fork being prepared: after it (handler_main) */
				d->uffd[d->n] = uffd;
				d->m[d->n++] = *m;
				bp_serving_tid = 0;
				bp_tab_leave(idx);
				return;
			}
			if (!in)
				bp_gate_enter(p);
			e = bp_pager_serve(r, a, write, true);
			bp_gate_leave(p);
		}
		bp_serving_tid = 0;
		if (e == -EAGAIN) { /* switched meanwhile: the thread faults again */
			bp_uffd_wake(uffd, pa, PG_SIZE);
		} else if (e) {
			/* The thread cannot be given its data: make its
			 * access fail (SIGBUS) rather than hang. */
			bp_err("bypass: pager: cannot serve the fault at %#lx: %s",
			       (unsigned long)a, strerror(-e));
			if (bp_uffd_poison(uffd, pa, PG_SIZE) != 0)
				bp_uffd_wake(uffd, pa, PG_SIZE);
		}
	} else {
		bp_uffd_wake(uffd, pa, PG_SIZE);
	}
	bp_tab_leave(idx);
}

static __thread bool in_handler __attribute__((tls_model("initial-exec")));

bool bp_pager_in_handler_thread(void)
{
	return in_handler;
}

/* Read and serve what one userfaultfd has; returns messages served. */
static size_t drain_uffd(struct bypass_pager *p, int uffd, bool *broken, struct hdefer *d)
{
	struct uffd_msg msgs[16];
	size_t total = 0;
	for (;;) {
		ssize_t n = bp_sys_read(uffd, msgs, sizeof(msgs));
		if (n > 0) {
			for (size_t i = 0; i < (size_t)n / sizeof(msgs[0]); i++)
				handle_msg(p, uffd, &msgs[i], d);
			total += (size_t)n / sizeof(msgs[0]);
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			bp_err("bypass: pager: reading the userfaultfd: %s", strerror(errno));
			*broken = true;
		}
		return total;
	}
}

/*
 * Where a handler thread sleeps: its own epoll instance, with the
 * userfaultfds added EPOLLEXCLUSIVE.  A userfaultfd wakes every poll()
 * waiter on its queue at each fault, so with a pool of 16 threads every
 * fault woke 16 threads, 15 of which found nothing and read the
 * userfaultfd again under the lock the faulting threads queue on (the pool
 * ran at 1/3 of one handler thread's rate on a 16-core Xeon).  Exclusive
 * entries wake one thread that is waiting; a thread that is busy serving
 * finds the message when it reads again.  stop_fd is not exclusive: it
 * wakes every thread.  fds[] are the userfaultfds added so far (uffd_pool
 * may open after the thread starts).
 */
struct hwait {
	int ep;     /* epoll descriptor, or -1: poll() instead */
	int fds[2]; /* userfaultfds in ep */
};

static void hwait_init(struct bypass_pager *p, struct hwait *w)
{
	w->fds[0] = w->fds[1] = -1;
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	if (w->ep < 0)
		return;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p->srv.stop_fd };
	if (bp_sys_epoll_ctl(w->ep, EPOLL_CTL_ADD, p->srv.stop_fd, &ev) < 0) {
		bp_sys_close(w->ep);
		w->ep = -1;
	}
}

/* Sleep until one of fds[] (or stop_fd) is readable, or for ms
 * milliseconds (-1: no limit); false: stop. */
static bool hwait_sleep(struct bypass_pager *p, struct hwait *w, const int fds[2], int ms)
{
	for (int i = 0; i < 2 && w->ep >= 0; i++) {
		if (fds[i] < 0 || fds[i] == w->fds[i])
			continue;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = fds[i] };
		if (bp_sys_epoll_ctl(w->ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
			bp_sys_close(w->ep); /* poll() from now on */
			w->ep = -1;
			break;
		}
		w->fds[i] = fds[i];
	}
	if (w->ep >= 0) {
		struct epoll_event ev[3];
		int n = bp_sys_epoll_wait(w->ep, ev, 3, ms);
		if (n < 0)
			return errno == EINTR;
		for (int i = 0; i < n; i++)
			if (ev[i].data.fd == p->srv.stop_fd)
				return false;
		return true;
	}
	struct pollfd pf[3];
	nfds_t n = 0;
	pf[n++] = (struct pollfd){ .fd = p->srv.stop_fd, .events = POLLIN };
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			pf[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	if (bp_sys_poll(pf, n, ms) < 0)
		return errno == EINTR;
	return !pf[0].revents;
}

/*
 * A handler thread.  Several may read the same userfaultfds (each message
 * goes to one reader).  After serving, one thread at a time keeps reading
 * for 20 us before it sleeps, so that a burst of faults is served without
 * a wake-up each; a spin that finds nothing turns spinning off for that
 * thread's next 16 batches.  One spinner, not all: every read takes the
 * userfaultfd's queue lock, which the faulting threads need too.
 */
static void *handler_main(void *arg)
{
	bp_enter_for_good(); /* the library's own thread */
	struct bypass_pager *p = arg;
	in_handler = true;
	uint64_t spin_cyc = (uint64_t)(p->cfg.cyc_per_ns_q16 * 20000) >> 16; /* 20 us */
	unsigned no_spin = 0; /* batches to serve without spinning after */
	struct hwait w;
	hwait_init(p, &w);
	struct hdefer d;
	d.n = 0;
	for (;;) {
		int fds[2] = { p->srv.uffd_thread, atomic_load(&p->eng.uffd_pool) };
		bool broken = false;
		size_t got = 0;
		if (d.n && !bp_gate_closed(p)) { /* the fork is done: serve them */
			unsigned n = d.n;
			d.n = 0; /* kept again, in place, if another fork began */
			for (unsigned i = 0; i < n; i++)
				handle_msg(p, d.uffd[i], &d.m[i], &d);
			got += n;
		}
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				got += drain_uffd(p, fds[i], &broken, &d);
		if (broken)
			break;
		if (got && no_spin) {
			no_spin--;
			continue;
		} else if (got && atomic_fetch_add(&p->srv.spinners, 1) == 0) {
			uint64_t t0 = rdtsc();
			size_t more = 0;
			while (!more && !broken && rdtsc() - t0 < spin_cyc) {
				bp_cpu_relax();
				for (int i = 0; i < 2; i++)
					if (fds[i] >= 0)
						more += drain_uffd(p, fds[i], &broken, &d);
			}
			atomic_fetch_sub(&p->srv.spinners, 1);
			if (broken)
				break;
			/* A spin that found nothing only took the CPU from the
			 * threads that fault (all of it, where they share one):
			 * spin again only after 16 batches. */
			if (!more)
				no_spin = 16;
			continue;
		} else if (got) {
			atomic_fetch_sub(&p->srv.spinners, 1); /* another spins */
			continue;
		}
		/* with faults kept, look at the gate every millisecond */
		if (!hwait_sleep(p, &w, fds, d.n ? 1 : -1))
			break;
	}
	/* stopping: the threads of faults kept fault again (their regions
	 * are being unmapped) */
	for (unsigned i = 0; i < d.n; i++)
		bp_uffd_wake(d.uffd[i], (uintptr_t)d.m[i].arg.pagefault.address & ~(uintptr_t)(PG_SIZE - 1),
			     PG_SIZE);
	if (w.ep >= 0)
		bp_sys_close(w.ep);
	return NULL;
}

int bp_pager_thread_start(struct bypass_pager *p)
{
	if (p->srv.nlive)
		return 0;
	int e = 0;
	unsigned want = p->cfg.nthreads ? p->cfg.nthreads : 1;
	while (p->srv.nlive < want) {
		/* a stack of its own: in a fork child, one from glibc's cache
		 * would touch memory that only these threads can serve */
		e = bp_thread_start(&p->srv.threads[p->srv.nlive], handler_main, p);
		if (e)
			break;
		p->srv.nlive++;
	}
	if (e && !p->srv.nlive)
		return e;
	/*
	 * From now on a thread may block in a fault until a handler thread
	 * serves it, and then runs no task work: write-backs started by
	 * application threads are synchronous (submit_writeback()), and those
	 * already under way finish now, while no handler-served region of
	 * this pager exists that their threads could be blocked on.
	 */
	atomic_store(&p->ev.sync_wb, true);
	if (p->ev.ring_live) {
		bp_plock_lock(&p->ev.lock);
		bp_evict_drain(p);
		bp_plock_unlock(&p->ev.lock);
	}
	return 0;
}

void bp_pager_thread_stop(struct bypass_pager *p)
{
	if (!p->srv.nlive)
		return;
	uint64_t one = 1;
	ssize_t n = bp_sys_write(p->srv.stop_fd, &one, sizeof(one));
	(void)n;
	for (unsigned i = 0; i < p->srv.nlive; i++)
		bp_thread_join(&p->srv.threads[i]);
	p->srv.nlive = 0;
	n = bp_sys_read(p->srv.stop_fd, &one, sizeof(one)); /* reset, for a restart */
}
