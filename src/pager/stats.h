/* SPDX-License-Identifier: MIT */
/*
 * The pager's counters (struct pstats), sharded by thread and summed when
 * read; every file adds to them with stat_add.
 */
#ifndef BYPASS_PAGER_STATS_H
#define BYPASS_PAGER_STATS_H

#include "core/internal.h"
#include <bypass/pager.h>
#include <stdatomic.h>
#include <stdint.h>

/* The counters, sharded by thread (see stat_add) and summed when read. */
#define PG_STAT_SHARDS 8u
struct pstats {
	_Atomic uint64_t zero, swapin, wp, other, ra, evict, evict_clean, rd, wr, wr_err,
		lat_count, lat_sum_ns, fa, switches, pf, pf_used, rejects, ra_dirty, polled;
	_Atomic uint64_t hist[BYPASS_PAGER_HIST];
} __attribute__((aligned(BP_CACHELINE)));

static inline void stat_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* This thread's shard of the counters (threads are numbered on first use). */
unsigned bp_stat_shard(void);
#define ST(p) ((p)->st[bp_stat_shard()])
/* A counter summed over the shards. */
#define ST_SUM(p, field)                                                                  \
	({                                                                                \
		uint64_t s_ = 0;                                                          \
		for (unsigned i_ = 0; i_ < PG_STAT_SHARDS; i_++)                         \
			s_ += atomic_load_explicit(&(p)->st[i_].field, memory_order_relaxed); \
		s_;                                                                       \
	})

#endif
