/* SPDX-License-Identifier: MIT */
/*
 * libbypass-batch.so: system call batching for unmodified event-driven
 * programs, by LD_PRELOAD.
 *
 * A segment opens when the thread's event-loop wait (epoll_wait,
 * epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect) returns, and is
 * submitted with one io_uring_enter when the thread waits again.  Inside it,
 * writes to stream sockets (write, writev, send, sendto, sendmsg), sendfile,
 * shutdown, TCP_CORK/TCP_NODELAY and close are queued; their arguments are
 * copied and they return what the system call returns on success.  The rest
 * of the wrappers keep order (a call on a descriptor with queued work runs
 * behind it), learn what descriptors are (accept4, socket, open, fcntl,
 * fstat, epoll_ctl) and keep the process's life intact (fork, exec, exit,
 * signal handlers).  Decisions are in src/batch/defer.c; see docs/batch.md.
 *
 * BYPASS_BATCH=0 makes every wrapper a pure pass-through.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "batch/defer.h"

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------ real functions */

#define REAL_FUNCS(X)                                                         \
	X(ssize_t, write, (int, const void *, size_t))                        \
	X(ssize_t, writev, (int, const struct iovec *, int))                  \
	X(ssize_t, send, (int, const void *, size_t, int))                    \
	X(ssize_t, sendto, (int, const void *, size_t, int,                   \
			    const struct sockaddr *, socklen_t))              \
	X(ssize_t, sendmsg, (int, const struct msghdr *, int))                \
	X(ssize_t, sendfile, (int, int, off_t *, size_t))                     \
	X(ssize_t, sendfile64, (int, int, off64_t *, size_t))                 \
	X(int, shutdown, (int, int))                                          \
	X(int, close, (int))                                                  \
	X(int, setsockopt, (int, int, int, const void *, socklen_t))          \
	X(int, getsockopt, (int, int, int, void *, socklen_t *))              \
	X(ssize_t, read, (int, void *, size_t))                               \
	X(ssize_t, readv, (int, const struct iovec *, int))                   \
	X(ssize_t, recv, (int, void *, size_t, int))                          \
	X(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *,    \
			      socklen_t *))                                   \
	X(ssize_t, recvmsg, (int, struct msghdr *, int))                      \
	X(int, epoll_wait, (int, struct epoll_event *, int, int))             \
	X(int, epoll_pwait, (int, struct epoll_event *, int, int,             \
			     const sigset_t *))                               \
	X(int, epoll_pwait2, (int, struct epoll_event *, int,                 \
			      const struct timespec *, const sigset_t *))     \
	X(int, epoll_ctl, (int, int, int, struct epoll_event *))              \
	X(int, poll, (struct pollfd *, nfds_t, int))                          \
	X(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *,      \
		       const sigset_t *))                                     \
	X(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *)) \
	X(int, pselect, (int, fd_set *, fd_set *, fd_set *,                   \
			 const struct timespec *, const sigset_t *))          \
	X(int, accept, (int, struct sockaddr *, socklen_t *))                 \
	X(int, accept4, (int, struct sockaddr *, socklen_t *, int))           \
	X(int, socket, (int, int, int))                                       \
	X(int, open, (const char *, int, ...))                                \
	X(int, open64, (const char *, int, ...))                              \
	X(int, openat, (int, const char *, int, ...))                         \
	X(int, openat64, (int, const char *, int, ...))                       \
	X(int, dup, (int))                                                    \
	X(int, dup2, (int, int))                                              \
	X(int, dup3, (int, int, int))                                         \
	X(int, fcntl, (int, int, ...))                                        \
	X(int, fcntl64, (int, int, ...))                                      \
	X(int, ioctl, (int, unsigned long, ...))                              \
	X(int, close_range, (unsigned, unsigned, int))                        \
	X(int, fclose, (FILE *))                                              \
	X(int, fstat, (int, struct stat *))                                   \
	X(int, fstat64, (int, struct stat64 *))                               \
	X(int, execve, (const char *, char *const[], char *const[]))          \
	X(int, execv, (const char *, char *const[]))                          \
	X(int, execvp, (const char *, char *const[]))                         \
	X(int, execvpe, (const char *, char *const[], char *const[]))         \
	X(int, fexecve, (int, char *const[], char *const[]))                  \
	X(int, posix_spawn, (pid_t *, const char *,                           \
			     const posix_spawn_file_actions_t *,              \
			     const posix_spawnattr_t *, char *const[],        \
			     char *const[]))                                  \
	X(int, posix_spawnp, (pid_t *, const char *,                          \
			      const posix_spawn_file_actions_t *,             \
			      const posix_spawnattr_t *, char *const[],       \
			      char *const[]))                                 \
	X(void, _exit, (int))                                                 \
	X(void, _Exit, (int))                                                 \
	X(int, sigaction, (int, const struct sigaction *, struct sigaction *))

