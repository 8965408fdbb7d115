/* SPDX-License-Identifier: MIT */
/*
 * The batch engine's completions: each posted result is matched to its
 * operation (a send finished or requeued when short, a sendfile's read, a
 * splice round's requests, an epoll wait of the merged wait), errors are
 * recorded for the next call on the descriptor, and cancellations seen
 * before what caused them are parked.  See batch_internal.h.
 */
#include "batch/batch_internal.h"
#include "core/syscall.h"

#include <liburing.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void record_error(struct bt_thread *th, struct bt_op *op, int err)
{
	struct bt_fdent *fe = op->fe;
	th->c.errors++;
	uint32_t f = atomic_load_explicit(&fe->flags, memory_order_relaxed);
	if (f & BT_FD_CLOSING) {
		bp_warn("bypass batch: deferred call on fd %d failed after the "
			"program closed it: %s (%zu bytes not sent)", op->fd,
			strerror(err), op->len - op->done);
		return;
	}
	bp_warn("bypass batch: deferred call on fd %d failed: %s; reported by "
		"the next call on it", op->fd, strerror(err));
	bp_bt_fd_set_err(fe, err, err == EPIPE && (op->flags & BT_OP_SIGPIPE));
}

/*
 * Under th's lock, th owns fe, nothing in flight: run fe's queued sends and
 * socket options now as system calls, in order (a direct call is about to
 * follow them; MSG_MORE lets the kernel put the last bytes in the same
 * packet as what follows, as TCP_CORK would).  Returns 0 when all ran, 1 when
 * the socket is full (the rest stays queued), -errno when one failed (what
 * is left of the stream is dropped, the error is the caller's to report).
 */
int bp_bt_run_queued(struct bt_thread *th, struct bt_fdent *fe, bool more)
{
	for (struct bt_op *op = fe->head; op; op = op->next)
		if (op->state != BT_QUEUED || !(op->flags & BT_OP_TRANSPARENT) ||
		    (op->kind != BT_SEND && op->kind != BT_SOCKOPT))
			return 1;
	while (fe->head) {
		struct bt_op *op = fe->head;
		if (op->kind == BT_SOCKOPT) {
			if (bp_sys_setsockopt(op->fd, op->u.so.level, op->u.so.name,
				    op->buf, op->u.so.len) < 0) {
				th->c.errors++;
				bp_warn("bypass batch: deferred setsockopt(%d, %d, %d): %s",
					op->fd, op->u.so.level, op->u.so.name, strerror(errno));
			}
		} else {
			int fl = MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0);
			while (op->done < op->len) {
				long n = bp_sys_sendto(op->fd, op->buf + op->done,
						 op->len - op->done, fl, NULL, 0);
				if (n > 0) {
					op->done += (size_t)n;
					continue;
				}
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0 && errno == EAGAIN)
					return 1;
				int e = n < 0 ? errno : EPIPE;
				th->c.errors++;
				while (fe->head) {
					struct bt_op *o = fe->head;
					fe->nqueued--;
					th->nqueued--;
					bp_bt_finish(th, o);
				}
				return -e;
			}
		}
		fe->nqueued--;
		th->nqueued--;
		bp_bt_finish(th, op);
	}
	return 0;
}

/* The op's successors on its descriptor were cut off with it: requeue them. */
static void mark_rest_requeue(struct bt_op *op)
{
	for (struct bt_op *o = op->next; o; o = o->next)
		if (o->state == BT_INFLIGHT)
			o->flags |= BT_OP_REQUEUE;
}

int bp_bt_visible_err(const struct bt_op *op, int err)
{
	if (err != EINTR && !bt_restartable(-err))
		return err;
	if (op->flags & BT_OP_TRANSPARENT)
		return EIO;
	switch (op->kind) {
	case BT_SEND:
	case BT_SENDMSG:
	case BT_WRITE:
	case BT_WRITEV:
	case BT_CLOSE:
		return EINTR;
	default: /* sendfile (its read), shutdown, setsockopt: no EINTR */
		return EIO;
	}
}

/* ------------------------------------------------------------ injection */

