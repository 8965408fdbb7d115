/* SPDX-License-Identifier: MIT */
/*
 * The pager's internals.  See docs/pager.md for the design.
 *
 * Everything reachable from a page fault runs in a signal handler (upcall
 * mode) that may have interrupted any code of the application, so the fault
 * path uses no malloc, no stdio and no pthread locks: only atomics, futexes
 * and system calls.  The locks, in the order they nest:
 *
 *   evict lock  ->  page lock (a bit in pg.w)  ->  LRU lock
 *
 * (all of them ranked: enum bp_rank below).  A fault takes the lock of the
 * page it serves (and of readahead pages, with trylock), then may trylock
 * the evict lock to make room (never a blocking take under a page lock).
 * The evictor trylocks its victims, and locks the pages of a finished
 * write-back one at a time.  Pages under write-back are unlocked (state
 * WRITEBACK) so that a write to them can be served during the I/O.
 */
#ifndef BYPASS_PAGER_INTERNAL_H
#define BYPASS_PAGER_INTERNAL_H

#include "core/internal.h"
#include "pager/uffd.h" /* the userfaultfd wrappers */
#include <bypass/pager.h>

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define PG_SHIFT 12
#define PG_SIZE ((size_t)1 << PG_SHIFT)
#define PG_MIN_BUDGET 16u  /* pages */
#define PG_MIN_SWAP 16u    /* pages */
#define PG_MAX_RA 64u      /* readahead pages */
#define PG_MAX_FA 64u      /* fault-around pages */
#define PG_NONE UINT32_MAX /* no page id */
#define PG_MAX_THREADS 64u /* handler threads per pager */

/* ------------------------------------------------------------ page state */

/*
 * pg.w: the page lock, its waiters, the state and flags.  Changed only with
 * atomic read-modify-write operations; the state and DIRTY/WP/slot change
 * under the page lock, LRU/ACTIVE under the LRU lock, REF anywhere.
 */
#define PW_LOCK 0x1u
#define PW_WAIT 0x2u
#define PW_STATE_SHIFT 2
#define PW_STATE (0x3u << PW_STATE_SHIFT)
enum pg_state {
	PS_ZERO = 0,      /* no data: never touched, or known to be zeros */
	PS_RESIDENT = 1,  /* mapped */
	PS_SWAPPED = 2,   /* evicted; the data is in slot */
	PS_WRITEBACK = 3, /* mapped and write-protected, being written */
};
#define PW_DIRTY 0x10u   /* resident data that the swap file lacks */
#define PW_WP 0x20u      /* write-protected in the page table */
#define PW_REF 0x40u     /* referenced since it was last scanned (2Q) */
#define PW_ACTIVE 0x80u  /* on the active list (else inactive) */
#define PW_LRU 0x100u    /* on a list */
#define PW_REDIRTY 0x200u /* written during write-back */
#define PW_PF 0x400u     /* installed by the prefetcher, no use seen yet */
/* hints (bypass_pager_advise), kept until replaced or unmapped */
#define PW_PRIO 0x800u   /* PRIORITY: evicted only when nothing else is */
#define PW_COLD 0x1000u  /* DONTNEED: evicted first */
#define PW_NORA 0x2000u  /* RANDOM: no read-ahead, fault-around, prefetch */
#define PW_SEQ 0x4000u   /* SEQUENTIAL: prefetch ahead of faults */
#define PW_HINTS (PW_PRIO | PW_COLD | PW_NORA | PW_SEQ)
#define PW_PFAGED 0x8000u /* PW_PF page the prefetcher's eviction passed once */
#define PW_PARK 0x10000u /* RESIDENT, but its data is in a parking slot of the
			    access sampler (sample.c): not in the page table */
#define PW_PIN_SHIFT 17
#define PW_PIN_ONE (1u << PW_PIN_SHIFT)
#define PW_PIN_MAX 0x7fffu

struct pg {
	_Atomic uint32_t w;
	uint32_t slot;      /* swap slot + 1, 0 = none (page lock) */
	uint32_t prev, next; /* LRU links (LRU lock); prev holds the eviction
				sequence (refault shadow) while SWAPPED */
};

static inline unsigned pg_state(uint32_t w)
{
	return (w & PW_STATE) >> PW_STATE_SHIFT;
}

/*
 * pg.slot: 0 = none, else the level of the swap file (share.c: the
 * process's own, or an ancestor's whose slots it holds since a fork) and
 * the slot + 1.  Level 0 in a process that never forked without reading
 * back: the slot + 1, as before.  Consecutive slots of one file are
 * consecutive values.
 */
#define PG_SLOT_BITS 28
#define PG_SLOT_MASK ((1u << PG_SLOT_BITS) - 1)
#define PG_LEVELS 8u       /* files a process can reference: its own and 7 ancestors' */
#define PG_REF_ENTRIES 32u /* descendants holding slots of one file at a time */
static inline unsigned slot_level(uint32_t s1)
{
	return s1 >> PG_SLOT_BITS;
}
static inline uint32_t slot_index(uint32_t s1)
{
	return (s1 & PG_SLOT_MASK) - 1;
}
static inline uint32_t slot_make(unsigned level, uint32_t s)
{
	return ((uint32_t)level << PG_SLOT_BITS) | (s + 1);
}

/* --------------------------------------------------------------- ranks */

