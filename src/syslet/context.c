/* SPDX-License-Identifier: MIT */
/*
 * The syslet context: options, requests, the public entry points that run
 * programs, counters, and rebuilding after fork.  The completion ring, reap
 * and wait are in ring.c.
 */
#include "syslet/syslet_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ requests */

/* Requests of up to SMALL atoms are kept for reuse (under qlock). */
#define SMALL 8
#define MAX_SPARE 1024

static size_t req_size(uint32_t cap)
{
	return sizeof(struct bp_syslet_req) + cap * sizeof(int64_t) +
	       cap * sizeof(struct bypass_syslet_atom);
}

struct bp_syslet_req *bp_syslet_req_new(bypass_syslet *s,
					const struct bypass_syslet_prog *p,
					const int64_t *res, uint32_t pc,
					uint32_t steps, uint32_t max_steps)
{
	uint32_t n = p->natoms, cap = n <= SMALL ? SMALL : n;
	struct bp_syslet_req *rq = NULL;
	pthread_mutex_lock(&s->qlock);
	if (cap == SMALL && s->spare) {
		rq = s->spare;
		s->spare = rq->next;
		s->nspare--;
	}
	pthread_mutex_unlock(&s->qlock);
	/* 64-byte aligned: the io_uring engine packs an atom index into the
	 * low bits of the address. */
	if (!rq && posix_memalign((void **)&rq, 64, req_size(cap)))
		return NULL;
	memset(rq, 0, sizeof(*rq));
	rq->cap = cap;
	rq->tag = p->tag;
	rq->natoms = n;
	rq->max_steps = max_steps;
	rq->steps = steps;
	rq->pc = (uint16_t)pc;
	rq->atoms = (struct bypass_syslet_atom *)(rq->res + cap);
	memcpy(rq->atoms, p->atoms, n * sizeof(struct bypass_syslet_atom));
	if (res)
		memcpy(rq->res, res, n * sizeof(int64_t));
	else
		memset(rq->res, 0, n * sizeof(int64_t));
	pthread_mutex_lock(&s->qlock);
	rq->lnext = s->live;
	if (s->live)
		s->live->lprev = rq;
	s->live = rq;
	pthread_mutex_unlock(&s->qlock);
	return rq;
}

static void unlink_live(bypass_syslet *s, struct bp_syslet_req *rq)
{
	if (rq->lprev)
		rq->lprev->lnext = rq->lnext;
	else
		s->live = rq->lnext;
	if (rq->lnext)
		rq->lnext->lprev = rq->lprev;
}

void bp_syslet_req_free(bypass_syslet *s, struct bp_syslet_req *rq)
{
	pthread_mutex_lock(&s->qlock);
	unlink_live(s, rq);
	if (rq->cap == SMALL && s->nspare < MAX_SPARE) {
		rq->next = s->spare;
		s->spare = rq;
		s->nspare++;
		rq = NULL;
	}
	pthread_mutex_unlock(&s->qlock);
	free(rq);
}

static void free_all_live(bypass_syslet *s)
{
	while (s->live) {
		struct bp_syslet_req *rq = s->live;
		s->live = rq->lnext;
		free(rq);
	}
}

static void free_spares(bypass_syslet *s)
{
	while (s->spare) {
		struct bp_syslet_req *rq = s->spare;
		s->spare = rq->next;
		free(rq);
	}
	s->nspare = 0;
}

