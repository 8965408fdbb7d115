/* SPDX-License-Identifier: MIT */
/*
 * The adaptive engine: who serves the faults of an adaptive pager's regions.
 *
 * An upcall (SIGBUS in the faulting thread) is the fastest way to serve a
 * fault while few threads fault, but every signal of a process takes the
 * process's signal lock (to queue it, to deliver it, at sigreturn), so with
 * many threads faulting at once the signals serialize.  A pool of handler
 * threads reading one userfaultfd pays two wake-ups per fault instead, in
 * parallel.  A range can be registered with one userfaultfd only, so a
 * region changes engine by moving from one userfaultfd to the other:
 *
 *   1. mark the region switching (odd switch_seq) and wait until no fault
 *      of it is being served (serves enter through bp_engine_enter());
 *   2. under the evict lock, with write-backs drained, make it PROT_NONE:
 *      from now on an access raises SIGSEGV, whose hook waits for the end
 *      of the switch and retries the access (no access can reach memory
 *      the pager does not track, nor write to a clean page unseen);
 *   3. unregister it from the old userfaultfd (which wakes threads blocked
 *      on it: they fault again into step 2's SIGSEGV), register it with
 *      the new one, and make the write-protection in the page table match
 *      the pager's flags again (unregistering drops it);
 *   4. restore PROT_READ|PROT_WRITE, end the switch, wake the waiters.
 *
 * Nothing is switched while pages are pinned (a system call on a pinned
 * buffer would fail with EFAULT during step 2), and both userfaultfds are
 * user-mode-only: no privilege, and system calls on non-resident pages fail
 * with EFAULT under either engine, as in upcall mode.
 *
 * The decision: a monitor thread per adaptive pager wakes every interval,
 * counts the faults served in it and the distinct threads that faulted, and
 * keeps, per number of faulting threads (1, 2, 3-4, 5-8, 9-16, 17+), the
 * fault rate measured under each engine.  It runs the engine with the higher
 * rate, and tries the other one (2 ms to settle, then 2 ms measured) when
 * threads have faulted steadily for 3 intervals and it has no figure for
 * this number of threads or its figure is old; a trial that loses doubles
 * the time before the next one (up to 32 s).  It tries the pool only when at
 * least POOL_MIN_PAR threads can fault at once (the faulting threads, at
 * most the CPUs the process may run on): signals serialize only when many
 * deliver in parallel.  On 2 CPUs the signal cost stayed flat from 1 to 4
 * threads (7,046-8,372 cycles), the pool lost to the upcall in every
 * first-touch and swap-in row at 1, 2 and 4 threads, and a trial (two
 * switches and an interval on the pool) cost a short run a fifth of its rate
 * (docs/BENCHMARKS.md, pager.latency: adaptive 0.81x the upcall at 4
 * threads).  On the 16-core Xeon of issue 12 one signal cost 4,678 cycles
 * with one thread faulting and 70,904 with 16.
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/fault.h"
#include "pager/engine.h"
#include "pager/setup.h"
#include "pager/evict.h"
#include "pager/uffd.h"
#include "core/syscall.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define INTERVAL_NS 10000000ull  /* 10 ms */
#define TRIAL_NS 2000000ull      /* an interval while an engine is on trial */
#define MIN_FAULTS 100u          /* an interval with fewer decides nothing */
#define PROBE_AGE 100u           /* intervals before a figure is tried again */
#define NBUCKETS 6
#define SWITCH_WAIT_NS 200000000ull /* give up a switch after 200 ms */
#define POOL_MIN_PAR 4u          /* threads faulting in parallel before the pool is tried */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ serving */

static __thread struct {
	uintptr_t addr;   /* the last SIGSEGV retried (bp_engine_segv) */
	uint64_t epoch;   /* ... and switch_epoch then */
	uint32_t tid;
} tls __attribute__((tls_model("initial-exec")));

