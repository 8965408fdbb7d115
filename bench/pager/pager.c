/* SPDX-License-Identifier: MIT */
/*
 * bench_pager: ExtMem's experiments on a stock kernel.
 *   pager.latency     per-fault latency against the number of threads
 *                     faulting at once (ExtMem's first figure)
 *   pager.drop        how evicted pages are best dropped (the issue's
 *                     MADV_DONTNEED or UFFDIO_MOVE)
 *   pager.throughput  random and sequential accesses over a region 4x the
 *                     budget, bypass against Linux swap in a memory cgroup
 *                     of the same size (ExtMem's same-policy comparison)
 *   pager.unmodified  unmodified programs under the preload (issue 11, 3)
 *   pager.prefetch    sequential scans of swapped-out memory: read-ahead
 *                     off, synchronous, asynchronous prefetch, and Linux's
 *                     read-ahead (issue 11, experiment 1)
 *   pager.pagerank    pull PageRank over a Kronecker graph: Linux swap,
 *                     bypass 2Q, bypass's sliding window (issue 11, 2)
 *   pager.fork        fork() with most of the memory evicted, against the
 *                     same fork at the same resident set (issue 32)
 *   pager.sockcost    a socket call right after the thread's own evicting
 *                     fault under the preload, against the same without
 *                     it (issue 32)
 */
#include "pager_bench.h"

#include <string.h>

const char *pb_swapdir(struct bench_ctx *c)
{
	return bench_param(c, "swapdir", "/var/tmp");
}

/* Whether --param only=a,b,... names experiment x (no only: all but tier). */
static bool run_it(const char *only, const char *x)
{
	if (!only)
		return strcmp(x, "tier") != 0;
	size_t n = strlen(x);
	for (const char *q = only; q && *q; q = strchr(q, ','), q = q ? q + 1 : NULL)
		if (!strncmp(q, x, n) && (q[n] == ',' || !q[n]))
			return true;
	return false;
}

/* --param only=latency|drop|throughput|unmodified|prefetch|pagerank|fork|
 * sockcost|tier runs those experiments (a comma-separated list). */
int bench_pager(struct bench_ctx *c)
{
	const char *only = bench_param(c, "only", NULL);
	int ret = 0;
	if (run_it(only, "latency"))
		bench_pager_latency(c);
	if (run_it(only, "drop"))
		bench_pager_drop(c);
	if (run_it(only, "throughput"))
		ret |= bench_pager_throughput(c);
	if (run_it(only, "unmodified"))
		ret |= bench_pager_unmodified(c);
	if (run_it(only, "prefetch"))
		ret |= bench_pager_prefetch(c);
	if (run_it(only, "pagerank"))
		ret |= bench_pager_pagerank(c);
	if (run_it(only, "fork"))
		ret |= bench_pager_fork(c);
	if (run_it(only, "sockcost"))
		ret |= bench_pager_sockcost(c);
	if (run_it(only, "tier"))
		ret |= bench_pager_tier(c);
	return ret;
}
