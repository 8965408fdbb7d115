/* SPDX-License-Identifier: MIT */
/*
 * Thread states (made on first use, retired at thread exit, reused), fork
 * handling (the child starts empty and closes what the parent was closing),
 * draining at exit and exec, and the process-wide counters.
 */
#include "batch/batch_internal.h"
#include "core/syscall.h"
#include "core/uring.h"

#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------------------- threads */

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bt_thread *all_threads;  /* live and pooled, never freed */
static struct bt_counters dead;        /* retired threads' counters */
static __thread struct bt_thread *self_th __attribute__((tls_model("initial-exec")));
static pthread_key_t th_key;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

void bp_bt_lock(struct bt_thread *th)
{
	pthread_mutex_lock(&th->lock);
}

void bp_bt_unlock(struct bt_thread *th)
{
	pthread_mutex_unlock(&th->lock);
}

struct bt_thread *bp_bt_self(void)
{
	return self_th;
}

static void th_key_destroy(void *p)
{
	struct bt_thread *th = p;
	if (th && th == self_th)
		bp_bt_thread_retire(th);
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void engine_init_once(void)
{
	/* Core's fork handler (new pid, generation) must run before ours. */
	(void)bp_fork_gen();
	pthread_key_create(&th_key, th_key_destroy);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void bp_bt_engine_init(void)
{
	pthread_once(&engine_once, engine_init_once);
}

/*
 * The thread's io_uring: the engine's own, made on the thread's first
 * segment with the engine's settings, ended when the thread retires (or,
 * in a child after fork, dropped at once: the child's copy of the parent's
 * ring must not be used).  Its memory stays with the thread state.
 */
static int ring_make(struct bt_thread *th)
{
	if (!th->ring_mem && !(th->ring_mem = calloc(1, sizeof(*th->ring_mem))))
		return -ENOMEM;
	struct io_uring_params ip;
	memset(&ip, 0, sizeof(ip));
	ip.flags = IORING_SETUP_SUBMIT_ALL;
	if (bp_bt_ecfg.sqpoll) {
		ip.flags |= IORING_SETUP_SQPOLL;
		ip.sq_thread_idle = bp_bt_ecfg.sqpoll_idle_ms ? bp_bt_ecfg.sqpoll_idle_ms : 50;
	}
	unsigned entries = bp_bt_ecfg.entries ? bp_bt_ecfg.entries : 256;
	int r = bp_uring_init(entries, th->ring_mem, &ip);
	if (r < 0) {
		/* SQPOLL asked for and refused is reported, not dropped. */
		bp_warn("bypass batch: io_uring_queue_init(%u, flags %#x): %s", entries,
			ip.flags, strerror(-r));
		return r;
	}
	th->ring = th->ring_mem;
	th->gen = bp_fork_gen();
	th->fixed_slots = 0;
	return 0;
}

/* Under th's lock (or in a fork child): end the thread's ring. */
static void ring_end(struct bt_thread *th)
{
	if (th->ring)
		bp_uring_exit(th->ring);
	th->ring = NULL;
	th->fixed_slots = 0;
}

int bp_bt_self_make(struct bt_thread **out)
{
	struct bt_thread *th = self_th;
	if (bp_likely(th && th->ring && th->gen == bp_fork_gen_fast())) {
		*out = th;
		return 0;
	}
	bp_bt_engine_init();
	if (!th) {
		pthread_mutex_lock(&list_lock);
		for (th = all_threads; th; th = th->next)
			if (!th->live)
				break;
		if (!th) {
			th = calloc(1, sizeof(*th));
			if (!th) {
				pthread_mutex_unlock(&list_lock);
				return -ENOMEM;
			}
			pthread_mutex_init(&th->lock, NULL);
			th->next = all_threads;
			all_threads = th;
		}
		th->live = true;
		pthread_mutex_unlock(&list_lock);
		self_th = th;
		pthread_setspecific(th_key, th);
	}
	bp_bt_lock(th);
	if (!th->ring || th->gen != bp_fork_gen()) {
		int r = ring_make(th);
		if (r) {
			bp_bt_unlock(th);
			return r;
		}
	}
	bp_bt_unlock(th);
	*out = th;
	return 0;
}

/* ------------------------------------------------------------- kernel features */

bool bp_bt_have_ops(struct bt_thread *th, _Atomic int *cache, int op, int op2,
		    const char *name, const char *yes, const char *no)
{
	struct io_uring_probe *p = io_uring_get_probe_ring(th->ring);
	int h = p && io_uring_opcode_supported(p, op) &&
			(op2 < 0 || io_uring_opcode_supported(p, op2))
		? 1
		: -1;
	if (p)
		io_uring_free_probe(p);
	bp_info("bypass batch: %s %s: %s", name, h > 0 ? "found" : "missing", h > 0 ? yes : no);
	atomic_store(cache, h);
	return h > 0;
}

static _Atomic int have_op; /* 0 unknown, 1 the kernel has it, -1 not */

bool bp_bt_merged_wait_available(void)
{
	int h = atomic_load_explicit(&have_op, memory_order_relaxed);
	if (bp_likely(h))
		return h > 0;
	struct bt_thread *th;
	if (bp_bt_self_make(&th))
		return false;
	return bp_bt_have_ops(th, &have_op, BT_IORING_OP_EPOLL_WAIT, -1, "IORING_OP_EPOLL_WAIT",
			      "the flush and the event-loop wait share one io_uring_enter",
			      "the flush and the wait stay two system calls");
}

/* ------------------------------------------------------------- exit, fork */

static void free_stream(struct bt_fdent *fe, void *arg)
{
	bool close_zombies = arg != NULL;
	for (struct bt_op *op = fe->head, *next; op; op = next) {
		next = op->next;
		bp_bt_op_free(op);
	}
	fe->head = fe->tail = NULL;
	fe->nqueued = fe->ninflight = fe->nexplicit = 0;
	fe->bytes = 0;
	fe->active = false;
	fe->next_active = NULL;
	atomic_store_explicit(&fe->owner, NULL, memory_order_relaxed);
	atomic_store_explicit(&fe->err, 0, memory_order_relaxed);
	uint32_t f = atomic_load_explicit(&fe->flags, memory_order_relaxed);
	if (close_zombies && (f & BT_FD_CLOSING)) {
		/* The parent closes it once its data is out; the child has no
		 * business holding the socket open. */
		bp_sys_close(fe->fd);
		bp_bt_fd_forget(fe);
	}
}

static void add_counters(struct bt_counters *a, const struct bt_counters *b)
{
#define ADD(n) a->n += b->n;
	BT_COUNTERS(ADD)
#undef ADD
}

struct owned_arg {
	struct bt_thread *th;
	size_t lost;
};

static void drop_owned(struct bt_fdent *fe, void *arg)
{
	struct owned_arg *a = arg;
	if (atomic_load_explicit(&fe->owner, memory_order_relaxed) != a->th)
		return;
	for (struct bt_op *op = fe->head; op; op = op->next)
		a->lost += op->len - op->done;
	free_stream(fe, NULL);
}

void bp_bt_thread_retire(struct bt_thread *th)
{
	bp_bt_lock(th);
	int r = th->ring ? bp_bt_drain(th, (int64_t)bp_bt_ecfg.exit_wait_ms * 1000000) : 0;
	struct owned_arg a = { th, 0 };
	bp_bt_fd_each(drop_owned, &a);
	if (r || a.lost)
		bp_err("bypass batch: thread exit: %zu deferred bytes could not be "
		       "sent within %llu ms and are lost", a.lost,
		       (unsigned long long)bp_bt_ecfg.exit_wait_ms);
	th->act_head = th->act_tail = NULL;
	th->nqueued = th->ninflight = th->nexplicit = th->nreads = th->nreading = 0;
	th->nsplice = 0;
	th->nparked = 0;
	th->merged_ok = false;
	bp_bt_splice_pool_drop(th);
	th->bytes = 0;
	th->segment = 0;
	bp_bt_unlock(th);
	/* th's lock too (list_lock first, as fork_prepare and stats_sum take
	 * them): another thread's reap_owner reads th->ring under th's lock
	 * only, and stats_sum reads th->c under it. */
	pthread_mutex_lock(&list_lock);
	bp_bt_lock(th);
	add_counters(&dead, &th->c);
	memset(&th->c, 0, sizeof(th->c));
	ring_end(th);
	th->live = false;
	bp_bt_unlock(th);
	pthread_mutex_unlock(&list_lock);
	if (self_th == th)
		self_th = NULL;
}

static void take_foreign(struct bt_fdent *fe, void *arg)
{
	struct bt_thread *me = arg, *o = atomic_load(&fe->owner);
	if (o && o != me) {
		bp_bt_lock(me);
		bp_bt_acquire(me, fe);
		bp_bt_unlock(me);
	}
}

void bp_bt_drain_all(int64_t timeout_ns)
{
	struct bt_thread *me;
	if (bp_bt_self_make(&me))
		return;
	bp_bt_fd_each(take_foreign, me);
	bp_bt_lock(me);
	int r = bp_bt_drain(me, timeout_ns);
	if (r)
		bp_err("bypass batch: %zu deferred bytes still wait for their "
		       "sockets and will be lost", me->bytes);
	bp_bt_unlock(me);
}

static void fork_prepare(void)
{
	struct bt_thread *me = self_th;
	if (me && me->ring && me->gen == bp_fork_gen_fast()) {
		bp_bt_lock(me);
		bp_bt_submit(me);
		bp_bt_unlock(me);
	}
	pthread_mutex_lock(&list_lock);
	for (struct bt_thread *th = all_threads; th; th = th->next)
		if (th->live)
			bp_bt_lock(th);
}

static void fork_parent(void)
{
	for (struct bt_thread *th = all_threads; th; th = th->next)
		if (th->live)
			bp_bt_unlock(th);
	pthread_mutex_unlock(&list_lock);
}

static void fork_child(void)
{
	/* Only the forking thread exists here; its ring is rebuilt on use, and
	 * the child's copies of every thread's ring are dropped now. */
	bp_bt_fd_each(free_stream, (void *)1);
	for (struct bt_thread *th = all_threads; th; th = th->next) {
		pthread_mutex_init(&th->lock, NULL);
		th->act_head = th->act_tail = NULL;
		th->nqueued = th->ninflight = th->nexplicit = th->nreads = th->nreading = 0;
		th->nsplice = 0;
		th->nparked = 0;
		th->merged_ok = false;
		th->ord_fe = NULL;
		th->ord_fence = false;
		/* The child's copies of the pipes of the pool. */
		bp_bt_splice_pool_drop(th);
		th->bytes = 0;
		th->segment = 0;
		ring_end(th);
		memset(&th->c, 0, sizeof(th->c));
		th->live = th == self_th;
	}
	memset(&dead, 0, sizeof(dead));
	pthread_mutex_init(&list_lock, NULL);
}

/* ------------------------------------------------------------- stats */

void bp_bt_stats_sum(struct bt_counters *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&list_lock);
	add_counters(out, &dead);
	for (struct bt_thread *th = all_threads; th; th = th->next)
		if (th->live) {
			bp_bt_lock(th);
			add_counters(out, &th->c);
			bp_bt_unlock(th);
		}
	pthread_mutex_unlock(&list_lock);
}
