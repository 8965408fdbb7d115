/* SPDX-License-Identifier: MIT */
/*
 * The batch engine: per-thread queues over per-thread io_uring rings,
 * per-descriptor streams, submission as linked chains (completions are in
 * complete.c, cancellation and hand-over of a stream between threads in
 * handover.c).  See batch_internal.h for the invariants.
 */
#include "batch/batch_internal.h"
#include "core/syscall.h"
#include "core/uring_link.h"

#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* SOCKET_URING_OP_SETSOCKOPT (Linux 6.7), not in liburing 2.3's headers. */
#define BT_SOCKET_URING_OP_SETSOCKOPT 3

/* ------------------------------------------------------------- ops, lists */

struct bt_op *bp_bt_op_new(size_t extra)
{
	struct bt_op *op = malloc(sizeof(*op) + extra);
	if (op) {
		memset(op, 0, sizeof(*op));
		op->cap = extra;
	}
	return op;
}

struct bt_op *bp_bt_tail_grow(struct bt_thread *th, struct bt_fdent *fe, size_t extra,
			   int msg_flags)
{
	struct bt_op *t = fe->tail;
	if (!t || t->state != BT_QUEUED || t->kind != BT_SEND || t->done ||
	    !(t->flags & BT_OP_TRANSPARENT) || (t->msg_flags & MSG_EOR) ||
	    atomic_load_explicit(&fe->owner, memory_order_relaxed) != th)
		return NULL;
	(void)msg_flags;
	if (t->len + extra > t->cap) {
		size_t cap = t->cap * 2 > t->len + extra ? t->cap * 2 : t->len + extra;
		struct bt_op *n = realloc(t, sizeof(*n) + cap);
		if (!n)
			return NULL;
		if (n != t) {
			struct bt_op **pp = &fe->head;
			while (*pp != t)
				pp = &(*pp)->next;
			*pp = n;
			fe->tail = n;
			n->buf = n->data;
		}
		n->cap = cap;
		t = n;
	}
	return t;
}

void bp_bt_grown(struct bt_thread *th, struct bt_fdent *fe, struct bt_op *op, size_t extra)
{
	op->len += extra;
	fe->bytes += extra;
	th->bytes += extra;
	th->c.deferred++;
	th->c.bytes += extra;
	if (op->kind == BT_SENDFILE)
		th->nreads++;
}

/* A queued sendfile of the preload holds its source descriptor open. */
void bp_bt_release_reader(struct bt_op *op)
{
	if (op->kind == BT_SPLICE)
		bp_bt_splice_free(NULL, op);
	else if (op->kind == BT_SENDFILE && (op->flags & BT_OP_TRANSPARENT) &&
	    !(op->flags & BT_OP_READ_DONE)) {
		struct bt_fdent *in = bp_bt_fd_peek(op->u.sf.in_fd);
		if (in && atomic_fetch_sub(&in->readers, 1) == 1)
			atomic_store(&in->reader, NULL);
	}
}

void bp_bt_op_free(struct bt_op *op)
{
	bp_bt_release_reader(op);
	free(op);
}

void bp_bt_activate(struct bt_thread *th, struct bt_fdent *fe)
{
	if (fe->active)
		return;
	fe->active = true;
	fe->next_active = NULL;
	if (th->act_tail)
		th->act_tail->next_active = fe;
	else
		th->act_head = fe;
	th->act_tail = fe;
}

void bp_bt_deactivate(struct bt_thread *th, struct bt_fdent *fe)
{
	if (!fe->active)
		return;
	struct bt_fdent **pp = &th->act_head, *prev = NULL;
	while (*pp && *pp != fe) {
		prev = *pp;
		pp = &(*pp)->next_active;
	}
	if (*pp) {
		*pp = fe->next_active;
		if (th->act_tail == fe)
			th->act_tail = prev;
	}
	fe->active = false;
	fe->next_active = NULL;
}

/* An empty stream goes back to no owner, so another thread takes it cheaply. */
static void maybe_release(struct bt_thread *th, struct bt_fdent *fe)
{
	if (!fe->head && atomic_load_explicit(&fe->owner, memory_order_relaxed) == th) {
		bp_bt_deactivate(th, fe);
		fe->nqueued = fe->ninflight = fe->nexplicit = 0;
		fe->bytes = 0;
		atomic_store_explicit(&fe->owner, NULL, memory_order_release);
	}
}

/* The payload an op holds in memory (a splice holds none: the bounds on
 * queued bytes are about memory and copies). */
