/* SPDX-License-Identifier: MIT */
/*
 * pager.c's internal entry points besides the public API.
 */
#ifndef BYPASS_PAGER_MAP_H
#define BYPASS_PAGER_MAP_H

#include <bypass/pager.h>

/*
 * bypass_pager_map() at a given address: [at, at + length) must be a
 * mapping of the caller's (a PROT_NONE reservation), which the region
 * replaces (MAP_FIXED); on failure it is a PROT_NONE reservation again.
 * The preload carves its heap's regions out of one reservation this way.
 */
int bp_pager_map_at(bypass_pager *p, void *at, size_t length, unsigned flags);

/*
 * The descriptors p holds open now (its userfaultfds, swap files, rings,
 * eventfds, pidfd, the heat's): up to max of them into out; returns how
 * many it holds (possibly more than max).  The pager preload keeps the
 * program's close, close_range, closefrom, dup2 and dup3 off them: a
 * closed userfaultfd turns the regions into plain memory and the evicted
 * pages read as zeros.  A snapshot: lazily made ones (the pool's
 * userfaultfd, the tier's ring) appear once made.
 */
int bp_pager_fds(bypass_pager *p, int *out, int max);

/* 0, or -EINVAL (no pager) / -ECHILD (the pager of the process a fork
 * copied: only its owner may use it). */
int bp_pager_check_owner(struct bypass_pager *p);

#endif
