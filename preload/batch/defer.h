/* SPDX-License-Identifier: MIT */
/*
 * The batch preload's decision layer: what exists only for unmodified
 * programs, over the engine of src/batch/ (batch_internal.h).
 *
 * defer.c decides for each intercepted call whether it is queued, refused
 * or run as the real system call, and submits what is queued (the flush
 * path); fdqueue.c keeps what is known per descriptor (its queue's state,
 * its deferred errors, its life); sendfile.c does it for sendfile (copy,
 * splice, direct), epwait.c merges the flush with the event loop's epoll
 * wait, settings.c holds the preload's settings.  The wrappers
 * (preload.h and the files that include it) are only in libbypass-batch.so;
 * this layer is also a static library (bypass_batch_layer) that tests/batch
 * and the bench link to drive it in-process: they include this file as
 * "batch/defer.h" (preload/ is on their include path).
 *
 * Each bp_bt_tx_* returns what the call returns now (>= 0), -errno to return as
 * -1 with errno, or BT_PASS: run the real call now (earlier work on the
 * descriptor is out of the way).  A wrapper calls them only when the thread
 * is not inside bypass (core's bp_inside(): not inside the library, not
 * inside a signal handler).
 */
#ifndef BYPASS_BATCH_DEFER_H
#define BYPASS_BATCH_DEFER_H

#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "batch/batch_internal.h"

#define BT_PASS LONG_MIN

/* ---------------------------------------------------------- settings */

enum { BT_SENDFILE_SYNC = 0, BT_SENDFILE_COPY = 1 };

struct bt_config {
	bool enabled;            /* BYPASS_BATCH: 0 makes the preload pass through */
	size_t max_copy;         /* BYPASS_BATCH_MAX_COPY: larger payloads run at once */
	size_t fd_bytes;         /* BYPASS_BATCH_FD_BYTES: queued+in flight per fd */
	size_t thread_bytes;     /* BYPASS_BATCH_THREAD_BYTES: per thread */
	unsigned max_ops;        /* BYPASS_BATCH_MAX_OPS: queued per thread */
	uint64_t max_delay_ns;   /* BYPASS_BATCH_MAX_DELAY_US: age of a segment */
	int sendfile_mode;       /* BYPASS_BATCH_SENDFILE: sync | copy */
	size_t sendfile_max;     /* BYPASS_BATCH_SENDFILE_MAX: largest copied */
	int defer_close;         /* BYPASS_BATCH_CLOSE: 0 never, 1 sockets, 2 all */
	bool defer_sockopt;      /* BYPASS_BATCH_SOCKOPT */
	bool merged_wait;        /* BYPASS_BATCH_MERGED_WAIT (and the kernel) */
	uint64_t merged_linger_ns; /* BYPASS_BATCH_MERGED_LINGER_US: how long the
				      merged enter waits for all its requests */
	const char *stats_path;  /* BYPASS_BATCH_STATS: append counters at exit */
	const char *stats_file;  /* BYPASS_STATS_FILE: the same, for bypass run
				    --stats (every module appends its line) */
	bool uring_sockopt;      /* the kernel has socket uring_cmd setsockopt */
	bool splice;             /* BYPASS_BATCH_SPLICE: larger sendfile calls
				    deferred as linked splices (src/batch/splice.c) */
};
extern struct bt_config bp_bt_cfg;
/* Read the environment once (idempotent; safe from a constructor): these
 * settings and the engine's (bypass_batch_configure, bp_bt_ecfg).  Without
 * it both hold their defaults. */
void bp_bt_config_init(void);
/* Read it now, again (tests). */
void bp_bt_config_read(void);
/* Append the counters to BYPASS_BATCH_STATS and BYPASS_STATS_FILE (at exit). */
void bp_bt_stats_dump(const char *why);
/* The stats line's "from_bypass": calls that reached the preload's wrappers
 * from the code of another libbypass object (libbypass.so,
 * libbypass-pager.so), counted by the wrappers (preload/batch/from.c); not
 * a counter of struct bypass_batch_stats (the engine never sees them).
 * Relaxed atomic adds. */
extern uint64_t bp_bt_from_bypass;

/* ---------------------------------------------------------- the guard */

