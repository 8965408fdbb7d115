/* SPDX-License-Identifier: MIT */
/* syslet internals: the context, requests, the engines. */
#ifndef BYPASS_SYSLET_INTERNAL_H
#define BYPASS_SYSLET_INTERNAL_H

#include <bypass/syslet.h>

#include "core/internal.h"
#include "core/syscall.h" /* atoms run as bp_syscall6: -errno, no errno */

#include <pthread.h>

struct io_uring;

/* io_uring chains open at most this many direct descriptors each. */
#define BP_SYSLET_MAX_SLOTS 8

/* What validation learned about a program. */
struct bp_syslet_info {
	uint32_t max_steps;  /* the budget, resolved */
	bool uring_ok;       /* a linear chain io_uring can express */
	uint64_t chain_open; /* atoms that are openat whose fd stays in the chain */
};

/* A program that left the submitting thread (worker queue or io_uring). */
struct bp_syslet_req {
	struct bp_syslet_req *next;           /* worker queue */
	struct bp_syslet_req *lprev, *lnext;  /* the context's live list */
	uint64_t tag;
	uint32_t natoms, max_steps, steps;
	uint32_t cap;                         /* atoms it has room for */
	int64_t partial;                      /* see bp_syslet_run.partial */
	uint16_t pc;                          /* where to resume */
	uint16_t pending;                     /* io_uring: atoms not completed */
	uint16_t base_atom;                   /* io_uring: the chain is atoms
						 base_atom.. of the program */
	/* io_uring: set (release) once the request is complete and its chain
	   prepared, before the chain can be submitted; read (acquire) by the
	   collector.  The kernel orders the two already; this says so to
	   ThreadSanitizer. */
	_Atomic uint32_t armed;
	uint64_t chain_open;                  /* io_uring: openat atoms */
	uint32_t nslots;
	int32_t slot[BP_SYSLET_MAX_SLOTS];    /* direct descriptors */
	uint8_t slot_atom[BP_SYSLET_MAX_SLOTS]; /* the openat that fills each */
	struct bypass_syslet_atom *atoms;     /* copy, after res[] */
	int64_t res[];                        /* natoms results */
};

/* One cell of the completion ring (a bounded MPMC queue, Vyukov style). */
struct bp_syslet_cell {
	_Atomic uint64_t seq;
	struct bypass_syslet_completion c;
};

/* Counters of the inline path, one block per thread that uses a context:
   written by their thread only (no locked instruction), summed by stats. */
struct bp_syslet_tcount {
	struct bp_syslet_tcount *next;
	pid_t tid;
	_Atomic uint64_t programs, programs_inline, atoms_inline, syscalls;
};

struct bp_syslet_counters {
	_Atomic uint64_t programs, programs_inline, programs_workers,
		programs_uring, cachemiss, atoms_inline, atoms_workers,
		atoms_uring, syscalls;
};

struct bypass_syslet {
	/* completion ring */
	struct bp_syslet_cell *cells;
	uint32_t mask;                         /* entries - 1 */
	_Alignas(BP_CACHELINE) _Atomic uint64_t ctail;  /* producers */
	_Alignas(BP_CACHELINE) _Atomic uint64_t chead;  /* consumers */
	/* ev.value changes at every completion posted and every io_uring
	   submission (so that a waiter re-decides where to sleep) */
	_Alignas(BP_CACHELINE) struct bp_waitword ev;
	_Atomic uint32_t npub;                 /* completions published */
	_Atomic uint32_t reaped;               /* completions taken */
	_Atomic uint32_t inflight;             /* programs owing a ring entry or
						  in the ring */
	_Alignas(BP_CACHELINE) struct bp_syslet_counters n;

	/* worker pool */
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	pthread_cond_t idle_cond;              /* destroy waits for workers */
	struct bp_syslet_req *qhead, *qtail;
	struct bp_syslet_req *live;            /* every request, for fork and destroy */
	struct bp_syslet_req *spare;           /* freed small requests, for reuse */
	uint32_t nspare;
	pthread_t *threads;
	uint32_t max_workers, nthreads, nidle, nrunning;
	bool stopping;

