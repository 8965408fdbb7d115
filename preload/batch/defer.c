/* SPDX-License-Identifier: MIT */
/*
 * Transparent deferral, for the preload: decides for each intercepted call
 * whether it is queued (and what it returns now), refused (-EAGAIN, -EBADF,
 * a deferred error), or run as the real system call (BT_PASS), after making
 * sure that earlier work on the descriptor is ahead of it.
 *
 * This file holds the calls' decisions and the flush and submit path: room
 * and age of the queue, order across descriptors, the segment's end and
 * beginning around the event loop's wait.  What is kept per descriptor (its
 * queue's state, settling it, its deferred errors, its life) is fdqueue.c.
 */
#include "defer.h"
#include "core/syscall.h"

#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread unsigned bp_bt_sig_seen __attribute__((tls_model("initial-exec")));

#define TX_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE | MSG_EOR)
#define MIN_CAP 256 /* a queued send has room to take a small next write */

/* Under th's lock: is the segment too old to keep queueing? Then submit. */
static void check_age(struct bt_thread *th)
{
	if (bp_bt_cfg.max_delay_ns && th->nqueued &&
	    bypass_now_ns() - th->seg_ns > bp_bt_cfg.max_delay_ns)
		bp_bt_submit(th);
}

/*
 * Order across descriptors (docs/batch.md, "Order"): what another process
 * can observe happens in the program's order.  One enter issues the chains
 * in the order of their first call, but only each chain's first request
 * at once: the ones linked behind it go after every chain's first, and a
 * close takes effect (the port, the peer's EOF) only when the enter
 * returns.  So, under th's lock, before a call is queued on fe: if the
 * stream queued on last is another one and it holds more than one call,
 * or a close was queued, or fe already holds calls (the new one would be
 * issued before the other stream's), everything queued goes in first.
 */
void bp_bt_order_queue(struct bt_thread *th, struct bt_fdent *fe)
{
	struct bt_fdent *last = th->ord_fe;
	if (!th->nqueued || !last || last == fe)
		return;
	if (th->ord_fence || fe->nqueued || last->nqueued > 1) {
		bp_bt_submit(th);
		bp_bt_acquire(th, fe);
	}
}

/* Under th's lock: a call was queued on fe (a close: is_close). */
void bp_bt_order_queued(struct bt_thread *th, struct bt_fdent *fe, bool is_close)
{
	th->ord_fe = fe;
	if (is_close)
		th->ord_fence = true;
}

/*
 * A call that is not queued runs now, and what it does may be seen at once
 * (a write to a pipe or another socket, a connect, a bind, a close of a
 * listening socket): what the thread queued before it goes in first.
 * Writes to regular files are the exception (docs/batch.md): no peer is
 * woken by them, and ordering them would cost nginx a crossing for each
 * line of its access log.
 */
void bp_bt_order_direct(int fd)
{
	struct bt_thread *th = bp_bt_self();
	if (bp_likely(!th || !th->nqueued) || !th->ring || th->gen != bp_fork_gen_fast())
		return;
	struct bt_fdent *fe = fd >= 0 ? bp_bt_fd(fd) : NULL;
	if (fe && bp_bt_fd_probe(fe) == 0 && (atomic_load(&fe->flags) & BT_FD_REG))
		return;
	bp_bt_enter(th);
	if (th->nqueued)
		bp_bt_submit(th);
	bp_bt_leave(th);
}

/* Under th's lock: room for len more bytes on fe and one more op? */
static bool room(struct bt_thread *th, struct bt_fdent *fe, size_t len)
{
	unsigned entries = th->ring ? th->ring->sq.ring_entries : bp_bt_ecfg.entries;
	return fe->bytes + len <= bp_bt_cfg.fd_bytes && th->bytes + len <= bp_bt_cfg.thread_bytes &&
	       th->nqueued < bp_bt_cfg.max_ops && fe->nqueued + 1 < entries / 2;
}

/* Make room by submitting what is queued; true if there is room now. */
static bool make_room(struct bt_thread *th, struct bt_fdent *fe, size_t len)
{
	if (room(th, fe, len))
		return true;
	bp_bt_submit(th);
	bp_bt_acquire(th, fe);
	return room(th, fe, len) && (!fe->ninflight || bp_bt_has_splice(fe));
}