/*
 * Every lock of the pager and of its preload has a rank; a thread takes
 * locks in increasing rank only (rank.c: checked in debug builds, and
 * where bp_rank_enable() or the preload's BYPASS_PAGER_LOCK_RANKS=1 turns
 * the check on; an out-of-order blocking take aborts naming both locks).
 * A trylock may be taken in any order (it cannot wait): recorded only.
 *
 *   JEMALLOC    entering the preload's heap allocator once its extent
 *               hooks are set (heap.c, alloc.c): its hook runs inside it
 *               and takes the heap lock, so nothing under the heap lock
 *               may enter it (issue 32's Redis hang)
 *   PP_PAGER    the preload's pager creation (init.c pager_lock)
 *   PP_HEAP     the preload's heap lock (heap.c), in jemalloc's hook
 *   FORK        fork.c's list of pagers (the fork handlers take every
 *               pager's locks under it, in list order: unchecked)
 *   PAGER       p->lock: map, unmap, policies, engine switches, threads
 *   HEAT        access heat's lock (h->lock), under p->lock
 *   EVICT       the evict lock; a fault only trylocks it under its page
 *               lock, the evictor locks pages under it (finish_wb)
 *   PAGE        a page lock; never two blocking (the others: trylock)
 *   PAGE_WB     the lock of a page under write-back, taken by the evictor
 *               (finish_wb) under the evict lock and maybe the faulting
 *               thread's own page lock, several at once (the evict lock
 *               serializes that): whoever else holds a WRITEBACK page's
 *               lock waits for nothing (a write to it marks it re-dirtied)
 *   LRU         an LRU shard's spin lock (lru.c, sample.c)
 *   TABLE       the region table's writers' lock (table.c)
 *   DAMON, POLREG, PP_TABLE, PP_RESERVE   leaves: nothing is taken under
 *               them (damon.c, the policy registry, the preload's table of
 *               regions, its reserve)
 *
 * A fault served in the faulting thread is a frame of its own (it may
 * interrupt any code): entered with EVICT..TABLE held it aborts; inside,
 * takes are checked against the frame's own.
 */
enum bp_rank {
	BP_RANK_NONE = 0,
	BP_RANK_JEMALLOC,
	BP_RANK_PP_PAGER,
	BP_RANK_PP_HEAP,
	BP_RANK_FORK,
	BP_RANK_PAGER,
	BP_RANK_HEAT,
	BP_RANK_EVICT,
	BP_RANK_PAGE,
	BP_RANK_PAGE_WB,
	BP_RANK_LRU,
	BP_RANK_TABLE,
	BP_RANK_DAMON,
	BP_RANK_POLREG,
	BP_RANK_PP_TABLE,
	BP_RANK_PP_RESERVE,
	BP_RANK_N
};
extern _Atomic bool bp_rank_on;
void bp_rank_enable(bool on);
const char *bp_rank_name(enum bp_rank r);
void bp_rank_check_slow(enum bp_rank r);
void bp_rank_push_slow(enum bp_rank r, const void *lock);
void bp_rank_pop_slow(enum bp_rank r, const void *lock);
/* Before a blocking take of rank r: abort if this thread holds r or above. */
static inline void bp_rank_check(enum bp_rank r)
{
	if (bp_unlikely(atomic_load_explicit(&bp_rank_on, memory_order_relaxed)))
		bp_rank_check_slow(r);
}
/* After a take (blocking or try) of lock, and before its release. */
static inline void bp_rank_push(enum bp_rank r, const void *lock)
{
	if (bp_unlikely(atomic_load_explicit(&bp_rank_on, memory_order_relaxed)))
		bp_rank_push_slow(r, lock);
}
static inline void bp_rank_pop(enum bp_rank r, const void *lock)
{
	if (bp_unlikely(atomic_load_explicit(&bp_rank_on, memory_order_relaxed)))
		bp_rank_pop_slow(r, lock);
}
/* A page fault served in this thread (a signal handler): a frame. */
unsigned bp_rank_frame_enter(void);
void bp_rank_frame_leave(unsigned saved);
/* Locks held in the current frame (tests). */
unsigned bp_rank_held(void);
/* A fork child: nothing is held (the fork handlers' locks are reset). */
void bp_rank_fork_child(void);
/* The fork handlers' locks held from the end of prepare to the parent
 * handler (true, then false): a fault in between is allowed (glibc's
 * fork touches the program's memory then), since a fork being prepared
 * takes room at once and serves without those locks (fault.c). */
void bp_rank_fork_held(bool held);

/* pthread mutexes with a rank */
static inline void bp_mutex_lock(pthread_mutex_t *m, enum bp_rank r)
{
	bp_rank_check(r);
	pthread_mutex_lock(m);
	bp_rank_push(r, m);
}
static inline void bp_mutex_unlock(pthread_mutex_t *m, enum bp_rank r)
{
	bp_rank_pop(r, m);
	pthread_mutex_unlock(m);
}

/* --------------------------------------------------------------- locks */

/* A futex mutex that is safe in signal handlers (Drepper's three states),
 * of the given rank (set before its first use; 0: unchecked). */
struct plock {
	_Atomic uint32_t v;
	enum bp_rank rank;
};
void bp_plock_lock(struct plock *l);
bool bp_plock_trylock(struct plock *l);
void bp_plock_unlock(struct plock *l);
/* A take in an order another lock serializes (fork.c: every pager's,
 * under the fork lock): recorded, not checked. */