static struct {
	_Atomic int count, cls, res;
} inj;

int bp_bt_inject(int cls, int res, int count)
{
	int left = atomic_exchange(&inj.count, 0);
	atomic_store(&inj.cls, cls);
	atomic_store(&inj.res, res);
	atomic_store(&inj.count, count);
	return left;
}

uint64_t bp_bt_inject_sqe(struct io_uring_sqe *sqe, int cls)
{
	if (bp_likely(!atomic_load_explicit(&inj.count, memory_order_relaxed)))
		return 0;
	int want = atomic_load(&inj.cls);
	if (want != cls && !(cls == BT_INJ_READ && want == BT_INJ_READ_SHORT))
		return 0;
	int c = atomic_load(&inj.count);
	while (c > 0 && !atomic_compare_exchange_weak(&inj.count, &c, c - 1))
		;
	if (c <= 0)
		return 0;
	if (want == BT_INJ_READ_SHORT) {
		/* Part of it, whole pages where it can (as an interrupted
		 * read of the page cache ends). */
		unsigned half = sqe->len / 2;
		sqe->len = half >= 4096 ? half & ~4095u : half ? half : sqe->len;
		return 0;
	}
	sqe->fd = -1;
	sqe->flags &= (uint8_t)~IOSQE_FIXED_FILE;
	return BT_TAG_INJECTED;
}

/* ------------------------------------------------------------ completions */

/*
 * A transparent op failed for good (its error is recorded): the bytes
 * queued behind it on the stream must never go out, for the peer would
 * take them for the ones lost (the program was told they were sent; the
 * error it is told next ends the connection).  The data queued behind op
 * is dropped (an explicit call's reports -ECANCELED), an op whose file
 * read is in flight when that read completes; the in-flight ones, cancelled
 * with op's chain, are not requeued.  Closes, shutdowns and socket options
 * stay: the program asked for them, and they carry no bytes.  Before op
 * itself is finished.
 */
static void cut_stream(struct bt_thread *th, struct bt_op *op)
{
	for (struct bt_op *o = op->next, *n; o; o = n) {
		n = o->next;
		if (o->kind == BT_CLOSE || o->kind == BT_SHUTDOWN || o->kind == BT_SOCKOPT)
			continue;
		if (o->state == BT_INFLIGHT) {
			o->flags &= (uint16_t)~BT_OP_REQUEUE;
			continue;
		}
		if (o->flags & BT_OP_READING) {
			o->flags |= BT_OP_CUT;
			continue;
		}
		if (o->kind == BT_SENDFILE && !(o->flags & BT_OP_READ_DONE))
			th->nreads--;
		if (!(o->flags & BT_OP_TRANSPARENT))
			bp_bt_store_result(o, -ECANCELED);
		o->fe->nqueued--;
		th->nqueued--;
		bp_bt_finish(th, o);
	}
}

/*
 * A sendfile's file read completed (the op is queued: its send waits for
 * it).  Interrupted, or done in part, it is issued again by read_phase for
 * what is left; a read that failed drops the op, the end of the file
 * shortens it, and on a transparent op both cut the stream behind it.
 */
static void read_done(struct bt_thread *th, struct bt_op *op, int res)
{
	if (op->flags & BT_OP_READING) {
		op->flags &= (uint16_t)~BT_OP_READING;
		th->nreading--;
	}
	bool transparent = op->flags & BT_OP_TRANSPARENT;
	bool cut = op->flags & BT_OP_CUT;
	if (!cut && bt_restartable(res) && op->restarts < BT_MAX_RESTARTS) {
		op->restarts++;
		return;
	}
	if (!cut && res > 0 && (size_t)res < op->u.sf.len) {
		op->u.sf.at += (size_t)res;
		if (op->u.sf.off >= 0) /* else the file position moved */
			op->u.sf.off += res;
		op->u.sf.len -= (size_t)res;
		return;
	}
	th->nreads--;
	bp_bt_release_reader(op);
	op->flags |= BT_OP_READ_DONE;
	if (res < 0 || cut) {
		if (cut) {
			/* Behind a failure: dropped (its error was recorded). */
		} else if (transparent) {
			record_error(th, op, bp_bt_visible_err(op, -res));
			cut_stream(th, op);
		} else {
			bp_bt_store_result(op, -bp_bt_visible_err(op, -res));
		}
		op->fe->nqueued--;
		th->nqueued--;
		bp_bt_finish(th, op);
		return;
	}
	if ((size_t)res < op->u.sf.len) {
		/* The file ends before what is left (it is shorter than when
		 * the program looked at it): the op sends what it holds, and
		 * nothing may follow it on a transparent stream. */
		if (transparent) {
			record_error(th, op, EIO);
			cut_stream(th, op);
		}
		size_t miss = op->u.sf.len - (size_t)res;
		op->fe->bytes -= miss;
		th->bytes -= miss;
		op->len -= miss;
		op->u.sf.len = (size_t)res;
	}
	if (op->len == 0) {
		bp_bt_store_result(op, 0);
		op->fe->nqueued--;
		th->nqueued--;
		bp_bt_finish(th, op);
	}
}

