/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified's Linux memory (split from unmodified.c): the limit each
 * Linux side gets (the budget + the non-anonymous slack the preload was
 * measured to use), and zram's and zswap's calibration runs, which lower
 * their cgroup's limit by their compressed pool (not charged to a cgroup
 * v1), or find that the pool alone outgrows the memory.
 */
#include "unmodified.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The sides of a round (sd): the swap file, the preload, zram, zswap, the
 * preload with its compressed tier (issue 35). */
const enum side pu_sd_side[SD_N] = { S_LINUX, S_BYPASS, S_ZRAM, S_ZSWAP, S_TIER };
const int pu_sd_backend[SD_N] = { PB_FILE, -1, PB_ZRAM, PB_ZSWAP, -1 };
const char *const pu_sd_row[SD_N] = { "Linux swap (memory cgroup)", "bypass preload (upcall)",
				      "Linux zram (memory cgroup)",
				      "Linux zswap + swap file (memory cgroup)",
				      "bypass preload + compressed tier (upcall)" };
const char *const pu_sd_key[SD_N] = { "file", "bypass", "zram", "zswap", "tier" };
#define MIB(x) ((double)(x) / 1048576.0)

/*
 * Equal memory for zram and zswap (issue 35): their compressed pool is not
 * charged to a cgroup v1, so calibration runs of workload w measure the
 * pool's peak (zram: mm_stat mem_used_max; zswap: /proc/meminfo Zswap, the
 * pool's total size, system-wide: the same figure as debugfs's
 * pool_total_size, which is not mounted here) and the cgroup's peak charge,
 * and the side's cgroup limit is lowered until charge + pool is the memory
 * the other sides have (limit: the budget + the preload's slack) within
 * tol (a fraction of it), at most runs runs: the first at limit, each next
 * one lowered (or raised) by the last run's excess (charge + pool - limit;
 * below the limit with the charge short of its own limit counts as
 * agreeing: memory it did not need).  Not agreeing after runs runs: the
 * last run's limit less its excess, not measured.  *lim: the limit to use
 * (the limit itself if the first run failed); *pool_cal: the pool's peak
 * of the last run; cr->n, cr->gap: the runs made and the last run's
 * excess, bytes (negative: below); cr->converged: agreeing; cr->below: by
 * being below.  1 if the pool was measured (its peak may be 0: nothing
 * was swapped), 2 if the pool alone was larger than the limit (no limit
 * gives that side the same memory: it cannot run at this memory), 0 if the
 * first run failed, -1 if the backend could not be set up (why says so).
 */
static int calibrate_pool(struct pb_linux_env *env, int sd, int w, const struct sizes *z,
			  const char *dir, const char *out, size_t limit, size_t swap_size,
			  int runs, double tol, size_t *lim, uint64_t *pool_cal,
			  struct pu_cal *cr, char *why, size_t whylen)
{
	char rwhy[1024];
	struct pu_res res;
	*lim = limit;
	*pool_cal = 0;
	memset(cr, 0, sizeof(*cr));
	if (env->backend != pu_sd_backend[sd] &&
	    pb_linux_use(env, pu_sd_backend[sd], swap_size, why, whylen, NULL, 0))
		return -1;
	size_t at = limit; /* this run's limit */
	for (int k = 0; k < runs; k++) {
		sync();
		if (pb_linux_limit(env, at))
			return k ? 1 : 0;
		pb_linux_reset(env);
		pb_linux_pool_begin(env);
		int e = pu_run(pu_sd_side[sd], w, z, dir, env->cg, out, &res, rwhy, sizeof(rwhy));
		uint64_t pl = pb_linux_pool_end(env), ch = pb_cg_peak(env->cg);
		if (e && e != -EINTR) /* killed by the OOM killer: its pool counts still */
			return k ? 1 : 0;
		cr->n = k + 1;
		*pool_cal = pl;
		if (pl + 4096 > limit)
			return 2;
		/* what charge + pool came to against the others' memory */
		double excess = (double)(ch + pl) - (double)limit;
		double t = tol * (double)limit;
		cr->gap = excess;
		*lim = at;
		/* within tol; or below it with the charge short of its own
		 * limit (memory it did not need: not raised) */
		cr->below = excess < 0 && (double)ch + t < (double)at;
		if (fabs(excess) <= t || cr->below) {
			cr->converged = true;
			return 1;
		}
		double next = (double)at - excess;
		if (next > (double)limit)
			next = (double)limit;
		if (next < 4096)
			next = 4096;
		at = (size_t)next & ~(size_t)4095;
		*lim = at; /* not measured yet: used if this was the last run */
	}
	return 1;
}