static __attribute__((noinline)) void copy_iov(char *p, const struct iovec *iov,
						int iovcnt)
{
	for (int i = 0; i < iovcnt; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
}

/* The total length, or SIZE_MAX when it exceeds SSIZE_MAX (the system call
 * gives EINVAL; a wrapped sum must never size a copy). */
static __attribute__((noinline)) void sum_iov(const struct iovec *iov, int iovcnt,
					       size_t *out)
{
	size_t t = 0;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > (size_t)SSIZE_MAX - t) {
			t = SIZE_MAX;
			break;
		}
		t += iov[i].iov_len;
	}
	*out = t;
}

/*
 * Read the caller's memory under a recovery point, so that a bad address
 * gives -EFAULT as the system call would, not a crash.
 */
static bool copy_in(char *p, const struct iovec *iov, int iovcnt)
{
	struct bp_recover rp;
	if (!BP_RECOVER_TRY(&rp, NULL, 0))
		return false;
	copy_iov(p, iov, iovcnt);
	bp_recover_pop(&rp);
	return true;
}

bool bp_bt_copy_user(void *dst, const void *src, size_t len)
{
	struct iovec v = { (void *)src, len };
	return copy_in(dst, &v, 1);
}

static bool total_in(const struct iovec *iov, int iovcnt, size_t *total)
{
	struct bp_recover rp;
	if (!BP_RECOVER_TRY(&rp, NULL, 0))
		return false;
	sum_iov(iov, iovcnt, total);
	bp_recover_pop(&rp);
	return true;
}

/* Not queued: the real call runs, behind what is queued on fd. */
static long tx_direct(struct bt_thread *th, struct bt_fdent *fe)
{
	long r = 0;
	if (fe->nqueued || fe->ninflight)
		r = bp_bt_settle(th, fe);
	if (r == 0) {
		if (th->segment & BT_SEG_PRELOAD)
			th->c.direct++;
		r = BT_PASS;
	}
	return bp_bt_tx_leave(th, r);
}

/* Under th's lock, inside a segment: ready to queue len more bytes on fe? */
long bp_bt_tx_room(struct bt_thread *th, struct bt_fdent *fe, size_t len)
{
	check_age(th);
	bp_bt_acquire(th, fe);
	bp_bt_order_queue(th, fe);
	long r = fe->ninflight && !bp_bt_has_splice(fe) ? bp_bt_settle(th, fe) : 0;
	if (r < 0)
		return r;
	return make_room(th, fe, len) ? 1 : 0;
}

long bp_bt_tx_data(int fd, const struct iovec *iov, int iovcnt, int msg_flags,
		bool *sigpipe)
{
	struct bt_thread *th;
	struct bt_fdent *fe;
	long r = bp_bt_tx_enter(fd, &th, &fe, true, sigpipe);
	if (r)
		return r;
	if (fe->ninflight && !bp_bt_has_splice(fe) && (r = bp_bt_settle(th, fe)) < 0)
		return bp_bt_tx_leave(th, r);
	size_t total = 0;
	if (!(th->segment & BT_SEG_PRELOAD) || iovcnt < 0 || iovcnt > IOV_MAX ||
	    (msg_flags & ~TX_FLAGS) || !total_in(iov, iovcnt, &total) || !total ||
	    total > (size_t)SSIZE_MAX || total > bp_bt_cfg.max_copy || !bp_bt_is_stream(fe))
		return tx_direct(th, fe);
	if ((r = bp_bt_tx_room(th, fe, total)) <= 0)
		return r < 0 ? bp_bt_tx_leave(th, r) : tx_direct(th, fe);
	/* Bytes for the same socket in the same segment go out in one send. */
	struct bt_op *op = bp_bt_tail_grow(th, fe, total, msg_flags);
	if (op) {
		if (!copy_in(op->buf + op->len, iov, iovcnt))
			return bp_bt_tx_leave(th, -EFAULT);
		op->msg_flags = (msg_flags & (MSG_MORE | MSG_EOR)) | MSG_WAITALL | MSG_NOSIGNAL;
		if (!(msg_flags & MSG_NOSIGNAL))
			op->flags |= BT_OP_SIGPIPE;
		bp_bt_grown(th, fe, op, total);
		bp_bt_order_queued(th, fe, false);
		return bp_bt_tx_leave(th, (long)total);
	}
	op = bp_bt_op_new(total < MIN_CAP ? MIN_CAP : total);
	if (!op)
		return tx_direct(th, fe);
	if (!copy_in(op->data, iov, iovcnt)) {
		bp_bt_op_free(op);
		return bp_bt_tx_leave(th, -EFAULT);
	}
	op->kind = BT_SEND;
	op->buf = op->data;
	op->len = total;
	op->msg_flags = (msg_flags & (MSG_MORE | MSG_EOR)) | MSG_WAITALL | MSG_NOSIGNAL;
	op->flags = BT_OP_TRANSPARENT | (msg_flags & MSG_NOSIGNAL ? 0 : BT_OP_SIGPIPE);
	bp_bt_enqueue(th, fe, op);
	bp_bt_order_queued(th, fe, false);
	return bp_bt_tx_leave(th, (long)total);
}

