/* SPDX-License-Identifier: MIT */
/*
 * Access samples without privilege (issue 20): hint faults in the spirit of
 * the kernel's NUMA-balancing scans.  While a pager evicts, a sampler
 * thread of its own takes, every interval, a few resident pages from the
 * tails of the 2Q inactive lists (the pages eviction would take next) that
 * are not known to be referenced, and parks them: their data is copied
 * into a parking slot of the sampler's and the page is dropped from the
 * page table (MADV_DONTNEED; a dirty page is write-protected first, so no
 * write can slip between the copy and the drop).  The next access to a
 * parked page, a read as much as a write, is a missing fault: the fault
 * path copies the data back (bp_sample_fault, with the page's own
 * write-protection), marks the page referenced and counts a hit.  At the
 * end of the interval the sampler puts back the pages nobody touched.  So
 * 2Q, clock and the policies see reads of resident pages, which faults and
 * write-protection never showed (GNU sort reading its buffers), at the
 * cost of two copies and a fault per hit.
 *
 * The cost is measured: the sampler's own time per parked page, and the
 * time the faults of hits took; the number of pages per interval adapts so
 * that both together stay near a share of one CPU (1%), between 8 and
 * SAMPLE_MAX pages.  A parked page counts as resident (its data is in the
 * parking slot); the evictor passes it (lru.c), a pin brings it back first
 * (pager.c), so does a fork (fork.c), an unmap forgets it (the sampler
 * checks that the page is still parked before it puts it back, inside a
 * region-table read section, so an unmap waits for it).
 */
#include "pager/page.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/share.h"
#include "pager/evict.h"
#include "pager/sample.h"
#include "pager/uffd.h"
#include "pager/install.h"
#include "pager/policy.h"
#include "core/syscall.h"
#include "core/fdhigh.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_MAX 512u          /* parking slots */
#define SAMPLE_MIN 8u
#define SAMPLE_INTERVAL_MS 50u
#define SAMPLE_CPU_SHARE 0.01    /* of one CPU: the adaptive rate's budget */
#define SLOT_CLAIMED UINT32_MAX  /* a slot being filled */

struct bp_sample {
	struct bypass_pager *p;
	char *park;                  /* SAMPLE_MAX pages */
	_Atomic uint32_t id[SAMPLE_MAX]; /* page id + 1 parked in slot i, 0 = free */
	_Atomic uint32_t hw;         /* slots written since the last trim (park_trim) */
	uint32_t want;               /* pages to park per interval */
	struct bp_thread thread;
	int stop_fd;
	uint64_t last_evict;         /* evictions seen at the last round */
	_Atomic uint64_t parked, hits, ns, hit_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ the fault path */

/*
 * A fault on a parked page (its lock held, state RESIDENT, PW_PARK set):
 * put its data back, with the access's write permission, and count a hit.
 * Signal context.  Returns 0 or -errno.
 */
int bp_sample_fault(struct bypass_pager *p, struct region *r, struct pg *pg, uint32_t id,
		    uintptr_t pa, bool write)
{
	struct bp_sample *s = atomic_load_explicit(&p->samp, memory_order_acquire);
	if (!s)
		return -EIO; /* cannot happen: PW_PARK is set only while it exists */
	(void)pa; /* region_addr(r, id): install.c's */
	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < SAMPLE_MAX; i++) {
		if (atomic_load_explicit(&s->id[i], memory_order_relaxed) != id + 1)
			continue;
		bool clean = !(atomic_load(&pg->w) & PW_DIRTY);
		/* a write to a clean page makes it dirty here, as resolve_wp
		 * does; a dirty page goes back writable */
		int e = bp_install(p, &(struct bp_install){ .r = r, .src = s->park + (size_t)i * PG_SIZE,
							   .id0 = id, .k = 1,
							   .nw = write || !clean ? 1 : 0,
							   .from = BP_INSTALL_PARKED, .ref = true },
				   NULL, NULL);
		if (e)
			return e;
		atomic_store_explicit(&s->id[i], 0, memory_order_release);
		atomic_fetch_add_explicit(&s->hits, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->hit_ns, now_ns() - t0, memory_order_relaxed);
		return 0;
	}
	return -EIO;
}

/* ------------------------------------------------------------ the sampler */