static size_t op_mem(const struct bt_op *op)
{
	return op->kind == BT_SPLICE ? 0 : op->len;
}

void bp_bt_enqueue(struct bt_thread *th, struct bt_fdent *fe, struct bt_op *op)
{
	bp_bt_acquire(th, fe);
	op->fe = fe;
	op->fd = fe->fd;
	op->state = BT_QUEUED;
	op->next = NULL;
	if (fe->tail)
		fe->tail->next = op;
	else
		fe->head = op;
	fe->tail = op;
	fe->nqueued++;
	fe->bytes += op_mem(op);
	if (!th->nqueued)
		th->seg_ns = bypass_now_ns();
	th->nqueued++;
	th->bytes += op_mem(op);
	if (op->kind == BT_SPLICE)
		th->nsplice++;
	if (!(op->flags & BT_OP_TRANSPARENT)) {
		fe->nexplicit++;
		th->nexplicit++;
	}
	if (op->kind == BT_SENDFILE && !(op->flags & BT_OP_READ_DONE))
		th->nreads++;
	bp_bt_activate(th, fe);
	th->c.deferred++;
	th->c.bytes += op->len;
}

/* Remove a finished op from its stream and free it. */
void bp_bt_finish(struct bt_thread *th, struct bt_op *op)
{
	struct bt_fdent *fe = op->fe;
	struct bt_op **pp = &fe->head, *prev = NULL;
	while (*pp && *pp != op) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp) {
		*pp = op->next;
		if (fe->tail == op)
			fe->tail = prev;
	}
	fe->bytes -= op_mem(op);
	th->bytes -= op_mem(op);
	if (!(op->flags & BT_OP_TRANSPARENT)) {
		fe->nexplicit--;
		th->nexplicit--;
	}
	if (op->kind == BT_SPLICE) {
		th->nsplice--;
		bp_bt_splice_free(th, op); /* its pipe back to th's pool */
	}
	bp_bt_op_free(op);
	maybe_release(th, fe);
}

void bp_bt_requeue(struct bt_thread *th, struct bt_op *op)
{
	struct bt_fdent *fe = op->fe;
	op->state = BT_QUEUED;
	op->flags &= (uint16_t)~BT_OP_REQUEUE;
	fe->nqueued++;
	if (!th->nqueued)
		th->seg_ns = bypass_now_ns();
	th->nqueued++;
	bp_bt_activate(th, fe);
}

void bp_bt_store_result(struct bt_op *op, long res)
{
	/* complete.c maps restart codes (bp_bt_visible_err); the last line. */
	if (res >= -516 && res <= -512)
		res = -EIO;
	if (op->res)
		*op->res = res;
}

/* ------------------------------------------------------------- submission */

static void prep(struct bt_op *op, struct io_uring_sqe *sqe)
{
	int fd = op->fd;
	switch (op->kind) {
	case BT_SEND:
	case BT_SENDFILE:
		io_uring_prep_send(sqe, fd, op->buf + op->done, op->len - op->done,
				   op->msg_flags);
		break;
	case BT_SENDMSG:
		io_uring_prep_sendmsg(sqe, fd, &op->u.m.msg, (unsigned)op->msg_flags);
		break;
	case BT_WRITE:
		io_uring_prep_write(sqe, fd, op->buf, (unsigned)op->len, (uint64_t)-1);
		break;
	case BT_WRITEV:
		io_uring_prep_writev(sqe, fd, op->iov, (unsigned)op->u.v.iovcnt,
				     (uint64_t)-1);
		break;
	case BT_SHUTDOWN:
		io_uring_prep_shutdown(sqe, fd, op->u.how);
		break;
	case BT_CLOSE:
		io_uring_prep_close(sqe, fd);
		break;
	case BT_SOCKOPT:
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
		sqe->off = BT_SOCKET_URING_OP_SETSOCKOPT; /* cmd_op */
		sqe->addr = (uint32_t)op->u.so.level |
			    ((uint64_t)(uint32_t)op->u.so.name << 32);
		sqe->file_index = op->u.so.len; /* optlen */
		sqe->addr3 = (uint64_t)(uintptr_t)op->buf; /* optval */
		break;
	}
	if (op->flags & BT_OP_FIXED)
		sqe->flags |= IOSQE_FIXED_FILE;
	uint64_t mark = 0;
	if (op->kind <= BT_SENDFILE) /* the data kinds (tests' injection) */
		mark = bp_bt_inject_sqe(sqe, BT_INJ_SEND);
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | mark);
}

