/* SPDX-License-Identifier: MIT */
/* The pager experiments (ExtMem's): shared declarations. */
#ifndef BYPASS_BENCH_PAGER_H
#define BYPASS_BENCH_PAGER_H

#include "bench.h"

#include <bypass/pager.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>

/* A ratio for a JSON params string: "%.3f", or null where there is none
 * (a baseline that did not run or was killed: NaN is not JSON). */
static inline const char *pb_jratio(char *buf, size_t len, double v)
{
	if (!isfinite(v))
		return "null";
	snprintf(buf, len, "%.3f", v);
	return buf;
}
#include <sys/types.h>

#define PB_PAGE 4096ul

/* ExtMem's two figures. */
void bench_pager_latency(struct bench_ctx *c);
/* Returns 0, or 1 if bypass failed or either side lost data. */
int bench_pager_throughput(struct bench_ctx *c);
/* The design choice: how evicted pages are dropped. */
void bench_pager_drop(struct bench_ctx *c);
/* Issue 11's experiment 3: unmodified programs under the preload vs Linux
 * swap (bench/pager/unmodified.c); 0, or 1 if bypass failed or lost data. */
int bench_pager_unmodified(struct bench_ctx *c);
/* Issue 11's experiment 1: sequential scans of swapped-out memory with and
 * without read-ahead/prefetch vs Linux swap read-ahead (prefetch.c). */
int bench_pager_prefetch(struct bench_ctx *c);
/* Issue 11's experiment 2: pull PageRank over a Kronecker graph, Linux
 * swap vs bypass 2Q vs bypass's sliding-window policy (pagerank.c). */
int bench_pager_pagerank(struct bench_ctx *c);
/* Issue 32's fork target: fork() with most of the memory evicted against
 * the same fork at the same resident set without the pager (fork.c). */
int bench_pager_fork(struct bench_ctx *c);
/* Issue 35's compressed tier: a swap-in from the pool against a minor
 * fault plus a decompression (tier.c; only=tier, not in all). */
int bench_pager_tier(struct bench_ctx *c);
/* Issue 32: a socket call right after the thread's own evicting fault
 * under the pager preload, against the same without it (sockcost.c). */
int bench_pager_sockcost(struct bench_ctx *c);

/* ------------------------------------------------ the graph (kron.c) */
struct pb_csr {
	uint32_t nv;  /* vertices */
	uint64_t ne;  /* directed edges: every undirected edge twice */
	uint64_t *off; /* nv + 1 offsets into nb */
	uint32_t *nb;  /* neighbours, sorted per vertex */
};
/* A Kronecker graph (Graph500/GAP: A 0.57, B 0.19, C 0.19; edge_factor <<
 * scale edges, ids permuted), symmetrized, without self-loops or duplicate
 * edges, as a CSR.  Deterministic in seed.  0, -EINVAL or -ENOMEM. */
int pb_kron_csr(unsigned scale, unsigned edge_factor, uint64_t seed, struct pb_csr *g);
void pb_csr_free(struct pb_csr *g);
/* The CSR file (see kron.c): 0 or -errno (nothing left behind on error). */
int pb_csr_write(const char *path, const struct pb_csr *g);
/* Read the file's offsets and neighbours into off and nb (room for nv + 1
 * and ne) through a 1 MiB buffer, O_DIRECT where the file system takes it,
 * so that regions that cannot be read() into directly can be loaded.
 * 0 or -errno. */
int pb_csr_load(const char *path, uint64_t *off, uint32_t *nb, uint32_t nv, uint64_t ne);

/*
 * The pager policy calls of issue 11 (bypass_pager_set_policy and
 * bypass_pager_advise), where this build's pager has them: -ENOSYS where
 * it does not, so that a row that needs them is skipped with the reason.
 */
int pb_set_policy(bypass_pager *p, const char *spec);
int pb_advise(bypass_pager *p, void *addr, size_t len, int advice);
enum { PB_ADV_SEQUENTIAL, PB_ADV_PRIORITY };

/* Where swap files go: --param swapdir=DIR (default /var/tmp). */
const char *pb_swapdir(struct bench_ctx *c);

/* ------------------------------------------------ Linux swap baseline */
/*
 * The Linux side of the comparisons (bench/pager/linuxswap.c): a swap file
 * written in full and enabled at top priority, and a memory cgroup (v1 or
 * v2) limited to the budget, which the measured child joins.  Needs root.
 */