#define DECLARE(ret, name, args) static ret(*real_##name) args;
REAL_FUNCS(DECLARE)

#define RESOLVE(ret, name, args) \
	if (!real_##name)        \
		real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);
static void resolve_all(void)
{
	REAL_FUNCS(RESOLVE)
}

/* The real function, resolved on first use (before our constructor too). */
#define REAL(name) (bp_likely(real_##name) ? real_##name : (resolve_all(), real_##name))

/* Wrappers work only once configured, and never inside the library itself
 * or inside a signal handler. */
#define ACTIVE() (bp_likely(bt_cfg.enabled) && bp_likely(!bt_guard))

static long ret_errno(long r, bool sigpipe)
{
	if (r >= 0)
		return r;
	if (sigpipe && r == -EPIPE)
		raise(SIGPIPE);
	errno = (int)-r;
	return -1;
}

/* ------------------------------------------------------------ signals */

/*
 * The program's handlers run through a trampoline that marks the thread as
 * inside a handler: calls made there pass straight through (a handler may
 * interrupt the library, or malloc), and an EINTR of epoll_wait is known to
 * come from a handler rather than from io_uring's task work.
 */
static struct {
	_Atomic(void *) fn;
	_Atomic int flags;
} handlers[_NSIG];

static void trampoline(int sig, siginfo_t *si, void *uc)
{
	bt_guard++;
	bt_sig_seen++;
	void *fn = atomic_load_explicit(&handlers[sig].fn, memory_order_acquire);
	int flags = atomic_load_explicit(&handlers[sig].flags, memory_order_relaxed);
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))fn)(sig, si, uc);
	else if (fn)
		((void (*)(int))fn)(sig);
	bt_guard--;
}

static bool wrappable(int sig, const struct sigaction *act)
{
	if (!act || sig <= 0 || sig >= _NSIG)
		return false;
	void *h = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction
					       : (void *)act->sa_handler;
	return h != (void *)SIG_DFL && h != (void *)SIG_IGN && h != NULL;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!bt_cfg.enabled)
		return REAL(sigaction)(sig, act, old);
	struct sigaction mine, prev;
	const struct sigaction *use = act;
	void *app_fn = NULL;
	int app_flags = 0;
	bool wrap = wrappable(sig, act);
	if (wrap) {
		mine = *act;
		app_flags = act->sa_flags;
		app_fn = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction
						      : (void *)act->sa_handler;
		mine.sa_sigaction = trampoline;
		mine.sa_flags |= SA_SIGINFO;
		use = &mine;
	}
	void *old_fn = NULL;
	int old_flags = 0;
	if (sig > 0 && sig < _NSIG) {
		old_fn = atomic_load(&handlers[sig].fn);
		old_flags = atomic_load(&handlers[sig].flags);
		if (wrap) {
			atomic_store(&handlers[sig].flags, app_flags);
			atomic_store(&handlers[sig].fn, app_fn);
		}
	}
	int r = REAL(sigaction)(sig, use, &prev);
	if (r == 0 && old) {
		*old = prev;
		if (prev.sa_sigaction == trampoline) {
			old->sa_flags = old_flags;
			if (old_flags & SA_SIGINFO)
				old->sa_sigaction = (void (*)(int, siginfo_t *, void *))old_fn;
			else
				old->sa_handler = (void (*)(int))old_fn;
		}
	}
	return r;
}

EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART; /* glibc's signal(): BSD semantics */
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ------------------------------------------------------------ data */

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	if (ACTIVE()) {
		struct iovec v = { (void *)buf, n };
		bool sp = false;
		long r = bt_tx_data(fd, &v, 1, 0, &sp);
		if (r != BT_PASS)
			return ret_errno(r, sp);
	}
	return REAL(write)(fd, buf, n);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	if (ACTIVE()) {
		bool sp = false;
		long r = bt_tx_data(fd, iov, iovcnt, 0, &sp);
		if (r != BT_PASS)
			return ret_errno(r, sp);
	}
	return REAL(writev)(fd, iov, iovcnt);
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	if (ACTIVE()) {
		struct iovec v = { (void *)buf, n };
		bool sp = false;
		long r = bt_tx_data(fd, &v, 1, flags, &sp);
		if (r != BT_PASS)
			return ret_errno(r, sp);
	}
	return REAL(send)(fd, buf, n, flags);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
		      const struct sockaddr *addr, socklen_t alen)
{
	if (ACTIVE()) {
		long r;
		bool sp = false;
		if (!addr && !alen) {
			struct iovec v = { (void *)buf, n };
			r = bt_tx_data(fd, &v, 1, flags, &sp);
		} else {
			r = bt_before_fd(fd, BT_OTHER);
			if (!r)
				r = BT_PASS;
		}
		if (r != BT_PASS)
			return ret_errno(r, sp);
	}
	return REAL(sendto)(fd, buf, n, flags, addr, alen);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (ACTIVE()) {
		long r;
		bool sp = false;
		/* Names and control data (descriptors!) are not deferred. */
		if (msg && !msg->msg_name && !msg->msg_namelen && !msg->msg_controllen &&
		    msg->msg_iovlen <= INT_MAX)
			r = bt_tx_data(fd, msg->msg_iov, (int)msg->msg_iovlen, flags, &sp);
		else if (!(r = bt_before_fd(fd, BT_OTHER)))
			r = BT_PASS;
		if (r != BT_PASS)
			return ret_errno(r, sp);
	}
	return REAL(sendmsg)(fd, msg, flags);
}

EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t count)
{
	if (ACTIVE()) {
		long r = bt_tx_sendfile(out_fd, in_fd, off, count);
		if (r != BT_PASS)
			return ret_errno(r, r == -EPIPE);
	}
	return REAL(sendfile)(out_fd, in_fd, off, count);
}

EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t count)
{
	if (ACTIVE()) {
		long r = bt_tx_sendfile(out_fd, in_fd, (off_t *)off, count);
		if (r != BT_PASS)
			return ret_errno(r, r == -EPIPE);
	}
	return REAL(sendfile64)(out_fd, in_fd, off, count);
}

/* ------------------------------------------------------------ control */

EXPORT int shutdown(int fd, int how)
{
	if (ACTIVE()) {
		long r = bt_tx_shutdown(fd, how);
		if (r != BT_PASS)
			return (int)ret_errno(r, false);
	}
	return REAL(shutdown)(fd, how);
}

EXPORT int close(int fd)
{
	if (ACTIVE()) {
		long r = bt_tx_close(fd);
		if (r != BT_PASS)
			return (int)ret_errno(r, false);
	}
	return REAL(close)(fd);
}

EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (ACTIVE()) {
		long r = bt_tx_sockopt(fd, level, name, val, len);
		if (r != BT_PASS)
			return (int)ret_errno(r, false);
	}
	return REAL(setsockopt)(fd, level, name, val, len);
}

EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	if (ACTIVE()) {
		long r = bt_before_fd(fd, BT_OTHER);
		if (r)
			return (int)ret_errno(r, false);
	}
	return REAL(getsockopt)(fd, level, name, val, len);
}

/* ------------------------------------------------------------ reads */

#define BEFORE_READ(fd, flags)                                              \
	do {                                                                \
		if (ACTIVE()) {                                             \
			long r_ = bt_before_fd((fd), (flags) & MSG_DONTWAIT \
							     ? BT_READ_NOWAIT   \
							     : BT_READ);        \
			if (r_)                                             \
				return ret_errno(r_, false);                \
		}                                                           \
	} while (0)

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	BEFORE_READ(fd, 0);
	return REAL(read)(fd, buf, n);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	BEFORE_READ(fd, 0);
	return REAL(readv)(fd, iov, iovcnt);
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	BEFORE_READ(fd, flags);
	return REAL(recv)(fd, buf, n, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
			socklen_t *al)
{
	BEFORE_READ(fd, flags);
	return REAL(recvfrom)(fd, buf, n, flags, a, al);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	BEFORE_READ(fd, flags);
	return REAL(recvmsg)(fd, msg, flags);
}

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
	return r < 0 && errno == EINTR && inflight && bt_sig_seen == seen;
}

