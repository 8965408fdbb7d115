/* SPDX-License-Identifier: MIT */
/*
 * The preload's bookkeeping per descriptor (struct bt_fdent, over the
 * engine's table): what a call on a stream starts with (its queue taken by
 * the thread, a pending close seen, a deferred error reported once), the
 * stream settled before a new call goes behind what is in flight, the work
 * a read or another call must wait for, and the descriptor's life (created,
 * flags, size, epoll registration).  The calls' decisions and the flush
 * and submit path are defer.c.
 */
#include "defer.h"
#include "core/syscall.h"

#include <poll.h>
#include <sys/epoll.h>

/*
 * A descriptor marked CLOSING whose close may have completed without being
 * reaped yet (another thread's ring, or task work that ran in a system call
 * of ours): reap the owner's ring and look again.  true if still closing.
 */
bool bp_bt_still_closing(struct bt_fdent *fe)
{
	for (int i = 0; i < 2; i++) {
		if (!(atomic_load(&fe->flags) & BT_FD_CLOSING))
			return false;
		struct bt_thread *o = atomic_load(&fe->owner);
		if (!o)
			return !!(atomic_load(&fe->flags) & BT_FD_CLOSING);
		bp_bt_lock(o);
		if (o->ring && atomic_load(&fe->owner) == o)
			bp_bt_reap(o);
		bp_bt_unlock(o);
	}
	return !!(atomic_load(&fe->flags) & BT_FD_CLOSING);
}

/*
 * Completions of fd's stream that wait in its owner's ring: reaped before a
 * pending error is looked at, so that an error the kernel has already
 * posted is reported by this call, not the one after it.  An ownerless
 * stream has nothing in flight.
 */
static void reap_owner(struct bt_fdent *fe)
{
	struct bt_thread *o = atomic_load_explicit(&fe->owner, memory_order_acquire);
	if (bp_likely(!o))
		return;
	bp_bt_enter(o);
	if (o->ring && o->gen == bp_fork_gen_fast() && atomic_load(&fe->owner) == o) {
		bp_bt_reap(o);
		/* A send that waited for room and came back short (the kernel
		 * gives the count sent, not the error that stopped it) was
		 * queued again: submit it, so the socket says now whether it
		 * still takes data. */
		if (o == bp_bt_self() && fe->nqueued && !fe->ninflight && fe->head &&
		    fe->head->done && fe->head->state == BT_QUEUED)
			bp_bt_submit(o);
	}
	bp_bt_leave(o);
}

/* The same, for defer.c's close (static above, so that the calls on every
 * read and write keep it inline). */
void bp_bt_reap_owner(struct bt_fdent *fe)
{
	reap_owner(fe);
}

/* A deferred error to report now: -errno (the wrapper raises SIGPIPE). */
static long take_error(struct bt_thread *th, struct bt_fdent *fe, bool *sigpipe)
{
	int e = bp_bt_fd_take_err(fe);
	if (bp_likely(!e))
		return 0;
	if (sigpipe)
		*sigpipe = e & BT_ERR_SIGPIPE;
	if (th) {
		bp_bt_lock(th);
		th->c.reported++;
		bp_bt_unlock(th);
	}
	return -(long)(e & 0xffff);
}

/* Under th's lock, th owns fe: is everything in flight a send (no read)? */
static bool inflight_all_sends(struct bt_fdent *fe)
{
	for (struct bt_op *op = fe->head; op; op = op->next)
		if (op->state == BT_INFLIGHT && op->kind == BT_SENDFILE &&
		    !(op->flags & BT_OP_READ_DONE))
			return false;
	return true;
}

/*
 * Is the socket full now?  Only then may the program be told EAGAIN for
 * data still in flight: the kernel then owes it an EPOLLOUT edge (the poll
 * marks the socket as waited for).  Sends in flight are not proof of it:
 * one linked behind a splice round runs on the kernel's workers after the
 * round, whether or not the socket has room, and a program told EAGAIN
 * while the socket has room may wait for an edge that never comes.
 */
