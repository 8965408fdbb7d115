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
 */
#include "pager_bench.h"

#include <string.h>

const char *pb_swapdir(struct bench_ctx *c)
{
	return bench_param(c, "swapdir", "/var/tmp");
}

/* --param only=latency|drop|throughput runs one experiment. */
int bench_pager(struct bench_ctx *c)
{
	const char *only = bench_param(c, "only", NULL);
	int ret = 0;
	if (!only || !strcmp(only, "latency"))
		bench_pager_latency(c);
	if (!only || !strcmp(only, "drop"))
		bench_pager_drop(c);
	if (!only || !strcmp(only, "throughput"))
		ret |= bench_pager_throughput(c);
	if (!only || !strcmp(only, "unmodified")) ret |= bench_pager_unmodified(c);
	return ret;
}
