/* SPDX-License-Identifier: MIT */
/*
 * The contexts' own descriptors (each context's io_uring), out of programs'
 * reach.  A context moves its descriptor to the top of the low descriptor
 * range (the lowest free one from min(RLIMIT_NOFILE, 1024) - 64 up), where
 * a program's "close 3..N" does not land by accident, and marks it here; an
 * atom that would close, replace, duplicate or map a marked descriptor
 * (close, close_range over it, dup2/dup3 onto or from it, dup, fcntl, mmap)
 * gets -EBADF without a system call, in every engine.  The mark is by
 * number and process-wide (a bitmap, read without a lock), so the check is
 * a load and a test; descriptors from BP_SYSLET_FD_MAX up (only where the
 * process already holds that many) are not marked, and stay reachable.
 */
#include "syslet/syslet_internal.h"
#include "core/fdhigh.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
_Static_assert(SYS_close == 3 && SYS_dup == 32 && SYS_dup2 == 33 && SYS_dup3 == 292 &&
	       SYS_fcntl == 72 && SYS_mmap == 9 && SYS_close_range == 436,
	       "bp_syslet_fd_refused's numbers");

#define BP_SYSLET_FD_MAX 65536
#define WORDS (BP_SYSLET_FD_MAX / 64)

static _Atomic uint64_t marked[WORDS];
static _Atomic uint32_t nmarked;

static inline bool is_marked(long fd)
{
	if (fd < 0 || fd >= BP_SYSLET_FD_MAX)
		return false;
	return atomic_load_explicit(&marked[fd / 64], memory_order_relaxed) >> (fd % 64) & 1;
}

int bp_syslet_fd_reserve(int fd)
{
	fd = bp_fd_lift(fd, true); /* from min(RLIMIT_NOFILE, 1024) - 64 up */
	if (fd < BP_SYSLET_FD_MAX) {
		atomic_fetch_or(&marked[fd / 64], 1ull << (fd % 64));
		atomic_fetch_add(&nmarked, 1);
	}
	return fd;
}

void bp_syslet_fd_release(int fd)
{
	if (fd < 0 || fd >= BP_SYSLET_FD_MAX || !is_marked(fd))
		return;
	atomic_fetch_and(&marked[fd / 64], ~(1ull << (fd % 64)));
	atomic_fetch_sub(&nmarked, 1);
}

bool bp_syslet_fd_reserved(long fd)
{
	return atomic_load_explicit(&nmarked, memory_order_relaxed) && is_marked(fd);
}

/* Is any descriptor in [lo, hi] marked? */
static bool range_marked(unsigned long lo, unsigned long hi)
{
	if (hi >= BP_SYSLET_FD_MAX)
		hi = BP_SYSLET_FD_MAX - 1;
	for (unsigned long w = lo / 64; lo <= hi && w <= hi / 64; w++) {
		uint64_t m = atomic_load_explicit(&marked[w], memory_order_relaxed);
		if (w == lo / 64)
			m &= ~0ull << (lo % 64);
		if (w == hi / 64 && hi % 64 != 63)
			m &= (1ull << (hi % 64 + 1)) - 1;
		if (m)
			return true;
	}
	return false;
}

bool bp_syslet_fd_refused_slow(long nr, const long *a)
{
	if (!atomic_load_explicit(&nmarked, memory_order_relaxed))
		return false;
	switch (nr) {
	case SYS_close: case SYS_dup: case SYS_fcntl:
		return is_marked(a[0]);
	case SYS_dup2: case SYS_dup3:
		return is_marked(a[0]) || is_marked(a[1]);
	case SYS_mmap:
		return !(a[3] & MAP_ANONYMOUS) && is_marked(a[4]);
	case SYS_close_range:
		return (unsigned long)(unsigned)a[0] <= (unsigned long)(unsigned)a[1] &&
		       range_marked((unsigned)a[0], (unsigned)a[1]);
	default:
		return false;
	}
}