static bool socket_full(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int r = bp_sys_poll(&p, 1, 0);
	return r == 0 || (r == 1 && !(p.revents & (POLLOUT | POLLERR | POLLHUP)));
}

/*
 * Under th's lock, th owns fe: the stream must have nothing in flight before
 * a new call goes behind it.  Returns 0, or -EAGAIN for a non-blocking
 * descriptor whose earlier data still waits for room in the socket (the
 * socket was found full by the last attempt, so the program will be told
 * when it drains: an EPOLLOUT edge comes).  A blocking one waits.
 */
long bp_bt_settle(struct bt_thread *th, struct bt_fdent *fe)
{
	/* A splice that ended a round short is queued again: it goes in
	 * again (and the socket, found full, is then waited for). */
	for (int round = 0;; round++) {
		bp_bt_reap(th);
		if (fe->nqueued) {
			bp_bt_submit(th);
			bp_bt_acquire(th, fe);
		}
		if (!fe->ninflight)
			return 0;
		uint32_t f = atomic_load(&fe->flags);
		if ((f & BT_FD_NONBLOCK) && inflight_all_sends(fe) && socket_full(fe->fd)) {
			th->c.eagain++;
			return -EAGAIN;
		}
		bp_bt_wait_fd_idle(th, fe, false);
		bp_bt_acquire(th, fe);
		if (!fe->nqueued || !bp_bt_has_splice(fe) || round > 1000)
			return 0;
	}
}

/*
 * What every call that writes or controls a stream starts with.  Returns
 * BT_PASS when there is nothing to do (no segment, no pending work on fd),
 * -errno to return now (the program closed fd; a deferred error, reported
 * once if report), or 0 with *thp locked (inside bypass) owning *fep.
 */
long bp_bt_tx_enter(int fd, struct bt_thread **thp, struct bt_fdent **fep,
		     bool report, bool *sigpipe)
{
	struct bt_thread *th = bp_bt_seg_self();
	struct bt_fdent *fe = th ? bp_bt_fd(fd) : bp_bt_fd_peek(fd);
	if (!fe)
		return BT_PASS;
	uint32_t f = atomic_load_explicit(&fe->flags, memory_order_acquire);
	if (bp_unlikely(f & BT_FD_CLOSING) && bp_bt_still_closing(fe))
		return -EBADF;
	if (report) {
		reap_owner(fe);
		long e = take_error(th, fe, sigpipe);
		if (e)
			return e;
	}
	/* After a failure the socket's own errors come straight from it. */
	if (bp_unlikely(f & BT_FD_BROKEN) && !atomic_load(&fe->owner))
		return BT_PASS;
	if (!th && !atomic_load_explicit(&fe->owner, memory_order_relaxed))
		return BT_PASS;
	if (!th && !(th = bp_bt_self_any()))
		return BT_PASS;
	bp_bt_enter(th);
	bp_bt_reap(th);
	bp_bt_acquire(th, fe);
	*thp = th;
	*fep = fe;
	return 0;
}

long bp_bt_before_fd(int fd, int kind)
{
	struct bt_fdent *fe = bp_bt_fd_peek(fd);
	if (fe && bp_unlikely(atomic_load_explicit(&fe->flags, memory_order_relaxed) &
			      BT_FD_CLOSING) && bp_bt_still_closing(fe))
		return -EBADF;
	struct bt_thread *th = bp_bt_self();
	if (!th || !th->ring || th->gen != bp_fork_gen_fast())
		return 0;
	if (kind == BT_READ_NOWAIT)
		return 0;
	if (kind == BT_READ) {
		/* A blocking read must not wait for a peer that waits for our
		 * queued data. */
		if (!th->nqueued)
			return 0;
		if (!fe && !(fe = bp_bt_fd(fd)))
			return 0;
		if (bp_bt_fd_probe(fe) == 0 &&
		    (atomic_load(&fe->flags) & (BT_FD_NONBLOCK | BT_FD_REG)))
			return 0;
		bp_bt_enter(th);
		bp_bt_submit(th);
		bp_bt_leave(th);
		return 0;
	}
	if (!fe || !atomic_load_explicit(&fe->owner, memory_order_relaxed))
		return 0;
	/* Anything else on a descriptor with pending work: submit it first. */
	bp_bt_enter(th);
	bp_bt_reap(th);
	if (atomic_load(&fe->owner) == th && fe->nqueued)
		bp_bt_submit(th);
	bp_bt_leave(th);
	return 0;
}

