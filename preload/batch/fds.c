/* SPDX-License-Identifier: MIT */
/* Descriptor life: what each descriptor is (sockets, listeners, files) and its duplication, control and closing. */
#include "preload.h"

/* ------------------------------------------------------------ descriptor life */

static uint32_t sock_flags(int domain_or_listener_flags, int type, bool from_listener)
{
	uint32_t f = BT_FD_KNOWN | BT_FD_OPEN | BT_FD_SOCK;
	if (from_listener) {
		f |= (uint32_t)domain_or_listener_flags & (BT_FD_STREAM | BT_FD_INET);
		if (f & BT_FD_STREAM)
			f |= BT_FD_CONN; /* accepted: connected */
	} else {
		if ((type & 0xf) == SOCK_STREAM)
			f |= BT_FD_STREAM;
		if (domain_or_listener_flags == AF_INET || domain_or_listener_flags == AF_INET6)
			f |= BT_FD_INET;
	}
	if (type & SOCK_NONBLOCK)
		f |= BT_FD_NONBLOCK;
	return f;
}

/* What an accepted socket is: the listener's family, a stream. */
static uint32_t listener_flags(int lfd)
{
	struct bt_fdent *le = bp_bt_fd(lfd);
	if (!le)
		return 0;
	/* No guard: the probe's calls are system calls (core/syscall.h). */
	int r = bp_bt_fd_probe(le);
	return r ? 0 : atomic_load(&le->flags);
}

EXPORT int accept(int lfd, struct sockaddr *a, socklen_t *al)
{
	FROM_BYPASS();
	BEFORE_READ(lfd, 0);
	int fd = REAL(accept)(lfd, a, al);
	if (fd >= 0 && bp_bt_cfg.enabled) {
		uint32_t lf = listener_flags(lfd);
		bp_bt_fd_created(fd, lf & BT_FD_STREAM ? sock_flags((int)lf, 0, true) : 0);
	}
	return fd;
}

EXPORT int accept4(int lfd, struct sockaddr *a, socklen_t *al, int flags)
{
	FROM_BYPASS();
	BEFORE_READ(lfd, 0);
	int fd = REAL(accept4)(lfd, a, al, flags);
	if (fd >= 0 && bp_bt_cfg.enabled) {
		uint32_t lf = listener_flags(lfd);
		bp_bt_fd_created(fd, lf & BT_FD_STREAM ? sock_flags((int)lf, flags, true) : 0);
	}
	return fd;
}

EXPORT int socket(int domain, int type, int proto)
{
	FROM_BYPASS();
	int fd = REAL(socket)(domain, type, proto);
	if (fd >= 0 && bp_bt_cfg.enabled)
		bp_bt_fd_created(fd, sock_flags(domain, type, false));
	return fd;
}

EXPORT int socketpair(int domain, int type, int proto, int sv[2])
{
	FROM_BYPASS();
	int r = REAL(socketpair)(domain, type, proto, sv);
	if (r == 0 && bp_bt_cfg.enabled) {
		uint32_t f = sock_flags(domain, type, false);
		if (f & BT_FD_STREAM)
			f |= BT_FD_CONN;
		bp_bt_fd_created(sv[0], f);
		bp_bt_fd_created(sv[1], f);
	}
	return r;
}

/*
 * Calls whose effect another process sees at once (a connection, a bound
 * port, a listening socket) run behind what the thread queued before them
 * (docs/batch.md, "Order").  A socket that connects becomes one whose close
 * may be queued.
 */
EXPORT int connect(int fd, const struct sockaddr *a, socklen_t al)
{
	FROM_BYPASS();
	if (!PASS())
		bp_bt_order_direct(fd);
	int r = REAL(connect)(fd, a, al);
	int e = errno;
	if (bp_bt_cfg.enabled && (r == 0 || e == EINPROGRESS))
		bp_bt_fd_connected(fd);
	errno = e;
	return r;
}

EXPORT int bind(int fd, const struct sockaddr *a, socklen_t al)
{
	FROM_BYPASS();
	if (!PASS())
		bp_bt_order_direct(fd);
	return REAL(bind)(fd, a, al);
}

EXPORT int listen(int fd, int backlog)
{
	FROM_BYPASS();
	if (!PASS())
		bp_bt_order_direct(fd);
	return REAL(listen)(fd, backlog);
}

static mode_t va_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

static int opened(int fd)
{
	if (fd >= 0 && bp_bt_cfg.enabled)
		bp_bt_fd_created(fd, BT_FD_OPEN);
	return fd;
}

EXPORT int open(const char *path, int flags, ...)
{
	FROM_BYPASS();
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(open)(path, flags, m));
}

EXPORT int open64(const char *path, int flags, ...)
{
	FROM_BYPASS();
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(open64)(path, flags, m));
}

EXPORT int openat(int dfd, const char *path, int flags, ...)
{
	FROM_BYPASS();
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(openat)(dfd, path, flags, m));
}