static int ep_wait(int epfd, struct epoll_event *ev, int max, int timeout,
		   const sigset_t *ss, bool pwait)
{
	bt_segment_end();
	uint64_t dl = deadline_ms(timeout);
	int r, t = timeout;
	for (;;) {
		unsigned seen = bt_sig_seen;
		bool inflight = bt_has_inflight();
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
	bt_segment_begin();
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
	bt_segment_end();
	int r = real_epoll_pwait2(epfd, ev, max, ts, ss);
	int e = errno;
	bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	int r = REAL(epoll_ctl)(epfd, op, fd, ev);
	if (r == 0 && bt_cfg.enabled && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_DEL))
		bt_epoll_ctl(epfd, op, fd);
	return r;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!ACTIVE())
		return REAL(poll)(fds, n, timeout);
	bt_segment_end();
	int r = REAL(poll)(fds, n, timeout);
	int e = errno;
	bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		 const sigset_t *ss)
{
	if (!ACTIVE())
		return REAL(ppoll)(fds, n, ts, ss);
	bt_segment_end();
	int r = REAL(ppoll)(fds, n, ts, ss);
	int e = errno;
	bt_segment_begin();
	errno = e;
	return r;
}

EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	if (!ACTIVE())
		return REAL(select)(n, r, w, x, tv);
	bt_segment_end();
	int ret = REAL(select)(n, r, w, x, tv);
	int e = errno;
	bt_segment_begin();
	errno = e;
	return ret;
}

EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
		   const sigset_t *ss)
{
	if (!ACTIVE())
		return REAL(pselect)(n, r, w, x, ts, ss);
	bt_segment_end();
	int ret = REAL(pselect)(n, r, w, x, ts, ss);
	int e = errno;
	bt_segment_begin();
	errno = e;
	return ret;
}

/* ------------------------------------------------------------ descriptor life */

static uint32_t sock_flags(int domain_or_listener_flags, int type, bool from_listener)
{
	uint32_t f = BT_FD_KNOWN | BT_FD_OPEN | BT_FD_SOCK;
	if (from_listener) {
		f |= (uint32_t)domain_or_listener_flags & (BT_FD_STREAM | BT_FD_INET);
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
	struct bt_fdent *le = bt_fd(lfd);
	if (!le)
		return 0;
	bt_guard++;
	int r = bt_fd_probe(le);
	bt_guard--;
	return r ? 0 : atomic_load(&le->flags);
}

EXPORT int accept(int lfd, struct sockaddr *a, socklen_t *al)
{
	BEFORE_READ(lfd, 0);
	int fd = REAL(accept)(lfd, a, al);
	if (fd >= 0 && bt_cfg.enabled) {
		uint32_t lf = listener_flags(lfd);
		bt_fd_created(fd, lf & BT_FD_STREAM ? sock_flags((int)lf, 0, true) : 0);
	}
	return fd;
}

EXPORT int accept4(int lfd, struct sockaddr *a, socklen_t *al, int flags)
{
	BEFORE_READ(lfd, 0);
	int fd = REAL(accept4)(lfd, a, al, flags);
	if (fd >= 0 && bt_cfg.enabled) {
		uint32_t lf = listener_flags(lfd);
		bt_fd_created(fd, lf & BT_FD_STREAM ? sock_flags((int)lf, flags, true) : 0);
	}
	return fd;
}

EXPORT int socket(int domain, int type, int proto)
{
	int fd = REAL(socket)(domain, type, proto);
	if (fd >= 0 && bt_cfg.enabled)
		bt_fd_created(fd, sock_flags(domain, type, false));
	return fd;
}

static mode_t va_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

static int opened(int fd)
{
	if (fd >= 0 && bt_cfg.enabled)
		bt_fd_created(fd, BT_FD_OPEN);
	return fd;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(open)(path, flags, m));
}

EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(open64)(path, flags, m));
}