long bp_bt_report_err(int fd)
{
	struct bt_fdent *fe = bp_bt_fd_peek(fd);
	if (!fe)
		return 0;
	reap_owner(fe);
	if (bp_likely(!atomic_load_explicit(&fe->err, memory_order_relaxed)))
		return 0;
	return take_error(bp_bt_self(), fe, NULL);
}

void bp_bt_flush_fd_wait(int fd)
{
	struct bt_fdent *fe = bp_bt_fd_peek(fd);
	if (!fe || (!atomic_load(&fe->owner) && !atomic_load(&fe->readers) &&
		    !atomic_load(&fe->splicers)))
		return;
	struct bt_thread *th = bp_bt_self_any();
	if (!th)
		return;
	bp_bt_enter(th);
	bp_bt_submit(th);
	bp_bt_splice_wait_file(th, fe);
	if (atomic_load(&fe->owner)) {
		bp_bt_acquire(th, fe);
		bp_bt_wait_fd_idle(th, fe, false);
	}
	bp_bt_leave(th);
}

void bp_bt_fd_created(int fd, uint32_t flags)
{
	struct bt_fdent *fe = bp_bt_fd(fd);
	if (!fe)
		return;
	if (atomic_load(&fe->flags) & BT_FD_CLOSING)
		/* Our close of this number completed: the kernel reused it. */
		bp_bt_still_closing(fe);
	bp_bt_fd_forget(fe);
	if (flags)
		atomic_store(&fe->flags, flags);
}

void bp_bt_fd_connected(int fd)
{
	struct bt_fdent *fe = bp_bt_fd(fd);
	if (fe && !(atomic_load(&fe->flags) & BT_FD_CLOSING))
		atomic_fetch_or(&fe->flags, BT_FD_CONN);
}

void bp_bt_fd_setfl(int fd, bool nonblock)
{
	struct bt_fdent *fe = bp_bt_fd_peek(fd);
	if (!fe)
		return;
	if (nonblock)
		atomic_fetch_or(&fe->flags, BT_FD_NONBLOCK);
	else
		atomic_fetch_and(&fe->flags, ~BT_FD_NONBLOCK);
}

void bp_bt_fd_size(int fd, const struct stat *st)
{
	struct bt_fdent *fe = bp_bt_fd(fd);
	if (!fe || !S_ISREG(st->st_mode))
		return;
	atomic_store(&fe->size, (int64_t)st->st_size);
	atomic_fetch_or(&fe->flags, BT_FD_SIZE | BT_FD_REG);
}

void bp_bt_epoll_ctl(int epfd, int op, int fd, uint32_t events)
{
	if (events & EPOLLEXCLUSIVE) {
		/* For good: an entry deleted later leaves it (only a wait not
		 * merged, which costs a crossing); closing the epoll clears it. */
		struct bt_fdent *ep = bp_bt_fd(epfd);
		if (ep)
			atomic_fetch_or(&ep->flags, BT_FD_EP_EXCL);
	}
	struct bt_fdent *fe = op == EPOLL_CTL_ADD ? bp_bt_fd(fd) : bp_bt_fd_peek(fd);
	if (!fe)
		return;
	for (int i = 0; i < 2; i++) {
		int cur = atomic_load(&fe->ep[i]);
		if (op == EPOLL_CTL_DEL && cur == epfd + 1) {
			atomic_store(&fe->ep[i], 0);
			return;
		}
		if (op == EPOLL_CTL_ADD && cur == 0 &&
		    atomic_compare_exchange_strong(&fe->ep[i], &cur, epfd + 1))
			return;
	}
}