struct pb_linux_env {
	char swapfile[300];
	char cg[300];
	char procs[320];
	char cgroot[300];       /* the memory controller's root */
	const char *limit_file; /* memory.limit_in_bytes (v1) or memory.max (v2) */
	bool swap_on, cg_made, file_made;
	const char *bypass_file; /* the bypass side's swap file, if made */
	const char *extra_file;  /* another scratch file to remove, if set */
	const char *scratch_dir; /* a directory of files to remove (its files, then
				  * itself) on a signal, if set */
	/* the swap behind the cgroup (pb_linux_use): the file, zram, zswap */
	int backend;             /* enum pb_backend */
	char swapdir[300];       /* where the state files of zram/zswap go */
	int zram_dev;            /* -1: no zram device set up */
	bool zram_added, zram_on, zswap_set;
	char zram_comp[32], zswap_comp[32], zswap_was_comp[32], zswap_was_on[8];
	char zswap_pool_pct[16]; /* max_pool_percent, as found (left alone) */
	char state[340];         /* what to undo if we are SIGKILLed (reap_stale) */
	unsigned comp_wait_s;    /* how long pb_linux_use waits for another bench's
				  * zram/zswap (--param compressed_wait) */
	/* the compressed pool's peak over a run (pb_linux_pool_begin/end) */
	volatile int pool_stop;
	volatile uint64_t pool_peak;
	unsigned long pool_thread; /* pthread_t */
};

/*
 * The Linux baselines of issue 35: the same memory cgroup with swap to
 * the file (PB_FILE, what pb_linux_setup sets up), to zram as the only
 * swap (PB_ZRAM: a zram device of the swap file's size, lz4 where offered,
 * mkswap + swapon by the bench), or to the file with zswap in front
 * (PB_ZSWAP: zswap enabled, compressor lz4 where offered, max_pool_percent
 * left as found).  Everything is undone by pb_linux_teardown, on a signal,
 * and by the next run's reap_stale after a SIGKILL (state files named with
 * the pid, in the swap directory).  zram and zswap are system-wide: a
 * bench sets them up only under an exclusive lock of a file
 * (/run/lock/bypass-bench-compressed.lock), held until pb_linux_teardown,
 * waited for at most --param compressed_wait seconds (300); --param
 * compressed=0 leaves both sides out (throughput, unmodified).
 */
enum pb_backend { PB_FILE, PB_ZRAM, PB_ZSWAP, PB_NBACKENDS };
extern const char *const pb_backend_name[PB_NBACKENDS];
/* Switch env's swap to backend b: 0, or -1 with the reason in why (the row
 * cannot run here: no zram module, no free device, no zswap ...); facts
 * get what was set (compressor, disk size, max_pool_percent). */
int pb_linux_use(struct pb_linux_env *env, int b, size_t swap_size, char *why, size_t whylen,
		 char *facts, size_t factslen);
/* The compressed pool of the current backend over one run: begin before it
 * (a sampler thread every 5 ms; zram's mem_used_max reset), end after it:
 * the pool's peak in bytes (zram: mm_stat mem_used_max; zswap: /proc/meminfo
 * Zswap, system-wide; the file: 0). */
void pb_linux_pool_begin(struct pb_linux_env *env);
uint64_t pb_linux_pool_end(struct pb_linux_env *env);

/* Returns 0, or -1 with the reason in why; facts gets what the reader must
 * know (zswap, cgroup version, other swap areas).  On a signal the swap,
 * the files and the cgroup are removed (pb_running_child is killed first). */
int pb_linux_setup(struct bench_ctx *c, size_t budget, size_t swap_size,
		   struct pb_linux_env *env, char *why, size_t whylen, char *facts,
		   size_t factslen);
void pb_linux_teardown(struct pb_linux_env *env);
/* Between runs: the cgroup's charged memory reclaimed (a run starts with
 * none of the last run's page cache charged to it). */
void pb_linux_reset(const struct pb_linux_env *env);
/*
 * The memory cgroups of a like-for-like comparison (pager.unmodified), on
 * env's controller (pb_linux_setup succeeded):
 *   pb_linux_limit   env's cgroup made anew with this limit (its peak
 *                    starts from nothing; memory.swappiness 100 where the
 *                    controller has it): 0 or -errno;
 *   pb_cg_make       a cgroup of its own, no limit, to measure a process's
 *                    peak charge: bypass-bench-<pid>-<tag>-peak; 0 or
 *                    -errno, its directory in path;
 *   pb_cg_peak       the largest charge a cgroup has had (v1
 *                    memory.max_usage_in_bytes, v2 memory.peak), bytes, or 0;
 *   pb_cg_join       write pid into its cgroup.procs (0 or -errno);
 *   pb_cg_remove     rmdir it (empty), retrying while it drains.
 * A killed run's leftovers are reaped by the next pb_linux_setup.
 */
