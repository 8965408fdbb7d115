/* SPDX-License-Identifier: MIT */
/*
 * The one system-call layer: every system call the library makes goes
 * through here (liburing's own syscall.h is the model).
 *
 * Why.  The preloads replace libc's write, close, mmap, ioctl, sigaction,
 * ... in the whole process, and a library call made by those names would
 * land in a preload's wrapper: queued, deferred or paged by the preload
 * whose engine made it, or run through the other preload's wrapper with a
 * different "inside bypass" depth.  A call made here goes to the kernel,
 * so library code needs no re-entrancy guard around it (bp_enter,
 * internal.h).
 *
 * Two levels over one instruction:
 *
 *   bp_syscall0..6(nr, ...)  the instruction itself.  Returns the kernel's
 *       value: -errno on failure.  Touches no errno and calls no function,
 *       in every build: for code that hands raw results on (the syslet
 *       interpreter) or must not touch errno (a signal handler's path).
 *
 *   bp_sys_<name>(...)  one per libc function the library would otherwise
 *       call, with its arguments and its result (-1 and errno on failure,
 *       MAP_FAILED for bp_sys_mmap), so that a call site converts by its
 *       name alone.  None is a cancellation point.  Built with
 *       ThreadSanitizer they call the libc function instead: TSan's
 *       interceptors order threads through descriptors and clear its
 *       shadow of unmapped memory (and the preloads do not run under TSan).
 *
 * Never libc's syscall(), nor a libc function that a preload defines:
 * tests/core/imports.sh fails when an object of the library references
 * one (the names taken from the built preloads).  What stays libc's, and
 * why (imports.sh allows the same):
 *   - the malloc family: the library allocates with the process's
 *     allocator, which the pager preload may replace (its own blocks come
 *     from glibc's: docs/pager.md, the heap);
 *   - clock_gettime: the vDSO, not a system call;
 *   - pthread_*: libc's thread state (pthread_sigmask keeps libc's own
 *     signals deliverable);
 *   - the sigaction that installs notify's interrupt handler, which runs
 *     the user's callback: installed through the process's sigaction, it
 *     runs through a preload's trampoline where one runs the program's
 *     handlers (the batch preload's: calls made in a handler pass straight
 *     through its wrappers), as a handler the program installed would.
 *     bp_sys_sigaction is for handlers of the library's own.
 */
#ifndef BYPASS_CORE_SYSCALL_H
#define BYPASS_CORE_SYSCALL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

/* ------------------------------------------------------- the instruction */

#if defined(__x86_64__)
static inline long bp_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}
#else
/* Elsewhere, libc's syscall() (bypass is built and tested on x86-64). */
static inline long bp_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(nr, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
}
#endif

#define bp_syscall0(nr) bp_syscall6((nr), 0, 0, 0, 0, 0, 0)
#define bp_syscall1(nr, a) bp_syscall6((nr), (long)(a), 0, 0, 0, 0, 0)
#define bp_syscall2(nr, a, b) bp_syscall6((nr), (long)(a), (long)(b), 0, 0, 0, 0)
#define bp_syscall3(nr, a, b, c) bp_syscall6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define bp_syscall4(nr, a, b, c, d)                                            \
	bp_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define bp_syscall5(nr, a, b, c, d, e)                                         \
	bp_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* ---------------------------------------------------- the libc convention */

/* A kernel result as libc returns it: -1 and errno for -4095 .. -1. */
static inline long bp_sys_ret(long r)
{
	if (bp_unlikely((unsigned long)r > -4096ul)) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The libc function under ThreadSanitizer, else the system call. */
#define BP_SYS_LIBC BP_TSAN
#if BP_SYS_LIBC
#define BP_SYS(libc_call, raw_call) (libc_call)
#else
#define BP_SYS(libc_call, raw_call) bp_sys_ret(raw_call)
#endif

/* Descriptors and files. */

static inline ssize_t bp_sys_read(int fd, void *buf, size_t n)
{
	return BP_SYS(read(fd, buf, n), bp_syscall3(SYS_read, fd, buf, n));
}

static inline ssize_t bp_sys_write(int fd, const void *buf, size_t n)
{
	return BP_SYS(write(fd, buf, n), bp_syscall3(SYS_write, fd, buf, n));
}

static inline ssize_t bp_sys_pread(int fd, void *buf, size_t n, off_t off)
{
	return BP_SYS(pread(fd, buf, n, off), bp_syscall4(SYS_pread64, fd, buf, n, off));
}

static inline ssize_t bp_sys_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return BP_SYS(pwrite(fd, buf, n, off), bp_syscall4(SYS_pwrite64, fd, buf, n, off));
}

