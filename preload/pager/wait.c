/* SPDX-License-Identifier: MIT */
/*
 * The waiting calls: poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 * epoll_pwait2 (their arrays in regions), and those that the pager's own
 * task work would end with EINTR: semop, semtimedop, sigwaitinfo,
 * sigtimedwait, io_getevents, accept, accept4, connect (io.c has the calls
 * that transfer bytes, and sends the socket ones through bp_pp_settled too).
 */
#include "preload.h"
#include "core/syscall.h" /* bp_sys_getsockopt */
#include "pager/evict.h"  /* bp_evict_settle_mine() */

#include <limits.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

extern void __chk_fail(void) __attribute__((noreturn));

/*
 * poll, ppoll, select, pselect, epoll_wait, epoll_pwait, epoll_pwait2.  The
 * kernel reads their arrays when the call starts and writes the results
 * when it returns, after waiting for as long as it did: a page of the array
 * evicted meanwhile (by another thread's fault, or by the tree's ask: a
 * process blocked here is an idle one, whose pages go first) made the call
 * fail with EFAULT after the wait, the events it found lost (issue 32: a
 * Python multiprocessing Pool in poll on an arena).
 *
 * The rule: the kernel gets a copy on the caller's stack, and the results
 * are copied back after the call (a fault there is an ordinary one, served
 * like any access of the program).  Exact, because the kernel itself works
 * on a copy: poll writes back only revents (of every entry, after waiting,
 * even when interrupted), select the three sets (when it does not fail),
 * epoll the events it returns.  Nothing is pinned while the thread waits,
 * so a waiting process holds no pages of the budget, and a call costs two
 * short copies instead of two calls into the pager.  epoll is asked for at
 * most the events the copy holds (EPOLL_BOUNCE: it may always return fewer
 * than maxevents; the others are reported by the next call).  An array too
 * large for the copy (more than 256 pollfds, select beyond FD_SETSIZE), or
 * a stack that is itself a region, is pinned instead, for the whole call:
 * such a call cannot be cut as a transfer can, so what does not pin goes
 * unpinned, as without the preload; the pins are released if the thread is
 * cancelled in the call.  A signal mask, and epoll_pwait2's timeout, that
 * lie in a region are read through a copy on the stack (the kernel reads
 * them when the call starts); select's timeout too, and copied back.
 */

#define BOUNCE 2048 /* bytes of stack for a copy */

/* The next definitions (a stacked preload's, else libc's: they stay
 * cancellation points): REAL(), PL_REAL_BOTH in preload/common/scaffold.h. */

enum wop { W_POLL, W_PPOLL, W_SELECT, W_PSELECT, W_EPOLL_WAIT, W_EPOLL_PWAIT, W_EPOLL_PWAIT2 };

struct wcall {
	enum wop op;
	struct pollfd *fds;          /* poll, ppoll */
	nfds_t nfds;
	int nsel;                    /* select, pselect */
	fd_set *set[3];
	struct timeval *tv;
	int epfd, max;               /* epoll */
	struct epoll_event *ev;
	int ms;                      /* timeouts, the mask */
	const struct timespec *ts;
	const sigset_t *ss;
};

static int wcall_next(const struct wcall *c)
{
	switch (c->op) {
	case W_POLL: return REAL(poll)(c->fds, c->nfds, c->ms);
	case W_PPOLL: return REAL(ppoll)(c->fds, c->nfds, c->ts, c->ss);
	case W_SELECT: return REAL(select)(c->nsel, c->set[0], c->set[1], c->set[2], c->tv);
	case W_PSELECT:
		return REAL(pselect)(c->nsel, c->set[0], c->set[1], c->set[2], c->ts, c->ss);
	case W_EPOLL_WAIT: return REAL(epoll_wait)(c->epfd, c->ev, c->max, c->ms);
	case W_EPOLL_PWAIT: return REAL(epoll_pwait)(c->epfd, c->ev, c->max, c->ms, c->ss);
	case W_EPOLL_PWAIT2:
		if (!REAL(epoll_pwait2))
			break;
		return REAL(epoll_pwait2)(c->epfd, c->ev, c->max, c->ts, c->ss);
	}
	errno = ENOSYS;
	return -1;
}

/* ------------------------------------------------------------ task work */

