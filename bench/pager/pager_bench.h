/* SPDX-License-Identifier: MIT */
/* The pager experiments (ExtMem's): shared declarations. */
#ifndef BYPASS_BENCH_PAGER_H
#define BYPASS_BENCH_PAGER_H

#include "bench.h"

#include <bypass/pager.h>

#define PB_PAGE 4096ul

/* ExtMem's two figures. */
void bench_pager_latency(struct bench_ctx *c);
/* Returns 0, or 1 if bypass failed or either side lost data. */
int bench_pager_throughput(struct bench_ctx *c);
/* The design choice: how evicted pages are dropped. */
void bench_pager_drop(struct bench_ctx *c);

/* Where swap files go: --param swapdir=DIR (default /var/tmp). */
const char *pb_swapdir(struct bench_ctx *c);

#endif