/*
 * Not queued: the real call writes to fe now, behind what is queued on it,
 * which goes just before it by system call (with MSG_MORE on TCP when data
 * follows, so that it rides in the same packets).
 */
long bp_bt_run_behind_queue(struct bt_thread *th, struct bt_fdent *fe, bool more)
{
	if (th->nqueued > fe->nqueued) {
		/* Other streams' calls came first: they go in first (fe's
		 * with them, in the ring rather than by system call). */
		bp_bt_submit(th);
		bp_bt_acquire(th, fe);
	}
	if (fe->nqueued && !fe->ninflight) {
		more = more && (atomic_load(&fe->flags) & BT_FD_INET);
		int q = bp_bt_run_queued(th, fe, more);
		if (q < 0)
			return bp_bt_tx_leave(th, q);
	}
	return tx_direct(th, fe);
}

long bp_bt_tx_write_direct(int fd, bool more, bool *sigpipe)
{
	struct bt_thread *th;
	struct bt_fdent *fe;
	long r = bp_bt_tx_enter(fd, &th, &fe, true, sigpipe);
	if (r)
		return r;
	return bp_bt_run_behind_queue(th, fe, more);
}

/*
 * Shutdown, and the socket options we can queue: behind pending work they
 * are queued (never reordered, never waiting for a slow peer); inside a
 * segment they are queued anyway.
 */
static long tx_control(int fd, struct bt_op *proto, bool queueable)
{
	struct bt_thread *th;
	struct bt_fdent *fe;
	long r = bp_bt_tx_enter(fd, &th, &fe, true, NULL);
	if (r)
		return r;
	bool seg = th->segment & BT_SEG_PRELOAD;
	bool pending = fe->nqueued || fe->ninflight;
	if (!pending && !seg)
		return tx_direct(th, fe);
	if (proto->kind == BT_SHUTDOWN) {
		/*
		 * io_uring runs a shutdown on its workers (it forces it
		 * async): queued, it would take effect at no fixed point,
		 * after calls the program makes later on other descriptors
		 * (docs/batch.md, "Order").  It runs now, behind what is
		 * queued (submitted; a blocking socket waits for its data, as
		 * its writes would have).  Only behind data that waits for
		 * room in a non-blocking socket is it queued: its peer sees
		 * the EOF after data it has not read yet, whatever else
		 * happens meanwhile.
		 */
		if (pending) {
			bp_bt_submit(th);
			bp_bt_acquire(th, fe);
			if ((fe->nqueued || fe->ninflight) &&
			    !(atomic_load(&fe->flags) & BT_FD_NONBLOCK))
				bp_bt_settle(th, fe);
			pending = fe->nqueued || fe->ninflight;
		}
		if (!pending) {
			if (seg)
				th->c.direct++;
			return bp_bt_tx_leave(th, BT_PASS);
		}
	}
	/* Queued only on a connected stream (or behind its own queued work):
	 * on a listening socket the effect is seen without a stream to order
	 * it (a shutdown stops it listening; options pass to the connections
	 * it accepts). */
	queueable = queueable && bp_bt_is_stream(fe) &&
		    (pending || (atomic_load(&fe->flags) & BT_FD_CONN));
	struct bt_op *op = queueable ? bp_bt_op_new(sizeof(int)) : NULL;
	if (!op) {
		/*
		 * Not queueable here: it runs now, after what is queued has
		 * been submitted, but without waiting for a slow peer to take
		 * the data in flight.  An option applies to data already in the
		 * socket as well (as it would to data sitting in its buffer),
		 * and waiting could hang a non-blocking program for as long as
		 * the peer does not read (SO_LINGER before an abortive close).
		 */
		if (pending)
			bp_bt_submit(th);
		if (seg)
			th->c.direct++;
		return bp_bt_tx_leave(th, BT_PASS);
	}
	bp_bt_order_queue(th, fe);
	if (fe->ninflight)
		bp_bt_quiesce(th, fe);
	op->kind = proto->kind;
	op->u = proto->u;
	op->flags = BT_OP_TRANSPARENT;
	op->buf = op->data;
	if (proto->buf)
		memcpy(op->data, proto->buf, sizeof(int));
	bp_bt_enqueue(th, fe, op);
	bp_bt_order_queued(th, fe, false);
	if (!seg)
		bp_bt_submit(th);
	return bp_bt_tx_leave(th, 0);
}