/* ------------------------------------------------------------------ fork */

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * In a child after fork: the programs in flight belong to the parent (its
 * workers and its io_uring run them and post into the parent's ring).  Start
 * over with an empty ring, no workers, and an io_uring of the child's own.
 */
void bp_syslet_after_fork(bypass_syslet *s)
{
	pthread_mutex_lock(&fork_lock);
	if (s->gen != bp_fork_gen()) {
		pthread_mutex_init(&s->qlock, NULL);
		pthread_cond_init(&s->qcond, NULL);
		pthread_cond_init(&s->idle_cond, NULL);
		pthread_mutex_init(&s->sqlock, NULL);
		pthread_mutex_init(&s->cqlock, NULL);
		free_all_live(s);
		s->qhead = s->qtail = NULL;
		s->nthreads = s->nidle = s->nrunning = 0;
		s->stopping = false;
		bp_syslet_ring_reset(s);
		atomic_store(&s->uring_waiter, 0);
		if (s->ring) {
			bp_syslet_uring_teardown(s, true);
			atomic_store(&s->broken, 0);
			if (bp_syslet_uring_setup(s) < 0)
				s->engine = BYPASS_SYSLET_ENGINE_WORKERS;
		}
		s->gen = bp_fork_gen();
	}
	pthread_mutex_unlock(&fork_lock);
}

/* ------------------------------------------------------------ counters */

static _Atomic uint64_t serials;
static __thread struct {
	uint64_t serial;
	struct bp_syslet_tcount *tc;
} tcache;

static struct bp_syslet_tcount *tcount_slow(bypass_syslet *s)
{
	pid_t tid = bp_tid();
	pthread_mutex_lock(&s->qlock);
	struct bp_syslet_tcount *tc = s->tcounts;
	while (tc && tc->tid != tid)
		tc = tc->next;
	if (!tc && (tc = calloc(1, sizeof(*tc)))) {
		tc->tid = tid;
		tc->next = s->tcounts;
		s->tcounts = tc;
	}
	pthread_mutex_unlock(&s->qlock);
	if (tc) {
		tcache.serial = s->serial;
		tcache.tc = tc;
	}
	return tc;
}

static inline struct bp_syslet_tcount *tcount(bypass_syslet *s)
{
	if (bp_likely(tcache.serial == s->serial))
		return tcache.tc;
	return tcount_slow(s);
}

/* Only the owning thread writes: a plain add, atomic for the reader. */
static inline void tadd(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static void free_tcounts(bypass_syslet *s)
{
	while (s->tcounts) {
		struct bp_syslet_tcount *tc = s->tcounts;
		s->tcounts = tc->next;
		free(tc);
	}
}

/* ------------------------------------------------------------------ create */

/*
 * BYPASS_SYSLET_ENGINE is a default: read only when the caller left the
 * choice to the library (opts NULL or engine AUTO); an explicit WORKERS or
 * URING wins over it.
 */
static int engine_from_env(uint32_t *engine)
{
	const char *e = getenv("BYPASS_SYSLET_ENGINE");
	if (!e || !*e)
		return 0;
	if (!strcmp(e, "auto"))
		*engine = BYPASS_SYSLET_ENGINE_AUTO;
	else if (!strcmp(e, "uring") || !strcmp(e, "io_uring"))
		*engine = BYPASS_SYSLET_ENGINE_URING;
	else if (!strcmp(e, "workers"))
		*engine = BYPASS_SYSLET_ENGINE_WORKERS;
	else
		return -EINVAL;
	return 0;
}

int bypass_syslet_create(const struct bypass_syslet_opts *opts, bypass_syslet **out)
{
	static const struct bypass_syslet_opts defaults;
	if (!out)
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	if (opts->flags || opts->entries > 65536)
		return -EINVAL;
	for (size_t i = 0; i < BP_ARRAY_SIZE(opts->reserved); i++)
		if (opts->reserved[i])
			return -EINVAL;
	int r = bp_syslet_umem_init(); /* before anything follows a program */
	if (r)
		return r;
	uint32_t engine = opts->engine;
	if (engine != BYPASS_SYSLET_ENGINE_AUTO && engine != BYPASS_SYSLET_ENGINE_WORKERS &&
	    engine != BYPASS_SYSLET_ENGINE_URING)
		return -EINVAL;
	r = engine == BYPASS_SYSLET_ENGINE_AUTO ? engine_from_env(&engine) : 0;
	if (r) {
		bp_warn("bypass syslet: BYPASS_SYSLET_ENGINE must be auto, uring or workers");
		return r;
	}
	uint32_t entries = 8;
	while (entries < (opts->entries ? opts->entries : 256))
		entries <<= 1;
	uint64_t workers = opts->workers ? opts->workers
					 : bp_env_u64("BYPASS_SYSLET_WORKERS", 8);
	if (workers < 1)
		workers = 1;
	if (workers > 1024)
		workers = 1024;

	bypass_syslet *s;
	if (posix_memalign((void **)&s, BP_CACHELINE, sizeof(*s)))
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->mask = entries - 1;
	s->cells = calloc(entries, sizeof(*s->cells));
	s->threads = calloc(workers, sizeof(pthread_t));
	if (!s->cells || !s->threads) {
		free(s->cells);
		free(s->threads);
		free(s);
		return -ENOMEM;
	}
	s->max_workers = (uint32_t)workers;
	pthread_mutex_init(&s->qlock, NULL);
	pthread_cond_init(&s->qcond, NULL);
	pthread_cond_init(&s->idle_cond, NULL);
	pthread_mutex_init(&s->sqlock, NULL);
	pthread_mutex_init(&s->cqlock, NULL);
	bp_syslet_ring_reset(s);
	s->spin_ns = bp_env_u64("BYPASS_SYSLET_SPIN_NS", 20000);
	s->serial = atomic_fetch_add(&serials, 1) + 1;
	s->gen = bp_fork_gen();
	(void)bp_pid(); /* makes bp_fork_gen_fast() valid */

	s->engine = BYPASS_SYSLET_ENGINE_WORKERS;
	if (engine != BYPASS_SYSLET_ENGINE_WORKERS) {
		r = bp_syslet_uring_setup(s);
		if (r == 0) {
			s->engine = BYPASS_SYSLET_ENGINE_URING;
		} else if (engine == BYPASS_SYSLET_ENGINE_URING) {
			bp_warn("bypass syslet: io_uring engine required but refused: %s",
				strerror(-r));
			bypass_syslet_destroy(s);
			return -EOPNOTSUPP;
		} else {
			bp_info("bypass syslet: io_uring refused (%s): worker engine only",
				strerror(-r));
		}
	}
	*out = s;
	return 0;
}

int bypass_syslet_destroy(bypass_syslet *s)
{
	if (!s)
		return -EINVAL;
	bp_syslet_fork_check(s);
	bp_syslet_workers_stop(s);
	bp_syslet_uring_teardown(s, false);
	free_all_live(s);
	free_spares(s);
	free_tcounts(s);
	pthread_mutex_destroy(&s->qlock);
	pthread_cond_destroy(&s->qcond);
	pthread_cond_destroy(&s->idle_cond);
	pthread_mutex_destroy(&s->sqlock);
	pthread_mutex_destroy(&s->cqlock);
	free(s->cells);
	free(s->threads);
	free(s);
	return 0;
}

/* ------------------------------------------------------------------ running */

static inline bool ends_silently(const struct bypass_syslet_atom *atoms,
				 const struct bp_syslet_run *st)
{
	return !st->out_of_steps && !st->faulted &&
	       (atoms[st->pc].flags & BYPASS_SYSLET_NO_COMPLETE);
}

static void count_inline(bypass_syslet *s, const struct bp_syslet_run *st)
{
	struct bp_syslet_tcount *tc = tcount(s);
	if (bp_likely(tc)) {
		tadd(&tc->atoms_inline, st->executed);
		tadd(&tc->syscalls, st->syscalls);
		return;
	}
	atomic_fetch_add_explicit(&s->n.atoms_inline, st->executed, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->n.syscalls, st->syscalls, memory_order_relaxed);
}

/* One program accepted (and, if ended, ended inline) by this thread. */
static void count_program(bypass_syslet *s, uint64_t accepted, uint64_t ended_inline)
{
	struct bp_syslet_tcount *tc = tcount(s);
	if (bp_likely(tc)) {
		if (accepted)
			tadd(&tc->programs, accepted);
		if (ended_inline)
			tadd(&tc->programs_inline, ended_inline);
		return;
	}
	atomic_fetch_add_explicit(&s->n.programs, accepted, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->n.programs_inline, ended_inline, memory_order_relaxed);
}

/*
 * io_uring stores an atom's result through its ret when the completion is
 * collected, after every atom of the chain ran: a chain whose ret cannot be
 * written would not stop there as the other engines stop.  Such a program
 * is not sent to io_uring (the other engines end it with -EFAULT at that
 * atom).  Memory unmapped while the chain runs is still found, later.
 */
static bool rets_ok(const struct bypass_syslet_prog *p)
{
	for (uint32_t i = 0; i < p->natoms; i++)
		if (p->atoms[i].ret && bp_syslet_probe_store(p->atoms[i].ret))
			return false;
	return true;
}

/*
 * At a cachemiss with the io_uring engine: if the rest of the program (atoms
 * pc..n-1) is a straight line io_uring can express once the results of the
 * atoms that ran are constants (the descriptor an inline openat returned is
 * a plain descriptor now), send it as one chain and enter it.  Its
 * completion names atoms and steps of the whole program.
 */
static bool rest_to_uring(bypass_syslet *s, const struct bypass_syslet_prog *p,
			  const struct bp_syslet_run *st)
{
	uint32_t pc = st->pc, n = p->natoms, m = n - pc;
	if (s->engine != BYPASS_SYSLET_ENGINE_URING || st->partial || st->not_uring ||
	    st->steps + m > st->max_steps)
		return false;
	struct bypass_syslet_atom rest[BYPASS_SYSLET_MAX_ATOMS];
	for (uint32_t i = 0; i < m; i++) {
		rest[i] = p->atoms[pc + i];
		if (rest[i].next != 0 && !(i + 1 == m && rest[i].next == BYPASS_SYSLET_END))
			return false;
		if (rest[i].on_stop != 0 && rest[i].on_stop != BYPASS_SYSLET_END)
			return false;
		for (int k = 0; k < 6; k++) {
			struct bypass_syslet_arg *g = &rest[i].arg[k];
			if (g->kind != BYPASS_SYSLET_ARG_RESULT)
				continue;
			if (g->val < pc) {
				g->kind = BYPASS_SYSLET_ARG_CONST;
				g->val = (uint64_t)st->res[g->val];
			} else {
				g->val -= pc;
			}
		}
	}
	struct bypass_syslet_prog q = { .atoms = rest, .natoms = m, .tag = p->tag };
	struct bp_syslet_info info;
	if (bp_syslet_check(&q, &info, true) || !info.uring_ok || !rets_ok(&q))
		return false;
	if (bp_syslet_uring_queue_at(s, &q, &info, pc, st->steps))
		return false;
	int e = bp_syslet_uring_enter(s);
	if (e < 0)
		bp_warn("bypass syslet: io_uring_enter: %s", strerror(-e));
	return true;
}

/*
 * Start program p inline.  Returns 1 when it ended (st filled), 0 when its
 * rest was handed to io_uring or the workers (one in-flight slot is then
 * used: reserved here unless 'reserved'), or runs the rest here when it
 * cannot be handed over (the ring is full, no memory, no worker thread).
 */
static int start(bypass_syslet *s, const struct bypass_syslet_prog *p,
		 uint32_t max_steps, struct bp_syslet_run *st, bool reserved)
{
	int r = bp_syslet_exec(st, BP_SYSLET_INLINE);
	count_inline(s, st);
	if (r == BP_SYSLET_DONE)
		return 1;
	bool have_slot = reserved;
	if (!have_slot) {
		uint32_t old = atomic_fetch_add(&s->inflight, 1);
		have_slot = old <= s->mask;
		if (!have_slot)
			atomic_fetch_sub(&s->inflight, 1);
	}
	if (have_slot && rest_to_uring(s, p, st)) {
		atomic_fetch_add_explicit(&s->n.cachemiss, 1, memory_order_relaxed);
		return 0;
	}
	if (have_slot) {
		struct bp_syslet_req *rq = bp_syslet_req_new(s, p, st->res, st->pc,
							     st->steps, max_steps);
		if (rq)
			rq->partial = st->partial;
		if (rq && bp_syslet_workers_queue(s, rq) == 0) {
			atomic_fetch_add_explicit(&s->n.cachemiss, 1, memory_order_relaxed);
			return 0;
		}
		if (rq)
			bp_syslet_req_free(s, rq);
		if (!reserved)
			atomic_fetch_sub(&s->inflight, 1);
	}
	/* Nowhere to send it: the rest runs here, blocking. */
	st->executed = st->syscalls = 0;
	bp_syslet_exec(st, BP_SYSLET_WORKER);
	count_inline(s, st);
	return 1;
}

static void fill(struct bypass_syslet_completion *c, uint64_t tag,
		 const struct bp_syslet_run *st, uint16_t engine)
{
	c->tag = tag;
	c->result = st->result;
	c->atom = (uint16_t)st->pc;
	c->engine = engine;
	c->steps = st->steps;
}

int bypass_syslet_validate(const struct bypass_syslet_prog *prog)
{
	struct bypass_syslet_prog p;
	struct bypass_syslet_atom atoms[BYPASS_SYSLET_MAX_ATOMS];
	int r = bp_syslet_umem_init();
	if (r == 0)
		r = bp_syslet_copy_prog(prog, &p, atoms, NULL);
	return r ? r : bp_syslet_check(&p, NULL, false);
}

int bypass_syslet_run(bypass_syslet *s, const struct bypass_syslet_prog *prog,
		      struct bypass_syslet_completion *done)
{
	struct bp_syslet_info info;
	struct bypass_syslet_prog p;
	struct bypass_syslet_atom atoms[BYPASS_SYSLET_MAX_ATOMS];
	if (!s)
		return -EINVAL;
	int r = bp_syslet_copy_prog(prog, &p, atoms, done);
	if (r)
		return r;
	r = bp_syslet_check(&p, &info, false);
	if (r)
		return r;
	bp_syslet_fork_check(s);
	if (bp_unlikely(bp_syslet_broken(s)))
		return bp_syslet_broken(s);
	if (atomic_load_explicit(&s->inflight, memory_order_relaxed) > s->mask)
		return -EBUSY;
	int64_t res[BYPASS_SYSLET_MAX_ATOMS];
	struct bp_syslet_run st = {
		.atoms = p.atoms, .res = res, .natoms = p.natoms,
		.max_steps = info.max_steps,
	};
	if (!start(s, &p, info.max_steps, &st, false)) {
		count_program(s, 1, 0);
		/* its rest went to an io_uring that turned out closed */
		return bp_unlikely(bp_syslet_broken(s)) ? bp_syslet_broken(s) : 0;
	}
	count_program(s, 1, 1);
	if (done) {
		struct bypass_syslet_completion c;
		fill(&c, p.tag, &st, BYPASS_SYSLET_ENGINE_INLINE);
		if (bp_syslet_copy(done, &c, sizeof(c)))
			return -EFAULT; /* unmapped since it was zeroed */
	}
	return 1;
}

/*
 * Copy progs[0..n) and their atoms into memory of ours (pv, whose atoms
 * then point into *atoms, allocated here) and validate them, in order: the
 * first bad program's error (-EINVAL, -EFAULT) is the answer.
 */
static int copy_progs(const struct bypass_syslet_prog *progs, unsigned n,
		      struct bypass_syslet_prog *pv, struct bp_syslet_info *info,
		      bool uring, struct bypass_syslet_atom *small, size_t nsmall,
		      struct bypass_syslet_atom **atoms)
{
	if (bp_syslet_copy(pv, progs, n * sizeof(*pv)))
		return -EFAULT;
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		if (pv[i].atoms && pv[i].natoms <= BYPASS_SYSLET_MAX_ATOMS)
			total += pv[i].natoms;
	struct bypass_syslet_atom *a = small;
	if (total > nsmall && !(a = malloc(total * sizeof(*a))))
		return -ENOMEM;
	*atoms = a;
	for (unsigned i = 0; i < n; i++) {
		struct bypass_syslet_prog *p = &pv[i];
		if (!p->atoms || p->natoms == 0 || p->natoms > BYPASS_SYSLET_MAX_ATOMS)
			return -EINVAL;
		if (bp_syslet_copy(a, p->atoms, p->natoms * sizeof(*a)))
			return -EFAULT;
		p->atoms = a;
		a += p->natoms;
		int r = bp_syslet_check(p, &info[i], uring);
		if (r)
			return r;
	}
	return 0;
}

int bypass_syslet_submit(bypass_syslet *s, const struct bypass_syslet_prog *progs,
			 unsigned n)
{
	if (!s || !progs)
		return -EINVAL;
	if (n == 0)
		return 0;
	if (n > s->mask + 1)
		return -EBUSY;
	/* Everything is copied and validated before anything runs. */
	struct bp_syslet_info small_info[16], *info = small_info;
	struct bypass_syslet_prog small_pv[16], *pv = small_pv;
	struct bypass_syslet_atom small_atoms[32], *atoms = NULL;
	if (n > BP_ARRAY_SIZE(small_pv)) {
		info = malloc(n * sizeof(*info));
		pv = malloc(n * sizeof(*pv));
		if (!info || !pv) {
			free(info);
			free(pv);
			return -ENOMEM;
		}
	}
	int r = copy_progs(progs, n, pv, info, s->engine == BYPASS_SYSLET_ENGINE_URING,
			   small_atoms, BP_ARRAY_SIZE(small_atoms), &atoms);
	if (r)
		goto out;
	bp_syslet_fork_check(s);
	if (bp_unlikely(bp_syslet_broken(s))) {
		r = bp_syslet_broken(s);
		goto out;
	}
	uint32_t old = atomic_fetch_add(&s->inflight, n);
	if (old + n > s->mask + 1) {
		atomic_fetch_sub(&s->inflight, n);
		r = -EBUSY;
		goto out;
	}
	count_program(s, n, 0);
	bool use_uring = s->engine == BYPASS_SYSLET_ENGINE_URING;
	unsigned queued = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct bypass_syslet_prog *p = &pv[i];
		if (use_uring && info[i].uring_ok && rets_ok(p) &&
		    bp_syslet_uring_queue(s, p, &info[i]) == 0) {
			queued++;
			continue;
		}
		int64_t res[BYPASS_SYSLET_MAX_ATOMS];
		uint32_t max_steps = info[i].max_steps;
		struct bp_syslet_run st = {
			.atoms = p->atoms, .res = res, .natoms = p->natoms,
			.max_steps = max_steps,
		};
		if (start(s, p, max_steps, &st, true)) {
			struct bypass_syslet_completion c;
			fill(&c, p->tag, &st, BYPASS_SYSLET_ENGINE_INLINE);
			count_program(s, 0, 1);
			bp_syslet_post(s, &c, !ends_silently(p->atoms, &st), true);
		}
	}
	if (queued) {
		int e = bp_syslet_uring_enter(s);
		if (e < 0)
			bp_warn("bypass syslet: io_uring_enter: %s", strerror(-e));
	}
	r = bp_unlikely(bp_syslet_broken(s)) ? bp_syslet_broken(s) : (int)n;
out:
	if (atoms != small_atoms)
		free(atoms);
	if (info != small_info) {
		free(info);
		free(pv);
	}
	return r;
}

int bypass_syslet_stats(bypass_syslet *s, struct bypass_syslet_stats *out)
{
	if (!s || !out)
		return -EINVAL;
	bp_syslet_fork_check(s);
	memset(out, 0, sizeof(*out));
	out->programs = atomic_load(&s->n.programs);
	out->programs_inline = atomic_load(&s->n.programs_inline);
	uint64_t t_atoms = 0, t_calls = 0;
	pthread_mutex_lock(&s->qlock);
	for (struct bp_syslet_tcount *tc = s->tcounts; tc; tc = tc->next) {
		out->programs += atomic_load_explicit(&tc->programs, memory_order_relaxed);
		out->programs_inline +=
			atomic_load_explicit(&tc->programs_inline, memory_order_relaxed);
		t_atoms += atomic_load_explicit(&tc->atoms_inline, memory_order_relaxed);
		t_calls += atomic_load_explicit(&tc->syscalls, memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->qlock);
	out->programs_workers = atomic_load(&s->n.programs_workers);
	out->programs_uring = atomic_load(&s->n.programs_uring);
	out->cachemiss = atomic_load(&s->n.cachemiss);
	out->atoms_inline = atomic_load(&s->n.atoms_inline) + t_atoms;
	out->atoms_workers = atomic_load(&s->n.atoms_workers);
	out->atoms_uring = atomic_load(&s->n.atoms_uring);
	out->syscalls = atomic_load(&s->n.syscalls) + t_calls;
	out->engine = s->engine;
	pthread_mutex_lock(&s->qlock);
	out->workers = s->nthreads;
	pthread_mutex_unlock(&s->qlock);
	return 0;
}