static bool ring_needs_enter(struct io_uring *ring)
{
	if (!(ring->flags & IORING_SETUP_SQPOLL))
		return true;
	return IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_NEED_WAKEUP;
}

/* One io_uring_submit, retried on transient errors. */
static int do_submit(struct bt_thread *th)
{
	struct io_uring *ring = th->ring;
	unsigned ready = io_uring_sq_ready(ring);
	if (!ready)
		return 0;
	bool enter = ring_needs_enter(ring);
	int r;
	for (int tries = 0;; tries++) {
		r = io_uring_submit(ring);
		if (r >= 0 || tries >= 100 ||
		    (r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ENOMEM))
			break;
		/* Completions may be what blocks the kernel: reap, then retry. */
		bp_bt_reap(th);
		if (r != -EINTR) {
			struct timespec ts = { 0, 100000 };
			bp_syscall2(SYS_nanosleep, &ts, NULL);
		}
	}
	if (enter)
		th->c.enters++;
	if (r < 0) {
		bp_err("bypass batch: io_uring_submit: %s (%u requests wait)",
		       strerror(-r), ready);
		return r;
	}
	th->c.submitted += (unsigned)r;
	return r;
}

/* Wait (at most a second) for a completion without dropping the lock. */
void bp_bt_wait_one_locked(struct bt_thread *th)
{
	struct io_uring *ring = th->ring;
	struct __kernel_timespec ts = { 1, 0 };
	struct io_uring_getevents_arg ga = { .ts = (uint64_t)(uintptr_t)&ts };
	bp_syscall6(SYS_io_uring_enter, ring->ring_fd, 0, 1,
		    IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, (long)&ga, sizeof(ga));
	th->c.enters++;
	bp_bt_reap(th);
}

/*
 * Under th's lock: wait for completions as ga says, with the lock dropped
 * while in the kernel (other threads may queue on our descriptors), then
 * reap.  Returns 0 or the enter's -errno (-EINTR, -ETIME, ...).
 */
int bp_bt_wait_unlocked(struct bt_thread *th, const struct io_uring_getevents_arg *ga)
{
	int fd = th->ring->ring_fd;
	bp_bt_unlock(th);
	long r = bp_syscall6(SYS_io_uring_enter, fd, 0, 1,
			     IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, (long)ga, sizeof(*ga));
	bp_bt_lock(th);
	th->c.enters++;
	bp_bt_reap(th);
	return r < 0 ? (int)r : 0;
}

/* Issue the file reads of queued sendfile calls not read yet (nor being
 * read); stops when the ring is full.  Returns how many it issued. */
static unsigned issue_reads(struct bt_thread *th)
{
	struct io_uring *ring = th->ring;
	unsigned n = 0;
	for (struct bt_fdent *fe = th->act_head; fe; fe = fe->next_active) {
		for (struct bt_op *op = fe->head; op; op = op->next) {
			if (op->kind != BT_SENDFILE || op->state != BT_QUEUED ||
			    (op->flags & (BT_OP_READ_DONE | BT_OP_REQUEUE | BT_OP_READING)) ||
			    op->done)
				continue;
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			if (!sqe)
				return n;
			io_uring_prep_read(sqe, op->u.sf.in_fd, op->buf + op->u.sf.at,
					   (unsigned)op->u.sf.len, (uint64_t)op->u.sf.off);
			uint64_t mark = bp_bt_inject_sqe(sqe, BT_INJ_READ);
			io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | BT_TAG_READ | mark);
			op->flags |= BT_OP_READING;
			th->nreading++;
			n++;
		}
	}
	return n;
}

/*
 * Phase one of a flush: read the files of queued sendfile calls.  A read
 * that comes back interrupted or in part (complete.c) is issued again for
 * what is left, until every read is done or failed: a send never carries a
 * buffer its read has not filled.
 */
static void read_phase(struct bt_thread *th)
{
	uint64_t t0 = bypass_now_ns();
	while (th->nreads && bypass_now_ns() - t0 < 60000000000ull) {
		if (!io_uring_sq_space_left(th->ring))
			do_submit(th);
		issue_reads(th);
		if (!th->nreading)
			break; /* none left to read, or none could be issued */
		do_submit(th);
		bp_bt_reap(th);
		/* Disk reads take their time; nothing else may touch the ops
		 * meanwhile. */
		while (th->nreading && bypass_now_ns() - t0 < 60000000000ull)
			bp_bt_wait_one_locked(th);
	}
	if (th->nreads)
		bp_err("bypass batch: %u file reads of sendfile calls did not "
		       "complete in 60 s", th->nreads);
}

