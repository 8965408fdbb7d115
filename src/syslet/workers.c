/* SPDX-License-Identifier: MIT */
/*
 * The worker engine: the "cachemiss" threads.  A program that would block
 * inline is queued here and a worker resumes it at the atom that would have
 * blocked, running the plain system calls.  Workers are threads of the
 * process, so they share its file table and credentials; they are started
 * when first needed (up to the context's limit) and block every signal but
 * the ones their own instructions raise, so that signals for the process
 * reach the program's own threads.
 */
#include "syslet/syslet_internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void run_one(bypass_syslet *s, struct bp_syslet_req *rq)
{
	struct bp_syslet_run st = {
		.atoms = rq->atoms, .res = rq->res, .natoms = rq->natoms,
		.max_steps = rq->max_steps, .steps = rq->steps, .pc = rq->pc,
		.partial = rq->partial,
	};
	bp_syslet_exec(&st, BP_SYSLET_WORKER);
	atomic_fetch_add_explicit(&s->n.atoms_workers, st.executed, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->n.syscalls, st.syscalls, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->n.programs_workers, 1, memory_order_relaxed);
	struct bypass_syslet_completion c = {
		.tag = rq->tag, .result = st.result, .atom = (uint16_t)(rq->base_atom + st.pc),
		.engine = BYPASS_SYSLET_ENGINE_WORKERS, .steps = st.steps,
	};
	bool silent = !st.out_of_steps && !st.faulted &&
		      (rq->atoms[st.pc].flags & BYPASS_SYSLET_NO_COMPLETE);
	bp_syslet_req_free(s, rq);
	bp_syslet_post(s, &c, !silent, true);
}

static void *worker_main(void *arg)
{
	bypass_syslet *s = arg;
	pthread_mutex_lock(&s->qlock);
	for (;;) {
		while (!s->qhead && !s->stopping) {
			s->nidle++;
			pthread_cond_wait(&s->qcond, &s->qlock);
			s->nidle--;
		}
		if (s->stopping)
			break;
		struct bp_syslet_req *rq = s->qhead;
		s->qhead = rq->next;
		if (!s->qhead)
			s->qtail = NULL;
		s->nrunning++;
		pthread_mutex_unlock(&s->qlock);
		run_one(s, rq);
		pthread_mutex_lock(&s->qlock);
		s->nrunning--;
	}
	pthread_mutex_unlock(&s->qlock);
	return NULL;
}

/*
 * Start a worker with every signal blocked (it inherits our mask) but the
 * ones its own instructions raise: a fault on a program's bad pointer is
 * a SIGSEGV or SIGBUS that core's handler turns into -EFAULT, and a
 * blocked one would kill the process instead; a SIGSYS from a seccomp
 * filter that traps a call an atom made goes to the program's handler, as
 * it would if the atom ran in the caller.
 */
static int spawn(bypass_syslet *s)
{
	sigset_t all, old;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&s->threads[s->nthreads], NULL, worker_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		bp_warn("bypass syslet: cannot start a worker: %s", strerror(r));
		return -r;
	}
	s->nthreads++;
	return 0;
}

int bp_syslet_workers_queue(bypass_syslet *s, struct bp_syslet_req *rq)
{
	rq->next = NULL;
	pthread_mutex_lock(&s->qlock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->qlock);
		return -ESHUTDOWN;
	}
	if (s->nidle == 0 && s->nthreads < s->max_workers) {
		int r = spawn(s);
		if (r && s->nthreads == 0) {
			pthread_mutex_unlock(&s->qlock);
			return r;
		}
	}
	if (s->qtail)
		s->qtail->next = rq;
	else
		s->qhead = rq;
	s->qtail = rq;
	if (s->nidle) {
		pthread_cond_signal(&s->qcond);
		atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->qlock);
	return 0;
}

void bp_syslet_workers_stop(bypass_syslet *s)
{
	pthread_mutex_lock(&s->qlock);
	s->stopping = true;
	/* Programs not started are dropped; their requests are on the live
	 * list, which the caller frees. */
	s->qhead = s->qtail = NULL;
	pthread_cond_broadcast(&s->qcond);
	uint32_t n = s->nthreads;
	pthread_mutex_unlock(&s->qlock);
	for (uint32_t i = 0; i < n; i++)
		pthread_join(s->threads[i], NULL);
	s->nthreads = 0;
}
