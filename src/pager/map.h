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

#endif
