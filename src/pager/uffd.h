/* SPDX-License-Identifier: MIT */
/*
 * The pager's ground floor: userfaultfd wrappers (uffd.c).  They know
 * nothing of pagers, regions or pages; every other file of src/pager that
 * talks to a userfaultfd goes through them.  Each returns 0 or -errno and is
 * async-signal-safe (an ioctl, retried on EAGAIN), except bp_uffd_open()
 * and bp_uffd_features_available(), which run at setup.
 */
#ifndef BYPASS_PAGER_UFFD_H
#define BYPASS_PAGER_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The userfaultfd features this kernel offers. */
int bp_uffd_features_available(uint64_t *out);
/*
 * A new userfaultfd (O_CLOEXEC | O_NONBLOCK): user-mode-only (any user may
 * create it; faults the kernel takes inside system calls fail with EFAULT),
 * or one that serves kernel-mode faults too, falling back to
 * /dev/userfaultfd when the system call refuses (-EPERM, logged, if neither
 * works).  Returns the descriptor or -errno.
 */
int bp_uffd_open(bool user_mode_only);
/* UFFDIO_API on fd with these features; -EOPNOTSUPP if refused. */
int bp_uffd_setup(int fd, uint64_t features);
/* Register [start, start + len) for missing and write-protect faults. */
int bp_uffd_register(int uffd, uintptr_t start, size_t len);
int bp_uffd_unregister(int uffd, uintptr_t start, size_t len);
/* UFFDIO_COPY of len bytes from src to dst (write-protected with wp;
 * waking the faulting threads with wake), partial copies finished. */
int bp_uffd_copy(int uffd, uintptr_t dst, const void *src, size_t len, bool wp, bool wake);
/* The same, stopping at the first error (a page of the range mapped
 * already: -EEXIST): *done says how many bytes from dst were mapped. */
int bp_uffd_copy_prefix(int uffd, uintptr_t dst, const void *src, size_t len, bool wp,
			bool wake, size_t *done);
/* UFFDIO_WRITEPROTECT of [addr, addr + len): protect, or unprotect (and
 * wake the threads waiting on it with wake). */
int bp_uffd_wp(int uffd, uintptr_t addr, size_t len, bool protect, bool wake);
/* UFFDIO_WAKE of the threads waiting on [addr, addr + len). */
int bp_uffd_wake(int uffd, uintptr_t addr, size_t len);
/* UFFDIO_POISON of [addr, addr + len): the waiting threads get SIGBUS
 * (Linux 6.6; -EINVAL or -ENOTTY before). */
int bp_uffd_poison(int uffd, uintptr_t addr, size_t len);

#endif