/*
 * The kernel restarts poll, select, read, futex waits, nanosleep ... after
 * task work that interrupted them (no signal to deliver), but not
 * epoll_wait, semop, sigtimedwait, io_getevents, or a socket call with a
 * timeout (SO_RCVTIMEO, SO_SNDTIMEO): those fail with EINTR.  The
 * completion of a write-back that this thread submitted, in a fault (an
 * argument's copy, for one), is such task work (src/pager/evict.h:
 * bp_evict_settle_mine): a program's epoll_wait failed with EINTR that no
 * signal explained (issue 32, item 3).  So such a call that may wait, made
 * while write-backs of this thread are in flight (a count the reaper of
 * each completion lowers: src/pager/writeback.c), first reaps those whose
 * completions are there; if some are still in flight, it looks without
 * waiting; only when nothing is ready are they finished (the pager waits
 * for them in this thread, which runs their completions), then the call
 * waits (preload.h).
 */
ssize_t bp_pp_settled(ssize_t (*call)(void *arg, bool wait), void *arg)
{
	if (!bp_evict_mine_maybe() || PASS())
		return call(arg, true);
	bypass_pager *p = bp_pp_pager();
	if (p) { /* completions already there: reaped, maybe all of ours */
		bp_enter();
		bool mine = bp_evict_mine_reap(p);
		bp_leave();
		if (!mine)
			return call(arg, true);
	}
	ssize_t r = call(arg, false);
	if (r != PP_WOULD_WAIT)
		return r;
	if (p) {
		bp_enter();
		bp_evict_settle_mine(p);
		bp_leave();
	}
	return call(arg, true);
}

bool bp_pp_sock_timed(int fd, bool receive)
{
	struct timeval tv = { 0, 0 };
	socklen_t l = sizeof(tv);
	if (bp_sys_getsockopt(fd, SOL_SOCKET, receive ? SO_RCVTIMEO : SO_SNDTIMEO, &tv, &l) < 0)
		return false; /* not a socket: the call's own error */
	return tv.tv_sec || tv.tv_usec;
}

static const struct timespec zero_ts;

static bool ts_zero(const struct timespec *ts)
{
	return ts && !ts->tv_sec && !ts->tv_nsec;
}

static ssize_t wcall_try(void *arg, bool wait)
{
	const struct wcall *c = arg;
	/* epoll_pwait2's timeout is not read here (a bad pointer is the
	 * kernel's to refuse): a zero one only costs the settling */
	if (wait || (c->op != W_EPOLL_PWAIT2 && !c->ms))
		return wcall_next(c);
	struct wcall now = *c;
	now.ms = 0;
	now.ts = &zero_ts;
	int r = wcall_next(&now);
	return r ? r : PP_WOULD_WAIT;
}

static int wcall(const struct wcall *c)
{
	bool epoll = c->op == W_EPOLL_WAIT || c->op == W_EPOLL_PWAIT || c->op == W_EPOLL_PWAIT2;
	if (!epoll)
		return wcall_next(c);
	return (int)bp_pp_settled(wcall_try, (void *)c);
}

/* Does [a, a + len) touch a region (exactly, not bp_pp_maybe's guess)? */
static bool in_region(const void *a, size_t len)
{
	if (!bp_pp_maybe(a, len) || !bp_pp_lock())
		return false;
	struct bp_pp_region *r = bp_pp_next((uintptr_t)a);
	bool in = r && r->start < (uintptr_t)a + len && !(r->kind & PP_STALE);
	bp_pp_unlock();
	return in;
}

static ssize_t wcall_fn(void *c)
{
	return wcall(c);
}

/* The call with the buffers v[0..n) pinned, as far as they pin. */
static int wcall_pinned(const struct wcall *c, const struct iovec *v, int n)
{
	struct bp_pp_pins pins;
	if (bp_pp_pin(v, n, true, &pins) < 0)
		pins.n = 0;
	return (int)bp_pp_pinned(&pins, wcall_fn, (void *)c);
}

/* The signal mask and the timespec read through copies (ss, ts) where
 * they lie in a region. */
static void small_args(struct wcall *c, sigset_t *ss, struct timespec *ts)
{
	if (c->ss && bp_pp_maybe(c->ss, sizeof(*c->ss))) {
		*ss = *c->ss;
		c->ss = ss;
	}
	if (c->ts && bp_pp_maybe(c->ts, sizeof(*c->ts))) {
		*ts = *c->ts;
		c->ts = ts;
	}
}

static int wait_poll(struct wcall *c)
{
	if (PASS() || !c->nfds || c->nfds > INT_MAX)
		return wcall(c);
	sigset_t ss;
	struct timespec ts;
	small_args(c, &ss, &ts);
	size_t len = c->nfds * sizeof(*c->fds);
	if (!bp_pp_maybe(c->fds, len))
		return wcall(c);
	struct pollfd b[BOUNCE / sizeof(struct pollfd)], *user = c->fds;
	if (c->nfds > BP_ARRAY_SIZE(b) || in_region(b, len)) {
		struct iovec v = { user, len };
		return wcall_pinned(c, &v, 1);
	}
	memcpy(b, user, len);
	c->fds = b;
	int r = wcall(c), e = errno;
	for (nfds_t i = 0; i < c->nfds; i++)
		user[i].revents = b[i].revents;
	errno = e;
	return r;
}

