/* SPDX-License-Identifier: MIT */
/*
 * The waiting calls: poll, ppoll, select, pselect, epoll_wait, epoll_pwait,
 * epoll_pwait2 (io.c has the calls that transfer bytes).
 */
#include "preload.h"
#include "pager/evict.h" /* bp_evict_settle_mine() */

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>

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

/*
 * The kernel restarts poll and select after task work that interrupted
 * them (no signal to deliver), but never epoll_wait: it fails with EINTR.
 * The completion of a write-back that this thread submitted, in a fault
 * (the arguments' copy above, for one), is such task work (src/pager/evict.h:
 * bp_evict_settle_mine): a program's epoll_wait failed with EINTR that no
 * signal explained (issue 32, item 3).  So an epoll call that may wait, made
 * while write-backs of this thread may be in flight, first looks without
 * waiting; only when nothing is ready are they finished (the pager waits for
 * them in this thread, which runs their completions), then the call waits.
 * A signal's EINTR is the program's as before.
 */
static int wcall(const struct wcall *c)
{
	bool epoll = c->op == W_EPOLL_WAIT || c->op == W_EPOLL_PWAIT || c->op == W_EPOLL_PWAIT2;
	if (!epoll || !bp_evict_mine_maybe() || PASS())
		return wcall_next(c);
	/* epoll_pwait2's timeout is not read here (a bad pointer is the
	 * kernel's to refuse): a zero one only costs the settling */
	static const struct timespec zero_ts;
	bypass_pager *p = c->op == W_EPOLL_PWAIT2 || c->ms ? bp_pp_pager() : NULL;
	if (!p)
		return wcall_next(c);
	struct wcall now = *c;
	now.ms = 0;
	now.ts = &zero_ts;
	int r = wcall_next(&now);
	if (r)
		return r;
	bp_enter();
	bp_evict_settle_mine(p);
	bp_leave();
	return wcall_next(c);
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

static void unpin_cb(void *pins)
{
	bp_pp_unpin(pins);
}

/* The call with the buffers v[0..n) pinned, as far as they pin. */
static int wcall_pinned(const struct wcall *c, const struct iovec *v, int n)
{
	struct bp_pp_pins pins;
	if (bp_pp_pin(v, n, true, &pins) < 0)
		pins.n = 0;
	volatile int r; /* set between the cleanup handler's setjmp and its pop */
	pthread_cleanup_push(unpin_cb, &pins);
	r = wcall(c);
	pthread_cleanup_pop(0);
	int e = errno;
	bp_pp_unpin(&pins);
	errno = e;
	return r;
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