/* Counts signal handlers run on this thread (to tell io_uring's EINTR). */
extern __thread unsigned bp_bt_sig_seen;

/*
 * Entering the library from a wrapper: inside bypass (core's per-thread
 * depth: the calls a signal handler that interrupts it makes pass through
 * the wrappers instead of waiting for the lock) and th locked (th NULL:
 * the depth alone, for code that takes its own locks).  bp_bt_leave undoes
 * both.  The library's own system calls need no guard (core/syscall.h).
 */
static inline void bp_bt_enter(struct bt_thread *th)
{
	bp_enter();
	if (th)
		bp_bt_lock(th);
}

static inline void bp_bt_leave(struct bt_thread *th)
{
	if (th)
		bp_bt_unlock(th);
	bp_leave();
}

/* ---------------------------------------------------------- the calls */

/* write, writev, send, sendto without address, sendmsg without name or
 * control.  *sigpipe is set when a reported EPIPE must raise SIGPIPE. */
long bp_bt_tx_data(int fd, const struct iovec *iov, int iovcnt, int msg_flags,
		bool *sigpipe);
/* A write to fd that is never deferred (splice, sendmmsg): BT_PASS once
 * what is queued on fd is out of its way (more: data follows), or -errno. */
long bp_bt_tx_write_direct(int fd, bool more, bool *sigpipe);
/* Copy len bytes of the program's memory; false if it is not readable. */
bool bp_bt_copy_user(void *dst, const void *src, size_t len);
long bp_bt_tx_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);
long bp_bt_tx_shutdown(int fd, int how);
long bp_bt_tx_sockopt(int fd, int level, int name, const void *val, socklen_t len);
/* close: queued, or BT_PASS (the entry is already forgotten). */
long bp_bt_tx_close(int fd);
/*
 * Any other call on fd: 0 to go on, -EBADF if the program closed fd.
 * BT_READ: a read that blocks if fd is blocking: it submits what the thread
 * queued first (the peer may wait for it).  BT_READ_NOWAIT: a read that
 * does not block (MSG_DONTWAIT).  BT_OTHER: fd's queued work is submitted
 * first (getsockopt, ioctl, fcntl, ...).
 */
enum { BT_READ, BT_READ_NOWAIT, BT_OTHER };
long bp_bt_before_fd(int fd, int kind);
/*
 * A read, recv or getsockopt on fd: the error of a deferred call that
 * failed (-errno, reported once; completions already posted are reaped
 * first), or 0.
 */
long bp_bt_report_err(int fd);
/* dup2/dup3 onto fd, dup of fd, close_range: fd's work must be complete. */
void bp_bt_flush_fd_wait(int fd);

/* A wait that cannot merge (poll, select): splices of the thread are
 * finished first, and no new one is deferred on a non-blocking socket
 * until an epoll wait that can merge comes. */
void bp_bt_unmerged_wait(void);
/*
 * The thread has splices under way: reap their completions and submit the
 * rounds that came back short (a wait that is not merged calls it between
 * short slices, for nothing else would while the program sleeps).  Returns
 * whether splices are still under way.
 */
bool bp_bt_splice_tick(void);
/* The event loop's wait: end the segment before it, begin one after it. */
void bp_bt_segment_end(void);
void bp_bt_segment_begin(void);
/*
 * The merged wait (epwait.c): with calls queued, submit them and the
 * program's epoll wait in one io_uring_enter that also waits (timeout_ns:
 * < 0 forever, ss the epoll_pwait mask or NULL).  Returns the number of
 * events, -errno (-EINTR when a handler of the program ran), or BT_PASS:
 * the old path must wait (nothing queued, timeout 0, no IORING_OP_EPOLL_WAIT,
 * BYPASS_BATCH_MERGED_WAIT=0); the segment is ended either way.
 */
long bp_bt_epoll_wait(int epfd, void *events, int max, int64_t timeout_ns,
		      const sigset_t *ss);
/* Submit what the thread queued, the segment staying as it is. */
void bp_bt_flush_own(void);
/* The thread has requests in flight (an EINTR may come from their task work). */
bool bp_bt_has_inflight(void);