static int wait_select(struct wcall *c)
{
	if (PASS() || c->nsel <= 0)
		return wcall(c);
	sigset_t ss;
	struct timespec ts;
	small_args(c, &ss, &ts);
	struct timeval tv, *utv = c->tv;
	if (utv && bp_pp_maybe(utv, sizeof(*utv))) {
		tv = *utv;
		c->tv = &tv;
	}
	/* The bytes of each set the kernel reads and writes: whole longs. */
	size_t len = ((size_t)c->nsel + 63) / 64 * 8;
	struct iovec v[3];
	int n = 0;
	for (int i = 0; i < 3; i++)
		if (c->set[i] && bp_pp_maybe(c->set[i], len))
			v[n++] = (struct iovec){ c->set[i], len };
	int r, e;
	fd_set b[3], *user[3];
	if (!n) {
		r = wcall(c);
		e = errno;
	} else if (len > sizeof(fd_set) || in_region(b, sizeof(b))) {
		r = wcall_pinned(c, v, n);
		e = errno;
	} else {
		for (int i = 0; i < 3; i++) {
			user[i] = c->set[i];
			if (user[i]) {
				memcpy(&b[i], user[i], len);
				c->set[i] = &b[i];
			}
		}
		r = wcall(c);
		e = errno;
		for (int i = 0; i < 3 && r >= 0; i++)
			if (user[i])
				memcpy(user[i], &b[i], len);
	}
	if (c->tv == &tv)
		*utv = tv;
	errno = e;
	return r;
}

#define EPOLL_BOUNCE (BOUNCE / sizeof(struct epoll_event))

static int wait_epoll(struct wcall *c)
{
	if (PASS() || c->max <= 0 || (size_t)c->max > INT_MAX / sizeof(*c->ev))
		return wcall(c);
	sigset_t ss;
	struct timespec ts;
	small_args(c, &ss, &ts);
	if (!bp_pp_maybe(c->ev, (size_t)c->max * sizeof(*c->ev)))
		return wcall(c);
	if ((size_t)c->max > EPOLL_BOUNCE)
		c->max = (int)EPOLL_BOUNCE;
	struct epoll_event b[EPOLL_BOUNCE], *user = c->ev;
	if (in_region(b, sizeof(b))) {
		struct iovec v = { user, (size_t)c->max * sizeof(*user) };
		return wcall_pinned(c, &v, 1);
	}
	c->ev = b;
	int r = wcall(c), e = errno;
	if (r > 0)
		memcpy(user, b, (size_t)r * sizeof(*b));
	errno = e;
	return r;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct wcall c = { .op = W_POLL, .fds = fds, .nfds = n, .ms = timeout };
	return wait_poll(&c);
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		__chk_fail();
	return poll(fds, n, timeout);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *ss)
{
	struct wcall c = { .op = W_PPOLL, .fds = fds, .nfds = n, .ts = ts, .ss = ss };
	return wait_poll(&c);
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		       const sigset_t *ss, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		__chk_fail();
	return ppoll(fds, n, ts, ss);
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	struct wcall c = { .op = W_SELECT, .nsel = n, .set = { r, w, x }, .tv = tv };
	return wait_select(&c);
}

EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
		   const sigset_t *ss)
{
	struct wcall c = { .op = W_PSELECT, .nsel = n, .set = { r, w, x }, .ts = ts, .ss = ss };
	return wait_select(&c);
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	struct wcall c = { .op = W_EPOLL_WAIT, .epfd = epfd, .ev = ev, .max = max, .ms = timeout };
	return wait_epoll(&c);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
		       const sigset_t *ss)
{
	struct wcall c = { .op = W_EPOLL_PWAIT, .epfd = epfd, .ev = ev, .max = max,
			   .ms = timeout, .ss = ss };
	return wait_epoll(&c);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
			const sigset_t *ss)
{
	struct wcall c = { .op = W_EPOLL_PWAIT2, .epfd = epfd, .ev = ev, .max = max, .ts = ts,
			   .ss = ss };
	return wait_epoll(&c);
}

/* ------------------------------------------------------------ other waits */

/*
 * Not restarted after task work either (above), and with nothing of a
 * region to copy: each goes through bp_pp_settled with the form of the
 * call that cannot block, where it has one.
 */

#define SEM_LOOK 64 /* operations the look copies to set IPC_NOWAIT */

struct semcall {
	int id;
	struct sembuf *ops;
	size_t n;
	const struct timespec *ts;
	bool timed;
};

