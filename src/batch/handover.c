/* SPDX-License-Identifier: MIT */
/*
 * Waiting for completions (the lock dropped while in the kernel), and the
 * hand-over of a descriptor's stream between threads: the owner's in-flight
 * requests are cancelled in its ring, what they did not do is requeued in
 * order, and the stream, ownerless for a moment, is adopted by the taker.
 */
#include "batch/batch_internal.h"

#include <liburing.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------------------- streams */

static unsigned stream_splices(struct bt_fdent *fe)
{
	unsigned n = 0;
	for (struct bt_op *op = fe->head; op; op = op->next)
		n += op->kind == BT_SPLICE;
	return n;
}

static unsigned stream_reads(struct bt_fdent *fe)
{
	unsigned n = 0;
	for (struct bt_op *op = fe->head; op; op = op->next)
		if (op->kind == BT_SENDFILE && op->state == BT_QUEUED &&
		    !(op->flags & BT_OP_READ_DONE))
			n++;
	return n;
}

/* Take fe's stream (ownerless, possibly carrying queued ops) into th. */
static void adopt(struct bt_thread *th, struct bt_fdent *fe)
{
	/* Registered-file slots belong to the previous owner's ring; files
	 * read by moved sendfile calls are now read by two threads' queues. */
	for (struct bt_op *op = fe->head; op; op = op->next) {
		op->flags &= (uint16_t)~BT_OP_FIXED;
		if (op->kind == BT_SENDFILE && !(op->flags & BT_OP_READ_DONE)) {
			struct bt_fdent *in = bp_bt_fd_peek(op->u.sf.in_fd);
			if (in)
				atomic_store(&in->reader, BT_READERS_MANY);
		}
	}
	th->nqueued += fe->nqueued;
	th->ninflight += fe->ninflight;
	th->nexplicit += fe->nexplicit;
	th->bytes += fe->bytes;
	th->nreads += stream_reads(fe);
	th->nsplice += stream_splices(fe);
	if (fe->nqueued) {
		bp_bt_activate(th, fe);
		if (th->nqueued == fe->nqueued)
			th->seg_ns = bypass_now_ns();
	}
}

static void detach(struct bt_thread *th, struct bt_fdent *fe)
{
	bp_bt_deactivate(th, fe);
	th->nqueued -= fe->nqueued;
	th->ninflight -= fe->ninflight;
	th->nexplicit -= fe->nexplicit;
	th->bytes -= fe->bytes;
	th->nreads -= stream_reads(fe);
	th->nsplice -= stream_splices(fe);
}

/* ------------------------------------------------------------- waiting */

/*
 * What the waiter waits for may move to another thread's ring (a stream
 * handed over), where no completion of ours will announce it: wait in
 * slices and look again.
 */
#define WAIT_SLICE_NS 20000000ull

int bp_bt_wait(struct bt_thread *th, bool (*pred)(struct bt_thread *, void *),
	    void *arg, int64_t timeout_ns, bool intr)
{
	uint64_t deadline = timeout_ns >= 0 ? bypass_now_ns() + (uint64_t)timeout_ns : 0;
	bp_bt_reap(th);
	while (!pred(th, arg)) {
		if (th->nqueued)
			bp_bt_submit(th);
		if (pred(th, arg))
			break;
		uint64_t slice = WAIT_SLICE_NS;
		if (timeout_ns >= 0) {
			uint64_t now = bypass_now_ns();
			if (now >= deadline)
				return -ETIMEDOUT;
			if (deadline - now < slice)
				slice = deadline - now;
		}
		struct __kernel_timespec ts = { (long long)(slice / 1000000000ull),
						(long long)(slice % 1000000000ull) };
		struct io_uring_getevents_arg ga = { .ts = (uint64_t)(uintptr_t)&ts };
		int e = -bp_bt_wait_unlocked(th, &ga);
		if (e == EINTR && intr && !pred(th, arg))
			return -EINTR;
	}
	return 0;
}