/*
 * A close queued behind data on a descriptor: if the data is still in flight
 * after the submit, the descriptor stays open until it drains, and epoll
 * would keep reporting it to a program that believes it closed (and may have
 * freed what the event points to).  Take it out of the epoll sets we saw it
 * added to.
 */
static void unregister_epoll(struct bt_fdent *fe)
{
	for (int i = 0; i < 2; i++) {
		int ep = atomic_exchange(&fe->ep[i], 0);
		if (ep > 0)
			bp_sys_epoll_ctl(ep - 1, EPOLL_CTL_DEL, fe->fd, NULL);
	}
}

/*
 * Under th's lock: publish the SQEs made since the last submit and enter
 * once, submitting them and waiting for a completion as *ga says (the lock
 * is dropped while in the kernel).  Returns what io_uring_enter returned
 * (requests submitted) or -errno.
 */
/*
 * The merged wait runs in the same io_uring_enter as the chains: a socket
 * the program closed is still open while its close waits in a chain (and
 * even a close that ran leaves the file, and its epoll registration, until
 * the enter returns), so the wait would report it to a program that freed
 * what the event points to.  Take every descriptor whose close is queued
 * out of the epoll sets we saw it added to, by requests that run before
 * all others (the close would have done it).  Returns requests submitted
 * early (the ring was full).
 */
static int unregister_closing(struct bt_thread *th)
{
	int total = 0;
	for (struct bt_fdent *fe = th->act_head; fe; fe = fe->next_active) {
		bool closing = false;
		for (struct bt_op *op = fe->head; op && !closing; op = op->next)
			closing = op->kind == BT_CLOSE && op->state == BT_QUEUED &&
				  (op->flags & BT_OP_TRANSPARENT);
		if (!closing)
			continue;
		for (int i = 0; i < 2; i++) {
			int ep = atomic_exchange(&fe->ep[i], 0);
			if (ep <= 0)
				continue;
			struct io_uring_sqe *sqe = io_uring_get_sqe(th->ring);
			if (!sqe) {
				int r = do_submit(th);
				if (r > 0)
					total += r;
				if (!(sqe = io_uring_get_sqe(th->ring))) {
					bp_sys_epoll_ctl(ep - 1, EPOLL_CTL_DEL, fe->fd, NULL);
					continue;
				}
			}
			io_uring_prep_epoll_ctl(sqe, ep - 1, fe->fd, 2 /* EPOLL_CTL_DEL */,
						NULL);
			io_uring_sqe_set_data64(sqe, 0);
		}
	}
	return total;
}

static int enter_wait(struct bt_thread *th, const void *ga, bool wait_all, bool *all_in)
{
	struct io_uring *ring = th->ring;
	struct io_uring_sq *sq = &ring->sq;
	unsigned tail = sq->sqe_tail;
	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		io_uring_smp_store_release(sq->ktail, tail);
	}
	unsigned ready = tail - io_uring_smp_load_acquire(sq->khead);
	int fd = ring->ring_fd;
	bp_bt_unlock(th);
	long r = bp_syscall6(SYS_io_uring_enter, fd, ready, wait_all ? ready : 1,
			     IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, (long)ga,
			     sizeof(struct io_uring_getevents_arg));
	bp_bt_lock(th);
	th->c.enters++;
	*all_in = r >= 0 && (unsigned long)r >= ready;
	if (r >= 0)
		th->c.submitted += (unsigned long)r;
	return (int)r;
}

static int submit_common(struct bt_thread *th, const struct bt_epw_req *req);

/* The entries fe's queued chain takes. */
static unsigned chain_entries(struct bt_fdent *fe)
{
	unsigned n = 0;
	for (struct bt_op *op = fe->head; op; op = op->next)
		if (op->state == BT_QUEUED)
			n += op->kind == BT_SPLICE ? bp_bt_splice_want(op) : 1;
	return n;
}

int bp_bt_submit(struct bt_thread *th)
{
	return submit_common(th, NULL);
}

int bp_bt_submit_epw(struct bt_thread *th, const struct bt_epw_req *req)
{
	return submit_common(th, req);
}

