/* SPDX-License-Identifier: MIT */
/*
 * Moving the library's descriptors above a base (fdhigh.h).  The pager's
 * (userfaultfds, swap files, eventfds, pidfd, the tree's ledger), every
 * ring of the library (core/uring.c), a syslet context's ring: one rule
 * for all, where each used to choose its own (tree.c from 600, syslet/fds.c
 * from the limit less 64, the pager none).
 */
#include "core/internal.h"
#include "core/fdhigh.h"
#include "core/syscall.h"

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <sys/resource.h>

static _Atomic int floor_fd = INT_MAX;

int bp_fd_floor(void)
{
	return atomic_load_explicit(&floor_fd, memory_order_relaxed);
}

void bp_fd_mark(int fd)
{
	int f = atomic_load_explicit(&floor_fd, memory_order_relaxed);
	while (fd >= 0 && fd < f && !atomic_compare_exchange_weak(&floor_fd, &f, fd))
		;
}

int bp_fd_base(void)
{
	struct rlimit rl;
	uint64_t top = 1024;
	if (bp_sys_getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
		top = rl.rlim_cur;
	return top >= 128 ? (int)top - 64 : (int)top / 2;
}

int bp_fd_lift(int fd, bool cloexec)
{
	if (fd < 0)
		return fd;
	int base = bp_fd_base();
	if (fd < base) {
		int hi = bp_sys_fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, base);
		if (hi >= 0) {
			bp_sys_close(fd);
			fd = hi;
		} else {
			bp_debug("bypass: no free descriptor from %d up: %d stays", base, fd);
		}
	}
	bp_fd_mark(fd);
	return fd;
}

/* The list: slots taken and freed with atomics, scanned up to the highest
 * slot ever used. */
#define LISTED 256
static _Atomic int listed[LISTED]; /* fd + 1; 0: free */
static _Atomic unsigned listed_top; /* slots ever used: the scan's end */

static void note(int fd, bool add)
{
	if (fd < 0)
		return;
	for (unsigned i = 0; i < LISTED; i++) {
		int want = add ? 0 : fd + 1;
		if (atomic_load_explicit(&listed[i], memory_order_relaxed) != want ||
		    !atomic_compare_exchange_strong(&listed[i], &want, add ? fd + 1 : 0))
			continue;
		unsigned top = atomic_load(&listed_top);
		while (add && top < i + 1 && !atomic_compare_exchange_weak(&listed_top, &top, i + 1))
			;
		return;
	}
}

void bp_fd_list(int fd)
{
	bp_fd_mark(fd);
	note(fd, true);
}

void bp_fd_unlist(int fd)
{
	note(fd, false);
}

int bp_fd_listed(int *out, int max)
{
	int n = 0;
	unsigned top = atomic_load(&listed_top);
	for (unsigned i = 0; i < top && i < LISTED; i++) {
		int v = atomic_load_explicit(&listed[i], memory_order_relaxed);
		if (!v)
			continue;
		if (n < max)
			out[n] = v - 1;
		n++;
	}
	return n;
}