EXPORT int openat(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(openat)(dfd, path, flags, m));
}

EXPORT int openat64(int dfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t m = va_mode(flags, ap);
	va_end(ap);
	return opened(REAL(openat64)(dfd, path, flags, m));
}

/* A duplicate refers to the same socket: the original's work goes first. */
EXPORT int dup(int fd)
{
	if (ACTIVE())
		bt_flush_fd_wait(fd);
	int nfd = REAL(dup)(fd);
	if (nfd >= 0 && bt_cfg.enabled)
		bt_fd_created(nfd, 0);
	return nfd;
}

static int dup_onto(int fd, int nfd, int flags, bool three)
{
	if (ACTIVE() && fd != nfd) {
		bt_flush_fd_wait(fd);
		bt_flush_fd_wait(nfd); /* dup2 closes nfd: its work must be done */
	}
	int r = three ? REAL(dup3)(fd, nfd, flags) : REAL(dup2)(fd, nfd);
	if (r >= 0 && bt_cfg.enabled && fd != nfd)
		bt_fd_created(r, 0);
	return r;
}

EXPORT int dup2(int fd, int nfd)
{
	return dup_onto(fd, nfd, 0, false);
}

EXPORT int dup3(int fd, int nfd, int flags)
{
	return dup_onto(fd, nfd, flags, true);
}

static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, va_list ap)
{
	void *arg = va_arg(ap, void *);
	if (ACTIVE()) {
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			bt_flush_fd_wait(fd);
		else {
			long e = bt_before_fd(fd, BT_OTHER);
			if (e)
				return (int)ret_errno(e, false);
		}
	}
	int r = real(fd, cmd, arg);
	if (r >= 0 && bt_cfg.enabled) {
		if (cmd == F_SETFL)
			bt_fd_setfl(fd, (long)arg & O_NONBLOCK);
		else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			bt_fd_created(r, 0);
	}
	return r;
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	int r = do_fcntl(REAL(fcntl), fd, cmd, ap);
	va_end(ap);
	return r;
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	int r = do_fcntl(REAL(fcntl64) ? real_fcntl64 : REAL(fcntl), fd, cmd, ap);
	va_end(ap);
	return r;
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (ACTIVE()) {
		long e = bt_before_fd(fd, BT_OTHER);
		if (e)
			return (int)ret_errno(e, false);
	}
	int r = REAL(ioctl)(fd, req, arg);
	if (r == 0 && req == FIONBIO && arg && bt_cfg.enabled)
		bt_fd_setfl(fd, *(int *)arg != 0);
	return r;
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (!REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	bool closes = !(flags & CLOSE_RANGE_CLOEXEC);
	if (ACTIVE() && closes) {
		for (unsigned fd = first; fd <= last && fd < BT_FD_MAX; fd++) {
			if (bt_fd_peek((int)fd))
				bt_flush_fd_wait((int)fd);
			if (fd == UINT_MAX)
				break;
		}
	}
	int r = real_close_range(first, last, flags);
	if (r == 0 && bt_cfg.enabled && closes)
		for (unsigned fd = first; fd <= last && fd < BT_FD_MAX; fd++) {
			struct bt_fdent *fe = bt_fd_peek((int)fd);
			if (fe)
				bt_fd_forget(fe);
		}
	return r;
}

EXPORT int fclose(FILE *f)
{
	int fd = f ? fileno(f) : -1;
	if (fd >= 0 && ACTIVE()) {
		bt_flush_fd_wait(fd);
		struct bt_fdent *fe = bt_fd_peek(fd);
		if (fe)
			bt_fd_forget(fe);
	}
	return REAL(fclose)(f);
}

/* A program's own fstat of a file tells us its size (sendfile in copy mode). */
EXPORT int fstat(int fd, struct stat *st)
{
	int r = REAL(fstat)(fd, st);
	if (r == 0 && bt_cfg.enabled && bt_cfg.sendfile_mode == BT_SENDFILE_COPY)
		bt_fd_size(fd, st);
	return r;
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	int r = REAL(fstat64)(fd, st);
	if (r == 0 && bt_cfg.enabled && bt_cfg.sendfile_mode == BT_SENDFILE_COPY)
		bt_fd_size(fd, (struct stat *)st);
	return r;
}

/* ------------------------------------------------------------ process life */

/* exec ends the io_uring requests of the process: everything must be out. */
static void before_exec(void)
{
	if (!ACTIVE())
		return;
	/* A vfork child shares our memory: it must not touch our queues. */
	if ((pid_t)syscall(SYS_getpid) != bp_pid())
		return;
	bt_guard++;
	bt_drain_all((int64_t)bt_cfg.exit_wait_ms * 1000000);
	bt_guard--;
}

EXPORT int execve(const char *p, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execve)(p, argv, envp);
}