/*
 * An op cancelled (-ECANCELED) while an op before it on its stream is still
 * in flight: with splices the completions of a chain may come out of order
 * (their requests run on the kernel's workers), so the cancellation may be
 * seen before the short or failed request that caused it.  Whether the op
 * is requeued (something before it came up short: mark_rest_requeue) or
 * dropped (something before it failed) is known only when every op before
 * it has completed.  Parked until then (still in flight).
 */
static bool park(struct bt_thread *th, struct bt_op *op)
{
	for (struct bt_op *o = op->fe->head; o && o != op; o = o->next)
		if (o->state == BT_INFLIGHT) {
			op->flags |= BT_OP_PARKED;
			th->nparked++;
			return true;
		}
	return false;
}

static void complete_op(struct bt_thread *th, struct bt_op *op, int res);

/* Parked ops of fe whose predecessors have all completed: their turn. */
static void unpark(struct bt_thread *th, struct bt_fdent *fe)
{
	for (struct bt_op *o = fe->head, *n; o && th->nparked; o = n) {
		n = o->next;
		if (o->state != BT_INFLIGHT)
			continue;
		if (!(o->flags & BT_OP_PARKED))
			return; /* in flight: those behind it wait for it */
		o->flags &= (uint16_t)~BT_OP_PARKED;
		th->nparked--;
		complete_op(th, o, -ECANCELED);
	}
}

static void complete(struct bt_thread *th, const struct io_uring_cqe *cqe)
{
	uintptr_t ud = (uintptr_t)cqe->user_data;
	if (!ud)
		return;
	int res = cqe->res;
	if (ud == BT_UD_EPWAIT) {
		th->epw_done = true;
		/* epoll_wait may fail with EINTR, never with a restart code. */
		th->epw_res = bt_restartable(res) ? -EINTR : res;
		return;
	}
	if (bp_unlikely(ud & BT_TAG_INJECTED)) {
		ud &= ~(uintptr_t)BT_TAG_INJECTED;
		if (res == -EBADF)
			res = atomic_load(&inj.res);
	}
	struct bt_op *op = (struct bt_op *)(ud & ~(uintptr_t)BT_TAG_MASK);
	unsigned tag = (unsigned)(ud & BT_TAG_MASK);
	if (tag == BT_TAG_READ) {
		read_done(th, op, res);
		return;
	}
	/* A splice round completes with its last request. */
	if (tag == BT_TAG_SPLICE && !(op = bp_bt_splice_cqe(th, (void *)op, res, &res)))
		return;
	if (res == -ECANCELED && (op->flags & BT_OP_TRANSPARENT) &&
	    !(op->flags & BT_OP_REQUEUE) && th->nsplice && park(th, op))
		return;
	struct bt_fdent *fe = op->fe;
	complete_op(th, op, res);
	if (th->nparked)
		unpark(th, fe);
}

/* An interrupted completion (bt_restartable) of op: issued again, with
 * what was linked behind it (cancelled), unless it has been too often. */
