/* SPDX-License-Identifier: MIT */
/*
 * bench_batch: ESCA's experiment on a stock kernel.  First the per-call
 * cost of small sends (the micro-benchmark), then wrk against nginx and
 * lighttpd with and without libbypass-batch.so, alternating.
 */
#include "batch_bench.h"

int bench_batch(struct bench_ctx *c)
{
	int r1 = bench_batch_sends(c);
	int r2 = bench_batch_servers(c);
	if (r1 && r1 != BENCH_SKIP)
		return r1;
	if (r2 && r2 != BENCH_SKIP)
		return r2;
	return r1 == BENCH_SKIP && r2 == BENCH_SKIP ? BENCH_SKIP : 0;
}
