/* SPDX-License-Identifier: MIT */
/*
 * struct bypass_pager: the parts a pager is composed of, each owned by one
 * file (its comment says which, and its locking rule), and the threads the
 * pager starts.  pager.c composes them (create, destroy).
 */
#ifndef BYPASS_PAGER_STRUCT_H
#define BYPASS_PAGER_STRUCT_H

#include "core/internal.h"
#include "pager/lock.h"
#include "pager/stats.h"
#include "pager/table.h"
#include <bypass/pager.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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

/* Serving faults: the userfaultfds, the handler threads (dispatch.c) and
 * the bounce buffers (fault.c).  The descriptors are set at create
 * (uffd_thread also by the first BYPASS_PAGER_MAP_HANDLER map, under
 * p->lock) and closed at destroy; the threads start and stop under
 * p->lock; the bounce buffers are taken and given back with atomics
 * (bounce_map), from any context. */
struct pg_serve {
	int uffd_sigbus;     /* upcall userfaultfd, or -1 */
	int uffd_thread;     /* handler-thread userfaultfd, or -1 */
	struct bp_thread threads[PG_MAX_THREADS]; /* handler threads */
	unsigned nlive;      /* handler threads running */
	int stop_fd;         /* eventfd that stops the handler threads */
	_Atomic unsigned spinners; /* handler threads trying to spin (dispatch.c) */
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

/*
 * Every thread the pager starts (handler threads, the engine's monitor, the
 * prefetcher, the heat and access samplers) calls bp_enter_for_good()
 * first (core's per-thread "inside bypass" depth, which the preloads test):
 * a preload's wrappers pass its system calls, mmaps and mallocs straight
 * through.  Without it, under the pager preload, the access sampler's
 * madvise became the preload's "write zeros" and its buffers could land in
 * pager memory it then faulted on while holding a page lock.
 */

#endif