long bp_bt_tx_shutdown(int fd, int how)
{
	struct bt_op proto = { .kind = BT_SHUTDOWN };
	proto.u.how = how;
	return tx_control(fd, &proto, how == SHUT_RD || how == SHUT_WR || how == SHUT_RDWR);
}

long bp_bt_tx_sockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct bt_fdent *fe = bp_bt_fd_peek(fd);
	bool queueable = fe && bp_bt_cfg.uring_sockopt && bp_bt_cfg.defer_sockopt &&
			 level == IPPROTO_TCP && (name == TCP_CORK || name == TCP_NODELAY) &&
			 len == sizeof(int) && val &&
			 (atomic_load(&fe->flags) & BT_FD_INET);
	int v = 0;
	if (queueable) {
		/* The value is read now, under a recovery point. */
		struct iovec iov = { (void *)val, sizeof(int) };
		if (!copy_in((char *)&v, &iov, 1))
			queueable = false;
	}
	struct bt_op proto = { .kind = BT_SOCKOPT };
	proto.u.so.level = level;
	proto.u.so.name = name;
	proto.u.so.len = sizeof(int);
	proto.buf = (char *)&v;
	return tx_control(fd, &proto, queueable);
}

long bp_bt_tx_close(int fd)
{
	struct bt_thread *th = bp_bt_seg_self();
	struct bt_fdent *fe = bp_bt_fd(fd);
	if (!fe)
		return BT_PASS;
	uint32_t f = atomic_load(&fe->flags);
	if ((f & BT_FD_CLOSING) && bp_bt_still_closing(fe))
		return -EBADF;
	/* A file deferred splices read: closed when the last one has ended
	 * (its number must not name another file before). */
	if (atomic_load(&fe->splicers) && !bp_bt_splice_close(fe))
		return 0;
	bool pending = atomic_load(&fe->owner) || atomic_load(&fe->readers);
	/* A socket's close is queued only on a connected stream: its peer sees
	 * the EOF after the data queued before it, and the calls that follow
	 * on other descriptors wait for it (bp_bt_order_queue).  A listening
	 * or datagram socket's close frees a port and refuses connections, seen
	 * by anyone at once: it runs now (docs/batch.md, "Order"). */
	bool conn = (f & (BT_FD_SOCK | BT_FD_STREAM | BT_FD_CONN)) ==
		    (BT_FD_SOCK | BT_FD_STREAM | BT_FD_CONN);
	bool want = th && (bp_bt_cfg.defer_close == 2
				   ? ((f & BT_FD_SOCK) ? conn : (f & (BT_FD_KNOWN | BT_FD_OPEN)))
				   : bp_bt_cfg.defer_close == 1 && conn);
	if ((!pending && !want) || (!th && !(th = bp_bt_self_any()))) {
		/* It runs now, behind what the thread queued before it. */
		bp_bt_order_direct(fd);
		bp_bt_fd_forget(fe);
		return BT_PASS;
	}
	bp_bt_reap_owner(fe);
	bp_bt_enter(th);
	bp_bt_reap(th);
	int err = bp_bt_fd_take_err(fe);
	if (err)
		th->c.reported++;
	bp_bt_acquire(th, fe);
	bp_bt_order_queue(th, fe);
	if (fe->ninflight)
		bp_bt_quiesce(th, fe);
	long r = err ? -(long)(err & 0xffff) : 0;
	struct bt_op *op = bp_bt_op_new(0);
	if (!op) {
		/* No memory: close once what is queued is out. */
		bp_bt_submit(th);
		bp_bt_acquire(th, fe);
		bp_bt_wait_fd_idle(th, fe, false);
		bp_bt_fd_forget(fe);
		r = BT_PASS;
		goto out;
	}
	if (atomic_load(&fe->readers) && atomic_load(&fe->reader) != th) {
		/* Queued sendfile calls read it.  Ours read at the next submit,
		 * before any chain (so the close may queue); another thread's
		 * read at its own submit: wait for them. */
		bp_bt_submit(th);
		if (atomic_load(&fe->readers)) {
			bp_bt_unlock(th);
			struct timespec ts = { 0, 20000 };
			while (atomic_load(&fe->readers))
				bp_sys_nanosleep(&ts, NULL);
			bp_bt_lock(th);
		}
	}
	op->kind = BT_CLOSE;
	op->flags = BT_OP_TRANSPARENT;
	atomic_fetch_or(&fe->flags, BT_FD_CLOSING);
	op->u.cl.gen = atomic_load(&fe->gen);
	bp_bt_enqueue(th, fe, op);
	bp_bt_order_queued(th, fe, true);
	if (!(th->segment & BT_SEG_PRELOAD))
		bp_bt_submit(th);
out:
	bp_bt_leave(th);
	return r;
}

