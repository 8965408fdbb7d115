/* SPDX-License-Identifier: MIT */
/*
 * The merged wait: when the program's epoll_wait finds the thread's segment
 * with queued calls, the queued chains and an IORING_OP_EPOLL_WAIT (Linux
 * 6.15) go into the kernel with one io_uring_enter, which also waits.  The
 * kernel writes the events straight into the program's array, so the
 * program sees what epoll_wait would have returned; a timeout or a signal
 * ends the wait as it would end epoll_wait, and the armed request is then
 * cancelled (if it delivered events meanwhile, those are returned).
 *
 * Detected at run time (the ring's opcode probe, once per process);
 * BYPASS_BATCH_MERGED_WAIT=0 keeps the old path (submit, then epoll_wait).
 *
 * The kernel's epoll wait request can complete with -EAGAIN, which
 * epoll_wait never returns.  Its issue gives -EAGAIN whenever the epoll has
 * nothing to deliver; io_uring then polls the epoll file and issues the
 * request again at each wake-up.  A wake-up after which nothing is
 * delivered (a ready entry whose event is gone when the wait looks: a
 * connection that another process, whose epoll watches the same listening
 * socket, accepted first) costs one of the request's poll arms, 128 per
 * request (APOLL_MAX_RETRY, io_uring/poll.c); once they are spent the
 * request runs once more on an io-wq worker, without polling, and finds
 * nothing again: its completion is -EAGAIN.  For the program the wait has
 * not ended: it is armed again for the time left (tests/batch/epwait-stale).
 *
 * A wait on an epoll that was given an EPOLLEXCLUSIVE entry is never merged.
 * The kernel ends an exclusive wake-up at the first epoll that has a thread
 * asleep in epoll_wait (ep_poll_callback's "ewake"); an armed
 * IORING_OP_EPOLL_WAIT polls the epoll file instead, which does not count,
 * so the wake-up went on to every other process's epoll watching the same
 * listening socket: with nginx's workers all in merged waits, every new
 * connection woke them all (tests/batch/preload-epexcl).  Those waits take
 * the old path (submit, then the real epoll_wait), as the program asked,
 * except while the thread has deferred splices in flight
 * (BYPASS_BATCH_SPLICE=1, off by default): their rounds are resubmitted by
 * the merged wait only, so those waits stay merged and pay the shared
 * wake-up (docs/batch.md).
 */
#include "defer.h"

#include <liburing.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EP_MAX_EVENTS ((int)(INT_MAX / sizeof(struct epoll_event)))

/* Under th's lock: end the armed wait (cancel it, reap its completion). */
static void cancel_wait(struct bt_thread *th)
{
	if (th->epw_done)
		return;
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.addr = BT_UD_EPWAIT;
	reg.timeout.tv_sec = -1;
	reg.timeout.tv_nsec = -1;
	int r = io_uring_register_sync_cancel(th->ring, &reg);
	if (r < 0 && r != -ENOENT && r != -EALREADY)
		bp_debug("bypass batch: cancel of the merged wait: %s", strerror(-r));
	bp_bt_reap(th);
	for (int i = 0; i < 30 && !th->epw_done; i++)
		bp_bt_wait_one_locked(th);
	if (!th->epw_done)
		bp_err("bypass batch: the merged epoll wait did not end after its "
		       "cancellation");
}

static void set_ts(struct io_uring_getevents_arg *ga, struct __kernel_timespec *ts,
		   uint64_t ns)
{
	ts->tv_sec = (long long)(ns / 1000000000ull);
	ts->tv_nsec = (long long)(ns % 1000000000ull);
	ga->ts = (uint64_t)(uintptr_t)ts;
}

/* The time left before deadline into ga (no limit when timeout_ns < 0);
 * false when it is spent. */
static bool time_left(struct io_uring_getevents_arg *ga, struct __kernel_timespec *ts,
		      int64_t timeout_ns, uint64_t deadline)
{
	if (timeout_ns < 0) {
		ga->ts = 0; /* no limit (the first enter had the linger's) */
		return true;
	}
	uint64_t now = bypass_now_ns();
	if (now >= deadline)
		return false;
	set_ts(ga, ts, deadline - now);
	return true;
}

/*
 * How many times one wait is armed again after a -EAGAIN completion (each
 * one the end of 128 wake-ups that found nothing): past that the old path
 * waits (the real epoll_wait goes on waiting by itself), so that a kernel
 * that gave -EAGAIN at once could not make this a busy loop.
 */
#define EPW_REARMS 64