static ssize_t sem_try(void *arg, bool wait)
{
	const struct semcall *s = arg;
	if (wait)
		return s->timed ? REAL(semtimedop)(s->id, s->ops, s->n, s->ts)
				: REAL(semop)(s->id, s->ops, s->n);
	if (!s->n || s->n > SEM_LOOK || ts_zero(s->ts))
		return s->n > SEM_LOOK ? PP_WOULD_WAIT : sem_try(arg, true);
	struct sembuf b[SEM_LOOK];
	bool blocks = false;
	for (size_t i = 0; i < s->n; i++) {
		b[i] = s->ops[i];
		blocks |= !(b[i].sem_flg & IPC_NOWAIT);
		b[i].sem_flg |= IPC_NOWAIT;
	}
	if (!blocks)
		return sem_try(arg, true);
	int r = REAL(semop)(s->id, b, s->n);
	return r < 0 && errno == EAGAIN ? PP_WOULD_WAIT : r;
}

EXPORT int semop(int id, struct sembuf *ops, size_t n)
{
	struct semcall s = { .id = id, .ops = ops, .n = n };
	return (int)bp_pp_settled(sem_try, &s);
}

EXPORT int semtimedop(int id, struct sembuf *ops, size_t n, const struct timespec *ts)
{
	struct semcall s = { .id = id, .ops = ops, .n = n, .ts = ts, .timed = true };
	return (int)bp_pp_settled(sem_try, &s);
}

struct sigcall {
	const sigset_t *set;
	siginfo_t *info;
	const struct timespec *ts;
	bool timed;
};

static ssize_t sig_try(void *arg, bool wait)
{
	const struct sigcall *s = arg;
	if (wait || ts_zero(s->ts))
		return s->timed ? REAL(sigtimedwait)(s->set, s->info, s->ts)
				: REAL(sigwaitinfo)(s->set, s->info);
	int r = REAL(sigtimedwait)(s->set, s->info, &zero_ts);
	return r < 0 && errno == EAGAIN ? PP_WOULD_WAIT : r;
}

EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	struct sigcall s = { .set = set, .info = info };
	return (int)bp_pp_settled(sig_try, &s);
}

EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts)
{
	struct sigcall s = { .set = set, .info = info, .ts = ts, .timed = true };
	return (int)bp_pp_settled(sig_try, &s);
}

/* libaio's io_getevents (the preload's is found first where a program
 * links libaio), which returns -errno; the system call itself where none
 * comes next, made to return the same.  Its look could take events the
 * call would have waited for more of (min_nr): it settles first instead. */
struct aiocall {
	aio_context_t ctx;
	long min, nr;
	struct io_event *ev;
	struct timespec *ts;
};

static ssize_t aio_try(void *arg, bool wait)
{
	const struct aiocall *a = arg;
	if (!wait && !ts_zero(a->ts) && a->min > 0)
		return PP_WOULD_WAIT;
	if (REAL(io_getevents))
		return REAL(io_getevents)(a->ctx, a->min, a->nr, a->ev, a->ts);
	long r = syscall(SYS_io_getevents, a->ctx, a->min, a->nr, a->ev, a->ts);
	return r < 0 ? -errno : r;
}

EXPORT int io_getevents(aio_context_t ctx, long min, long nr, struct io_event *ev,
			struct timespec *ts)
{
	struct aiocall a = { ctx, min, nr, ev, ts };
	return (int)bp_pp_settled(aio_try, &a);
}

/* accept and connect: no form that cannot block (a non-blocking accept4
 * would make the new socket non-blocking too), so where the socket has a
 * timeout they settle first. */
struct sockcall {
	int fd, flags;
	struct sockaddr *addr;
	socklen_t *len;
	const struct sockaddr *to;
	socklen_t tolen;
	bool conn, four;
};

static ssize_t sock_try(void *arg, bool wait)
{
	const struct sockcall *s = arg;
	if (!wait && bp_pp_sock_timed(s->fd, !s->conn))
		return PP_WOULD_WAIT;
	if (s->conn)
		return REAL(connect)(s->fd, s->to, s->tolen);
	return s->four ? REAL(accept4)(s->fd, s->addr, s->len, s->flags)
		       : REAL(accept)(s->fd, s->addr, s->len);
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sockcall s = { .fd = fd, .addr = addr, .len = len };
	return (int)bp_pp_settled(sock_try, &s);
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct sockcall s = { .fd = fd, .addr = addr, .len = len, .flags = flags, .four = true };
	return (int)bp_pp_settled(sock_try, &s);
}

EXPORT int connect(int fd, const struct sockaddr *to, socklen_t tolen)
{
	struct sockcall s = { .fd = fd, .to = to, .tolen = tolen, .conn = true };
	return (int)bp_pp_settled(sock_try, &s);
}
