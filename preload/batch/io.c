/* SPDX-License-Identifier: MIT */
/* Writes, sends, sendfile, shutdown, close and socket options are deferred; reads run behind queued work. */
#include "preload.h"

/* ------------------------------------------------------------ data */

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	FROM_BYPASS();
	if (!PASS()) {
		struct iovec v = { (void *)buf, n };
		bool sp = false;
		long r = bp_bt_tx_data(fd, &v, 1, 0, &sp);
		if (r != BT_PASS)
			return ret_errno(r, sp);
		bp_bt_order_direct(fd);
	}
	return REAL(write)(fd, buf, n);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	FROM_BYPASS();
	if (!PASS()) {
		bool sp = false;
		long r = bp_bt_tx_data(fd, iov, iovcnt, 0, &sp);
		if (r != BT_PASS)
			return ret_errno(r, sp);
		bp_bt_order_direct(fd);
	}
	return REAL(writev)(fd, iov, iovcnt);
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	FROM_BYPASS();
	if (!PASS()) {
		struct iovec v = { (void *)buf, n };
		bool sp = false;
		long r = bp_bt_tx_data(fd, &v, 1, flags, &sp);
		if (r != BT_PASS)
			return ret_errno(r, sp);
		bp_bt_order_direct(fd);
	}
	return REAL(send)(fd, buf, n, flags);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
		      const struct sockaddr *addr, socklen_t alen)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r;
		bool sp = false;
		if (!addr && !alen) {
			struct iovec v = { (void *)buf, n };
			r = bp_bt_tx_data(fd, &v, 1, flags, &sp);
		} else {
			r = bp_bt_before_fd(fd, BT_OTHER);
			if (!r)
				r = BT_PASS;
		}
		if (r != BT_PASS)
			return ret_errno(r, sp);
		bp_bt_order_direct(fd);
	}
	return REAL(sendto)(fd, buf, n, flags, addr, alen);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r;
		bool sp = false;
		/* Names and control data (descriptors!) are not deferred; the
		 * header is read safely (a bad pointer gives EFAULT, below). */
		struct msghdr m;
		if (msg && bp_bt_copy_user(&m, msg, sizeof(m)) && !m.msg_name &&
		    !m.msg_namelen && !m.msg_controllen && m.msg_iovlen <= INT_MAX)
			r = bp_bt_tx_data(fd, m.msg_iov, (int)m.msg_iovlen, flags, &sp);
		else if (!(r = bp_bt_before_fd(fd, BT_OTHER)))
			r = BT_PASS;
		if (r != BT_PASS)
			return ret_errno(r, sp);
		bp_bt_order_direct(fd);
	}
	return REAL(sendmsg)(fd, msg, flags);
}

EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t count)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r = bp_bt_tx_sendfile(out_fd, in_fd, off, count);
		if (r != BT_PASS)
			return ret_errno(r, r == -EPIPE);
		bp_bt_order_direct(out_fd);
	}
	return REAL(sendfile)(out_fd, in_fd, off, count);
}

EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t count)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r = bp_bt_tx_sendfile(out_fd, in_fd, (off_t *)off, count);
		if (r != BT_PASS)
			return ret_errno(r, r == -EPIPE);
		bp_bt_order_direct(out_fd);
	}
	return REAL(sendfile64)(out_fd, in_fd, off, count);
}

/*
 * Writes that are not deferred (splice, sendmmsg) still go behind the
 * socket's queued data; splice out of a socket is a read and waits behind
 * the work queued on that socket (the peer may answer only once it has it).
 */
EXPORT ssize_t splice(int in, loff_t *in_off, int out, loff_t *out_off, size_t n,
		      unsigned flags)
{
	FROM_BYPASS();
	if (!PASS()) {
		bool sp = false;
		long r = bp_bt_before_fd(in, (flags & SPLICE_F_NONBLOCK) ? BT_READ_NOWAIT
									: BT_READ);
		if (!r)
			r = bp_bt_tx_write_direct(out, n != 0, &sp);
		if (r != BT_PASS)
			return ret_errno(r, sp || r == -EPIPE);
		bp_bt_order_direct(out);
	}
	return REAL(splice)(in, in_off, out, out_off, n, flags);
}

EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
	FROM_BYPASS();
	if (!PASS()) {
		bool sp = false;
		long r = bp_bt_tx_write_direct(fd, true, &sp);
		if (r != BT_PASS)
			return (int)ret_errno(r, sp || (r == -EPIPE && !(flags & MSG_NOSIGNAL)));
		bp_bt_order_direct(fd);
	}
	return REAL(sendmmsg)(fd, v, n, flags);
}

/* ------------------------------------------------------------ control */

EXPORT int shutdown(int fd, int how)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r = bp_bt_tx_shutdown(fd, how);
		if (r != BT_PASS)
			return (int)ret_errno(r, false);
		bp_bt_order_direct(fd);
	}
	return REAL(shutdown)(fd, how);
}

EXPORT int close(int fd)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r = bp_bt_tx_close(fd);
		if (r != BT_PASS)
			return (int)ret_errno(r, false);
	}
	return REAL(close)(fd);
}

EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r = bp_bt_tx_sockopt(fd, level, name, val, len);
		if (r != BT_PASS)
			return (int)ret_errno(r, false);
		bp_bt_order_direct(fd);
	}
	return REAL(setsockopt)(fd, level, name, val, len);
}

EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	FROM_BYPASS();
	if (!PASS()) {
		long r = bp_bt_before_fd(fd, BT_OTHER);
		if (!r)
			r = bp_bt_report_err(fd);
		if (r && level == SOL_SOCKET && name == SO_ERROR) {
			/* The socket's pending error: the deferred call's, unless
			 * the socket has one of its own. */
			int g = REAL(getsockopt)(fd, level, name, val, len);
			if (g == 0 && *len >= (socklen_t)sizeof(int) && *(int *)val == 0)
				*(int *)val = (int)-r;
			return g;
		}
		if (r)
			return (int)ret_errno(r, false);
	}
	return REAL(getsockopt)(fd, level, name, val, len);
}

/* ------------------------------------------------------------ reads */

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	FROM_BYPASS();
	BEFORE_READ(fd, 0);
	return REAL(read)(fd, buf, n);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	FROM_BYPASS();
	BEFORE_READ(fd, 0);
	return REAL(readv)(fd, iov, iovcnt);
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	FROM_BYPASS();
	BEFORE_READ(fd, flags);
	return REAL(recv)(fd, buf, n, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
			socklen_t *al)
{
	FROM_BYPASS();
	BEFORE_READ(fd, flags);
	return REAL(recvfrom)(fd, buf, n, flags, a, al);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	FROM_BYPASS();
	BEFORE_READ(fd, flags);
	return REAL(recvmsg)(fd, msg, flags);
}

EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags,
		    struct timespec *ts)
{
	FROM_BYPASS();
	BEFORE_READ(fd, flags);
	return REAL(recvmmsg)(fd, v, n, flags, ts);
}
