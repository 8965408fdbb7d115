/* SPDX-License-Identifier: MIT */
/*
 * bypass/batch.h - system call batching through io_uring: ESCA's segments
 * on a stock kernel, with honest semantics.
 *
 * A segment is a stretch of code on one thread between bypass_batch_start()
 * and bypass_batch_flush().  Inside it, the calls below are queued in the
 * thread's io_uring instead of entering the kernel one by one; the flush
 * submits them all with one io_uring_enter (none with SQPOLL while the
 * kernel thread is awake), waits until every queued call has finished and
 * stores each result where the caller asked.  Calls on one descriptor run in
 * the order they were made (they are linked); one that fails stops the later
 * calls on that descriptor, which report -ECANCELED.  Calls on different
 * descriptors are independent.
 *
 * Each queued call runs at the flush as the system call would run then.
 * send, sendto and sendmsg without MSG_DONTWAIT behave as on a blocking
 * socket, even an O_NONBLOCK one: they wait for room and send everything or
 * fail (io_uring retries short sends).  With MSG_DONTWAIT they behave as on
 * a non-blocking socket: the result may be -EAGAIN or a short count, and a
 * short count does not stop the next call (io_uring breaks a chain on
 * failures only), so use it where a short write may be dropped or resent.
 * write and writev are io_uring's: they wait for room but may come up short
 * on sockets and pipes.
 *
 * Lifetimes: descriptions (iovec arrays, struct msghdr, addresses, option
 * values) are copied when the call is made; payload bytes are not: the
 * caller keeps them unchanged until the flush returns.
 *
 * The same engine serves the LD_PRELOAD library libbypass-batch.so, which
 * finds segments in unmodified event-driven servers by itself (see
 * libbypass-batch(3) and docs/batch.md).
 *
 * Every function returns 0 or a count on success and -errno on failure; it
 * never sets errno and prints nothing unless BYPASS_LOG asks.
 */
#ifndef BYPASS_BATCH_H
#define BYPASS_BATCH_H

#include <bypass/core.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* bypass_batch_opts.flags */
#define BYPASS_BATCH_SQPOLL 0x1u /* a kernel thread polls the queue: a flush
				    makes no system call while it is awake */

struct bypass_batch_opts {
	unsigned entries;        /* queue depth; 0 = 256 */
	unsigned flags;          /* BYPASS_BATCH_* */
	unsigned sqpoll_idle_ms; /* SQPOLL thread idle time; 0 = 50 ms */
	uint64_t reserved[4];    /* must be zero (room to grow; else -EINVAL) */
};

/*
 * bypass_batch_configure - set the queue options for threads of this
 * process that have not made their queue yet (a thread makes it at its first
 * bypass_batch_start).  The library reads no environment (the preload,
 * libbypass-batch.so, turns BYPASS_BATCH_ENTRIES, _SQPOLL and
 * _SQPOLL_IDLE_MS into this call for its own private copy of the engine).
 * Returns 0, -EINVAL (unknown flags, entries not a
 * power of two between 2 and 32768), or -EBUSY if the calling thread's
 * queue exists already (other threads keep theirs; new ones use opts).
 */
BYPASS_API int bypass_batch_configure(const struct bypass_batch_opts *opts);

/*
 * bypass_batch_start - open a segment on the calling thread.  Returns 0,
 * -EALREADY if one is open, or the -errno of creating the thread's io_uring
 * (-ENOSYS or -EPERM where io_uring is unavailable, -EINVAL/-EPERM when
 * SQPOLL was asked for and refused); no segment is open after an error.
 */
BYPASS_API int bypass_batch_start(void);

/*
 * bypass_batch_flush - submit every call queued on this thread, wait until
 * all have finished, store their results, and close the segment.  Returns
 * the number of calls whose results were stored, or -ENOTCONN when no
 * segment is open.  If io_uring refuses a submission the remaining calls run
 * as ordinary system calls, so no result is lost.
 */
BYPASS_API int bypass_batch_flush(void);

/* bypass_batch_active - 1 if a segment is open on this thread, else 0. */
BYPASS_API int bypass_batch_active(void);