/*
 * Every switch's start and end, of every region: bp_engine_segv's record
 * of a retried SIGSEGV compares this, never a region's switch_seq.  A
 * region made at a recycled address (a new map, or the pieces an unmap
 * leaves) counts its switch_seq from 0 again, so (address, switch_seq)
 * could match a record left by the old region there: a SIGSEGV raised
 * during a switch of the new one then passed for a real one, and the
 * program died (tests/pager/engine-segv.c; seen as policy-unmap's rare
 * segfault).  This count never repeats.
 */
static _Atomic uint64_t switch_epoch;

static uint32_t my_tid(void)
{
	if (!tls.tid)
		tls.tid = (uint32_t)bp_sys_gettid();
	return tls.tid;
}

/* This thread's serve counter of r (the same one at enter and leave). */
static _Atomic uint32_t *my_slot(struct region *r)
{
	return &r->active[my_tid() % PG_ENG_SLOTS].n;
}

int bp_region_engine_init(struct region *r)
{
	if (!r->adaptive)
		return 0;
	r->active = bp_pg_aligned_alloc(sizeof(struct bp_eng_slot),
				  PG_ENG_SLOTS * sizeof(struct bp_eng_slot));
	if (!r->active)
		return -ENOMEM;
	for (unsigned i = 0; i < PG_ENG_SLOTS; i++)
		atomic_init(&r->active[i].n, 0);
	return 0;
}

void bp_region_free(struct region *r)
{
	if (r) {
		bp_pg_free(r->active);
		bp_pg_free(r);
	}
}

/* Serves of r in flight, any thread (each counter read after the odd
 * switch_seq was stored: a serve that entered before is seen, one that
 * enters after sees the switch and backs out). */
static bool serving(struct region *r)
{
	for (unsigned i = 0; i < PG_ENG_SLOTS; i++)
		if (atomic_load(&r->active[i].n))
			return true;
	return false;
}

bool bp_engine_enter_nowait(struct region *r)
{
	_Atomic uint32_t *a = my_slot(r);
	atomic_fetch_add(a, 1);
	if (!(atomic_load(&r->switch_seq) & 1))
		return true;
	atomic_fetch_sub(a, 1);
	return false;
}

bool bp_engine_enter(struct region *r)
{
	if (bp_engine_enter_nowait(r))
		return true;
	bp_engine_wait(r);
	return false;
}

void bp_engine_leave(struct region *r)
{
	atomic_fetch_sub_explicit(my_slot(r), 1, memory_order_release);
}

void bp_engine_wait(struct region *r)
{
	for (;;) {
		uint32_t s = atomic_load(&r->switch_seq);
		if (!(s & 1))
			return;
		bp_futex_wait(&r->switch_seq, s, -1, false);
	}
}


__thread uint32_t bp_serving_tid __attribute__((tls_model("initial-exec")));

int bp_engine_segv(struct region *r, uintptr_t addr)
{
	uint32_t s = atomic_load(&r->switch_seq);
	if (s & 1) {
		bp_engine_wait(r);
		tls.addr = addr;
		tls.epoch = atomic_load(&switch_epoch);
		return 1;
	}
	/* A SIGSEGV raised during a switch that has ended since: retry once.
	 * The same access failing again with no switch of any region in
	 * between is real. */
	uint64_t e = atomic_load(&switch_epoch);
	if (tls.addr == addr && tls.epoch == e)
		return 0;
	tls.addr = addr;
	tls.epoch = e;
	return 1;
}

/*
 * A small open-addressed set of (interval, thread id): the first fault of a
 * thread in an interval adds it and counts it.  A thread served by the pool
 * is known by the message's thread id, so that both engines count the
 * threads that fault, not those that serve.  Approximate where more than a
 * few dozen threads fault (a full probe sequence counts again).
 */
