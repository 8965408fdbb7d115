/* SPDX-License-Identifier: MIT */
/*
 * Setting up and ending an io_uring, for every module that keeps one.
 *
 * liburing maps and unmaps a ring's memory with its own system calls, which
 * ThreadSanitizer does not see.  When one thread's ring is unmapped and
 * another thread's new ring lands at the same addresses, TSan takes the new
 * ring's first writes for a race with the old ring's last reads.  The kernel
 * orders the two (the range is free only after the munmap); in a TSan build
 * these two functions say so by taking one lock around every set-up and
 * tear-down.  Elsewhere they are the liburing calls and nothing more.
 */
#ifndef BYPASS_CORE_URING_H
#define BYPASS_CORE_URING_H

#include <liburing.h>

/* io_uring_queue_init_params(); p may be NULL (no flags). */
int bp_uring_init(unsigned entries, struct io_uring *ring, struct io_uring_params *p);

/* io_uring_queue_exit(). */
void bp_uring_exit(struct io_uring *ring);
/* A ring's descriptor is moved high and listed among the library's kept
 * descriptors (core/fdhigh.h, bp_fd_listed) from bp_uring_init to
 * bp_uring_exit. */

#endif
