/* SPDX-License-Identifier: MIT */
/*
 * sendfile deferred without copying: io_uring has no sendfile opcode, so a
 * deferred sendfile of a regular file to a stream socket goes out as linked
 * splices, file -> pipe -> socket, a pair per pipe-full, in the socket's
 * chain behind what was queued before it.
 *
 * A round is what one submission carries: [POLLOUT wait] [pipe -> socket
 * for what an earlier round left in the pipe] then up to MAX_PAIRS pairs.
 * Each request is linked to the next, so a short or failed one stops the
 * rest (the kernel fails a short splice's link).  The socket is usually
 * non-blocking, so the pipe -> socket splice returns what fit (or EAGAIN)
 * instead of waiting for room: the op then goes back to the queue with
 * BT_OP_NEEDPOLL and its next round starts with a POLLOUT wait.  Rounds are
 * resubmitted by whatever submits next: the program's next call, or its
 * merged epoll wait, which keeps resubmitting them while it waits; that is
 * why a non-blocking socket is only spliced on a thread whose epoll waits
 * can merge (th->merged_ok).
 *
 * The pipes are non-blocking, come from a small pool per thread and go back
 * to it empty (a pipe left holding bytes, by an error, is closed).  The
 * file's descriptor is not duplicated (a crossing per call): the preload
 * holds the program's close of it back until the last splice reading it
 * has ended (BT_FD_CLOSE_LAST), so its number never names another file
 * while a splice may still resolve it.
 */
#include "batch/batch_internal.h"
#include "core/syscall.h"
#include "core/uring_link.h"

#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096u
/* file -> pipe -> socket pairs in one round (a chain of 2 per pair). */
#define MAX_PAIRS 32u
#define MAX_REQS (2 * MAX_PAIRS + 2)
enum { REQ_IN, REQ_OUT, REQ_POLL };

size_t bp_bt_splice_extra(void)
{
	return MAX_REQS * sizeof(struct bt_sreq);
}
#define POOL_MAX (sizeof(((struct bt_thread *)0)->pipes) / \
		  sizeof(((struct bt_thread *)0)->pipes[0]))

static _Atomic int have_splice; /* 0 not probed, 1 yes, -1 no */

bool bp_bt_splice_available(struct bt_thread *th)
{
	if (!th->ring)
		return false;
	int h = atomic_load_explicit(&have_splice, memory_order_relaxed);
	if (bp_likely(h))
		return h > 0;
	return bp_bt_have_ops(th, &have_splice, IORING_OP_SPLICE, IORING_OP_POLL_ADD,
			      "IORING_OP_SPLICE", "larger sendfile calls are deferred as splices",
			      "larger sendfile calls run as system calls");
}

/* A chunk fits the pipe whatever the file offset's alignment: a page less
 * than its capacity (a pipe holds pages, not bytes). */
static size_t chunk_of(const struct bt_splice *sp)
{
	return sp->cap - PAGE;
}