/* Candidates: unreferenced, unlocked pages from the inactive tails. */
static uint32_t pick(struct bypass_pager *p, uint32_t *out, uint32_t want)
{
	uint32_t n = 0;
	uint32_t per = want / PG_LRU_SHARDS + 1;
	for (unsigned i = 0; i < PG_LRU_SHARDS && n < want; i++) {
		struct lru_shard *sh = &p->lists.shard[i];
		bp_spin_lock(&sh->lock);
		uint32_t id = sh->lru[0].tail, got = 0, seen = 0;
		while (id != PG_NONE && got < per && n < want && seen < 4 * per) {
			uint32_t w = atomic_load_explicit(&pg_of(p, id)->w, memory_order_relaxed);
			if (pg_state(w) == PS_RESIDENT && !(w & (PW_REF | PW_PARK | PW_LOCK |
								 PW_COLD | PW_PF)) &&
			    !(w >> PW_PIN_SHIFT)) {
				out[n++] = id;
				got++;
			}
			seen++;
			id = pg_of(p, id)->prev;
		}
		bp_spin_unlock(&sh->lock);
	}
	return n;
}

/* Park up to n candidates (page ids); returns how many were parked. */
static uint32_t park(struct bypass_pager *p, struct bp_sample *s, const uint32_t *ids,
		     uint32_t n)
{
	uint32_t done = 0;
	unsigned ti = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (uint32_t k = 0; k < n && t; k++) {
		uint32_t id = ids[k];
		struct region *r = bp_tab_find_id(t, p, id);
		if (!r || r->adaptive) /* adaptive regions switch userfaultfds: not sampled */
			continue;
		/* claim a free slot (another thread may park too: a test) */
		uint32_t slot = 0;
		for (; slot < SAMPLE_MAX; slot++) {
			uint32_t zero = 0;
			if (atomic_compare_exchange_strong(&s->id[slot], &zero, SLOT_CLAIMED))
				break;
		}
		if (slot == SAMPLE_MAX)
			break;
		uint32_t hw = atomic_load(&s->hw);
		while (hw <= slot && !atomic_compare_exchange_weak(&s->hw, &hw, slot + 1))
			;
		struct pg *pg = pg_of(p, id);
		if (!bp_pg_trylock(pg)) {
			atomic_store(&s->id[slot], 0);
			continue;
		}
		uint32_t w = atomic_load(&pg->w);
		/* a fork being prepared: nothing leaves the page table (checked
		 * under the page lock, which the fork takes page by page) */
		if (pg_state(w) != PS_RESIDENT || (w & (PW_REF | PW_PARK)) || (w >> PW_PIN_SHIFT) ||
		    bp_evict_forking(p)) {
			atomic_store(&s->id[slot], 0);
			bp_pg_unlock(pg);
			continue;
		}
		uintptr_t a = region_addr(r, id);
		int uffd = atomic_load(&r->uffd);
		/* really in the page table (a page the program discarded behind
		 * the pager's back is not): the copy below must not fault, this
		 * thread holds the page's lock */
		unsigned char in = 0;
		if (mincore((void *)a, PG_SIZE, &in) != 0 || !(in & 1)) {
			atomic_store(&s->id[slot], 0);
			bp_pg_unlock(pg);
			continue;
		}
		/* a dirty page: write-protected first, so that a write waits
		 * for the page lock (it faults) instead of changing the copy */
		if (!(w & PW_WP) && bp_uffd_wp(uffd, a, PG_SIZE, true, false) != 0) {
			atomic_store(&s->id[slot], 0);
			bp_pg_unlock(pg);
			continue;
		}
		bp_copy_kernel_ordered(s->park + (size_t)slot * PG_SIZE, (const void *)a,
				       PG_SIZE);
		if (bp_sys_madvise((void *)a, PG_SIZE, MADV_DONTNEED) != 0) {
			if (!(w & PW_WP))
				bp_uffd_wp(uffd, a, PG_SIZE, false, false);
			atomic_store(&s->id[slot], 0);
			bp_pg_unlock(pg);
			continue;
		}
		atomic_store_explicit(&s->id[slot], id + 1, memory_order_release);
		pg_set(pg, PW_PARK);
		bp_pg_unlock(pg);
		done++;
	}
	bp_tab_leave(ti);
	return done;
}