	/* io_uring engine */
	uint32_t engine;                       /* WORKERS or URING */
	pthread_mutex_t sqlock, cqlock;
	struct io_uring *ring;                 /* NULL until first use */
	uint32_t nslots;                       /* registered file table size */
	_Atomic uint64_t *slotmap;             /* bit set = slot in use */
	_Atomic uint32_t uring_inflight;       /* chains not completed */
	_Atomic uint32_t uring_waiter;         /* a thread sleeps in io_uring */
	bool uring_failed;                     /* setup refused: workers only */
	/* -EBADFD once the io_uring was found closed or replaced behind the
	   context's back (io_uring_enter: -EBADF, -EOPNOTSUPP): run, submit
	   and wait say so rather than wait for chains that cannot complete */
	_Atomic int broken;

	struct bp_syslet_tcount *tcounts;      /* under qlock */
	uint64_t serial;                       /* unique per context */

	unsigned gen;                          /* fork generation */
	uint64_t spin_ns;
};

/* Completions in the ring now. */
static inline uint32_t bp_syslet_avail(bypass_syslet *s)
{
	return atomic_load_explicit(&s->npub, memory_order_seq_cst) -
	       atomic_load_explicit(&s->reaped, memory_order_seq_cst);
}

/* validate.c */
/* Validate p; with info, fill it (uring_ok only if uring is asked for). */
int bp_syslet_check(const struct bypass_syslet_prog *p,
		    struct bp_syslet_info *info, bool uring);
bool bp_syslet_forbidden(long nr);

/* exec.c: interpret atoms from *pc. */
enum bp_syslet_mode { BP_SYSLET_INLINE, BP_SYSLET_WORKER };
#define BP_SYSLET_DONE 0
#define BP_SYSLET_WOULDBLOCK 1
struct bp_syslet_run {
	const struct bypass_syslet_atom *atoms;
	int64_t *res;
	uint32_t natoms, max_steps, steps;
	uint32_t pc;       /* next atom; on DONE, the atom that ended it */
	uint32_t executed; /* atoms run by this call */
	uint32_t syscalls; /* system calls made by this call */
	bool out_of_steps; /* on DONE: the step budget ran out at pc */
	bool faulted;      /* on DONE: a bad pointer ended it (-EFAULT) */
	int64_t partial;   /* bytes the inline try of the write at pc wrote */
	bool not_uring;    /* the atom at pc must not go to io_uring */
	int64_t result;    /* on DONE */
};
int bp_syslet_exec(struct bp_syslet_run *r, enum bp_syslet_mode mode);
/* Does the atom's stop condition trigger for result res? */
static inline bool bp_syslet_stops(uint32_t flags, int64_t res)
{
	return ((flags & BYPASS_SYSLET_STOP_ON_NONZERO) && res != 0) ||
	       ((flags & BYPASS_SYSLET_STOP_ON_ZERO) && res == 0) ||
	       ((flags & BYPASS_SYSLET_STOP_ON_NEGATIVE) && res < 0) ||
	       ((flags & BYPASS_SYSLET_STOP_ON_NON_POSITIVE) && res <= 0);
}

/* umem.c: the caller's memory; -EFAULT where it faults.  bp_syslet_umem_init
   (hooks core's fault handler) must have returned 0 before any is used. */
int bp_syslet_umem_init(void);
int bp_syslet_copy(void *dst, const void *src, size_t len); /* len % 8 == 0 */
int bp_syslet_probe_out(void *dst, size_t len);  /* zero it: len % 8 == 0 */
int bp_syslet_load(const int64_t *p, int64_t *out);
int bp_syslet_store(int64_t *p, int64_t v);
int bp_syslet_probe_store(int64_t *p);           /* would a store fault? */
int bp_syslet_umem_add(int64_t *p, int64_t delta, int64_t *out);
/*
 * Copy *user and its atoms (into atoms[BYPASS_SYSLET_MAX_ATOMS]) to *p, whose
 * atoms then point there, and zero *done if not NULL: 0, -EINVAL (user or
 * its atoms NULL, natoms out of bounds), -EFAULT (any of it unreadable, done
 * unwritable).  What runs is the copy, so what ran is what was validated.
 */
