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

#define SPLICE_SLICE_MS 2

/*
 * io_uring completes our deferred writes with task work, which interrupts
 * an epoll wait (EINTR) although no signal arrived, also after the requests
 * look complete to us (the file of a deferred close is released by task
 * work too).  Retry those: an EINTR with no handler of the program run.
 */
static bool spurious_eintr(int r, unsigned seen)
{
	return r < 0 && errno == EINTR && bp_bt_sig_seen == seen;
}

/*
 * The merged wait: queued calls and the wait in one io_uring_enter.  true
 * when it ran (*ret, errno set); false: the old path waits (the segment
 * has been ended either way).
 */
static bool merged(int epfd, struct epoll_event *ev, int max, int64_t timeout_ns,
		   const sigset_t *ss, int *ret)
{
	long m = bp_bt_epoll_wait(epfd, ev, max, timeout_ns, ss);
	if (m == BT_PASS)
		return false;
	bp_bt_segment_begin();
	*ret = (int)ret_errno(m, false);
	return true;
}

static int ep_wait(int epfd, struct epoll_event *ev, int max, int timeout,
		   const sigset_t *ss, bool pwait)
{
	int mr;
	if (merged(epfd, ev, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000, ss, &mr))
		return mr;
	bp_bt_segment_end();
	uint64_t dl = deadline_ms(timeout);
	int r, t = timeout;
	for (;;) {
		unsigned seen = bp_bt_sig_seen;
		/* Splice rounds cut short while the program sleeps here must go
		 * in again (the merged wait does it as completions come): wait
		 * in slices of SPLICE_SLICE_MS meanwhile. */
		int tt = t;
		bool sliced = bp_bt_splice_tick() && (t < 0 || t > SPLICE_SLICE_MS);
		if (sliced)
			tt = SPLICE_SLICE_MS;
		r = pwait ? bp_pl_real_epoll_pwait(epfd, ev, max, tt, ss)
			  : bp_pl_real_epoll_wait(epfd, ev, max, tt);
		if (r == 0 && sliced) {
			if ((t = left_ms(timeout, dl)) == -2)
				break;
			continue;
		}
		if (!spurious_eintr(r, seen))
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
	FROM_BYPASS();
	if (PASS())
		return REAL(epoll_wait)(epfd, ev, max, timeout);
	return ep_wait(epfd, ev, max, timeout, NULL, false);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
		       const sigset_t *ss)
{
	FROM_BYPASS();
	if (PASS())
		return REAL(epoll_pwait)(epfd, ev, max, timeout, ss);
	return ep_wait(epfd, ev, max, timeout, ss, true);
}

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
			const struct timespec *ts, const sigset_t *ss)
{
	FROM_BYPASS();
	if (!REAL(epoll_pwait2)) {
		errno = ENOSYS;
		return -1;
	}
	if (PASS())
		return bp_pl_real_epoll_pwait2(epfd, ev, max, ts, ss);
	int mr;
	/* A valid timeout only: a bad one gets the kernel's EINVAL below. */
	if ((!ts || (ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000 &&
		     ts->tv_sec < INT64_MAX / 1000000000 - 1)) &&
	    merged(epfd, ev, max,
		   ts ? (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec : -1, ss, &mr))
		return mr;
	bp_bt_unmerged_wait(); /* splices first: this wait is not sliced */
	bp_bt_segment_end();
	int r = bp_pl_real_epoll_pwait2(epfd, ev, max, ts, ss);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	FROM_BYPASS();
	int r = REAL(epoll_ctl)(epfd, op, fd, ev);
	if (r == 0 && bp_bt_cfg.enabled && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_DEL))
		bp_bt_epoll_ctl(epfd, op, fd, op == EPOLL_CTL_ADD && ev ? ev->events : 0);
	return r;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	FROM_BYPASS();
	if (PASS())
		return REAL(poll)(fds, n, timeout);
	bp_bt_unmerged_wait();
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
	FROM_BYPASS();
	if (PASS())
		return REAL(ppoll)(fds, n, ts, ss);
	bp_bt_unmerged_wait();
	bp_bt_segment_end();
	int r = REAL(ppoll)(fds, n, ts, ss);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	FROM_BYPASS();
	if (PASS())
		return REAL(select)(n, r, w, x, tv);
	bp_bt_unmerged_wait();
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
	FROM_BYPASS();
	if (PASS())
		return REAL(pselect)(n, r, w, x, ts, ss);
	bp_bt_unmerged_wait();
	bp_bt_segment_end();
	int ret = REAL(pselect)(n, r, w, x, ts, ss);
	int e = errno;
	bp_bt_segment_begin();
	errno = e;
	return ret;
}