/* Put back every page still parked (untouched this interval). */
static void unpark_all(struct bypass_pager *p, struct bp_sample *s)
{
	unsigned ti = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (uint32_t i = 0; i < SAMPLE_MAX; i++) {
		uint32_t v = atomic_load(&s->id[i]);
		if (!v || v == SLOT_CLAIMED)
			continue;
		uint32_t id = v - 1;
		struct region *r = t ? bp_tab_find_id(t, p, id) : NULL;
		struct pg *pg = pg_of(p, id);
		if (!r) { /* unmapped meanwhile: forgotten with its region */
			atomic_store(&s->id[i], 0);
			continue;
		}
		bp_pg_lock(pg);
		uint32_t w = atomic_load(&pg->w);
		if ((w & PW_PARK) && atomic_load(&s->id[i]) == v) {
			/* no longer parked, whatever the copy did */
			int e = bp_install(p, &(struct bp_install){ .r = r,
								   .src = s->park + (size_t)i * PG_SIZE,
								   .id0 = id, .k = 1,
								   .nw = (w & PW_DIRTY) ? 1 : 0,
								   .from = BP_INSTALL_PARKED, .wake = true,
								   .mark_on_error = true },
					   NULL, NULL);
			if (e)
				bp_err("bypass: pager: putting back a sampled page: %s",
				       strerror(-e));
			atomic_store(&s->id[i], 0);
		}
		bp_pg_unlock(pg);
	}
	bp_tab_leave(ti);
}

/*
 * Give back the park's pages above the highest slot in use, with one
 * madvise: a round parks into the lowest free slots, so what a busier round
 * left above is a stale copy outside the budget (a parked page is counted
 * in it, its copy here is the only one).  The slots given back are claimed
 * meanwhile, so that a concurrent park (a test's) cannot fill one under
 * the madvise.  The next round that needs them zero-fills them again,
 * in the sampler's own time (its rate counts that).
 */
static void park_trim(struct bp_sample *s)
{
	uint32_t hw = atomic_load(&s->hw), lo = hw;
	while (lo > 0) {
		uint32_t zero = 0;
		if (!atomic_compare_exchange_strong(&s->id[lo - 1], &zero, SLOT_CLAIMED))
			break;
		lo--;
	}
	if (lo == hw)
		return;
	bp_sys_madvise(s->park + (size_t)lo * PG_SIZE, (size_t)(hw - lo) * PG_SIZE,
		       MADV_DONTNEED);
	/* unless a park raised it meanwhile (above hw: a slot not claimed) */
	atomic_compare_exchange_strong(&s->hw, &hw, lo);
	for (uint32_t i = lo; i < hw; i++)
		atomic_store(&s->id[i], 0);
}

static void *sampler_main(void *arg)
{
	bp_enter_for_good(); /* the library's own thread */
	struct bp_sample *s = arg;
	struct bypass_pager *p = s->p;
	uint32_t ids[SAMPLE_MAX];
	for (;;) {
		struct pollfd pf = { .fd = s->stop_fd, .events = POLLIN };
		if (bp_sys_poll(&pf, 1, SAMPLE_INTERVAL_MS) != 0)
			break;
		if (!bp_gate_tryenter(p)) /* a fork being prepared: not now */
			continue;
		uint64_t t0 = now_ns();
		uint64_t hit_ns0 = atomic_load(&s->hit_ns);
		unpark_all(p, s);
		/* only while the pager evicts: sampling pages nobody will
		 * evict tells nothing */
		uint64_t ev = ST_SUM(p, evict);
		bool evicting = ev != s->last_evict;
		s->last_evict = ev;
		uint32_t n = 0;
		if (evicting) {
			n = pick(p, ids, s->want);
			n = park(p, s, ids, n);
		}
		park_trim(s);
		uint64_t spent = now_ns() - t0;
		atomic_fetch_add(&s->parked, n);
		atomic_fetch_add(&s->ns, spent);
		if (n) {
			/* the rate: the sampler's time per page plus what its hits
			 * cost, within SAMPLE_CPU_SHARE of the interval */
			double per = (double)(spent + (atomic_load(&s->hit_ns) - hit_ns0)) / n;
			double allowed = SAMPLE_CPU_SHARE * SAMPLE_INTERVAL_MS * 1e6;
			uint32_t w = per > 0 ? (uint32_t)(allowed / per) : SAMPLE_MAX;
			s->want = w < SAMPLE_MIN ? SAMPLE_MIN : w > SAMPLE_MAX ? SAMPLE_MAX : w;
		}
		bp_gate_leave(p);
	}
	bp_gate_enter(p);
	unpark_all(p, s);
	bp_gate_leave(p);
	return NULL;
}

