/* SPDX-License-Identifier: MIT */
/* pager.unmodified (unmodified.c): one program run on one side, its
 * inputs, its output checks and the preload's stats file (unmodrun.c). */
#ifndef BYPASS_BENCH_PAGER_UNMODIFIED_H
#define BYPASS_BENCH_PAGER_UNMODIFIED_H

#include "pager_bench.h"

/* The programs: W_HASH, W_MP and W_REDIS are issue 32 item 5's (a C hash
 * table, Python multiprocessing, Redis); their runs are a tree of processes
 * (W_MP's pool, W_REDIS's BGSAVE child) in the same cgroup. */
enum { W_SYSCALLS, W_SORT, W_PYTHON, W_SQLITE, W_HASH, W_MP, W_REDIS, W_N };
extern const char *const pu_w_name[W_N], *const pu_w_key[W_N];
#define PYTHON "/usr/bin/python3"

struct sizes {
	size_t budget, prog_bytes, sort_bytes;
	uint64_t updates, py_n, sq_n;
	uint64_t hash_n, hash_lookups; /* the hash table's nodes, its lookups */
	uint64_t mp_n;                 /* multiprocessing: the list's ints */
	uint64_t rd_keys, rd_reads;    /* Redis: keys populated, reads made */
	const char *scope;             /* BYPASS_PAGER_BUDGET_SCOPE (NULL: unset) */
	const char *orphans; /* plant=pager.unmodified.orphan: the file of the
			      * C program's planted leftovers' pids (NULL: none) */
	unsigned rd_wait_s;  /* Redis: BGSAVE's end waited for at most (--param
			      * redis_wait_s, 300) */
	const char *rd_stall; /* plant=pager.unmodified.redis.stall: the file of
			       * the client side's pid, and BGSAVE never ends
			       * for it (NULL: none) */
	const char *cg_trace; /* --param cg_trace=FILE: every run's cgroup
			       * samples appended to it (cgmem.h; NULL: none) */
};

/* S_TIER: the preload with its compressed tier on (BYPASS_PAGER_TIER=1). */
enum side { S_REF, S_LINUX, S_BYPASS, S_ZRAM, S_ZSWAP, S_TIER, S_N };

/* The sides of a round (sd): the swap file, the preload, zram, zswap, the
 * preload with its compressed tier (issue 35); their program side, their
 * Linux backend (-1: the preload's), row names and JSON keys (unmodcal.c). */
enum { SD_B = 1, SD_T = 4, SD_N = 5 };
extern const enum side pu_sd_side[SD_N];
extern const int pu_sd_backend[SD_N];
extern const char *const pu_sd_row[SD_N], *const pu_sd_key[SD_N];
/* A side of the preload (without or with the tier), not of Linux. */
static inline bool pu_sd_bypass(int sd)
{
	return sd == SD_B || sd == SD_T;
}

/* One program's Linux memory (unmodcal.c): the limit given to Linux, each
 * side's own limit (zram, zswap: lowered by their calibrated pool), the
 * pool's peak in that calibration run, whether it was calibrated, whether
 * the side cannot run at this memory (its pool alone is larger), and those
 * sides in words for the notes. */
struct pu_cal { /* zram's and zswap's iterated calibration (unmodcal.c) */
	int n;          /* runs made */
	double gap;     /* the last run's charge + pool - limit, bytes */
	bool converged; /* within the tolerance (or below, see below) */
	bool below;     /* below it, its charge short of its own limit */
};
struct pu_lim {
	size_t limit, slack; /* the budget + slack; the preload's non-anonymous slack */
	size_t slack_max;    /* the highest sample of it (the rule before: not used) */
	bool capped;         /* slack cut to the preload's peak charge - the budget */
	size_t side[SD_N];
	uint64_t pool_cal[SD_N];
	struct pu_cal cal[SD_N];
	double tol; /* the calibration's tolerance, a fraction of limit */
	bool cal_ok[SD_N], nomem[SD_N];
	char cannot[200];
};
/* Workload w's limits after the preload's calibration run (cal: its
 * cgroup's peaks, no samples if not measured; cal_peak: its cgroup's peak
 * charge, 0 if not measured) on env (set up): L->limit = z's budget + the
 * preload's non-anonymous slack (its charge less its anonymous memory: the
 * highest level of it held near its anonymous peak, cgmem.c; at most
 * cal_peak - the budget), env's
 * cgroup made at it,
 * then zram's and zswap's calibration runs (--param calibrate=0: none).  A
 * backend that could not be set up gets lb[sd] false and its reason in
 * lwhy[sd].  false if env's limit could not be set (why says). */
bool pu_limits(struct bench_ctx *c, struct pb_linux_env *env, int w, const struct sizes *z,
	       const char *dir, char (*out)[500], size_t swap_size, const struct pb_cg_mem *cal,
	       uint64_t cal_peak, bool *lb, char (*lwhy)[1024], struct pu_lim *L, char *why, size_t whylen);

