/* SPDX-License-Identifier: MIT */
/*
 * The library's own descriptors, out of a program's way (fdhigh.c).
 *
 * Every descriptor the library makes and keeps (a userfaultfd, an io_uring,
 * a swap file, an eventfd, a pidfd, the pager tree's ledger, a syslet
 * context's ring) is moved up to the lowest free number from a base near
 * the top of the low range, so that a program's own numbers, which grow
 * from 0, do not meet ours: a daemon that closes 0, 1 and 2 and then opens
 * /dev/null three times, or dup2()s onto them, gets 0, 1 and 2; a program
 * that closes a small range (close_range(3, 255, 0), a loop up to 255)
 * does not close ours.
 */
#ifndef BYPASS_CORE_FDHIGH_H
#define BYPASS_CORE_FDHIGH_H

#include <stdbool.h>

/*
 * The base: min(soft RLIMIT_NOFILE, 1024) - 64, or half the soft limit
 * when that is below 128 (960 at the common 1024; 32 at a soft limit of
 * 64).  Not above 960 when the limit is higher: 1024 is select()'s
 * FD_SETSIZE, and a higher number would grow the kernel's descriptor
 * table for nothing.
 */
int bp_fd_base(void);

/*
 * fd moved to the lowest free number from bp_fd_base() up (F_DUPFD_CLOEXEC,
 * or F_DUPFD when cloexec is false: a descriptor exec must keep), the old
 * number closed; the new number.  fd itself when it is already there, when
 * it is negative (an error passes through), or when no number is free up
 * there (the process holds that many: it keeps working, only lower).
 */
int bp_fd_lift(int fd, bool cloexec);

/*
 * A process-wide list of descriptors the library keeps that no structure a
 * preload can reach names (every io_uring of core/uring.c, the pager's
 * handler threads' epoll instances): the pager preload keeps a program's
 * close, close_range and dup2 off them.  bp_fd_list adds fd (negative: no-op;
 * a full list, 256, drops it silently: never seen); bp_fd_unlist removes it,
 * before the descriptor is closed; bp_fd_listed copies up to max into out
 * and says how many there are.  Lock-free (atomics): any thread, a fork
 * child too.
 */
void bp_fd_list(int fd);
void bp_fd_unlist(int fd);
int bp_fd_listed(int *out, int max);

/*
 * The lowest number the library has kept in this process (INT_MAX: none
 * yet): a number below it is not the library's, so the pager preload's
 * close() and dup2() pass it on after one load (the full check looks at
 * every descriptor of the pager).  bp_fd_lift and bp_fd_list lower it;
 * bp_fd_mark lowers it for a descriptor of the library made elsewhere (one
 * inherited across exec, one found by a full check).  It never rises: a
 * number the library used once keeps the full check (correct, only slower).
 * The rule that keeps it right: every descriptor the library keeps passes
 * through bp_fd_lift, bp_fd_list or bp_fd_mark.
 */
int bp_fd_floor(void);
void bp_fd_mark(int fd);

#endif
