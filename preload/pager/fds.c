/* SPDX-License-Identifier: MIT */
/*
 * close, close_range, closefrom, dup2, dup3: the pager's descriptors are
 * not the program's.  A program that closes every descriptor (a daemon,
 * Python's subprocess with close_fds in the child before exec,
 * close_range(3, ~0U, 0)) would close the pager's userfaultfd, and the
 * kernel would turn its regions into plain anonymous memory: every evicted
 * page would read as zeros.  So, for the descriptors the preload and its
 * pager hold (bp_pp_fds(): the userfaultfds, the swap files, the rings,
 * the eventfds, the tree's ledger), these calls act as if those numbers
 * were not open in the program:
 *
 *   close(ours)             -1, EBADF (what closing a free number gives)
 *   close_range, closefrom  close the rest of the range, skip ours
 *   dup2/dup3(x, ours)      -1, EBADF: refused, with a line on stderr the
 *                           first time (moving ours away would need every
 *                           copy of the number in the library updated while
 *                           faults are served from it; a refusal is loud,
 *                           a clobbered userfaultfd silently loses data)
 *   dup2/dup3(ours, x)      -1, EBADF (ours is not open for the program)
 *
 * Ours are kept high (core/fdhigh.h: from 960 at a soft descriptor limit of
 * 1024), and a number below the lowest the library ever kept
 * (bp_fd_floor()) is passed on after one load: the program's own closes
 * cost what they cost without the preload.
 *
 * glibc's closefrom() calls the close_range system call directly, not
 * through the symbol: it is wrapped too.  The batch preload wraps close
 * and close_range as well: each reaches the next one through RTLD_NEXT,
 * whichever comes first in LD_PRELOAD.
 */
#include "preload.h"
#include "core/fdhigh.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <unistd.h>

int bp_pp_fds(int *out, int max); /* init.c */

#define OURS_MAX 64

static int (*real_close)(int);
static int (*real_close_range)(unsigned, unsigned, int);
static void (*real_closefrom)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);

static void resolve(void)
{
	if (!real_close) {
		real_close_range = (int (*)(unsigned, unsigned, int))dlsym(RTLD_NEXT, "close_range");
		real_closefrom = (void (*)(int))dlsym(RTLD_NEXT, "closefrom");
		real_dup2 = (int (*)(int, int))dlsym(RTLD_NEXT, "dup2");
		real_dup3 = (int (*)(int, int, int))dlsym(RTLD_NEXT, "dup3");
		real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	}
}

/* Ours, as they are (the full check): also lowers the floor for any
 * descriptor of ours made without core/fdhigh.c's functions. */
static int ours_now(int *fd)
{
	int n = bp_pp_fds(fd, OURS_MAX);
	if (n > OURS_MAX)
		n = OURS_MAX;
	for (int i = 0; i < n; i++)
		bp_fd_mark(fd[i]);
	return n;
}

/* Ours, ascending; how many (at most OURS_MAX). */
static int ours(int *fd)
{
	int n = ours_now(fd);
	for (int i = 1; i < n; i++) /* insertion sort: a handful */
		for (int j = i; j > 0 && fd[j - 1] > fd[j]; j--) {
			int t = fd[j];
			fd[j] = fd[j - 1];
			fd[j - 1] = t;
		}
	return n;
}

static bool is_ours(int fd)
{
	/* below the library's lowest number: not ours, one load (a close()
	 * of the program's own costs no more than that) */
	if (fd < bp_fd_floor())
		return false;
	int v[OURS_MAX];
	int n = ours_now(v);
	for (int i = 0; i < n; i++)
		if (v[i] == fd)
			return true;
	return false;
}

static int ebadf(void)
{
	errno = EBADF;
	return -1;
}

EXPORT int close(int fd)
{
	resolve();
	if (fd >= bp_fd_floor() && !PASS() && is_ours(fd)) /* the floor first: one load */
		return ebadf();
	return real_close(fd);
}

/* [first, last] less ours: the real close_range over each gap; 0 or -1
 * with the first failure's errno. */
static int close_gaps(unsigned first, unsigned last, int flags)
{
	int v[OURS_MAX];
	int n = ours(v), r = 0, err = 0;
	unsigned a = first;
	bool end = false; /* ours was the last number there is */
	for (int i = 0; i < n && a <= last; i++) {
		unsigned f = (unsigned)v[i];
		if (f < a || f > last)
			continue;
		if (f > a && real_close_range(a, f - 1, flags) && !err)
			err = errno;
		if (f == ~0U) {
			end = true;
			break;
		}
		a = f + 1;
	}
	if (!end && a <= last && real_close_range(a, last, flags) && !err)
		err = errno;
	if (err) {
		errno = err;
		r = -1;
	}
	return r;
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	resolve();
	if (!real_close_range) {
		errno = ENOSYS;
		return -1;
	}
	if (PASS() || first > last || last < (unsigned)bp_fd_floor())
		return real_close_range(first, last, flags);
	return close_gaps(first, last, flags);
}

EXPORT void closefrom(int lowfd)
{
	resolve();
	if (PASS() || lowfd < 0 || !real_close_range) {
		if (real_closefrom)
			real_closefrom(lowfd);
		return;
	}
	if (close_gaps((unsigned)lowfd, ~0U, 0) == 0)
		return;
	/* no close_range (before Linux 5.9): each number below our highest
	 * one by itself, then the real closefrom above it */
	int v[OURS_MAX];
	int n = ours(v), top = n ? v[n - 1] : -1;
	for (int fd = lowfd; fd < top; fd++)
		if (!is_ours(fd))
			real_close(fd);
	if (real_closefrom)
		real_closefrom(top >= lowfd ? top + 1 : lowfd);
}

static int dup_onto(int fd, int nfd, int flags, bool three)
{
	resolve();
	if (!PASS() && fd != nfd && (is_ours(fd) || is_ours(nfd))) {
		static _Atomic bool said;
		if (is_ours(nfd) && !atomic_exchange(&said, true))
			bp_pl_complain("bypass: pager preload: dup2 onto descriptor %d refused "
				       "(EBADF): the pager's own (a userfaultfd or its swap file)",
				       nfd);
		return ebadf();
	}
	return three ? real_dup3(fd, nfd, flags) : real_dup2(fd, nfd);
}

EXPORT int dup2(int fd, int nfd)
{
	return dup_onto(fd, nfd, 0, false);
}

EXPORT int dup3(int fd, int nfd, int flags)
{
	return dup_onto(fd, nfd, flags, true);
}