void bp_plock_lock_serialized(struct plock *l);

/* A spinlock for short sections that never sleep or fault: the LRU
 * shards' (rank LRU). */
struct spin {
	_Atomic uint32_t v;
};
void bp_spin_lock(struct spin *s);
void bp_spin_unlock(struct spin *s);

void bp_pg_lock(struct pg *pg);
/* bp_pg_lock() of a page in state WRITEBACK by the evictor (rank PAGE_WB) */
void bp_pg_lock_wb(struct pg *pg);
bool bp_pg_trylock(struct pg *pg);
void bp_pg_unlock(struct pg *pg);
/* Set/clear flag bits of a page (any thread). */
static inline void pg_set(struct pg *pg, uint32_t bits)
{
	atomic_fetch_or_explicit(&pg->w, bits, memory_order_relaxed);
}
static inline void pg_clear(struct pg *pg, uint32_t bits)
{
	atomic_fetch_and_explicit(&pg->w, ~bits, memory_order_relaxed);
}
static inline void pg_set_state(struct pg *pg, unsigned st)
{
	uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(
		&pg->w, &w, (w & ~PW_STATE) | (st << PW_STATE_SHIFT),
		memory_order_release, memory_order_relaxed))
		;
}

/* ------------------------------------------------------------- regions */

/* An adaptive region's serves in flight, counted by thread on cache lines of
 * their own (engine.c): every fault adds and subtracts one, so one shared
 * counter would move between the faulting CPUs twice a fault. */
#define PG_ENG_SLOTS 8u
struct bp_eng_slot {
	_Atomic uint32_t n;
} __attribute__((aligned(64)));

struct region {
	uintptr_t start, end;
	struct bypass_pager *pager;
	uint32_t id0;     /* page id of start */
	_Atomic int uffd; /* the userfaultfd serving it */
	_Atomic bool handler; /* served by handler threads (not upcalls) */
	bool adaptive;    /* its engine may change (engine.c) */
	unsigned gen;     /* fork generation of the process that mapped it */
	/* engine switches (adaptive regions): odd while one is under way;
	 * serves in flight (PG_ENG_SLOTS counters; NULL if not adaptive) */
	_Atomic uint32_t switch_seq;
	struct bp_eng_slot *active;
	/* readahead: the page id where the last swap-in cluster ended and
	 * the current window; a swap-in fault there is sequential */
	_Atomic uint32_t ra_next, ra_win;
	/* readahead of a write stream (fault.c, swap_in): the last window's
	 * readahead pages are [ra_from, ra_next); ra_clean of them were
	 * mapped clean (write-protected), all of them or, in write mode
	 * (ra_wmode), the last one only (the probe); ra_wp counts the
	 * write-protect faults on them since.  Hints only: read and written
	 * without a lock (a wrong guess costs a fault or a write-back). */
	_Atomic uint32_t ra_from, ra_clean, ra_wp;
	_Atomic bool ra_wmode;
	/* the prefetch stream of the region (prefetch.c): the last fault,
	 * the next page not yet asked for in the stream's direction, the
	 * stride (0: no stream), the candidate stride and the window */
	_Atomic uint32_t pf_last, pf_next;
	_Atomic int32_t pf_stride, pf_cand;
	_Atomic uint32_t pf_win;
	/* write evidence for the prefetcher (prefetch.c, pf_write_mode):
	 * prefetched pages installed clean and write-protect faults on
	 * prefetched pages (halved as they grow), write mode, and the last
	 * write-mode run's probe (page id + 1).  Hints only, as ra_*. */
	_Atomic uint32_t pf_clean, pf_wp, pf_probe;
	_Atomic bool pf_wmode;
};

/* A snapshot of every region of every pager, sorted by address. */
struct regtab {
	size_t n;
	struct region **by_id; /* the same, sorted by pager and first page id */
	struct region *r[];
};

/*
 * Readers (fault handlers, the evictor) enter a read section, load the
 * table, and may use every region in it until they leave.  Writers publish
 * a new table and wait until every reader of the old one has left.
 */
unsigned bp_tab_enter(void);
void bp_tab_leave(unsigned idx);
struct regtab *bp_tab_get(void);
struct region *bp_tab_find(struct regtab *t, uintptr_t addr);
/* The region of pager p holding page id, or NULL. */
struct region *bp_tab_find_id(struct regtab *t, struct bypass_pager *p, uint32_t id);
/*
 * Replace the regions in `old` (nold of them, may be 0) by `add` (nadd) in
 * the table, then wait for readers of the old table.  Returns -ENOMEM.
 */
int bp_tab_replace(struct region **old, size_t nold, struct region **add, size_t nadd);
/* fn(p, r, id, arg) for every page of every region of p, in a read section. */
void bp_tab_each_page(struct bypass_pager *p,
		      void (*fn)(struct bypass_pager *p, struct region *r, uint32_t id, void *arg),
		      void *arg);
/* A fork child: keep the regions keep() accepts, forget the others. */
void bp_tab_fork_child(bool (*keep)(const struct region *r));

/* ------------------------------------------------------------ the pager */

struct lru {
	uint32_t head, tail; /* head = most recent */
	_Atomic uint32_t count; /* changed under the shard's lock */
};