static inline ssize_t bp_sys_readv(int fd, const struct iovec *iov, int cnt)
{
	return BP_SYS(readv(fd, iov, cnt), bp_syscall3(SYS_readv, fd, iov, cnt));
}

static inline ssize_t bp_sys_writev(int fd, const struct iovec *iov, int cnt)
{
	return BP_SYS(writev(fd, iov, cnt), bp_syscall3(SYS_writev, fd, iov, cnt));
}

/* The offset goes in two halves (pos_l, pos_h); on 64 bits the first holds it. */
static inline ssize_t bp_sys_preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return BP_SYS(preadv(fd, iov, cnt, off), bp_syscall5(SYS_preadv, fd, iov, cnt, off, 0));
}

static inline ssize_t bp_sys_pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return BP_SYS(pwritev(fd, iov, cnt, off), bp_syscall5(SYS_pwritev, fd, iov, cnt, off, 0));
}

static inline int bp_sys_close(int fd)
{
	return (int)BP_SYS(close(fd), bp_syscall1(SYS_close, fd));
}

static inline int bp_sys_openat(int dfd, const char *path, int flags, mode_t mode)
{
	return (int)BP_SYS(openat(dfd, path, flags, mode),
			   bp_syscall4(SYS_openat, dfd, path, flags, mode));
}

/* open(path, flags, mode): mode is read only with O_CREAT or O_TMPFILE. */
static inline int bp_sys_open(const char *path, int flags, mode_t mode)
{
	return bp_sys_openat(AT_FDCWD, path, flags, mode);
}

/* fcntl with an integer argument (or none). */
static inline int bp_sys_fcntl(int fd, int cmd, long arg)
{
	return (int)BP_SYS(fcntl(fd, cmd, arg), bp_syscall3(SYS_fcntl, fd, cmd, arg));
}

/* ioctl with a pointer or an integer argument, as libc's variadic one. */
#define bp_sys_ioctl(fd, req, arg) bp_sys_ioctl_((fd), (unsigned long)(req), (unsigned long)(arg))
static inline int bp_sys_ioctl_(int fd, unsigned long req, unsigned long arg)
{
	return (int)BP_SYS(ioctl(fd, req, arg), bp_syscall3(SYS_ioctl, fd, req, arg));
}

static inline int bp_sys_fstat(int fd, struct stat *st)
{
	return (int)BP_SYS(fstat(fd, st), bp_syscall2(SYS_fstat, fd, st));
}

static inline off_t bp_sys_lseek(int fd, off_t off, int whence)
{
	return (off_t)BP_SYS(lseek(fd, off, whence), bp_syscall3(SYS_lseek, fd, off, whence));
}

static inline int bp_sys_ftruncate(int fd, off_t len)
{
	return (int)BP_SYS(ftruncate(fd, len), bp_syscall2(SYS_ftruncate, fd, len));
}

static inline int bp_sys_memfd_create(const char *name, unsigned flags)
{
	return (int)BP_SYS(memfd_create(name, flags), bp_syscall2(SYS_memfd_create, name, flags));
}

static inline int bp_sys_pipe2(int fds[2], int flags)
{
	return (int)BP_SYS(pipe2(fds, flags), bp_syscall2(SYS_pipe2, fds, flags));
}

static inline int bp_sys_eventfd(unsigned initval, int flags)
{
	return (int)BP_SYS(eventfd(initval, flags), bp_syscall2(SYS_eventfd2, initval, flags));
}

static inline int bp_sys_dup(int fd)
{
	return (int)BP_SYS(dup(fd), bp_syscall1(SYS_dup, fd));
}

static inline int bp_sys_dup3(int fd, int to, int flags)
{
	return (int)BP_SYS(dup3(fd, to, flags), bp_syscall3(SYS_dup3, fd, to, flags));
}

static inline ssize_t bp_sys_readlink(const char *path, char *buf, size_t n)
{
	return BP_SYS(readlink(path, buf, n),
		      bp_syscall4(SYS_readlinkat, AT_FDCWD, path, buf, n));
}