EXPORT int execv(const char *p, char *const argv[])
{
	before_exec();
	return REAL(execv)(p, argv);
}

EXPORT int execvp(const char *p, char *const argv[])
{
	before_exec();
	return REAL(execvp)(p, argv);
}

EXPORT int execvpe(const char *p, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execvpe)(p, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(fexecve)(fd, argv, envp);
}

/* execl, execlp, execle: collect the arguments, then the v forms above
 * (the array is lost if exec fails, as a few bytes). */
static char **collect_args(const char *first, va_list ap, char ***envp)
{
	va_list c;
	va_copy(c, ap);
	size_t n = 1;
	while (va_arg(c, char *))
		n++;
	va_end(c);
	char **argv = malloc((n + 1) * sizeof(char *));
	if (!argv)
		return NULL;
	argv[0] = (char *)first;
	for (size_t i = 1; i <= n; i++)
		argv[i] = i < n ? va_arg(ap, char *) : NULL;
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

/* The three variadic forms share one body. */
#define EXEC_L(call, with_env)                              \
	do {                                                \
		char **envp_ = NULL;                        \
		va_list ap_;                                \
		va_start(ap_, arg);                         \
		char **argv_ = collect_args(arg, ap_, with_env ? &envp_ : NULL); \
		va_end(ap_);                                \
		if (!argv_) {                               \
			errno = ENOMEM;                     \
			return -1;                          \
		}                                           \
		(void)envp_;                                \
		int r_ = call;                              \
		free(argv_);                                \
		return r_;                                  \
	} while (0)

EXPORT int execl(const char *p, const char *arg, ...)
{
	EXEC_L(execv(p, argv_), false);
}

EXPORT int execlp(const char *p, const char *arg, ...)
{
	EXEC_L(execvp(p, argv_), false);
}

EXPORT int execle(const char *p, const char *arg, ...)
{
	EXEC_L(execve(p, argv_, envp_), true);
}

/* A spawned child inherits descriptors: submit closes and writes first. */
static void before_spawn(void)
{
	if (ACTIVE())
		bt_flush_own();
}

EXPORT int posix_spawn(pid_t *pid, const char *path,
		       const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *at,
		       char *const argv[], char *const envp[])
{
	before_spawn();
	return REAL(posix_spawn)(pid, path, fa, at, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file,
			const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *at,
			char *const argv[], char *const envp[])
{
	before_spawn();
	return REAL(posix_spawnp)(pid, file, fa, at, argv, envp);
}

/* Leaving the process ends its io_uring requests: send what is deferred. */
static void before_exit(const char *why)
{
	if (!bt_cfg.enabled || bt_guard)
		return;
	bt_guard++;
	bt_drain_all((int64_t)bt_cfg.exit_wait_ms * 1000000);
	bt_stats_dump(why);
	bt_guard--;
}

EXPORT void _exit(int status)
{
	before_exit("_exit");
	REAL(_exit)(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	before_exit("_exit");
	REAL(_Exit)(status);
	__builtin_unreachable();
}

static bool exited;

static void at_exit(void)
{
	if (!exited) {
		exited = true;
		before_exit("exit");
	}
}

__attribute__((constructor)) static void batch_preload_init(void)
{
	resolve_all();
	bt_config_init();
	bt_engine_init();
	if (bt_cfg.enabled) {
		atexit(at_exit);
		bp_info("bypass batch: preload active (entries %u, max copy %zu, "
			"sendfile %s, close %d)", bt_cfg.entries, bt_cfg.max_copy,
			bt_cfg.sendfile_mode == BT_SENDFILE_COPY ? "copy" : "sync",
			bt_cfg.defer_close);
	}
}