long bp_bt_epoll_wait(int epfd, void *events, int max, int64_t timeout_ns,
		      const sigset_t *ss)
{
	struct bt_thread *th = bp_bt_self();
	/* The thread's ring, made now if need be (the segment after the wait
	 * would make it): merged_ok must be known before the first sendfile. */
	if ((!th || !th->ring || th->gen != bp_fork_gen_fast()) && bp_bt_self_make(&th))
		return BT_PASS;
	/* Whether this thread's waits resubmit splice rounds (splice.c). */
	bool can = bp_bt_cfg.merged_wait && max > 0 && max <= EP_MAX_EVENTS &&
		   !(th->ring->flags & IORING_SETUP_SQPOLL) && bp_bt_merged_wait_available();
	th->merged_ok = can;
	if (!can && th->nsplice && timeout_ns != 0) {
		/* Nothing would resubmit their rounds while the program waits. */
		bp_bt_enter(th);
		bp_bt_splice_finish_all(th);
		bp_bt_leave(th);
	}
	if (!can || timeout_ns == 0 || (!th->nqueued && !th->nsplice))
		return BT_PASS;
	/* An epoll with an EPOLLEXCLUSIVE entry: merged only while splice
	 * rounds need it (the top of this file). */
	struct bt_fdent *epe = bp_bt_fd_peek(epfd);
	if (!th->nsplice && epe && (atomic_load(&epe->flags) & BT_FD_EP_EXCL))
		return BT_PASS;
	uint64_t deadline = timeout_ns > 0 ? bypass_now_ns() + (uint64_t)timeout_ns : 0;
	unsigned seen = bp_bt_sig_seen;
	struct __kernel_timespec ts;
	struct io_uring_getevents_arg ga;
	memset(&ga, 0, sizeof(ga));
	if (ss) {
		ga.sigmask = (uint64_t)(uintptr_t)ss;
		ga.sigmask_sz = _NSIG / 8;
	}
	/*
	 * The first enter submits and waits for all its requests (the sends
	 * and the epoll wait), for at most the linger time: on a busy loop the
	 * next events come within microseconds of the replies that cause them,
	 * and are then taken in this same crossing (waiting for one completion
	 * only, the sends' own completions would end it at once).  The rest of
	 * the timeout waits for the epoll wait alone.
	 */
	uint64_t first = bp_bt_cfg.merged_linger_ns;
	bool linger = first > 0 && (timeout_ns < 0 || (uint64_t)timeout_ns > first);
	if (linger)
		set_ts(&ga, &ts, first);
	else if (timeout_ns > 0)
		set_ts(&ga, &ts, (uint64_t)timeout_ns);

	bp_bt_enter(th);
	bp_bt_reap(th);
	if (th->segment & BT_SEG_PRELOAD) {
		th->segment &= ~BT_SEG_PRELOAD;
		th->c.segments++;
	}
	long res = BT_PASS;
	if (!th->nqueued && !th->nsplice)
		goto out;
	struct bt_epw_req req = { epfd, events, max, &ga, linger };
	bp_bt_submit_epw(th, &req);
	if (!th->epw_armed) {
		/* Not armed (the ring refused): the old path. */
		for (int i = 0; i < 8 && th->nqueued; i++)
			bp_bt_submit(th);
		goto out;
	}
	th->c.merged_waits++;
	bool intr = false, failed = false;
	for (unsigned rearms = 0;; rearms++) {
		while (!th->epw_done) {
			/* A splice round that ended short (the socket was full,
			 * or the op needs more rounds) goes in again before the
			 * wait: the program waits for its peer, which waits for
			 * these bytes.  (It may have ended in the enter that
			 * submitted it.) */
			if (th->nqueued)
				bp_bt_submit(th);
			if (th->epw_done)
				break;
			/* A handler of the program ran: epoll_wait would give
			 * EINTR.  (io_uring's own task work never shows here.) */
			if (bp_bt_sig_seen != seen) {
				intr = true;
				break;
			}
			if (!time_left(&ga, &ts, timeout_ns, deadline))
				break;
			int e = -bp_bt_wait_unlocked(th, &ga);
			if (e && e != EINTR && e != ETIME && e != EAGAIN && e != EBUSY) {
				bp_err("bypass batch: io_uring_enter (merged wait): %s",
				       strerror(e));
				failed = true;
				break;
			}
		}
		/* The request's polls were spent on wake-ups that found
		 * nothing (above): the wait goes on, armed again for the time
		 * left, alone or with what was queued meanwhile (splice rounds
		 * that came back short). */
		if (intr || failed || !th->epw_done || th->epw_res != -EAGAIN ||
		    !time_left(&ga, &ts, timeout_ns, deadline))
			break;
		if (rearms == EPW_REARMS) {
			bp_debug("bypass batch: the merged wait gave EAGAIN %u times: "
				 "the old path waits", rearms + 1);
			failed = true;
			break;
		}
		req.wait_all = false;
		th->epw_armed = false; /* set again once it is in */
		bp_bt_submit_epw(th, &req);
		if (!th->epw_armed) {
			/* The ring refused it: nothing is in flight (the last
			 * completion was reaped), the old path waits. */
			th->epw_done = true;
			failed = true;
			break;
		}
	}
	cancel_wait(th);
	th->epw_armed = false;
	res = th->epw_res;
	if (res == -ECANCELED || res == -EAGAIN || !th->epw_done)
		/* Cancelled with nothing delivered, or -EAGAIN when the time
		 * was spent: what ended the wait.  An enter that failed: the
		 * old path waits instead. */
		res = failed ? BT_PASS : intr ? -EINTR : 0;
out:
	bp_bt_leave(th);
	return res;
}