/* Inputs: sort's lines, the C program's bytes; 0 or -errno. */
int pu_make_sort_input(const char *path, size_t bytes);
int pu_make_prog_input(const char *path, size_t bytes);
/* --param plant=pager.unmodified: a byte appended to the output. */
void pu_append_byte(const char *path);
/* Byte-identical files? */
bool pu_same_file(const char *a, const char *b);
/* What one run measured: wall time, the program's CPU time (user +
 * system, its own, its children's and its leftovers'), its peak resident set (wait4's
 * maxrss) and its cgroup's peaks (cgmem.c; zero without a cgroup). */
struct pu_res {
	double secs, cpu_s;
	long maxrss_kb;
	struct pb_cg_mem mem;
};
/* Run workload w on one side (in cgroup cg when not empty); its stdout
 * goes through a pipe to a writer process outside cg, which writes it to
 * out (so the output's page cache is not charged to the program).  0 and
 * res, or -errno with the reason in why (-EINTR: killed by a signal). */
int pu_run(enum side side, int w, const struct sizes *z, const char *dir, const char *cg,
	   const char *out, struct pu_res *res, char *why, size_t whylen);
/* The processes runs of workload w left behind when their program ended,
 * killed and reaped by pu_run (the bench is their subreaper), and their
 * CPU-seconds; runs whose leftovers outlived 10 s of killing.  Zeroed by
 * bench_pager_unmodified. */
extern int pu_left_n[W_N];
extern double pu_left_cpu[W_N];
extern int pu_left_stuck;
/* The scratch directory and every file in it. */
void pu_rmtree(const char *dir);
/* redis-server, redis-cli and redis-benchmark on PATH (W_REDIS). */
bool pu_have_redis(void);
/* This bench, and so the preload beside it, built with AddressSanitizer. */
bool pu_built_with_asan(void);
/* The pager preload's path into pre (len bytes): true, or false with
 * experiment id skipped (an ASan build: "its preload, instrumented, "
 * asan_why; or no preload built). */
bool pu_preload(struct bench_ctx *c, const char *id, const char *asan_why, char *pre,
		size_t len);
/* The sum of counter key over the lines of the preload's stats file
 * (dir/stats; removed when remove is set). */
uint64_t pu_stats_take(const char *dir, const char *key, bool remove);
/* The stats file's counters of one bypass run (then the file goes). */
struct brun {
	uint64_t rdpages, evict, swapin, hits, samples, peak;
	uint64_t tstored, tpool, tfile; /* the tier's: stored, swap-ins from pool, file */
};
void pu_brun_take(const char *dir, struct brun *b);
/* b's counters added to sum (the peak: the larger). */
void pu_brun_add(struct brun *sum, const struct brun *b);

/* One run of pager.unmodified: what its rounds measured (unmodified.c),
 * what its rows, notes and targets read (unmodrows.c).  Per workload w and
 * side sd: each round's time (NaN: no run), rounds kept and planned, runs
 * killed by the cgroup's OOM killer, runs made; the compressed pool's peak
 * (bytes, max over the runs; outside the cgroup on v1) and the largest
 * cgroup charge + pool of one run; the preload's counters summed (bsum,
 * tsum: with the tier); pages read from swap; peak resident set (KiB, max
 * over the runs) per side; the peak charge (bytes) of the reference, the
 * calibration run, the preload's rounds (and the smallest of them) and the
 * Linux rounds; each side's cgroup's peaks of anonymous memory and page
 * cache (the preload's include its calibration run), the reference's and
 * the calibration run's; CPU-seconds summed over the rounds; the Linux
 * sides' limits (unmodcal.c); the reference's time; why a workload
 * stopped. */
struct pu_st {
	struct sizes z, zb; /* the Linux sides', the preload's */
	uint64_t budget_mib;
	int rounds, c_rounds, ret;
	bool plant_kill, plant_nopage, have_python, have_redis, have_linux;
	char why[1024], facts[1024], tier_fail[1024];
	bool lb[SD_N];
	char lwhy[SD_N][1024], lfacts[SD_N][400];
	double t[W_N][SD_N][64];
	int nr[W_N], planned[W_N], oom[W_N][SD_N];
	int runs_b[W_N], runs_l[W_N][SD_N];
	uint64_t pool[W_N][SD_N], total_l[W_N][SD_N];
	bool bad[W_N], skipped[W_N], notsel[W_N];
	struct brun bsum[W_N], tsum[W_N];
	uint64_t pswpin[W_N][SD_N], zswpin[W_N][SD_N];
	long rss[W_N][S_N];
	uint64_t cg_ref[W_N], cg_cal[W_N], cg_b[W_N], cg_l[W_N][SD_N], cg_bmin[W_N];
	struct pb_cg_mem mem[W_N][SD_N], mem_ref[W_N], mem_cal[W_N];
	double cpu[W_N][SD_N];
	int left_n[W_N], left_stuck; /* pu_left_*: leftovers killed and reaped */
	double left_cpu[W_N];
	struct pu_lim L[W_N];
	double ref_s[W_N];
	char fail_why[W_N][1024];
};
/* Its rows, notes and targets, then bench_end (unmodrows.c). */
void pu_report(struct bench_ctx *c, struct pu_st *s);

#endif