int bp_sample_start(struct bypass_pager *p, bool thread)
{
	if (atomic_load(&p->samp))
		return 0;
	struct bp_sample *s = bp_pg_calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = p;
	s->want = 64;
	s->park = bp_sys_mmap(NULL, (size_t)SAMPLE_MAX * PG_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	s->stop_fd = bp_fd_lift(eventfd(0, EFD_CLOEXEC), true);
	int e = 0;
	if (s->park == MAP_FAILED || s->stop_fd < 0) {
		e = s->park == MAP_FAILED ? -ENOMEM : -errno;
		goto fail;
	}
	bp_sys_madvise(s->park, (size_t)SAMPLE_MAX * PG_SIZE, MADV_DONTFORK);
	if (!thread) { /* tests park and put back themselves */
		atomic_store_explicit(&p->samp, s, memory_order_release);
		return 0;
	}
	e = bp_thread_start(&s->thread, sampler_main, s);
	if (e)
		goto fail;
	atomic_store_explicit(&p->samp, s, memory_order_release);
	return 0;
fail:
	if (s->park != MAP_FAILED)
		bp_sys_munmap(s->park, (size_t)SAMPLE_MAX * PG_SIZE);
	if (s->stop_fd >= 0)
		bp_sys_close(s->stop_fd);
	bp_pg_free(s);
	return e;
}

/* Stop the sampler, every page put back (destroy: before the regions go). */
void bp_sample_stop(struct bypass_pager *p)
{
	struct bp_sample *s = atomic_load(&p->samp);
	if (!s || !s->thread.live)
		return;
	uint64_t one = 1;
	ssize_t n = bp_sys_write(s->stop_fd, &one, sizeof(one));
	(void)n;
	bp_thread_join(&s->thread);
}

bool bp_sample_forget_child(struct bypass_pager *p)
{
	struct bp_sample *s = atomic_exchange(&p->samp, NULL);
	if (!s)
		return false;
	/* no parked page (the fork put them back); the parking area was
	 * MADV_DONTFORK: not here, and its addresses may be reused already */
	bool thread = s->thread.live;
	bp_thread_forget(&s->thread); /* the parent's: only its stack is here */
	bp_sys_close(s->stop_fd);
	bp_pg_free(s);
	return thread;
}

/* Free it (after stop; in a forked child, only the memory). */
void bp_sample_free(struct bypass_pager *p)
{
	struct bp_sample *s = atomic_load(&p->samp);
	if (!s)
		return;
	atomic_store(&p->samp, NULL);
	bp_sys_munmap(s->park, (size_t)SAMPLE_MAX * PG_SIZE);
	bp_sys_close(s->stop_fd);
	bp_pg_free(s);
}

void bp_sample_forget(struct bypass_pager *p, uint32_t id0, uint32_t n)
{
	struct bp_sample *s = atomic_load(&p->samp);
	for (uint32_t i = 0; s && i < SAMPLE_MAX; i++) {
		uint32_t v = atomic_load(&s->id[i]);
		if (v && v != SLOT_CLAIMED && v - 1 >= id0 && v - 1 - id0 < n)
			atomic_compare_exchange_strong(&s->id[i], &v, 0);
	}
}

uint32_t bp_sample_park_now(struct bypass_pager *p, uintptr_t addr, uint32_t n)
{
	struct bp_sample *s = atomic_load(&p->samp);
	if (!s || n > SAMPLE_MAX)
		return 0;
	uint32_t ids[SAMPLE_MAX], k = 0;
	bp_gate_enter(p);
	unsigned ti = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (uint32_t i = 0; i < n && t; i++) {
		struct region *r = bp_tab_find(t, addr + (uintptr_t)i * PG_SIZE);
		if (r && r->pager == p)
			ids[k++] = region_id(r, addr + (uintptr_t)i * PG_SIZE);
	}
	bp_tab_leave(ti);
	uint32_t got = park(p, s, ids, k);
	atomic_fetch_add(&s->parked, got);
	return got;
}

void bp_sample_unpark_now(struct bypass_pager *p)
{
	struct bp_sample *s = atomic_load(&p->samp);
	if (s) {
		bp_gate_enter(p);
		unpark_all(p, s);
		park_trim(s);
		bp_gate_leave(p);
	}
}

void bp_sample_stats(struct bypass_pager *p, uint64_t *parked, uint64_t *hits, uint64_t *ns,
		     uint64_t *hit_ns)
{
	struct bp_sample *s = atomic_load(&p->samp);
	*parked = s ? atomic_load(&s->parked) : 0;
	*hits = s ? atomic_load(&s->hits) : 0;
	*ns = s ? atomic_load(&s->ns) : 0;
	*hit_ns = s ? atomic_load(&s->hit_ns) : 0;
}