/*
 * The 2Q lists are sharded, so that faults of many threads do not all take
 * one lock: page id's shard is (id >> PG_LRU_RUN) % PG_LRU_SHARDS (runs of
 * 32 ids stay together, so that victims still come in runs that write back
 * as one I/O).  Each shard is a 2Q of its own; the evictor takes victims
 * from the shards in turn.
 */
#define PG_LRU_SHARDS 8u
#define PG_LRU_RUN 5
struct lru_shard {
	struct spin lock;
	struct lru lru[2]; /* [0] inactive, [1] active */
} __attribute__((aligned(BP_CACHELINE)));

/* The counters, sharded by thread (see stat_add) and summed when read. */
#define PG_STAT_SHARDS 8u
struct pstats {
	_Atomic uint64_t zero, swapin, wp, other, ra, evict, evict_clean, rd, wr, wr_err,
		lat_count, lat_sum_ns, fa, switches, pf, pf_used, rejects, ra_dirty, polled;
	_Atomic uint64_t hist[BYPASS_PAGER_HIST];
} __attribute__((aligned(BP_CACHELINE)));

struct iovec;
struct bp_heat; /* heat.h */
struct bp_tier; /* tier.h */
struct bp_tree; /* tree.c */
struct wb {           /* one write-back request in flight */
	uint32_t n;
	uint32_t used;
	pid_t tid;           /* the thread that submitted it */
	uint64_t t0;         /* when (bypass_now_ns), for the stall report */
	uint32_t *ids;
	struct iovec *iov;
};

/*
 * A pager is composed of the parts below, each owned by one file: only the
 * owner changes it (others read, where its comment allows), and its locking
 * rule is stated once, here.  pager.c composes them (create, destroy).
 */

/* Configuration (setup.c: bp_check_config, and pager.c at create).
 * Written before the pager is returned (and before any of its threads
 * starts), read-only afterwards: read anywhere without a lock. */
struct pg_config {
	uint32_t budget, high, low, batch, ra; /* pages */
	uint32_t fa;         /* fault-around pages (1 = off) */
	int mode;            /* enum bypass_pager_mode, after the engine option */
	unsigned gen;        /* fork generation at creation */
	unsigned nthreads;   /* handler threads to start */
	uint64_t uffd_avail; /* userfaultfd features of this kernel */
	uint64_t cyc_per_ns_q16; /* TSC cycles per ns, 16.16 fixed point */
};

/* Page ids and the size mapped (pager.c: map, unmap).  Under p->lock,
 * except mapped, which anyone may read (atomically). */
struct pg_ids {
	struct { uint32_t start, len; } *ext; /* free id extents, sorted */
	size_t n, cap;
	_Atomic uint32_t mapped; /* pages in regions */
};

/* Serving faults (fault.c): the userfaultfds, the handler threads and the
 * bounce buffers.  The descriptors are set at create (uffd_thread also by
 * the first BYPASS_PAGER_MAP_HANDLER map, under p->lock) and closed at
 * destroy; the threads start and stop under p->lock; the bounce buffers
 * are taken and given back with atomics (bounce_map), from any context. */
struct pg_serve {
	int uffd_sigbus;     /* upcall userfaultfd, or -1 */
	int uffd_thread;     /* handler-thread userfaultfd, or -1 */
	struct bp_thread threads[PG_MAX_THREADS]; /* handler threads */
	unsigned nlive;      /* handler threads running */
	int stop_fd;         /* eventfd that stops the handler threads */
	_Atomic unsigned spinners; /* handler threads trying to spin (fault.c) */
	char *bounce;        /* swap-in buffers (fault path: no malloc) */
	uint32_t nbounce;
	_Atomic uint64_t *bounce_map;
	struct pg_rdring *rd; /* rings of the spinning swap-in reads (read.c) */
	uint32_t nrd;
};

/* The engine (engine.c): adaptive pagers serve their regions by upcalls or
 * by the handler threads reading uffd_pool, switching between the two from
 * what they measure.  force and uffd_pool are set at create; the monitor
 * thread alone switches (under p->lock); the rest are atomics any thread
 * updates on the fault path. */
struct pg_engine {
	_Atomic int force;   /* enum bp_engine_force (bp_engine_force()) */
	_Atomic int uffd_pool; /* user-mode-only, no SIGBUS; -1 if none */
	_Atomic bool pool_now; /* adaptive regions are on the pool */
	_Atomic bool mon_stop;
	bool mon_live;
	struct bp_thread monitor;
	_Atomic uint32_t pinning; /* bypass_pager_pin() calls under way */
	_Atomic uint32_t epoch;   /* measuring interval (distinct faulting threads) */
	_Atomic uint32_t epoch_threads;
	_Atomic uint64_t seen[64]; /* epoch << 32 | thread id: counted this interval */
};

/* The swap file (setup.c opens it; evict.c hands out its slots).  fd,
 * direct, created and pages are set at create.  Slots: bit set = in use;
 * allocated under the evict lock, freed with atomics from anywhere. */