EXPORT int openat64(int dfd, const char *path, int flags, ...)
{
	FROM_BYPASS();
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(openat64)(dfd, path, flags, m));
}

/* A duplicate refers to the same socket: the original's work goes first. */
EXPORT int dup(int fd)
{
	FROM_BYPASS();
	if (!PASS())
		bp_bt_flush_fd_wait(fd);
	int nfd = REAL(dup)(fd);
	if (nfd >= 0 && bp_bt_cfg.enabled)
		bp_bt_fd_created(nfd, 0);
	return nfd;
}

static int dup_onto(int fd, int nfd, int flags, bool three)
{
	if (!PASS() && fd != nfd) {
		bp_bt_flush_fd_wait(fd);
		bp_bt_flush_fd_wait(nfd); /* dup2 closes nfd: its work must be done */
		bp_bt_order_direct(nfd);  /* and that close is seen at once */
	}
	int r = three ? REAL(dup3)(fd, nfd, flags) : REAL(dup2)(fd, nfd);
	if (r >= 0 && bp_bt_cfg.enabled && fd != nfd)
		bp_bt_fd_created(r, 0);
	return r;
}

EXPORT int dup2(int fd, int nfd)
{
	FROM_BYPASS();
	return dup_onto(fd, nfd, 0, false);
}

EXPORT int dup3(int fd, int nfd, int flags)
{
	FROM_BYPASS();
	return dup_onto(fd, nfd, flags, true);
}

static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, va_list ap)
{
	void *arg = va_arg(ap, void *);
	if (!PASS()) {
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			bp_bt_flush_fd_wait(fd);
		else {
			long e = bp_bt_before_fd(fd, BT_OTHER);
			if (e)
				return (int)ret_errno(e, false);
		}
	}
	int r = real(fd, cmd, arg);
	if (r >= 0 && bp_bt_cfg.enabled) {
		if (cmd == F_SETFL)
			bp_bt_fd_setfl(fd, (long)arg & O_NONBLOCK);
		else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			bp_bt_fd_created(r, 0);
	}
	return r;
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	FROM_BYPASS();
	va_list ap;
	va_start(ap, cmd);
	int r = do_fcntl(REAL(fcntl), fd, cmd, ap);
	va_end(ap);
	return r;
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	FROM_BYPASS();
	va_list ap;
	va_start(ap, cmd);
	int r = do_fcntl(REAL(fcntl64) ? bp_pl_real_fcntl64 : REAL(fcntl), fd, cmd, ap);
	va_end(ap);
	return r;
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	FROM_BYPASS();
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (!PASS()) {
		long e = bp_bt_before_fd(fd, BT_OTHER);
		if (e)
			return (int)ret_errno(e, false);
	}
	int r = REAL(ioctl)(fd, req, arg);
	if (r == 0 && req == FIONBIO && arg && bp_bt_cfg.enabled)
		bp_bt_fd_setfl(fd, *(int *)arg != 0);
	return r;
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	FROM_BYPASS();
	if (!REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	bool closes = !(flags & CLOSE_RANGE_CLOEXEC);
	if (!PASS() && closes) {
		bp_bt_order_direct(-1);
		for (unsigned fd = first; fd <= last && fd < BT_FD_MAX; fd++) {
			if (bp_bt_fd_peek((int)fd))
				bp_bt_flush_fd_wait((int)fd);
			if (fd == UINT_MAX)
				break;
		}
	}
	int r = bp_pl_real_close_range(first, last, flags);
	if (r == 0 && bp_bt_cfg.enabled && closes)
		for (unsigned fd = first; fd <= last && fd < BT_FD_MAX; fd++) {
			struct bt_fdent *fe = bp_bt_fd_peek((int)fd);
			if (fe)
				bp_bt_fd_forget(fe);
		}
	return r;
}

EXPORT int fclose(FILE *f)
{
	FROM_BYPASS();
	int fd = f ? fileno(f) : -1;
	if (fd >= 0 && !PASS()) {
		bp_bt_flush_fd_wait(fd);
		bp_bt_order_direct(fd);
		struct bt_fdent *fe = bp_bt_fd_peek(fd);
		if (fe)
			bp_bt_fd_forget(fe);
	}
	return REAL(fclose)(f);
}

/* A program's own fstat of a file tells us its size (sendfile in copy mode). */
EXPORT int fstat(int fd, struct stat *st)
{
	FROM_BYPASS();
	int r = REAL(fstat)(fd, st);
	if (r == 0 && bp_bt_cfg.enabled && bp_bt_cfg.sendfile_mode == BT_SENDFILE_COPY)
		bp_bt_fd_size(fd, st);
	return r;
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	FROM_BYPASS();
	int r = REAL(fstat64)(fd, st);
	if (r == 0 && bp_bt_cfg.enabled && bp_bt_cfg.sendfile_mode == BT_SENDFILE_COPY)
		bp_bt_fd_size(fd, (struct stat *)st);
	return r;
}