static int submit_common(struct bt_thread *th, const struct bt_epw_req *req)
{
	struct bt_fdent *closing[32];
	unsigned nclosing = 0;
	if (!th->ring)
		return 0;
	bp_bt_reap(th);
	if (!th->nqueued && !req)
		return 0;
	struct io_uring *ring = th->ring;
	if (th->nreads)
		read_phase(th);
	int total = 0;
	if (req)
		total = unregister_closing(th);
	struct bt_fdent *fe = th->act_head, *keep_head = NULL, *keep_tail = NULL;
	th->act_head = th->act_tail = NULL;
	while (fe) {
		struct bt_fdent *next = fe->next_active;
		fe->next_active = NULL;
		if (fe->ninflight || !fe->nqueued) {
			/* Behind in-flight work (its cancellations are on their
			 * way): stays queued for the next submit. */
			if (fe->nqueued) {
				if (keep_tail)
					keep_tail->next_active = fe;
				else
					keep_head = fe;
				keep_tail = fe;
			} else {
				fe->active = false;
			}
			fe = next;
			continue;
		}
		/* A chain must go in whole: submit what is queued if it does
		 * not fit (core's linked-chain helper, shared with syslet). */
		if (bp_link_room(ring, chain_entries(fe)) != 1) {
			int r = do_submit(th);
			if (r > 0)
				total += r;
		}
		struct bp_link chain;
		bp_link_begin(&chain, ring);
		for (struct bt_op *op = fe->head; op; op = op->next) {
			if (op->state != BT_QUEUED)
				continue;
			/* Never send a buffer its read has not filled: the rest
			 * of the chain waits for a later submit. */
			if (op->kind == BT_SENDFILE && !(op->flags & BT_OP_READ_DONE))
				break;
			bool whole = true;
			if (op->kind == BT_SPLICE) {
				/* Its round: several linked requests. */
				if (!bp_bt_splice_prep(th, op, &chain, &whole))
					break;
			} else {
				struct io_uring_sqe *sqe = bp_link_next(&chain, IOSQE_IO_LINK);
				if (!sqe)
					break; /* only if a chain exceeds the ring: see MAX_OPS */
				prep(op, sqe);
			}
			if (op->kind == BT_CLOSE && chain.count > 1 &&
			    (op->flags & BT_OP_TRANSPARENT)) {
				if (nclosing < BP_ARRAY_SIZE(closing))
					closing[nclosing++] = fe;
				else
					unregister_epoll(fe);
			}
			op->state = BT_INFLIGHT;
			fe->nqueued--;
			fe->ninflight++;
			th->nqueued--;
			th->ninflight++;
			/* A splice that needs more rounds: nothing may run
			 * behind it before it has ended. */
			if (!whole)
				break;
		}
		fe->active = false;
		if (fe->nqueued)
			bp_bt_activate(th, fe);
		fe = next;
	}
	for (fe = keep_head; fe;) {
		struct bt_fdent *next = fe->next_active;
		fe->active = false;
		bp_bt_activate(th, fe);
		fe = next;
	}
	/* Every chain that could go is in the ring now: what the preload
	 * queues next comes after all of it (preload/batch/defer.c). */
	th->ord_fe = NULL;
	th->ord_fence = false;
	int r;
	struct io_uring_sqe *sqe = NULL;
	if (req) {
		if (!(sqe = io_uring_get_sqe(ring))) {
			if ((r = do_submit(th)) > 0)
				total += r;
			sqe = io_uring_get_sqe(ring);
		}
	}
	if (sqe) {
		io_uring_prep_rw(BT_IORING_OP_EPOLL_WAIT, sqe, req->epfd, req->events,
				 (unsigned)req->maxevents, 0);
		io_uring_sqe_set_data64(sqe, BT_UD_EPWAIT);
		th->epw_armed = true;
		th->epw_done = false;
		bool all_in;
		r = enter_wait(th, req->ga, req->wait_all, &all_in);
		if (!all_in) {
			/* The wait did not go in (the enter failed, or the ring
			 * took only part): it must never run later, behind the
			 * program's back.  It becomes a no-op; what else is
			 * left goes in with the next submit. */
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data64(sqe, 0);
			th->epw_armed = false;
		}
	} else {
		r = do_submit(th);
	}
	if (r > 0)
		total += r;
	bp_bt_reap(th);
	for (unsigned i = 0; i < nclosing; i++)
		if ((atomic_load(&closing[i]->flags) & BT_FD_CLOSING) &&
		    closing[i]->ninflight)
			unregister_epoll(closing[i]);
	return r < 0 && !total ? r : total;
}