static bool restart(struct bt_thread *th, struct bt_op *op, int res)
{
	if (!bt_restartable(res) || op->restarts >= BT_MAX_RESTARTS || op->kind == BT_CLOSE)
		return false; /* a close is never issued twice: the number may be reused */
	op->restarts++;
	mark_rest_requeue(op);
	bp_bt_requeue(th, op);
	return true;
}

static void complete_op(struct bt_thread *th, struct bt_op *op, int res)
{
	struct bt_fdent *fe = op->fe;
	fe->ninflight--;
	th->ninflight--;
	bool transparent = op->flags & BT_OP_TRANSPARENT;
	bool requeue_me = op->flags & BT_OP_REQUEUE;

	if (!transparent) {
		/* Explicit calls: the result is what the system call returned
		 * (cancelled behind an interrupted request: issued again). */
		if (res == -ECANCELED && requeue_me) {
			bp_bt_requeue(th, op);
			return;
		}
		if (restart(th, op, res))
			return;
		if (op->kind == BT_CLOSE && res == -ECANCELED) {
			res = (int)bp_sys_close(op->fd);
			if (res < 0)
				res = -errno;
		}
		if (res < 0 && res != -ECANCELED) {
			th->c.errors++;
			res = -bp_bt_visible_err(op, -res);
		}
		bp_bt_store_result(op, res);
		bp_bt_finish(th, op);
		return;
	}

	switch (op->kind) {
	case BT_CLOSE:
		if (res == -ECANCELED && requeue_me) {
			bp_bt_requeue(th, op);
			return;
		}
		if (res == -ECANCELED)
			bp_sys_close(op->fd); /* the chain broke: close anyway */
		else if (res < 0 && !bt_restartable(res))
			bp_warn("bypass batch: deferred close(%d): %s", op->fd,
				strerror(-res));
		{
			uint32_t f = atomic_load_explicit(&fe->flags, memory_order_relaxed);
			/* Unless the number was taken again meanwhile. */
			if ((f & BT_FD_CLOSING) && op->u.cl.gen == atomic_load(&fe->gen))
				bp_bt_fd_forget(fe);
		}
		bp_bt_finish(th, op);
		return;
	case BT_SHUTDOWN:
	case BT_SOCKOPT:
		if (res == -ECANCELED && requeue_me) {
			bp_bt_requeue(th, op);
			return;
		}
		if (restart(th, op, res))
			return;
		if (res == -ECANCELED) {
			/* The data before it failed (already recorded); still
			 * do what the program asked. */
			if (op->kind == BT_SHUTDOWN)
				bp_sys_shutdown(op->fd, op->u.how);
		} else if (res < 0) {
			record_error(th, op, bp_bt_visible_err(op, -res));
			cut_stream(th, op);
		}
		bp_bt_finish(th, op);
		return;
	default:
		break;
	}

	/* Data, on behalf of a call that has returned already (a splice
	 * round counted its own). */
	if (res > 0 && op->kind != BT_SPLICE)
		op->done += (size_t)res;
	if (op->done >= op->len) {
		bp_bt_finish(th, op);
		return;
	}
	/* Interrupted: the rest goes again, what was linked behind it too. */
	if (restart(th, op, res))
		return;
	if (requeue_me && (res >= 0 || res == -ECANCELED)) {
		bp_bt_requeue(th, op);
		return;
	}
	if (res >= 0) {
		/* Short: finish it; what was linked behind it comes back too.
		 * (A splice round that ended before the op did is no short
		 * write unless the socket was full.) */
		if (op->kind != BT_SPLICE || (op->flags & BT_OP_NEEDPOLL))
			th->c.partial++;
		mark_rest_requeue(op);
		bp_bt_requeue(th, op);
		return;
	}
	if (res != -ECANCELED) {
		record_error(th, op, bp_bt_visible_err(op, -res));
		cut_stream(th, op);
	}
	bp_bt_finish(th, op);
}

void bp_bt_reap(struct bt_thread *th)
{
	struct io_uring *ring = th->ring;
	if (!ring)
		return;
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(ring, head, cqe)
		{
			complete(th, cqe);
			n++;
		}
		if (!n)
			return;
		io_uring_cq_advance(ring, n);
	}
}