void bp_engine_note_thread(struct bypass_pager *p, uint32_t tid)
{
	if (!tid)
		tid = my_tid();
	uint64_t e = atomic_load_explicit(&p->eng.epoch, memory_order_relaxed);
	uint64_t key = e << 32 | tid;
	for (unsigned i = 0; i < 4; i++) {
		_Atomic uint64_t *slot = &p->eng.seen[(tid + i) % 64];
		uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
		if (v == key)
			return;
		if ((v >> 32) != e) {
			if (atomic_compare_exchange_strong(slot, &v, key)) {
				atomic_fetch_add_explicit(&p->eng.epoch_threads, 1, memory_order_relaxed);
				return;
			}
			if (v == key)
				return;
		}
	}
	atomic_fetch_add_explicit(&p->eng.epoch_threads, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------ switching */

/* Make the page table's write-protection of r match the pages' PW_WP. */
static int fix_wp(struct bypass_pager *p, struct region *r, int uffd)
{
	int e = bp_uffd_wp(uffd, r->start, r->end - r->start, false, false);
	uint32_t n = (uint32_t)((r->end - r->start) >> PG_SHIFT);
	for (uint32_t i = 0; !e && i < n;) {
		uint32_t w = atomic_load_explicit(&pg_of(p, r->id0 + i)->w, memory_order_relaxed);
		if (!(w & PW_WP)) {
			i++;
			continue;
		}
		uint32_t j = i + 1;
		while (j < n && (atomic_load_explicit(&pg_of(p, r->id0 + j)->w,
						      memory_order_relaxed) & PW_WP))
			j++;
		e = bp_uffd_wp(uffd, region_addr(r, r->id0 + i), (size_t)(j - i) * PG_SIZE, true,
			       false);
		i = j;
	}
	return e;
}

static void switch_end(struct region *r)
{
	atomic_fetch_add(&switch_epoch, 1); /* before: a waiter sees both */
	atomic_fetch_add(&r->switch_seq, 1);
	bp_futex_wake(&r->switch_seq, INT32_MAX, false);
}

/* Move r to the pool (or back to upcalls).  Monitor thread, p->lock held.
 * Returns 0, or -EBUSY (pins, or serves that did not end) and -errno. */
static int region_switch(struct bypass_pager *p, struct region *r, bool to_pool)
{
	int from = atomic_load(&r->uffd);
	int to = to_pool ? atomic_load(&p->eng.uffd_pool) : p->srv.uffd_sigbus;
	if (from == to)
		return 0;
	atomic_fetch_add(&r->switch_seq, 1); /* odd: new serves wait */
	atomic_fetch_add(&switch_epoch, 1);
	uint64_t t0 = now_ns();
	while (serving(r)) {
		if (now_ns() - t0 > SWITCH_WAIT_NS) {
			switch_end(r);
			return -EBUSY;
		}
		sched_yield();
	}
	/* A pin that raced with us sees the odd switch_seq and waits for its
	 * end before it returns (see bypass_pager_pin). */
	if (atomic_load(&p->bud.pinned) || atomic_load(&p->eng.pinning)) {
		switch_end(r);
		return -EBUSY;
	}
	size_t len = r->end - r->start;
	bp_plock_lock(&p->ev.lock);
	bp_evict_drain(p);
	int e = mprotect((void *)r->start, len, PROT_NONE) == 0 ? 0 : -errno;
	if (!e) {
		e = bp_uffd_unregister(from, r->start, len);
		if (!e) {
			e = bp_uffd_register(to, r->start, len);
			if (e) { /* back where it was */
				if (bp_uffd_register(from, r->start, len) != 0)
					bp_err("bypass: pager: cannot register region %#lx "
					       "again: it is no longer paged",
					       (unsigned long)r->start);
				to = from;
			}
			int e2 = fix_wp(p, r, to);
			if (e2)
				bp_err("bypass: pager: write-protecting region %#lx after a "
				       "switch: %s", (unsigned long)r->start, strerror(-e2));
			atomic_store(&r->uffd, to);
			atomic_store(&r->handler, to != p->srv.uffd_sigbus);
		}
		if (mprotect((void *)r->start, len, PROT_READ | PROT_WRITE) < 0)
			bp_err("bypass: pager: mprotect after a switch: %s", strerror(errno));
	}
	bp_plock_unlock(&p->ev.lock);
	switch_end(r);
	if (e)
		bp_err("bypass: pager: moving region %#lx to the %s: %s",
		       (unsigned long)r->start, to_pool ? "handler pool" : "upcall",
		       strerror(-e));
	return e;
}

/* Move every adaptive region of p.  Returns 0 if all moved. */
static int pager_switch(struct bypass_pager *p, bool to_pool)
{
	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	int e = 0;
	/* an engine held by bp_engine_force() moves only to where it is held
	 * (the monitor may have decided before the hold) */
	int force = atomic_load(&p->eng.force);
	if ((force == BP_ENGINE_POOL && !to_pool) || (force == BP_ENGINE_UPCALL && to_pool)) {
		bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
		return -EBUSY;
	}
	if (to_pool && !p->srv.nlive)
		e = bp_pager_thread_start(p);
	/* write-backs from application threads are synchronous while a
	 * thread may be blocked in a fault (see evict.c) */
	if (!e && to_pool)
		atomic_store(&p->ev.sync_wb, true);
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (size_t i = 0; !e && t && i < t->n; i++) {
		struct region *r = t->r[i];
		if (r->pager == p && r->adaptive)
			e = region_switch(p, r, to_pool);
	}
	bp_tab_leave(idx);
	if (!e) {
		atomic_store(&p->eng.pool_now, to_pool);
		stat_add(&ST(p).switches, 1);
	}
	if (!to_pool) { /* back to upcalls: unless regions are still on a pool */
		bool any = p->srv.uffd_thread >= 0;
		idx = bp_tab_enter();
		t = bp_tab_get();
		for (size_t i = 0; t && i < t->n; i++)
			if (t->r[i]->pager == p && atomic_load(&t->r[i]->handler))
				any = true;
		bp_tab_leave(idx);
		atomic_store(&p->ev.sync_wb, any);
	}
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return e;
}

/* ------------------------------------------------------------ the monitor */

static unsigned bucket(uint32_t threads)
{
	unsigned b = 0;
	while (b + 1 < NBUCKETS && threads > (1u << b))
		b++;
	return b; /* 1, 2, 3-4, 5-8, 9-16, 17+ */
}

static void *monitor_main(void *arg)
{
	bp_enter_for_good(); /* the library's own thread */
	struct bypass_pager *p = arg;
	double rate[2][NBUCKETS] = { { 0 } };
	uint64_t when[2][NBUCKETS] = { { 0 } };
	uint32_t age[NBUCKETS]; /* intervals before the other engine is tried again */
	for (int b = 0; b < NBUCKETS; b++)
		age[b] = PROBE_AGE;
	uint64_t tick = 0, last = ST_SUM(p, lat_count), t_last = now_ns();
	unsigned streak = 0, last_b = NBUCKETS;
	bool skip = true;     /* the first interval, and one with a switch */
	uint32_t ncpu = bp_cpus_allowed();
	bool probing = false; /* the current engine is on trial */
	uint64_t iv = INTERVAL_NS;
	while (!atomic_load(&p->eng.mon_stop)) {
		struct timespec ts = { 0, (long)iv };
		bp_sys_nanosleep(&ts, NULL);
		uint64_t now = now_ns(), count = ST_SUM(p, lat_count);
		/* a trial interval with too few faults to decide runs on, up
		 * to a whole interval */
		if (probing && !skip && count - last < MIN_FAULTS && now - t_last < INTERVAL_NS)
			continue;
		tick++;
		uint32_t threads = atomic_exchange(&p->eng.epoch_threads, 0);
		atomic_fetch_add(&p->eng.epoch, 1);
		uint64_t n = count - last;
		double secs = (double)(now - t_last) * 1e-9;
		last = count;
		t_last = now;
		bool pool = atomic_load(&p->eng.pool_now), want = pool;
		int force = atomic_load_explicit(&p->eng.force, memory_order_relaxed);
		if (force == BP_ENGINE_FLIP) {
			want = !pool;
		} else if (force == BP_ENGINE_ADAPTIVE && !skip && n >= MIN_FAULTS) {
			unsigned b = bucket(threads ? threads : 1);
			double r = (double)n / secs;
			rate[pool][b] = rate[pool][b] > 0 ? 0.5 * rate[pool][b] + 0.5 * r : r;
			when[pool][b] = tick;
			streak = b == last_b ? streak + 1 : 1;
			last_b = b;
			bool other = !pool;
			bool known = rate[other][b] > 0 && tick - when[other][b] <= age[b];
			if (probing) {
				/* one interval on trial: keep it only if it served more */
				probing = false;
				if (rate[other][b] > 0 && rate[other][b] >= rate[pool][b]) {
					want = other;
					if (age[b] < 32 * PROBE_AGE)
						age[b] *= 2; /* lost: try it less often */
				} else {
					age[b] = PROBE_AGE;
				}
			} else if (known && rate[other][b] > 1.1 * rate[pool][b]) {
				want = other;
			} else if (!known && streak >= 3 &&
				   (pool || (threads < ncpu ? threads : ncpu) >= POOL_MIN_PAR)) {
				/* faulting steadily, and no recent figure for the
				 * other engine at this many threads: try it (the
				 * pool only where signals can serialize) */
				want = other;
				probing = true;
			}
			bp_debug("bypass: pager: %u threads faulting, %.0f faults/s under the %s "
				 "(other: %.0f)", threads, r, pool ? "pool" : "upcall",
				 rate[other][b]);
		} else if (!skip && n < MIN_FAULTS) {
			streak = 0;
			probing = false;
		}
		skip = false;
		if (want != pool) {
			if (pager_switch(p, want) != 0)
				probing = false;
			skip = true;
			t_last = now_ns();
			last = ST_SUM(p, lat_count);
		}
		/* The engine on trial (the settling interval after the switch,
		 * then the one measured) serves for TRIAL_NS each, not a whole
		 * interval: a trial that loses costs a fifth of what it did. */
		iv = probing ? TRIAL_NS : INTERVAL_NS;
	}
	return NULL;
}

int bp_engine_start(struct bypass_pager *p)
{
	int e = bp_open_pool_uffd(p);
	if (e)
		return e;
	e = bp_thread_start(&p->eng.monitor, monitor_main, p);
	if (!e)
		p->eng.mon_live = true;
	return e;
}

int bp_engine_force(struct bypass_pager *p, int force)
{
	if (!p || p->cfg.mode != BYPASS_PAGER_ADAPTIVE || force < BP_ENGINE_ADAPTIVE ||
	    force > BP_ENGINE_FLIP)
		return -EINVAL;
	if (p->cfg.gen != bp_fork_gen())
		return -ECHILD;
	atomic_store(&p->eng.force, force);
	if (force == BP_ENGINE_POOL || force == BP_ENGINE_UPCALL) {
		int e = pager_switch(p, force == BP_ENGINE_POOL);
		if (e)
			return e;
	}
	bp_info("bypass: pager: adaptive engine %s", force == BP_ENGINE_POOL ? "held on the pool"
		: force == BP_ENGINE_UPCALL ? "held on upcalls"
		: force == BP_ENGINE_FLIP ? "switching every interval" : "measuring");
	return 0;
}

void bp_engine_stop(struct bypass_pager *p)
{
	if (p->eng.mon_live) {
		atomic_store(&p->eng.mon_stop, true);
		bp_thread_join(&p->eng.monitor);
		p->eng.mon_live = false;
	}
}
