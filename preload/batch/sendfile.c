/* SPDX-License-Identifier: MIT */
/*
 * sendfile in the preload: deferred by copy (small files: the flush reads
 * the bytes into the queued send) or by linked splices (splice.c), or run
 * as the system call behind what is queued on the socket.  The decisions
 * of defer.c, for sendfile.
 */
#include "defer.h"
#include "core/syscall.h"

#include <liburing.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Can a sendfile in copy mode be deferred: does the file, as the program saw
 * it with fstat, hold all count bytes at off?  Only then is count what
 * sendfile(2) returns.  A request past that size runs as the system call:
 * the size may be stale (the file grew since the fstat), and answering a
 * short count, or 0 (end of file), from it would be a lie.
 */
static bool sendfile_whole(struct bt_fdent *in, off_t off, size_t count)
{
	uint32_t fi = atomic_load(&in->flags);
	if ((fi & (BT_FD_SIZE | BT_FD_REG)) != (BT_FD_SIZE | BT_FD_REG) ||
	    (fi & BT_FD_CLOSING) || off < 0)
		return false;
	int64_t size = atomic_load(&in->size);
	return off < size && count <= (uint64_t)(size - off);
}

/*
 * Copy mode: the file's bytes are read into the queue by the flush (a read
 * per call, before the chains), behind the header queued before them.
 * BT_PASS when it cannot be queued (the real call runs).
 */
static long queue_copy(struct bt_thread *th, struct bt_fdent *fe, struct bt_fdent *in,
		       int in_fd, off_t pos, size_t n)
{
	long r = bp_bt_tx_room(th, fe, n);
	if (r <= 0)
		return r < 0 ? r : BT_PASS;
	struct bt_thread *rd = NULL;
	if (!atomic_compare_exchange_strong(&in->reader, &rd, th) && rd != th)
		atomic_store(&in->reader, BT_READERS_MANY);
	atomic_fetch_add(&in->readers, 1);
	/* The file's bytes follow the header queued before them, in one send:
	 * the flush reads them into place. */
	struct bt_op *op = bp_bt_tail_grow(th, fe, n, 0);
	if (op) {
		op->kind = BT_SENDFILE;
		op->u.sf.at = op->len;
	} else {
		op = bp_bt_op_new(n);
		if (!op) {
			atomic_fetch_sub(&in->readers, 1);
			return BT_PASS;
		}
		op->kind = BT_SENDFILE;
		op->buf = op->data;
		op->flags = BT_OP_TRANSPARENT;
		op->u.sf.at = 0;
	}
	op->u.sf.in_fd = in_fd;
	op->u.sf.off = pos;
	op->u.sf.len = n;
	op->msg_flags = MSG_WAITALL | MSG_NOSIGNAL;
	op->flags |= BT_OP_SIGPIPE;
	if (op->u.sf.at)
		bp_bt_grown(th, fe, op, n);
	else {
		op->len = n;
		bp_bt_enqueue(th, fe, op);
	}
	bp_bt_order_queued(th, fe, false);
	return (long)n;
}

/*
 * Splice mode (splice.c): nothing is copied; the op holds a pipe and keeps
 * the file open.  A non-blocking socket needs the thread's epoll waits to
 * resubmit rounds that end short (merged_ok); a blocking one is spliced
 * only if one round carries it all (the kernel waits for room there).
 */
static long queue_splice(struct bt_thread *th, struct bt_fdent *fe, struct bt_fdent *in,
			 int in_fd, off_t pos, size_t n)
{
	bool nonblock = atomic_load(&fe->flags) & BT_FD_NONBLOCK;
	if (!bp_bt_cfg.splice || !bp_bt_splice_available(th) || (nonblock && !th->merged_ok))
		return BT_PASS;
	long r = bp_bt_tx_room(th, fe, 0);
	if (r <= 0)
		return r < 0 ? r : BT_PASS;
	struct bt_op *op = bp_bt_op_new(bp_bt_splice_extra());
	if (!op)
		return BT_PASS;
	op->kind = BT_SPLICE;
	op->u.sp.req = (struct bt_sreq *)(void *)op->data;
	op->u.sp.in_fd = -1;
	op->u.sp.off = pos;
	op->len = n;
	if (!bp_bt_splice_pipe(th, op)) {
		bp_bt_op_free(op);
		return BT_PASS;
	}
	if (!nonblock && bp_bt_splice_want(op) > 2 * 32) {
		bp_bt_splice_free(th, op);
		bp_bt_op_free(op);
		return BT_PASS;
	}
	op->u.sp.in_fd = in_fd;
	atomic_fetch_add(&in->splicers, 1);
	op->msg_flags = 0;
	op->flags = BT_OP_TRANSPARENT | BT_OP_SIGPIPE;
	bp_bt_enqueue(th, fe, op);
	bp_bt_order_queued(th, fe, false);
	th->c.spliced++;
	return (long)n;
}

/* Without an offset pointer sendfile reads at the file position and moves
 * it: move it now (one lseek), as the call would have.  -1: cannot. */
static off_t take_position(int in_fd, size_t count)
{
	if (count > (size_t)INT64_MAX)
		return -1;
	off_t r = bp_sys_lseek(in_fd, (off_t)count, SEEK_CUR);
	if (r < 0 || (uint64_t)r < count)
		return -1;
	return (off_t)((uint64_t)r - count);
}

long bp_bt_tx_sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	struct bt_thread *th;
	struct bt_fdent *fe;
	long r = bp_bt_tx_enter(out_fd, &th, &fe, true, NULL);
	if (r)
		return r;
	if (fe->ninflight && !bp_bt_has_splice(fe) && (r = bp_bt_settle(th, fe)) < 0)
		return bp_bt_tx_leave(th, r);
	struct bt_fdent *in = bp_bt_fd(in_fd);
	if (in && (atomic_load(&in->flags) & BT_FD_CLOSING) && bp_bt_still_closing(in))
		return bp_bt_tx_leave(th, -EBADF); /* closed by the program */
	uint32_t fi = in ? atomic_load(&in->flags) : 0;
	if (!(th->segment & BT_SEG_PRELOAD) || bp_bt_cfg.sendfile_mode != BT_SENDFILE_COPY ||
	    !count || (fi & (BT_FD_SIZE | BT_FD_REG)) != (BT_FD_SIZE | BT_FD_REG) ||
	    (count > bp_bt_cfg.sendfile_max && !bp_bt_cfg.splice) || !bp_bt_is_stream(fe)) {
		/* The real sendfile runs: what is queued on the socket goes just
		 * before it, by system call, so that it rides in its packets. */
		return bp_bt_run_behind_queue(th, fe, count != 0);
	}
	off_t pos = offset ? *offset : take_position(in_fd, count);
	if (pos < 0 || !sendfile_whole(in, pos, count))
		r = BT_PASS;
	else if (count <= bp_bt_cfg.sendfile_max)
		r = queue_copy(th, fe, in, in_fd, pos, count);
	else
		r = queue_splice(th, fe, in, in_fd, pos, count);
	if (r == BT_PASS || r < 0) {
		if (!offset && pos >= 0) /* the position back where it was */
			bp_sys_lseek(in_fd, pos, SEEK_SET);
		return r < 0 && r != BT_PASS ? bp_bt_tx_leave(th, r) : bp_bt_run_behind_queue(th, fe, true);
	}
	if (offset)
		*offset = pos + (off_t)count;
	return bp_bt_tx_leave(th, (long)count);
}

