/* SPDX-License-Identifier: MIT */
/*
 * The pager's internals, all of them: an umbrella over the per-component
 * headers (issue 34, B3), for the files outside src/pager that reach into
 * the pager (its preload, bench/pager, tests, bypass doctor).  No file
 * of src/pager includes it: each includes only the headers it uses.  See
 * docs/pager.md for the design.
 *
 *   pager/page.h    the page: pg.w's lock, state and flags, pg.slot
 *   pager/rank.h    the lock ranks (rank.c) and ranked mutexes
 *   pager/lock.h    the locks (lock.c) and the order they nest in
 *   pager/table.h   the regions and their table (table.c)
 *   pager/stats.h   the counters (stat_add, ST, ST_SUM)
 *   pager/struct.h  struct bypass_pager, composed of parts each owned by a file
 *   pager/mem.h     the pager's own allocations (mem.c)
 *   pager/map.h     pager.c's internal entry points
 *   pager/share.h   fork without reading back: the gate (share.c)
 *   pager/fork.h    fork.c's list of pagers
 *   pager/fault.h   serving faults (fault.c, dispatch.c)
 *   pager/engine.h  the adaptive engine (engine.c)
 *   pager/setup.h   userfaultfds, the swap file, the configuration (setup.c)
 *   pager/read.h    swap-in reads (read.c)
 *   pager/evict.h   the budget and eviction (evict.c)
 *   pager/writeback.h  between eviction and write-back (writeback.c)
 *   pager/lru.h     the 2Q lists (lru.c)
 *   pager/sample.h  the access sampler (sample.c)
 *   pager/uffd.h    the userfaultfd wrappers (uffd.c)
 */
#ifndef BYPASS_PAGER_INTERNAL_H
#define BYPASS_PAGER_INTERNAL_H

#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/map.h"
#include "pager/share.h"
#include "pager/fork.h"
#include "pager/fault.h"
#include "pager/engine.h"
#include "pager/setup.h"
#include "pager/read.h"
#include "pager/evict.h"
#include "pager/writeback.h"
#include "pager/lru.h"
#include "pager/sample.h"
#include "pager/uffd.h"

#endif