void bp_bt_unmerged_wait(void)
{
	struct bt_thread *th = bp_bt_self();
	if (!th || !th->ring || th->gen != bp_fork_gen_fast())
		return;
	th->merged_ok = false;
	if (!th->nsplice)
		return;
	bp_bt_enter(th);
	bp_bt_splice_finish_all(th);
	bp_bt_leave(th);
}

bool bp_bt_splice_tick(void)
{
	struct bt_thread *th = bp_bt_self();
	if (!th || !th->ring || th->gen != bp_fork_gen_fast() || !th->nsplice)
		return false;
	bp_bt_enter(th);
	bp_bt_reap(th);
	for (int i = 0; i < 8 && th->nqueued; i++)
		bp_bt_submit(th);
	bool more = th->nsplice;
	bp_bt_leave(th);
	return more;
}

void bp_bt_segment_end(void)
{
	struct bt_thread *th = bp_bt_self();
	if (!th || !th->ring || th->gen != bp_fork_gen_fast())
		return;
	if (!(th->segment & BT_SEG_PRELOAD) && !th->nqueued)
		return;
	bp_bt_enter(th);
	for (int i = 0; i < 8 && th->nqueued; i++)
		bp_bt_submit(th);
	if (th->segment & BT_SEG_PRELOAD) {
		th->segment &= ~BT_SEG_PRELOAD;
		th->c.segments++;
	}
	bp_bt_leave(th);
}

void bp_bt_segment_begin(void)
{
	struct bt_thread *th = bp_bt_self();
	if (bp_unlikely(!th || !th->ring || th->gen != bp_fork_gen_fast())) {
		int r = bp_bt_self_make(&th);
		if (r == -ENOSYS || r == -EPERM || r == -EOPNOTSUPP) {
			/* No io_uring here (kernel, seccomp, sysctl): pass
			 * through from now on rather than ask at every wait;
			 * said once, whichever thread finds it first. */
			static atomic_bool said;
			bp_bt_cfg.enabled = false;
			if (!atomic_exchange(&said, true))
				bp_info("bypass batch: io_uring unavailable (%s): the "
					"preload passes every call through", strerror(-r));
		}
		if (r)
			return;
	}
	bp_bt_enter(th);
	bp_bt_reap(th);
	th->segment |= BT_SEG_PRELOAD;
	bp_bt_leave(th);
}

void bp_bt_flush_own(void)
{
	struct bt_thread *th = bp_bt_self();
	if (!th || !th->ring || th->gen != bp_fork_gen_fast() || !th->nqueued)
		return;
	bp_bt_enter(th);
	for (int i = 0; i < 8 && th->nqueued; i++)
		bp_bt_submit(th);
	bp_bt_leave(th);
}

bool bp_bt_has_inflight(void)
{
	struct bt_thread *th = bp_bt_self();
	return th && th->ring && th->gen == bp_fork_gen_fast() && th->ninflight;
}
