/* SPDX-License-Identifier: MIT */
/*
 * The library's own I/O and mapping calls, as system calls (liburing's
 * own syscall.h is the model).
 *
 * The preloads replace libc's write, close, mmap, ... in the whole process,
 * the library's calls included.  A call the library makes through these
 * wrappers goes to the kernel without passing through a preload's wrapper,
 * so it needs no re-entrancy guard around it (bp_enter, internal.h) and
 * cannot be queued, deferred or paged by the preload whose engine made it.
 *
 * Each returns what the libc function of the same name returns (-1 and
 * errno on failure, MAP_FAILED for bp_sys_mmap), so a call converts by its
 * name alone.  Built with ThreadSanitizer they call the libc functions:
 * TSan's interceptors order threads through descriptors and clear its
 * shadow of unmapped memory (and the preloads do not run under TSan).
 */
#ifndef BYPASS_CORE_SYSCALL_H
#define BYPASS_CORE_SYSCALL_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/internal.h"

/* The libc function under ThreadSanitizer, else the system call. */
#define BP_SYS_LIBC BP_TSAN

static inline ssize_t bp_sys_read(int fd, void *buf, size_t n)
{
	return BP_SYS_LIBC ? read(fd, buf, n) : syscall(SYS_read, fd, buf, n);
}

static inline ssize_t bp_sys_write(int fd, const void *buf, size_t n)
{
	return BP_SYS_LIBC ? write(fd, buf, n) : syscall(SYS_write, fd, buf, n);
}

static inline int bp_sys_close(int fd)
{
	return BP_SYS_LIBC ? close(fd) : (int)syscall(SYS_close, fd);
}

static inline int bp_sys_openat(int dfd, const char *path, int flags, mode_t mode)
{
	return BP_SYS_LIBC ? openat(dfd, path, flags, mode)
			   : (int)syscall(SYS_openat, dfd, path, flags, mode);
}

/* fcntl with an integer argument (or none). */
static inline int bp_sys_fcntl(int fd, int cmd, long arg)
{
	return BP_SYS_LIBC ? fcntl(fd, cmd, arg) : (int)syscall(SYS_fcntl, fd, cmd, arg);
}

static inline int bp_sys_fstat(int fd, struct stat *st)
{
#if BP_SYS_LIBC || !defined(SYS_fstat)
	return fstat(fd, st);
#else
	return (int)syscall(SYS_fstat, fd, st);
#endif
}

static inline off_t bp_sys_lseek(int fd, off_t off, int whence)
{
	return BP_SYS_LIBC ? lseek(fd, off, whence) : (off_t)syscall(SYS_lseek, fd, off, whence);
}

static inline int bp_sys_ftruncate(int fd, off_t len)
{
	return BP_SYS_LIBC ? ftruncate(fd, len) : (int)syscall(SYS_ftruncate, fd, len);
}

static inline int bp_sys_memfd_create(const char *name, unsigned flags)
{
	return BP_SYS_LIBC ? memfd_create(name, flags)
			   : (int)syscall(SYS_memfd_create, name, flags);
}

static inline int bp_sys_pipe2(int fds[2], int flags)
{
	return BP_SYS_LIBC ? pipe2(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
}

static inline int bp_sys_eventfd(unsigned initval, int flags)
{
	return BP_SYS_LIBC ? eventfd(initval, flags) : (int)syscall(SYS_eventfd2, initval, flags);
}

static inline void *bp_sys_mmap(void *addr, size_t len, int prot, int flags, int fd,
				off_t off)
{
	return BP_SYS_LIBC ? mmap(addr, len, prot, flags, fd, off)
			   : (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int bp_sys_munmap(void *addr, size_t len)
{
	return BP_SYS_LIBC ? munmap(addr, len) : (int)syscall(SYS_munmap, addr, len);
}

static inline ssize_t bp_sys_sendmsg(int fd, const struct msghdr *m, int flags)
{
	return BP_SYS_LIBC ? sendmsg(fd, m, flags) : syscall(SYS_sendmsg, fd, m, flags);
}

static inline ssize_t bp_sys_recvmsg(int fd, struct msghdr *m, int flags)
{
	return BP_SYS_LIBC ? recvmsg(fd, m, flags) : syscall(SYS_recvmsg, fd, m, flags);
}

static inline ssize_t bp_sys_sendto(int fd, const void *buf, size_t n, int flags,
				    const struct sockaddr *to, socklen_t tolen)
{
	return BP_SYS_LIBC ? sendto(fd, buf, n, flags, to, tolen)
			   : syscall(SYS_sendto, fd, buf, n, flags, to, tolen);
}

static inline int bp_sys_shutdown(int fd, int how)
{
	return BP_SYS_LIBC ? shutdown(fd, how) : (int)syscall(SYS_shutdown, fd, how);
}

static inline int bp_sys_setsockopt(int fd, int level, int name, const void *val,
				    socklen_t len)
{
	return BP_SYS_LIBC ? setsockopt(fd, level, name, val, len)
			   : (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

static inline int bp_sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return BP_SYS_LIBC ? getsockopt(fd, level, name, val, len)
			   : (int)syscall(SYS_getsockopt, fd, level, name, val, len);
}

/* poll with a timeout in ms (< 0: none), as ppoll without a mask. */
static inline int bp_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	if (BP_SYS_LIBC)
		return poll(fds, n, timeout_ms);
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	return (int)syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts, NULL, 0);
}

#endif