/* Memory. */

static inline void *bp_sys_mmap(void *addr, size_t len, int prot, int flags, int fd,
				off_t off)
{
	return (void *)BP_SYS(mmap(addr, len, prot, flags, fd, off),
			      bp_syscall6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off));
}

static inline int bp_sys_munmap(void *addr, size_t len)
{
	return (int)BP_SYS(munmap(addr, len), bp_syscall2(SYS_munmap, addr, len));
}

static inline int bp_sys_madvise(void *addr, size_t len, int advice)
{
	return (int)BP_SYS(madvise(addr, len, advice), bp_syscall3(SYS_madvise, addr, len, advice));
}

static inline int bp_sys_mprotect(void *addr, size_t len, int prot)
{
	return (int)BP_SYS(mprotect(addr, len, prot), bp_syscall3(SYS_mprotect, addr, len, prot));
}

/* pkey -1 is mprotect (as glibc's, for kernels without protection keys). */
static inline int bp_sys_pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	if (pkey == -1)
		return bp_sys_mprotect(addr, len, prot);
	return (int)BP_SYS(pkey_mprotect(addr, len, prot, pkey),
			   bp_syscall4(SYS_pkey_mprotect, addr, len, prot, pkey));
}

/* Sockets. */

static inline int bp_sys_socket(int domain, int type, int proto)
{
	return (int)BP_SYS(socket(domain, type, proto), bp_syscall3(SYS_socket, domain, type, proto));
}

static inline int bp_sys_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	return (int)BP_SYS(bind(fd, sa, len), bp_syscall3(SYS_bind, fd, sa, len));
}

static inline int bp_sys_listen(int fd, int backlog)
{
	return (int)BP_SYS(listen(fd, backlog), bp_syscall2(SYS_listen, fd, backlog));
}

static inline int bp_sys_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	return (int)BP_SYS(connect(fd, sa, len), bp_syscall3(SYS_connect, fd, sa, len));
}

static inline int bp_sys_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	return (int)BP_SYS(accept4(fd, sa, len, flags), bp_syscall4(SYS_accept4, fd, sa, len, flags));
}

static inline int bp_sys_shutdown(int fd, int how)
{
	return (int)BP_SYS(shutdown(fd, how), bp_syscall2(SYS_shutdown, fd, how));
}

static inline int bp_sys_setsockopt(int fd, int level, int name, const void *val,
				    socklen_t len)
{
	return (int)BP_SYS(setsockopt(fd, level, name, val, len),
			   bp_syscall5(SYS_setsockopt, fd, level, name, val, len));
}

static inline int bp_sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return (int)BP_SYS(getsockopt(fd, level, name, val, len),
			   bp_syscall5(SYS_getsockopt, fd, level, name, val, len));
}

static inline ssize_t bp_sys_sendmsg(int fd, const struct msghdr *m, int flags)
{
	return BP_SYS(sendmsg(fd, m, flags), bp_syscall3(SYS_sendmsg, fd, m, flags));
}

static inline ssize_t bp_sys_recvmsg(int fd, struct msghdr *m, int flags)
{
	return BP_SYS(recvmsg(fd, m, flags), bp_syscall3(SYS_recvmsg, fd, m, flags));
}

static inline ssize_t bp_sys_sendto(int fd, const void *buf, size_t n, int flags,
				    const struct sockaddr *to, socklen_t tolen)
{
	return BP_SYS(sendto(fd, buf, n, flags, to, tolen),
		      bp_syscall6(SYS_sendto, fd, (long)buf, (long)n, flags, (long)to, tolen));
}

static inline ssize_t bp_sys_recvfrom(int fd, void *buf, size_t n, int flags,
				      struct sockaddr *from, socklen_t *fromlen)
{
	return BP_SYS(recvfrom(fd, buf, n, flags, from, fromlen),
		      bp_syscall6(SYS_recvfrom, fd, (long)buf, (long)n, flags, (long)from,
				  (long)fromlen));
}

static inline ssize_t bp_sys_send(int fd, const void *buf, size_t n, int flags)
{
	return bp_sys_sendto(fd, buf, n, flags, NULL, 0);
}

static inline ssize_t bp_sys_recv(int fd, void *buf, size_t n, int flags)
{
	return bp_sys_recvfrom(fd, buf, n, flags, NULL, NULL);
}

