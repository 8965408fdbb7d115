/* SPDX-License-Identifier: MIT */
/*
 * Swap-in reads on the fault path (read.c).
 */
#ifndef BYPASS_PAGER_READ_H
#define BYPASS_PAGER_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct bypass_pager;

/* A swap-in read of len bytes at off into buf (the fault path,
 * signal handlers included), polling its completion where a CPU can spare
 * it; 0 or -errno.  Init makes the rings (spin: not BYPASS_PAGER_NO_SPIN). */
int bp_swap_read(struct bypass_pager *p, int fd, char *buf, size_t len, off_t off);
int bp_swap_read_init(struct bypass_pager *p, bool spin);
void bp_swap_read_fini(struct bypass_pager *p);

#endif