struct pg_swap {
	int fd;
	bool direct;         /* opened O_DIRECT */
	bool created;        /* SWAP_CREATE made the file (removed if create fails) */
	uint32_t pages;      /* page ids, and the slots sized (fallocated) */
	uint32_t nslots;     /* slots: more than pages where forked children may
				hold some (share.c); the file grows past pages */
	char *dir;           /* SWAP_TEMP's directory (a forked child makes its
				own file there), or NULL: forks read back */
	_Atomic uint64_t *slotmap; /* nslots bits */
	uint32_t cursor;     /* where the next search starts (evict lock) */
	_Atomic uint32_t used;
};

/* The gate a fork closes (share.c): what takes page locks outside the
 * evict lock passes it (serves, pins, prefetch reads, the access sampler),
 * counted by thread on cache lines of their own. */
struct pg_gate {
	_Atomic uint32_t closed;
	_Atomic int32_t owner;       /* the forking thread: passes */
	struct bp_eng_slot busy[PG_ENG_SLOTS];
};

/* The swap files of a process tree (share.c).  Level depth is this
 * process's own file (swap.fd); levels below are its ancestors', whose
 * slots it holds through its entries in their registries.  Changed at a
 * fork (prepare: under the fork's locks; child: single-threaded). */
struct pg_refs;
struct pg_lineage {
	unsigned depth;
	int fd[PG_LEVELS];               /* ancestors' files (read only) */
	struct pg_refs *refs[PG_LEVELS]; /* registries; refs[depth]: our own,
					    made at our first shared fork */
	uint64_t refs_ino;               /* our registry's inode (collect) */
	int ent[PG_LEVELS];              /* our entry in refs[l], l < depth */
	_Atomic uint64_t *mine[PG_LEVELS]; /* its bitmap */
	int pend[PG_LEVELS];             /* a fork: the child's entries */
	bool share;                      /* this fork keeps the regions */
};

/* The budget (evict.c): what is resident, pinned, under write-back.
 * Atomics only, changed from any context (faults, pins, eviction, unmap
 * under the evict lock); progress is a futex word that waiters sleep on. */
struct pg_budget {
	_Atomic uint32_t resident;
	_Atomic uint32_t pinned;
	_Atomic uint32_t writeback;   /* pages in WRITEBACK */
	_Atomic uint32_t progress;    /* bumped when pages are freed */
	_Atomic uint32_t waiters;     /* sleeping on progress */
	_Atomic uint64_t peak;        /* the most pages ever resident */
	_Atomic bool forking;         /* a fork is being prepared (fork.c):
					 reservations take room at once */
} __attribute__((aligned(BP_CACHELINE)));

/* Eviction (evict.c): everything here is under the evict lock (lock),
 * except sync_wb and seq (atomics, read anywhere) and noprio (set by the
 * prefetcher under the evict lock, read by lru.c under it). */
struct pg_evict {
	struct plock lock;
	struct io_uring ring;
	bool ring_live;
	struct wb *wbs;              /* write-back records */
	uint32_t *wb_ids;
	struct iovec *wb_iov;
	uint32_t nwb, wb_inflight;
	/* Write back synchronously, except in the handler thread: set once
	 * the pager has a handler thread (see submit_writeback()). */
	_Atomic bool sync_wb;
	uint32_t *victims, *clean_ids; /* scratch for one round */
	uint32_t *reap_ids;          /* scratch for one completion */
	struct iovec *dropv;         /* scratch for process_madvise */
	int pidfd;                   /* for process_madvise, or -1 if unusable */
	int pidfd_owned;             /* the descriptor to close */
	_Atomic uint32_t seq;        /* pages evicted, for refault distance */
	bool noprio;                 /* the prefetcher evicts: it spares PRIORITY
					pages, and unused prefetched ones
					until their second pass */
} __attribute__((aligned(BP_CACHELINE)));

/* The 2Q lists (lru.c), sharded: each shard under its own spin lock;
 * cursor and taken under the evict lock. */
struct pg_lists {
	struct lru_shard shard[PG_LRU_SHARDS];
	uint32_t cursor;             /* the shard to evict from next */
	uint32_t taken;              /* victims taken from it so far */
};

/* The policy in use and the hints (policy.c).  cur is read in read
 * sections (bp_pol_enter/leave: phase and readers) and replaced under
 * p->lock; the hint ranges are a sequence-counted table written under
 * p->lock and read lock-free. */
struct pg_polref {
	struct bp_pol *_Atomic cur;  /* NULL: 2Q (no read section needed) */
	_Atomic uint32_t phase __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint32_t readers[2];
	struct bp_hints *hints __attribute__((aligned(BP_CACHELINE)));
};

struct bypass_pager {
	struct pg_config cfg;
	/* page metadata, indexed by page id; ids are handed out per region
	 * (pg.w's rules: see the page state above) */
	struct pg *pages;
	size_t pages_len;    /* bytes mapped for pages[] */
	/* map/unmap, the id allocator, starting and stopping threads, policy
	 * changes: normal context only, never in a fault */
	pthread_mutex_t lock;
	struct pg_ids ids;
	struct pg_serve srv;
	struct pg_engine eng;
	struct pg_swap swap;
	struct pg_budget bud;
	struct pg_evict ev;
	struct pg_lists lists;
	struct pg_polref pol;
	struct pg_gate gate;
	struct pg_lineage lin;
	struct bp_pf *_Atomic pf;       /* the prefetcher (prefetch.c), once started */
	_Atomic(struct bp_heat *) heat; /* access heat (heat.h), NULL until enabled */
	struct bp_sample *_Atomic samp; /* access samples (sample.c), with
					   BYPASS_PAGER_SAMPLE */
	/* the compressed tier (tier.c), NULL until bypass_pager_tier() first
	 * turns it on; then kept until destroy (bp_evict_fini) */
	struct bp_tier *_Atomic tier;
	/* one budget for a process tree (tree.c): set by bp_tree_join before
	 * the first map, cleared at destroy; NULL: the pager's own budget */
	struct bp_tree *_Atomic tree;
	/* the counters, every file adds to them (stat_add) */
	struct pstats st[PG_STAT_SHARDS];
};

