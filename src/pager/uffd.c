/* SPDX-License-Identifier: MIT */
/* The userfaultfd wrappers (uffd.h): the pager's ground floor. */
#include "pager/uffd.h"
#include "core/syscall.h"
#include "core/internal.h"
#include "core/fdhigh.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFDIO_POISON /* Linux 6.6; the headers here may be older */
struct uffdio_poison {
	struct uffdio_range range;
	__u64 mode;
	__s64 updated;
};
#define _UFFDIO_POISON (0x08)
#define UFFDIO_POISON _IOWR(UFFDIO, _UFFDIO_POISON, struct uffdio_poison)
#endif

/* ------------------------------------------------------------ setup */

int bp_uffd_features_available(uint64_t *out)
{
	int fd = (int)bp_sys_ret(bp_syscall1(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
	if (fd < 0)
		return -errno;
	struct uffdio_api a = { .api = UFFD_API };
	int e = bp_sys_ioctl(fd, UFFDIO_API, &a) == 0 ? 0 : -errno;
	bp_sys_close(fd);
	*out = a.features;
	return e;
}

/*
 * A userfaultfd for handler threads: it must handle faults the kernel
 * takes inside system calls, which UFFD_USER_MODE_ONLY would refuse.
 */
static int uffd_open_kernel(void)
{
	int fd = (int)bp_sys_ret(bp_syscall1(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
	if (fd >= 0 || errno != EPERM)
		return fd >= 0 ? fd : -errno;
	int dev = bp_sys_open("/dev/userfaultfd", O_RDWR | O_CLOEXEC, 0);
	if (dev >= 0) {
		fd = bp_sys_ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
		bp_sys_close(dev);
		if (fd >= 0)
			return fd;
	}
	bp_err("bypass: pager: handler mode needs userfaultfd for kernel-mode faults, "
	       "which needs CAP_SYS_PTRACE, vm.unprivileged_userfaultfd = 1 or access "
	       "to /dev/userfaultfd; none is available (upcall mode works unprivileged)");
	return -EPERM;
}

int bp_uffd_open(bool user_mode_only)
{
	int fd;
	if (!user_mode_only) {
		fd = uffd_open_kernel();
	} else {
		fd = (int)bp_sys_ret(bp_syscall1(SYS_userfaultfd,
						 O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
		if (fd < 0)
			fd = -errno;
	}
	return bp_fd_lift(fd, true); /* out of the program's way (core/fdhigh.h) */
}

int bp_uffd_setup(int fd, uint64_t features)
{
	struct uffdio_api a = { .api = UFFD_API, .features = features };
	if (bp_sys_ioctl(fd, UFFDIO_API, &a) < 0) {
		int e = errno;
		bp_err("bypass: pager: UFFDIO_API(features %#llx): %s",
		       (unsigned long long)features, strerror(e));
		return e == EINVAL ? -EOPNOTSUPP : -e;
	}
	return 0;
}

int bp_uffd_register(int uffd, uintptr_t start, size_t len)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	return bp_sys_ioctl(uffd, UFFDIO_REGISTER, &reg) == 0 ? 0 : -errno;
}

int bp_uffd_unregister(int uffd, uintptr_t start, size_t len)
{
	struct uffdio_range rg = { .start = start, .len = len };
	return bp_sys_ioctl(uffd, UFFDIO_UNREGISTER, &rg) == 0 ? 0 : -errno;
}

/* ------------------------------------------------------------ serving */

int bp_uffd_copy_prefix(int uffd, uintptr_t dst, const void *src, size_t len, bool wp,
			bool wake, size_t *done)
{
	uintptr_t s = (uintptr_t)src;
	*done = 0;
	for (;;) {
		struct uffdio_copy c = {
			.dst = dst, .src = s, .len = len,
			.mode = (wp ? UFFDIO_COPY_MODE_WP : 0) |
				(wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE),
		};
		if (bp_sys_ioctl(uffd, UFFDIO_COPY, &c) == 0) {
			*done += len;
			return 0;
		}
		int e = errno;
		if (c.copy > 0) { /* partial: -EAGAIN with progress */
			dst += (uintptr_t)c.copy;
			s += (uintptr_t)c.copy;
			len -= (size_t)c.copy;
			*done += (size_t)c.copy;
			if (!len)
				return 0;
			continue;
		}
		if (e == EAGAIN) /* the address space is changing: retry */
			continue;
		return -e;
	}
}

int bp_uffd_copy(int uffd, uintptr_t dst, const void *src, size_t len, bool wp, bool wake)
{
	size_t done;
	return bp_uffd_copy_prefix(uffd, dst, src, len, wp, wake, &done);
}

int bp_uffd_wp(int uffd, uintptr_t addr, size_t len, bool protect, bool wake)
{
	/* The kernel refuses WP together with DONTWAKE (protecting wakes
	 * nobody anyway). */
	struct uffdio_writeprotect w = {
		.range = { .start = addr, .len = len },
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP
				: (wake ? 0 : UFFDIO_WRITEPROTECT_MODE_DONTWAKE),
	};
	for (;;) {
		if (bp_sys_ioctl(uffd, UFFDIO_WRITEPROTECT, &w) == 0)
			return 0;
		if (errno != EAGAIN)
			return -errno;
	}
}

int bp_uffd_wake(int uffd, uintptr_t addr, size_t len)
{
	struct uffdio_range r = { .start = addr, .len = len };
	return bp_sys_ioctl(uffd, UFFDIO_WAKE, &r) == 0 ? 0 : -errno;
}

int bp_uffd_poison(int uffd, uintptr_t addr, size_t len)
{
	struct uffdio_poison po = { .range = { addr, len } };
	return bp_sys_ioctl(uffd, UFFDIO_POISON, &po) == 0 ? 0 : -errno;
}