/*
 * The queued calls.  Each returns 0 when the call was queued; its result
 * (what the system call returns, or -errno) is stored in *res by the flush
 * (res may be NULL).  Until then *res holds -EINPROGRESS.  Errors returned
 * at once, with nothing queued:
 *   -ENOTCONN  no segment is open on this thread;
 *   -EBADF     fd (or in_fd) is negative;
 *   -EINVAL    a NULL buffer with a non-zero length, iovcnt outside
 *              0..IOV_MAX, flags or how not supported, an address or
 *              option value larger than the call allows;
 *   -ENOMEM    out of memory.
 * send, sendto and sendmsg accept MSG_DONTWAIT, MSG_NOSIGNAL, MSG_MORE,
 * MSG_WAITALL (implied without MSG_DONTWAIT) and MSG_EOR.  write and writev write at the file position, like write(2).
 * sendfile reads count bytes of in_fd at offset (-1 = the file position,
 * which advances) and sends what it read; the result is the number of bytes
 * sent, short at the end of the file.  It is done with a read into a buffer
 * of the library followed by a send (io_uring has no sendfile); count is cut
 * to 1 MiB per call, as sendfile(2) cuts at 2 GiB.  setsockopt copies up to
 * 64 bytes of value and needs Linux 6.7 (else its result is -EOPNOTSUPP, or
 * -EINVAL before 5.19).
 */
BYPASS_API int bypass_batch_write(int fd, const void *buf, size_t len, ssize_t *res);
BYPASS_API int bypass_batch_writev(int fd, const struct iovec *iov, int iovcnt,
				   ssize_t *res);
BYPASS_API int bypass_batch_send(int fd, const void *buf, size_t len, int flags,
				 ssize_t *res);
BYPASS_API int bypass_batch_sendto(int fd, const void *buf, size_t len, int flags,
				   const struct sockaddr *addr, socklen_t addrlen,
				   ssize_t *res);
BYPASS_API int bypass_batch_sendmsg(int fd, const struct msghdr *msg, int flags,
				    ssize_t *res);
BYPASS_API int bypass_batch_sendfile(int out_fd, int in_fd, off_t offset,
				     size_t count, ssize_t *res);
BYPASS_API int bypass_batch_shutdown(int fd, int how, ssize_t *res);
BYPASS_API int bypass_batch_close(int fd, ssize_t *res);
BYPASS_API int bypass_batch_setsockopt(int fd, int level, int name,
				       const void *val, socklen_t len, ssize_t *res);

/*
 * bypass_batch_register_fd / bypass_batch_unregister_fd - register fd in
 * the calling thread's io_uring (a registered file), so that its queued calls
 * skip the kernel's descriptor lookup.  It pays for a descriptor that
 * carries many calls: registering costs a system call.  The registration
 * holds a reference to the file: unregister before closing fd with close(2)
 * (bypass_batch_close does it).  Register returns 0, -EBADF, -EALREADY,
 * -ENOSPC (more than 4096 registered, or fd >= 4096), or the -errno of
 * creating the queue; unregister returns 0, -EBADF or -ENOENT.  Both may be
 * called inside or outside a segment; inside one they first submit what is
 * queued, to keep order.
 */
BYPASS_API int bypass_batch_register_fd(int fd);
BYPASS_API int bypass_batch_unregister_fd(int fd);

/*
 * Counters for the whole process (every thread, explicit calls and the
 * preload together), since it started or since the fork that made it.
 */
struct bypass_batch_stats {
	uint64_t segments;   /* segments closed */
	uint64_t deferred;   /* calls queued instead of entering the kernel */
	uint64_t direct;     /* preload: calls inside a segment that ran as
				system calls (bounds, arguments, order) */
	uint64_t enters;     /* io_uring_enter calls made to submit or wait */
	uint64_t submitted;  /* io_uring requests submitted */
	uint64_t bytes;      /* payload bytes queued */
	uint64_t partial;    /* short writes the library finished */
	uint64_t eagain;     /* preload: writes answered -EAGAIN because earlier
				deferred data still waits for the socket */
	uint64_t errors;     /* deferred calls that failed after returning */
	uint64_t reported;   /* of those, errors reported to a later call */
	uint64_t merged_waits; /* preload: epoll waits that went into the
				  kernel in the same io_uring_enter as the
				  flush (IORING_OP_EPOLL_WAIT) */
	uint64_t spliced;    /* preload: sendfile calls deferred as linked
				splices through a pipe (no copy) */
	uint64_t reserved[20]; /* room for counters to come (zero): the
				  struct stays 256 bytes */
};

/* bypass_batch_stats - fill *out.  Returns 0 or -EINVAL (NULL). */
BYPASS_API int bypass_batch_stats(struct bypass_batch_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BYPASS_BATCH_H */