int pb_linux_limit(struct pb_linux_env *env, size_t limit);
/* env's cgroup's limit changed in place (nothing else of it): 0 or -errno. */
int pb_linux_set_limit(const struct pb_linux_env *env, size_t limit);
int pb_cg_make(const struct pb_linux_env *env, const char *tag, char *path, size_t len);
uint64_t pb_cg_peak(const char *cg);
int pb_cg_join(const char *cg, pid_t pid);
void pb_cg_remove(const char *cg);
#include "cgmem.h" /* a memory cgroup's memory over one run */
/* Clean env up if the run is interrupted (NULL: stop doing so). */
void pb_cleanup_on_signal(struct pb_linux_env *env);
extern volatile pid_t pb_running_child;
/* Another process group a signal's cleanup kills (0: none): pager.
 * unmodified's Redis client side and its dump's check, each a group of its
 * own outside the measured cgroup. */
extern volatile pid_t pb_running_group;
/*
 * Run fn(arg) in a fresh child process: in env's memory cgroup when env is
 * not NULL (the Linux side; the child joins it first), else as it is.  The
 * child exits 0 when fn returns (fn may _exit non-zero itself).  Waits at
 * most timeout_s seconds, then kills the child: a stall is a failure with
 * everything still cleaned up by the caller (unlike bench_watchdog, which
 * exits).  Returns 0 if the child exited 0, else -ETIMEDOUT, -EINTR (killed
 * by a signal) or -EIO, with the reason in why.
 */
int pb_run_side(const struct pb_linux_env *env, void (*fn)(void *), void *arg,
		unsigned timeout_s, char *why, size_t whylen);
/*
 * The rows of an experiment whose sides each run in a fresh child process
 * (pb_run_side), and what became of them.
 */
#define PB_MAX_SIDES 8
struct pb_side_report { /* the first member of a side's (shared) result */
	bool skipped;   /* set by the child: the row cannot run here */
	char msg[256];  /* why, or what failed */
};
struct pb_sides {
	bool have[PB_MAX_SIDES];            /* the row still runs */
	char skip_why[PB_MAX_SIDES][600];
	int kills;                          /* Linux side killed (OOM killer) */
	char kill_why[600];
	char fail[1400];                    /* the run failed: why */
};
/*
 * Run side s (env not NULL: the Linux side, in the cgroup) and sort out the
 * outcome: true if it ran; else a skip (the child set rep->skipped: have[s]
 * becomes false), a kill of the Linux side by a signal (the cgroup's OOM
 * killer: Linux's failure, counted in kills) or a failure (fail, naming the
 * side).  rep is cleared first.
 */
/* The notes on the Linux side: its facts and swap traffic (extra: more
 * facts, or ""), its kills, or why it did not run (setup_why). */
void pb_note_linux(struct bench_ctx *c, const struct pb_sides *t, int side, int runs,
		   const char *facts, const char *extra, const char *setup_why,
		   uint64_t pswpin, uint64_t pswpout);
/* Add the counters of st (faults, read-ahead, prefetch, evictions, bytes)
 * to sum. */
void pb_stats_add(struct bypass_pager_stats *sum, const struct bypass_pager_stats *st);
/* The asynchronous prefetcher's counters of st (pages installed, seen
 * used), where this build's pager has them; else 0 and 0. */
void pb_prefetch_counts(const struct bypass_pager_stats *st, uint64_t *pages, uint64_t *used);
/* In a side's child: say what failed (what: -e) in rep and exit 1. */
__attribute__((noreturn)) void pb_side_fail(struct pb_side_report *rep, const char *what, int e);
bool pb_side_run(struct pb_sides *t, int s, const struct pb_linux_env *env,
		 void (*fn)(void *), void *arg, unsigned timeout_s,
		 struct pb_side_report *rep, const char *name);
/* Linux's swap read-ahead settings (vm.page-cluster, VMA-based read-ahead)
 * as one line for the notes and the provenance. */
void pb_linux_readahead(char *buf, size_t len);

/* Whether this build's pager has the compressed tier (issue 35): 0, or
 * -EOPNOTSUPP (no liblz4) or another -errno with the reason in why. */
int pb_tier_check(struct bench_ctx *c, char *why, size_t whylen);

/* A file of size bytes written in full (no holes); 0 or -errno. */
int pb_write_file(const char *path, size_t size);
/* Run cmd arg quietly; 0 if it exited 0. */
int pb_run_cmd(const char *cmd, const char *arg);
int pb_read_small(const char *path, char *buf, size_t len);
int pb_write_small(const char *path, const char *s);
/* A counter of /proc/vmstat (pswpin, pswpout ...). */
uint64_t pb_vmstat(const char *key);

#endif
