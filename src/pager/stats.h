/* SPDX-License-Identifier: MIT */
/*
 * The pager's counters: one list of every counter of struct
 * bypass_pager_stats (BP_PAGER_COUNTERS), and struct pstats, sharded by
 * thread and summed when read; every file adds to them with stat_add.
 */
#ifndef BYPASS_PAGER_STATS_H
#define BYPASS_PAGER_STATS_H

#include "core/internal.h"
#include <bypass/pager.h>
#include <stdatomic.h>
#include <stdint.h>

/*
 * Every counter of struct bypass_pager_stats, in the public struct's order
 * (libuv's UV_ERRNO_MAP shape): X(name, kind, from), kind saying where
 * bypass_pager_stats() reads it:
 *   SHARD   the field `from` of struct pstats, summed over the shards
 *   ATOMIC  an atomic of the pager, p->from
 *   PLAIN   a value set at create, p->from
 *   HIST    the fault latency histogram, struct pstats' array `from`
 *   SAMPLE  the access sampler's (sample.c: bp_sample_stats fills them)
 * It generates struct pstats (below), the fill (pager.c), the preload's
 * statistics line (preload/pager/init.c), and pager.c's compile-time check
 * that the public struct (its layout is the ABI, written out with its
 * comments in include/bypass/pager.h and its man page) has these fields in
 * this order.  A new counter: a line here and a field in the public
 * struct, taken from its reserved words.
 */
#define BP_PAGER_COUNTERS(X)                          \
	X(faults_zero, SHARD, zero)                   \
	X(faults_swapin, SHARD, swapin)               \
	X(faults_wp, SHARD, wp)                       \
	X(faults_other, SHARD, other)                 \
	X(readahead_pages, SHARD, ra)                 \
	X(evictions, SHARD, evict)                    \
	X(evictions_clean, SHARD, evict_clean)        \
	X(bytes_read, SHARD, rd)                      \
	X(bytes_written, SHARD, wr)                   \
	X(write_errors, SHARD, wr_err)                \
	X(resident_pages, ATOMIC, bud.resident)       \
	X(resident_peak, ATOMIC, bud.peak)            \
	X(pinned_pages, ATOMIC, bud.pinned)           \
	X(budget_pages, PLAIN, cfg.budget)            \
	X(swap_pages, PLAIN, swap.pages)              \
	X(swap_used, ATOMIC, swap.used)               \
	X(mapped_pages, ATOMIC, ids.mapped)           \
	X(lat_hist, HIST, hist)                       \
	X(lat_count, SHARD, lat_count)                \
	X(lat_sum_ns, SHARD, lat_sum_ns)              \
	X(faultaround_pages, SHARD, fa)               \
	X(engine_switches, SHARD, switches)           \
	X(engine_pool, ATOMIC, eng.pool_now)          \
	X(prefetch_pages, SHARD, pf)                  \
	X(prefetch_used, SHARD, pf_used)              \
	X(policy_rejects, SHARD, rejects)             \
	X(access_samples, SAMPLE, -)                  \
	X(access_hits, SAMPLE, -)                     \
	X(access_sample_ns, SAMPLE, -)                \
	X(access_hit_ns, SAMPLE, -)                   \
	X(readahead_dirty, SHARD, ra_dirty)           \
	X(reads_polled, SHARD, polled)

/* The counters, sharded by thread (see stat_add) and summed when read:
 * a field for each SHARD counter of the list, the array for HIST. */
#define PG_STAT_SHARDS 8u
#define BP_PSTATS_SHARD(from) _Atomic uint64_t from;
#define BP_PSTATS_HIST(from) _Atomic uint64_t from[BYPASS_PAGER_HIST];
#define BP_PSTATS_ATOMIC(from)
#define BP_PSTATS_PLAIN(from)
#define BP_PSTATS_SAMPLE(from)
#define BP_PSTATS_FIELD(name, kind, from) BP_PSTATS_##kind(from)
struct pstats {
	BP_PAGER_COUNTERS(BP_PSTATS_FIELD)
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