static bool pred_fd_idle(struct bt_thread *th, void *arg)
{
	struct bt_fdent *fe = arg;
	return atomic_load_explicit(&fe->owner, memory_order_relaxed) != th ||
	       fe->ninflight == 0;
}

int bp_bt_wait_fd_idle(struct bt_thread *th, struct bt_fdent *fe, bool intr)
{
	return bp_bt_wait(th, pred_fd_idle, fe, -1, intr);
}

static bool pred_idle(struct bt_thread *th, void *arg)
{
	(void)arg;
	return !th->nqueued && !th->ninflight;
}

int bp_bt_drain(struct bt_thread *th, int64_t timeout_ns)
{
	if (!th->ring)
		return 0;
	for (int i = 0; i < 8 && th->nqueued; i++)
		bp_bt_submit(th);
	return bp_bt_wait(th, pred_idle, NULL, timeout_ns, false);
}

/* ------------------------------------------------------------- cancel, hand-over */

void bp_bt_quiesce(struct bt_thread *th, struct bt_fdent *fe)
{
	bp_bt_reap(th);
	if (!fe->ninflight)
		return;
	bool explicit_inflight = false, fixed = false;
	for (struct bt_op *op = fe->head; op; op = op->next)
		if (op->state == BT_INFLIGHT) {
			fixed |= op->flags & BT_OP_FIXED;
			if (op->flags & BT_OP_TRANSPARENT)
				op->flags |= BT_OP_REQUEUE;
			else
				explicit_inflight = true;
		}
	if (!explicit_inflight) {
		struct io_uring_sync_cancel_reg reg;
		memset(&reg, 0, sizeof(reg));
		reg.fd = fe->fd;
		reg.flags = IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL;
		reg.timeout.tv_sec = -1;
		reg.timeout.tv_nsec = -1;
		int r = io_uring_register_sync_cancel(th->ring, &reg);
		if (r < 0 && r != -ENOENT && r != -EALREADY)
			bp_debug("bypass batch: cancel on fd %d: %s", fe->fd, strerror(-r));
		if (fixed) {
			reg.flags |= IORING_ASYNC_CANCEL_FD_FIXED;
			io_uring_register_sync_cancel(th->ring, &reg);
		}
	}
	/* The cancelled requests complete through their submitter's task work
	 * (an explicit call is waited for: it keeps its result).  A stream
	 * they finish is given up (maybe_release()) and may be another
	 * thread's before the loop looks again: its requests then are not
	 * in th's ring. */
	while (fe->ninflight && atomic_load_explicit(&fe->owner, memory_order_acquire) == th)
		bp_bt_wait_one_locked(th);
}

static void release_from(struct bt_thread *o, struct bt_fdent *fe)
{
	bp_bt_lock(o);
	if (atomic_load_explicit(&fe->owner, memory_order_acquire) == o) {
		if (o->ring)
			bp_bt_quiesce(o, fe);
		/* The completions quiesce() reaped may have finished the
		 * stream, and maybe_release() given it up: another thread
		 * may own it by now (taking an ownerless stream needs no
		 * lock of o's).  Detach only what is still o's. */
		if (atomic_load_explicit(&fe->owner, memory_order_acquire) == o) {
			detach(o, fe);
			atomic_store_explicit(&fe->owner, NULL, memory_order_release);
		}
	}
	bp_bt_unlock(o);
}

void bp_bt_acquire(struct bt_thread *th, struct bt_fdent *fe)
{
	for (;;) {
		struct bt_thread *o = atomic_load_explicit(&fe->owner, memory_order_acquire);
		if (o == th)
			return;
		if (!o) {
			if (atomic_compare_exchange_strong(&fe->owner, &o, th)) {
				adopt(th, fe);
				return;
			}
			continue;
		}
		bp_bt_unlock(th);
		release_from(o, fe);
		bp_bt_lock(th);
	}
}