/*
 * Order across descriptors (docs/batch.md, "Order").  bp_bt_order_queue:
 * under th's lock, before a call is queued on fe (may submit what is
 * queued); bp_bt_order_queued: after (is_close for a close).
 * bp_bt_order_direct: before a call on fd that is not queued runs (a write
 * that is not deferred, connect, bind, listen, a close that runs now):
 * submits what the thread queued, unless fd is a regular file.
 */
void bp_bt_order_queue(struct bt_thread *th, struct bt_fdent *fe);
void bp_bt_order_queued(struct bt_thread *th, struct bt_fdent *fe, bool is_close);
void bp_bt_order_direct(int fd);

/* ------------------------------- defer.c and fdqueue.c for each other */

/* The calling thread's state if a preload segment is open on it. */
static inline struct bt_thread *bp_bt_seg_self(void)
{
	struct bt_thread *th = bp_bt_self();
	if (th && (th->segment & BT_SEG_PRELOAD) && th->gen == bp_fork_gen_fast())
		return th;
	return NULL;
}

/* Our own state for waiting on fe's stream, even outside a segment. */
static inline struct bt_thread *bp_bt_self_any(void)
{
	struct bt_thread *th = bp_bt_self();
	if (th && th->ring && th->gen == bp_fork_gen_fast())
		return th;
	return bp_bt_self_make(&th) ? NULL : th;
}

/*
 * Completions of fe's stream that wait in its owner's ring: reaped before a
 * pending error is looked at (fdqueue.c).
 */
void bp_bt_reap_owner(struct bt_fdent *fe);

/* ------------------------------ defer.c, fdqueue.c for sendfile.c */

/* What every call that writes or controls a stream starts with: BT_PASS
 * (nothing to do), -errno to return now, or 0 with *thp locked (the guard
 * raised) owning *fep. */
long bp_bt_tx_enter(int fd, struct bt_thread **thp, struct bt_fdent **fep, bool report,
		    bool *sigpipe);
/* Unlock th (lower the guard) and return r. */
static inline long bp_bt_tx_leave(struct bt_thread *th, long r)
{
	bp_bt_leave(th);
	return r;
}
/* Under th's lock, th owns fe: nothing in flight before a new call goes
 * behind it; 0 or -EAGAIN (non-blocking, the socket full). */
long bp_bt_settle(struct bt_thread *th, struct bt_fdent *fe);
/*
 * fe's stream holds a splice: what comes next is queued behind it without
 * waiting for it (submitted once the splice is done, by the next submit;
 * the merged wait submits as completions come).  Waiting, or telling the
 * program EAGAIN, would tie it to a round on the kernel's workers whose
 * end no EPOLLOUT edge announces.
 */
static inline bool bp_bt_has_splice(struct bt_fdent *fe)
{
	for (struct bt_op *op = fe->head; op; op = op->next)
		if (op->kind == BT_SPLICE)
			return true;
	return false;
}
/* Under th's lock, in a segment: 1 ready to queue len more bytes on fe, 0
 * not (run it directly), -errno. */
long bp_bt_tx_room(struct bt_thread *th, struct bt_fdent *fe, size_t len);
/* fe is closed by the program and its close still pending. */
bool bp_bt_still_closing(struct bt_fdent *fe);
/* fe is a stream socket. */
static inline bool bp_bt_is_stream(struct bt_fdent *fe)
{
	return bp_bt_fd_probe(fe) == 0 &&
	       (atomic_load(&fe->flags) & (BT_FD_SOCK | BT_FD_STREAM)) ==
		       (BT_FD_SOCK | BT_FD_STREAM);
}
/* The real call runs now on fe, behind its queued data (sent first by
 * system calls, MSG_MORE when more follows); unlocks th. */
long bp_bt_run_behind_queue(struct bt_thread *th, struct bt_fdent *fe, bool more);

/* Descriptor life: created (with what is known), flags changed, fstat seen,
 * epoll registration. */
void bp_bt_fd_created(int fd, uint32_t flags);
void bp_bt_fd_setfl(int fd, bool nonblock);
/* fd is a connected stream socket (connect succeeded or is under way). */
void bp_bt_fd_connected(int fd);
void bp_bt_fd_size(int fd, const struct stat *st);
void bp_bt_epoll_ctl(int epfd, int op, int fd, uint32_t events);

#endif