static inline struct pg *pg_of(struct bypass_pager *p, uint32_t id)
{
	return &p->pages[id];
}

static inline uint32_t region_id(const struct region *r, uintptr_t addr)
{
	return r->id0 + (uint32_t)((addr - r->start) >> PG_SHIFT);
}

static inline uintptr_t region_addr(const struct region *r, uint32_t id)
{
	return r->start + ((uintptr_t)(id - r->id0) << PG_SHIFT);
}

static inline bool region_has_id(const struct region *r, uint32_t id)
{
	return id >= r->id0 && id - r->id0 < (r->end - r->start) >> PG_SHIFT;
}

/* ---------------------------------------------------------------- threads */

/*
 * Every thread the pager starts (handler threads, the engine's monitor, the
 * prefetcher, the heat and access samplers) calls bp_enter_for_good()
 * first (core's per-thread "inside bypass" depth, which the preloads test):
 * a preload's wrappers pass its system calls, mmaps and mallocs straight
 * through.  Without it, under the pager preload, the access sampler's
 * madvise became the preload's "write zeros" and its buffers could land in
 * pager memory it then faulted on while holding a page lock.
 */

/* ---------------------------------------------------------------- mem.c */

/*
 * The pager's own allocations: the C library's allocator, resolved once,
 * never a preload's (whose heap is pager memory: see mem.c).  Every block
 * of src/pager is allocated and freed with these; nothing of src/pager
 * calls malloc, calloc, realloc, free, aligned_alloc or strdup by name
 * (tests/pager/own-alloc.c).
 */
void *bp_pg_malloc(size_t n);
void *bp_pg_calloc(size_t a, size_t b);
void *bp_pg_realloc(void *q, size_t n);
void bp_pg_free(void *q);
void *bp_pg_aligned_alloc(size_t align, size_t n);
char *bp_pg_strdup(const char *s);

/* ---------------------------------------------------------------- pager.c */

/*
 * bypass_pager_map() at a given address: [at, at + length) must be a
 * mapping of the caller's (a PROT_NONE reservation), which the region
 * replaces (MAP_FIXED); on failure it is a PROT_NONE reservation again.
 * The preload carves its heap's regions out of one reservation this way.
 */
int bp_pager_map_at(bypass_pager *p, void *at, size_t length, unsigned flags);

/* ---------------------------------------------------------------- share.c */

/*
 * Fork without reading back: the gate, the registries of slot holders.
 * Enter the gate before taking page locks outside the evict lock (tryenter
 * where the caller can skip its work: false while a fork is prepared).
 */
void bp_gate_enter(struct bypass_pager *p);
bool bp_gate_tryenter(struct bypass_pager *p);
void bp_gate_leave(struct bypass_pager *p);
/* The gate is closed (a fork is being prepared): reservations take room at
 * once, since the evict lock is the forking thread's. */
bool bp_gate_closed(const struct bypass_pager *p);
/* The gate is closed by thread tid (a userfaultfd message's thread id; 0:
 * unknown, false).  A fault of that thread then is the forking thread's
 * own, after the pager's prepare handler (glibc's fork touches the
 * program's memory before the fork system call and before the parent
 * handlers): served through the closed gate, and woken only once the
 * page's bookkeeping is done (fault.c). */
bool bp_gate_owned_by(const struct bypass_pager *p, pid_t tid);
/* Slots of our own file that descendants hold, in bitmap word w. */
uint64_t bp_share_busy(struct bypass_pager *p, uint32_t w);
/* A slot of an ancestor's file we no longer need (pg.slot value). */
void bp_share_drop(struct bypass_pager *p, uint32_t slot1);
/* The descriptor to read a slot from (pg.slot value). */
int bp_share_fd(struct bypass_pager *p, uint32_t slot1);
/* Give back the entries of descendants that are gone (exited, exec'd);
 * how many.  Any context (system calls only). */
unsigned bp_share_collect(struct bypass_pager *p);
/* Descendants holding slots of our file now (tests). */
unsigned bp_share_holders(struct bypass_pager *p);
/* fork.c's handlers: prepare (true: this fork keeps p's regions in the
 * child, nothing read back; p's lock held), the parent after it, the
 * child (0, or -errno: it cannot page its regions). */
bool bp_share_prepare(struct bypass_pager *p);
void bp_share_parent(struct bypass_pager *p);
int bp_share_child(struct bypass_pager *p);
/* The fork being prepared (or that made this child) keeps p. */
bool bp_share_kept(const struct bypass_pager *p);
/* At destroy: our entries back (release; not for a read-back child's
 * stale copy, whose entries are the parent's), files and maps closed. */
void bp_share_fini(struct bypass_pager *p, bool release);
/* Clear every pin (a child: the pins were the parent's threads'). */
void bp_share_unpin_all(struct bypass_pager *p);