bool bp_bt_splice_pipe(struct bt_thread *th, struct bt_op *op)
{
	struct bt_splice *sp = &op->u.sp;
	if (th->npipes) {
		th->npipes--;
		sp->pipe_r = th->pipes[th->npipes].r;
		sp->pipe_w = th->pipes[th->npipes].w;
		sp->cap = th->pipes[th->npipes].cap;
		return true;
	}
	int p[2];
	if (bp_sys_pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return false;
	long cap = bp_sys_fcntl(p[1], F_SETPIPE_SZ, (long)bp_bt_ecfg.pipe_size);
	if (cap < 0) /* above pipe-max-size or the user's pipe pages */
		cap = bp_sys_fcntl(p[1], F_GETPIPE_SZ, 0);
	if (cap < (long)(2 * PAGE) || cap > (1L << 30)) {
		bp_sys_close(p[0]);
		bp_sys_close(p[1]);
		return false;
	}
	sp->pipe_r = p[0];
	sp->pipe_w = p[1];
	sp->cap = (unsigned)cap;
	return true;
}

unsigned bp_bt_splice_want(const struct bt_op *op)
{
	const struct bt_splice *sp = &op->u.sp;
	size_t chunk = chunk_of(sp), left = op->len - sp->rd;
	size_t pairs = (left + chunk - 1) / chunk;
	if (pairs > MAX_PAIRS)
		pairs = MAX_PAIRS;
	return (unsigned)(2 * pairs) + (sp->rd > op->done) +
	       !!(op->flags & BT_OP_NEEDPOLL);
}

/* The chain's next entry (room was checked: the queue cannot run out),
 * request n of op's round. */
static struct io_uring_sqe *next(struct bp_link *chain, struct bt_op *op, unsigned n,
				 int kind, size_t want)
{
	struct bt_sreq *rq = &op->u.sp.req[n];
	rq->op = op;
	rq->kind = (uint8_t)kind;
	rq->want = (uint32_t)want;
	return bp_link_next(chain, IOSQE_IO_LINK);
}

static void set_req(struct io_uring_sqe *sqe, struct bt_op *op, unsigned n)
{
	uint64_t mark = op->u.sp.req[n].kind == REQ_POLL ? 0 : bp_bt_inject_sqe(sqe, BT_INJ_SPLICE);
	io_uring_sqe_set_data64(sqe, (uint64_t)((uintptr_t)&op->u.sp.req[n] | BT_TAG_SPLICE) | mark);
}

unsigned bp_bt_splice_prep(struct bt_thread *th, struct bt_op *op, struct bp_link *chain,
			   bool *whole)
{
	(void)th;
	struct bt_splice *sp = &op->u.sp;
	unsigned space = io_uring_sq_space_left(chain->ring);
	size_t fill = sp->rd - op->done, chunk = chunk_of(sp), left = op->len - sp->rd;
	unsigned fixed = (fill ? 1u : 0u) + ((op->flags & BT_OP_NEEDPOLL) ? 1u : 0u);
	if (space < fixed + (left ? 2u : 0u) || (!fixed && !left))
		return 0;
	size_t pairs = (left + chunk - 1) / chunk;
	if (pairs > MAX_PAIRS)
		pairs = MAX_PAIRS;
	if (pairs > (space - fixed) / 2)
		pairs = (space - fixed) / 2;
	unsigned n = 0;
	if (op->flags & BT_OP_NEEDPOLL) {
		struct io_uring_sqe *sqe = next(chain, op, n, REQ_POLL, 0);
		io_uring_prep_poll_add(sqe, op->fd, POLLOUT);
		set_req(sqe, op, n);
		op->flags &= (uint16_t)~BT_OP_NEEDPOLL;
		n++;
	}
	if (fill) {
		struct io_uring_sqe *sqe = next(chain, op, n, REQ_OUT, fill);
		io_uring_prep_splice(sqe, sp->pipe_r, -1, op->fd, -1, (unsigned)fill,
				     pairs ? SPLICE_F_MORE : 0);
		set_req(sqe, op, n);
		n++;
	}
	size_t at = sp->rd;
	for (size_t i = 0; i < pairs; i++) {
		size_t k = op->len - at < chunk ? op->len - at : chunk;
		struct io_uring_sqe *sqe = next(chain, op, n, REQ_IN, k);
		io_uring_prep_splice(sqe, sp->in_fd, (int64_t)(sp->off + (off_t)at), sp->pipe_w,
				     -1, (unsigned)k, 0);
		set_req(sqe, op, n++);
		sqe = next(chain, op, n, REQ_OUT, k);
		io_uring_prep_splice(sqe, sp->pipe_r, -1, op->fd, -1, (unsigned)k,
				     i + 1 < pairs ? SPLICE_F_MORE : 0);
		set_req(sqe, op, n++);
		at += k;
	}
	*whole = at == op->len;
	sp->pending = n;
	sp->round_out = 0;
	sp->ran = 0;
	sp->err = 0;
	sp->full = false;
	return n;
}

struct bt_op *bp_bt_splice_cqe(struct bt_thread *th, void *req, int res, int *out)
{
	(void)th;
	struct bt_sreq *rq = req;
	struct bt_op *op = rq->op;
	struct bt_splice *sp = &op->u.sp;
	if (res != -ECANCELED)
		sp->ran++;
	if (bt_restartable(res)) {
		/* Interrupted: the round ends here, short, and the op goes
		 * again from where it is (a wait for room included), unless
		 * it has been too often. */
		if (op->restarts < BT_MAX_RESTARTS) {
			op->restarts++;
			if (rq->kind == REQ_POLL)
				sp->full = true;
		} else if (!sp->err) {
			sp->err = EIO;
		}
		res = -ECANCELED; /* counted: nothing else to record */
	}
	switch (rq->kind) {
	case REQ_POLL:
		if (res < 0 && res != -ECANCELED && !sp->err)
			sp->err = -res;
		break;
	case REQ_IN:
		/* Short: the pipe took less (its pages), or the file ends. */
		if (res > 0)
			sp->rd += (size_t)res;
		else if (res == 0)
			sp->eof = true; /* the file ends before what was promised */
		else if (res == -EAGAIN && !sp->err)
			sp->err = EIO; /* the pipe full: never, it is drained first */
		else if (res != -ECANCELED && !sp->err)
			sp->err = -res;
		break;
	default: /* REQ_OUT: short or EAGAIN only when the socket is full */
		if (res > 0)
			sp->round_out += (size_t)res;
		if (res == -EAGAIN || (res >= 0 && (uint32_t)res < rq->want))
			sp->full = true;
		else if (res < 0 && res != -ECANCELED && !sp->err)
			sp->err = -res;
		break;
	}
	if (--sp->pending)
		return NULL;
	op->done += sp->round_out;
	if (sp->err)
		*out = -sp->err;
	else if (sp->eof)
		*out = -EIO;
	else if (!sp->ran)
		*out = -ECANCELED; /* something before it in the chain failed */
	else {
		*out = sp->round_out > INT32_MAX ? INT32_MAX : (int)sp->round_out;
		/* The socket was found full: the next round waits for room
		 * first. */
		if (sp->full)
			op->flags |= BT_OP_NEEDPOLL;
	}
	return op;
}

/* Whoever clears BT_FD_CLOSE_LAST closes the file (the program closed it). */
static void close_last(struct bt_fdent *in)
{
	if (atomic_fetch_and(&in->flags, ~BT_FD_CLOSE_LAST) & BT_FD_CLOSE_LAST) {
		int fd = in->fd;
		bp_bt_fd_forget(in);
		bp_sys_close(fd);
	}
}

void bp_bt_splice_free(struct bt_thread *th, struct bt_op *op)
{
	struct bt_splice *sp = &op->u.sp;
	if (sp->pipe_r >= 0) {
		if (th && sp->rd == op->done && th->npipes < POOL_MAX &&
		    th->gen == bp_fork_gen_fast()) {
			th->pipes[th->npipes].r = sp->pipe_r;
			th->pipes[th->npipes].w = sp->pipe_w;
			th->pipes[th->npipes].cap = sp->cap;
			th->npipes++;
		} else {
			/* Bytes left in it belong to no one now. */
			bp_sys_close(sp->pipe_r);
			bp_sys_close(sp->pipe_w);
		}
		sp->pipe_r = sp->pipe_w = -1;
	}
	if (sp->in_fd >= 0) {
		struct bt_fdent *in = bp_bt_fd_peek(sp->in_fd);
		sp->in_fd = -1;
		if (in && atomic_fetch_sub(&in->splicers, 1) == 1 &&
		    (atomic_load(&in->flags) & BT_FD_CLOSE_LAST))
			close_last(in);
	}
}

int bp_bt_splice_close(struct bt_fdent *fe)
{
	atomic_fetch_or(&fe->flags, BT_FD_CLOSING | BT_FD_CLOSE_LAST);
	if (atomic_load(&fe->splicers) > 0)
		return 0;
	/* The last splice ended meanwhile: whoever clears the bit closes. */
	if (atomic_fetch_and(&fe->flags, ~BT_FD_CLOSE_LAST) & BT_FD_CLOSE_LAST) {
		atomic_fetch_and(&fe->flags, ~BT_FD_CLOSING);
		return 1;
	}
	return 0;
}

static bool pred_no_splicers(struct bt_thread *th, void *arg)
{
	(void)th;
	return atomic_load((_Atomic int *)arg) == 0;
}

void bp_bt_splice_wait_file(struct bt_thread *th, struct bt_fdent *fe)
{
	if (atomic_load(&fe->splicers))
		bp_bt_wait(th, pred_no_splicers, &fe->splicers, -1, false);
}

static bool pred_no_splice(struct bt_thread *th, void *arg)
{
	(void)arg;
	return !th->nsplice;
}

void bp_bt_splice_finish_all(struct bt_thread *th)
{
	if (th->nsplice)
		bp_bt_wait(th, pred_no_splice, NULL, -1, false);
}

void bp_bt_splice_pool_drop(struct bt_thread *th)
{
	while (th->npipes) {
		th->npipes--;
		bp_sys_close(th->pipes[th->npipes].r);
		bp_sys_close(th->pipes[th->npipes].w);
	}
}
