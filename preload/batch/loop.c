/* SPDX-License-Identifier: MIT */
/* The event-loop waits: a segment opens when one returns and is submitted when the thread waits again. */
#include "preload.h"

/* ------------------------------------------------------------ event loop */

static uint64_t deadline_ms(int timeout)
{
	return timeout > 0 ? bypass_now_ns() + (uint64_t)timeout * 1000000ull : 0;
}

/* The timeout left in ms (as given if not positive), or -2 when spent. */
static int left_ms(int timeout, uint64_t deadline)
{
	if (timeout <= 0)
		return timeout;
	uint64_t now = bypass_now_ns();
	if (now >= deadline)
		return -2;
	return (int)((deadline - now + 999999) / 1000000);
}

/*
 * io_uring completes our deferred writes with task work, which interrupts
 * an epoll wait (EINTR) although no signal arrived.  Retry those, unless a
 * handler of the program ran or nothing of ours was in flight.
 */
static bool spurious_eintr(int r, unsigned seen, bool inflight)
{
	return r < 0 && errno == EINTR && inflight && bp_bt_sig_seen == seen;
}

static int ep_wait(int epfd, struct epoll_event *ev, int max, int timeout,
		   const sigset_t *ss, bool pwait)
{
	bp_bt_segment_end();
	uint64_t dl = deadline_ms(timeout);
	int r, t = timeout;
	for (;;) {
		unsigned seen = bp_bt_sig_seen;
		bool inflight = bp_bt_has_inflight();
		r = pwait ? real_epoll_pwait(epfd, ev, max, t, ss)
			  : real_epoll_wait(epfd, ev, max, t);
		if (!spurious_eintr(r, seen, inflight))
			break;
		if ((t = left_ms(timeout, dl)) == -2) {
			r = 0;
			break;
		}
	}
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	if (!ACTIVE())
		return REAL(epoll_wait)(epfd, ev, max, timeout);
	return ep_wait(epfd, ev, max, timeout, NULL, false);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
		       const sigset_t *ss)
{
	if (!ACTIVE())
		return REAL(epoll_pwait)(epfd, ev, max, timeout, ss);
	return ep_wait(epfd, ev, max, timeout, ss, true);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
			const struct timespec *ts, const sigset_t *ss)
{
	if (!REAL(epoll_pwait2)) {
		errno = ENOSYS;
		return -1;
	}
	if (!ACTIVE())
		return real_epoll_pwait2(epfd, ev, max, ts, ss);
	bp_bt_segment_end();
	int r = real_epoll_pwait2(epfd, ev, max, ts, ss);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	int r = REAL(epoll_ctl)(epfd, op, fd, ev);
	if (r == 0 && bp_bt_cfg.enabled && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_DEL))
		bp_bt_epoll_ctl(epfd, op, fd);
	return r;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!ACTIVE())
		return REAL(poll)(fds, n, timeout);
	bp_bt_segment_end();
	int r = REAL(poll)(fds, n, timeout);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		 const sigset_t *ss)
{
	if (!ACTIVE())
		return REAL(ppoll)(fds, n, ts, ss);
	bp_bt_segment_end();
	int r = REAL(ppoll)(fds, n, ts, ss);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	if (!ACTIVE())
		return REAL(select)(n, r, w, x, tv);
	bp_bt_segment_end();
	int ret = REAL(select)(n, r, w, x, tv);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return ret;
}

EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
		   const sigset_t *ss)
{
	if (!ACTIVE())
		return REAL(pselect)(n, r, w, x, ts, ss);
	bp_bt_segment_end();
	int ret = REAL(pselect)(n, r, w, x, ts, ss);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return ret;
}