/* ---------------------------------------------------------------- fork.c */

/* A pager in the list of those a fork prepares (every region resident
 * before the fork: see fork.c); 0 or -ENOMEM.  Remove: at destroy. */
int bp_fork_add(struct bypass_pager *p);
void bp_fork_remove(struct bypass_pager *p);
/* table.c's part, called by fork.c's handlers. */
void bp_tab_fork_prepare(void);
void bp_tab_fork_parent(void);

/* ---------------------------------------------------------------- fault.c */

/*
 * Serve a fault (or a pin) at addr in r: make the page resident, writable if
 * write.  handler: called from the handler thread (wake the faulting
 * thread).  Returns 0 or -errno (the fault cannot be served).
 */
int bp_pager_serve(struct region *r, uintptr_t addr, bool write, bool handler);
int bp_pager_hook_install(void);
/* Start the handler threads (p->cfg.nthreads of them) if none run. */
int bp_pager_thread_start(struct bypass_pager *p);
/* The calling thread is a pager's handler thread. */
bool bp_pager_in_handler_thread(void);
void bp_pager_thread_stop(struct bypass_pager *p);

/* ---------------------------------------------------------------- engine.c */

enum bp_engine_force {
	BP_ENGINE_ADAPTIVE = 0, /* measure and choose (the default) */
	BP_ENGINE_UPCALL,       /* held on upcalls */
	BP_ENGINE_POOL,         /* held on the pool (measurements) */
	BP_ENGINE_FLIP,         /* switch every interval (tests: switches under load) */
};

/*
 * Hold an adaptive pager's engine (or let it measure again), moving its
 * regions at once for UPCALL and POOL: the explicit option that tests,
 * benchmarks and the preload (BYPASS_PAGER_ENGINE) use; the library reads
 * no environment for it.  0, -EINVAL (not an adaptive pager, unknown
 * force), -ECHILD, or the error of the switch (-EBUSY: pages are pinned).
 */
int bp_engine_force(struct bypass_pager *p, int force);
/* Open uffd_pool and start the monitor thread of an adaptive pager. */
int bp_engine_start(struct bypass_pager *p);
void bp_engine_stop(struct bypass_pager *p);
/* A serve of an adaptive region: enter it, unless a switch is under way
 * (then wait for its end and return false: the fault is to be retried). */
bool bp_engine_enter(struct region *r);
/* bp_engine_enter() that never waits: false (not entered) during a switch */
bool bp_engine_enter_nowait(struct region *r);
void bp_engine_leave(struct region *r);
/* An adaptive region's serve counters (0 or -ENOMEM); a region's end. */
int bp_region_engine_init(struct region *r);
void bp_region_free(struct region *r);
/* A SIGSEGV in an adaptive region: 1 if it came from a switch (retry). */
int bp_engine_segv(struct region *r, uintptr_t addr);
/* Count thread tid (0: the calling thread) among this interval's
 * faulting threads. */
void bp_engine_note_thread(struct bypass_pager *p, uint32_t tid);
/* The thread a handler thread is serving now (0: itself), for the above. */
extern __thread uint32_t bp_serving_tid __attribute__((tls_model("initial-exec")));
/* Wait until no switch of r is under way. */
void bp_engine_wait(struct region *r);

/* ---------------------------------------------------------------- setup.c */

/* The handler thread's userfaultfd (kernel faults too), or -EPERM; the
 * features it is set up with. */
int bp_open_thread_uffd(struct bypass_pager *p);
uint64_t bp_thread_uffd_features(const struct bypass_pager *p);
/* The adaptive engine's pool userfaultfd (user-mode-only, no SIGBUS). */
int bp_open_pool_uffd(struct bypass_pager *p);
/* Open and size the swap file; sets swap_fd, direct, swap_pages. */
int bp_open_swap(struct bypass_pager *p, const struct bypass_pager_config *cfg);
/* A new unnamed swap file in dir for a forked child, nslots pages long
 * (sparse); the descriptor or -errno. */
int bp_swap_tmpfile(struct bypass_pager *p, const char *dir, bool direct);
/* read.c: a swap-in read of len bytes at off into buf (the fault path,
 * signal handlers included), polling its completion where a CPU can spare
 * it; 0 or -errno.  Init makes the rings (spin: not BYPASS_PAGER_NO_SPIN). */
int bp_swap_read(struct bypass_pager *p, int fd, char *buf, size_t len, off_t off);
int bp_swap_read_init(struct bypass_pager *p, bool spin);
void bp_swap_read_fini(struct bypass_pager *p);

/* Check cfg and set budget, watermarks, batch, readahead and mode. */
int bp_check_config(const struct bypass_pager_config *cfg, struct bypass_pager *p);

/* ---------------------------------------------------------------- evict.c */

/* The pager is a member of a process tree's ledger (tree.c). */
static inline bool bp_pager_tree(struct bypass_pager *p)
{
	return atomic_load_explicit(&p->tree, memory_order_relaxed) != NULL;
}
void bp_tree_uncharge(struct bypass_pager *p, uint32_t n);
/* n pages are no longer resident: the budget's count, and the tree's. */
static inline void bp_bud_sub(struct bypass_pager *p, uint32_t n)
{
	atomic_fetch_sub(&p->bud.resident, n);
	if (bp_unlikely(bp_pager_tree(p)))
		bp_tree_uncharge(p, n);
}
/* Room for the process tree: up to n of our own pages evicted (tree.c). */
uint32_t bp_evict_for_tree(struct bypass_pager *p, uint32_t n, bool block);