/* Bytes rounded up to whole pages. */
static size_t pages_up(uint64_t b)
{
	return (size_t)((b + 4095) & ~4095ull);
}

bool pu_limits(struct bench_ctx *c, struct pb_linux_env *env, int w, const struct sizes *z,
	       const char *dir, char (*out)[500], size_t swap_size, const struct pb_cg_mem *cal,
	       uint64_t cal_peak, bool *lb, char (*lwhy)[1024], struct pu_lim *L, char *why,
	       size_t whylen)
{
	bool lx = true;
	/* Linux's memory (issue 35, equal memory): the budget and the same
	 * non-anonymous slack the preload's calibration run was measured to
	 * use (its cgroup's charge less its anonymous memory: page cache and
	 * kernel memory; the program's output is written outside the cgroup)
	 * held while its anonymous memory was near its peak (cgmem.c's
	 * slack_of: the highest level, a median of samples in a row): what
	 * sat beside its working size.  The highest single sample of it (the
	 * rule until 91204cf) caught brief spikes (the exit's teardown, kernel
	 * memory): 1.2-18.6 MiB for one program over runs; it is kept for the
	 * notes.  The sample of the anonymous peak (91204cf's rule) left
	 * the C program's slack to whichever sample was a page higher:
	 * 1.1-34.2 MiB over runs.
	 * At most the preload's own peak charge less the budget: Linux never
	 * gets more memory than the preload was charged.  Whole pages; not
	 * measured: the budget alone, and the note says. */
	L->slack = L->slack_max = 0;
	L->capped = false;
	if (cal && cal->samples) {
		L->slack = pages_up(cal->nonanon_at);
		L->slack_max = pages_up(cal->nonanon);
		size_t cap = cal_peak > z->budget ? pages_up(cal_peak - z->budget) : 0;
		if (cal_peak && L->slack > cap) {
			L->slack = cap;
			L->capped = true;
		}
	}
	L->limit = z->budget + L->slack;
	int e = pb_linux_limit(env, L->limit);
	if (e) {
		lx = false;
		snprintf(why, whylen, "the cgroup's limit of %zu bytes: %s", L->limit,
			 strerror(-e));
	}
	for (int sd = 0; sd < SD_N; sd++) {
		L->side[sd] = L->limit;
		if (!lx || !lb[sd] || (sd != 2 && sd != 3))
			continue;
		/* --param calibrate=N: at most N calibration runs (0: none, the
		 * limit + the pool; 1: one step, the limit less the first
		 * run's pool); calibrate_tol_pct: the agreement sought */
		int runs = (int)strtol(bench_param(c, "calibrate", bench_quick(c) ? "2" : "3"),
				       NULL, 10);
		double tol = strtod(bench_param(c, "calibrate_tol_pct", "2"), NULL) / 100.0;
		if (runs <= 0)
			continue;
		if (runs > 8)
			runs = 8;
		L->tol = tol;
		int k = calibrate_pool(env, sd, w, z, dir, out[pu_sd_side[sd]], L->limit,
				       swap_size, runs, tol, &L->side[sd], &L->pool_cal[sd],
				       &L->cal[sd], lwhy[sd], sizeof(lwhy[sd]));
		if (k < 0)
			lb[sd] = false;
		L->cal_ok[sd] = k == 1;
		if (k == 2) {
			L->nomem[sd] = true;
			size_t o = strlen(L->cannot);
			snprintf(L->cannot + o, sizeof(L->cannot) - o, "%s%s (pool %.1f MiB)",
				 o ? ", " : "", pu_sd_key[sd], MIB(L->pool_cal[sd]));
		}
	}
	return lx;
}