int bp_syslet_copy_prog(const struct bypass_syslet_prog *user,
			struct bypass_syslet_prog *p, struct bypass_syslet_atom *atoms,
			struct bypass_syslet_completion *done);

/* fds.c: the contexts' own descriptors, refused to atoms. */
int bp_syslet_fd_reserve(int fd);   /* moves it high and marks it; the new fd */
void bp_syslet_fd_release(int fd);
bool bp_syslet_fd_reserved(long fd);
/* Would atom nr(a) close, replace, duplicate or map a marked descriptor? */
bool bp_syslet_fd_refused_slow(long nr, const long *a);
static inline bool bp_syslet_fd_refused(long nr, const long *a)
{
	switch (nr) {
	case 3: case 32: case 33: case 292: case 72: case 9: case 436:
		/* close, dup, dup2, dup3, fcntl, mmap, close_range */
		return bp_syslet_fd_refused_slow(nr, a);
	default:
		return false;
	}
}

/*
 * close_range with CLOSE_RANGE_UNSHARE gives the thread that runs it a file
 * table of its own (it is unshare(CLONE_FILES), then the close): on a
 * worker, the programs it ran afterwards would name descriptors of a table
 * the caller no longer sees.  Refused like unshare: by validation when the
 * flags are a constant (bp_syslet_check), as the atom's -EINVAL when they
 * are loaded or an earlier result (bp_syslet_exec), in every engine.
 */
#define BP_SYSLET_CLOSE_RANGE_UNSHARE 2u /* <linux/close_range.h> */
static inline bool bp_syslet_unshares(long nr, const long *a)
{
	return nr == 436 /* close_range */ && ((unsigned long)a[2] & BP_SYSLET_CLOSE_RANGE_UNSHARE);
}

/* ring.c */
void bp_syslet_ring_reset(bypass_syslet *s);

/* context.c */
/* After fork, the child's context starts over (on first use). */
void bp_syslet_after_fork(bypass_syslet *s);
static inline void bp_syslet_fork_check(bypass_syslet *s)
{
	if (bp_unlikely(s->gen != bp_fork_gen_fast()))
		bp_syslet_after_fork(s);
}
/* 0, or -EBADFD once the context's io_uring was found closed or replaced. */
static inline int bp_syslet_broken(bypass_syslet *s)
{
	return atomic_load_explicit(&s->broken, memory_order_relaxed);
}
/* Publish c (or, if !complete, only release its in-flight slot); kick: wake
   a thread asleep in io_uring if there is one. */
void bp_syslet_post(bypass_syslet *s, const struct bypass_syslet_completion *c,
		    bool complete, bool kick);
struct bp_syslet_req *bp_syslet_req_new(bypass_syslet *s,
					const struct bypass_syslet_prog *p,
					const int64_t *res, uint32_t pc,
					uint32_t steps, uint32_t max_steps);
void bp_syslet_req_free(bypass_syslet *s, struct bp_syslet_req *rq);

/* workers.c */
int bp_syslet_workers_queue(bypass_syslet *s, struct bp_syslet_req *rq);
void bp_syslet_workers_stop(bypass_syslet *s);

/* uring.c */
int bp_syslet_uring_setup(bypass_syslet *s);
int bp_syslet_uring_queue(bypass_syslet *s, const struct bypass_syslet_prog *p,
			  const struct bp_syslet_info *info);
/* The same for the rest of a program that began inline: atom 0 of p is
   atom base_atom of the program, after base_steps steps. */
int bp_syslet_uring_queue_at(bypass_syslet *s, const struct bypass_syslet_prog *p,
			     const struct bp_syslet_info *info, uint32_t base_atom,
			     uint32_t base_steps);
int bp_syslet_uring_enter(bypass_syslet *s);
/* Collect the io_uring completions there are (none if another thread is
   collecting); returns the programs finished. */
int bp_syslet_uring_drain(bypass_syslet *s);
void bp_syslet_uring_kick(bypass_syslet *s);
/* Sleep in io_uring until a completion arrives (or a worker kicks). */
void bp_syslet_uring_sleep(bypass_syslet *s, unsigned min, int64_t timeout_ns);
void bp_syslet_uring_teardown(bypass_syslet *s, bool forked);

#endif