/* Reserve n pages of the budget, evicting if needed (may sleep).  With
 * must = false, only succeeds if no eviction is needed. */
int bp_pager_reserve(struct bypass_pager *p, uint32_t n, bool must);
void bp_pager_unreserve(struct bypass_pager *p, uint32_t n);
/* Reserve n pages only if that keeps the resident pages at or below the
 * high watermark (speculative pages: fault-around). */
int bp_pager_reserve_below_high(struct bypass_pager *p, uint32_t n);
/* The same for prefetched pages, evicting (never a PRIORITY page) to stay
 * at or below the high watermark if the evict lock is free; -EAGAIN. */
int bp_pager_reserve_prefetch(struct bypass_pager *p, uint32_t n);
/* Put a page that just became resident on a list (active or inactive). */
void bp_lru_add(struct bypass_pager *p, uint32_t id, bool active);
/* The same for a page read back from swap: active if it comes back sooner
 * than the active list would have kept it (Linux's workingset rule);
 * dist = pages evicted since it was. */
void bp_lru_add_refault(struct bypass_pager *p, uint32_t id, uint32_t dist);
void bp_lru_del(struct bypass_pager *p, uint32_t id);
/* Move a listed page to the tail of its inactive list (DONTNEED). */
void bp_lru_tail(struct bypass_pager *p, uint32_t id);
/* lru.c: up to want victims for an eviction round (DONTNEED pages, the
 * policy's, 2Q's, PRIORITY pages last), locked and off the lists; evict
 * lock held. */
uint32_t bp_select_victims(struct bypass_pager *p, uint32_t want, uint32_t *out);
/* Free a page's swap slot (page lock held). */
void bp_slot_free(struct bypass_pager *p, struct pg *pg);
/* Wait for every write-back in flight and finish it (evict lock held). */
void bp_evict_drain(struct bypass_pager *p);
/* Take the evict lock and finish every write-back in flight (tests: the
 * resident pages then no longer depend on how fast the disk wrote). */
void bp_evict_settle(struct bypass_pager *p);
/*
 * Fork (fork.c): begin sets the forking flag (reservations succeed at once,
 * above the budget if need be, and the access sampler parks nothing), then
 * takes the evict lock: from then on no page leaves the page table.  End,
 * in the parent: the flag cleared, eviction back within the budget, the
 * lock released; in the child (child = true): the flag cleared and the
 * lock reset, nothing else.
 */
void bp_evict_fork_begin(struct bypass_pager *p);
void bp_evict_fork_end(struct bypass_pager *p, bool child);
bool bp_evict_forking(struct bypass_pager *p);
int bp_evict_init(struct bypass_pager *p);
void bp_evict_fini(struct bypass_pager *p);
/* A fork child keeping p: its own ring and pidfd (the parent's are the
 * parent's). */
void bp_evict_child(struct bypass_pager *p);
void bp_pager_progress(struct bypass_pager *p);

/* ---------------------------------------------------------------- sample.c */

struct bp_sample;
/* Start / stop (every parked page put back) / free the access sampler;
 * without its thread (tests), pages are parked only by bp_sample_park_now. */
int bp_sample_start(struct bypass_pager *p, bool thread);
void bp_sample_stop(struct bypass_pager *p);
void bp_sample_free(struct bypass_pager *p);
/* A fork child keeping p: the parent's sampler forgotten (its parking area
 * is not inherited); true if it had a thread. */
bool bp_sample_forget_child(struct bypass_pager *p);
/* A fault on a parked page (locked, PW_PARK): its data back, a hit. */
int bp_sample_fault(struct bypass_pager *p, struct region *r, struct pg *pg, uint32_t id,
		    uintptr_t pa, bool write);
/* Page ids [id0, id0 + n) were unmapped (no reader can reach them): their
 * parking slots are free again (a region given the ids next must not find
 * the old data). */
void bp_sample_forget(struct bypass_pager *p, uint32_t id0, uint32_t n);
/* Park the resident pages of [addr, addr + n pages) now (tests): how many. */
uint32_t bp_sample_park_now(struct bypass_pager *p, uintptr_t addr, uint32_t n);
/* Put every parked page back now (tests). */
void bp_sample_unpark_now(struct bypass_pager *p);
void bp_sample_stats(struct bypass_pager *p, uint64_t *parked, uint64_t *hits, uint64_t *ns,
		     uint64_t *hit_ns);

/* ---------------------------------------------------------------- stats */

static inline void stat_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* This thread's shard of the counters (threads are numbered on first use). */
unsigned bp_stat_shard(void);
#define ST(p) ((p)->st[bp_stat_shard()])
/* A counter summed over the shards. */
#define ST_SUM(p, field)                                                                  \
	({                                                                                \
		uint64_t s_ = 0;                                                          \
		for (unsigned i_ = 0; i_ < PG_STAT_SHARDS; i_++)                         \
			s_ += atomic_load_explicit(&(p)->st[i_].field, memory_order_relaxed); \
		s_;                                                                       \
	})

#endif
