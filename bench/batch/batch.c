/* SPDX-License-Identifier: MIT */
/*
 * bench_batch: ESCA's experiment on a stock kernel.  First the per-call
 * cost of small sends (the micro-benchmark) and of a 20 KB sendfile, then
 * wrk against nginx and lighttpd with and without libbypass-batch.so,
 * alternating.
 */
#include "batch_bench.h"

#include <string.h>

/* --param only=sends|sendfile|servers runs one experiment. */
int bench_batch(struct bench_ctx *c)
{
	const char *only = bench_param(c, "only", NULL);
	int r1 = !only || !strcmp(only, "sends") ? bench_batch_sends(c) : BENCH_SKIP;
	int r3 = !only || !strcmp(only, "sendfile") ? bench_batch_sendfile(c) : BENCH_SKIP;
	int r2 = !only || !strcmp(only, "servers") ? bench_batch_servers(c) : BENCH_SKIP;
	if (r1 && r1 != BENCH_SKIP)
		return r1;
	if (r3 && r3 != BENCH_SKIP)
		return r3;
	if (r2 && r2 != BENCH_SKIP)
		return r2;
	return r1 == BENCH_SKIP && r2 == BENCH_SKIP && r3 == BENCH_SKIP ? BENCH_SKIP : 0;
}