/* Waiting. */

/* poll with a timeout in ms (< 0: none), as ppoll without a mask. */
static inline int bp_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
#if BP_SYS_LIBC
	return poll(fds, n, timeout_ms);
#else
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	return (int)bp_sys_ret(bp_syscall5(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts,
					   NULL, 0));
#endif
}

static inline int bp_sys_epoll_create1(int flags)
{
	return (int)BP_SYS(epoll_create1(flags), bp_syscall1(SYS_epoll_create1, flags));
}

static inline int bp_sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return (int)BP_SYS(epoll_ctl(epfd, op, fd, ev), bp_syscall4(SYS_epoll_ctl, epfd, op, fd, ev));
}

static inline int bp_sys_epoll_wait(int epfd, struct epoll_event *evs, int n, int timeout_ms)
{
	return (int)BP_SYS(epoll_wait(epfd, evs, n, timeout_ms),
			   bp_syscall4(SYS_epoll_wait, epfd, evs, n, timeout_ms));
}

/* Processes and signals. */

/* A sleep (the batch preload defines nanosleep: a call by that name from
 * inside it would run its own wrapper). */
static inline int bp_sys_nanosleep(const struct timespec *req, struct timespec *rem)
{
	return (int)BP_SYS(nanosleep(req, rem), bp_syscall2(SYS_nanosleep, req, rem));
}

static inline pid_t bp_sys_getpid(void)
{
	return (pid_t)BP_SYS(getpid(), bp_syscall0(SYS_getpid));
}

static inline pid_t bp_sys_gettid(void)
{
	return (pid_t)BP_SYS(gettid(), bp_syscall0(SYS_gettid));
}

static inline uid_t bp_sys_getuid(void)
{
	return (uid_t)BP_SYS(getuid(), bp_syscall0(SYS_getuid));
}

static inline int bp_sys_kill(pid_t pid, int sig)
{
	return (int)BP_SYS(kill(pid, sig), bp_syscall2(SYS_kill, pid, sig));
}

/* These four are system calls in every build (older libcs have no function
 * of their name; ThreadSanitizer intercepts none). */
static inline int bp_sys_tgkill(pid_t pid, pid_t tid, int sig)
{
	return (int)bp_sys_ret(bp_syscall3(SYS_tgkill, pid, tid, sig));
}

static inline int bp_sys_rt_tgsigqueueinfo(pid_t pid, pid_t tid, int sig, siginfo_t *si)
{
	return (int)bp_sys_ret(bp_syscall4(SYS_rt_tgsigqueueinfo, pid, tid, sig, si));
}

static inline int bp_sys_pidfd_open(pid_t pid, unsigned flags)
{
	return (int)bp_sys_ret(bp_syscall2(SYS_pidfd_open, pid, flags));
}

static inline int bp_sys_pidfd_getfd(int pidfd, int fd, unsigned flags)
{
	return (int)bp_sys_ret(bp_syscall3(SYS_pidfd_getfd, pidfd, fd, flags));
}

static inline int bp_sys_getrlimit(int resource, struct rlimit *rl)
{
	return (int)BP_SYS(getrlimit((__rlimit_resource_t)resource, rl),
			   bp_syscall4(SYS_prlimit64, 0, resource, NULL, rl));
}

/* As glibc's: 0 (not the kernel's byte count), the set's tail zeroed. */
static inline int bp_sys_sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
#if BP_SYS_LIBC
	return sched_getaffinity(pid, size, set);
#else
	long r = bp_syscall3(SYS_sched_getaffinity, pid, size, set);
	if (r < 0)
		return (int)bp_sys_ret(r);
	__builtin_memset((char *)set + r, 0, size - (size_t)r);
	return 0;
#endif
}

static inline ssize_t bp_sys_getrandom(void *buf, size_t n, unsigned flags)
{
	return BP_SYS(getrandom(buf, n, flags), bp_syscall3(SYS_getrandom, buf, n, flags));
}

/*
 * sigaction as rt_sigaction, with a restorer of our own (syscall.c: the
 * instruction bytes the unwinders and debuggers recognize as a signal
 * frame) and glibc's refusal of its internal signals (32, 33: -EINVAL).
 * For handlers of the library's own (see the top of this file).
 */
int bp_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

#endif
