/* SPDX-License-Identifier: MIT */
/* The parts of the batch experiment (bench/batch/). */
#ifndef BYPASS_BENCH_BATCH_H
#define BYPASS_BENCH_BATCH_H

#include "bench.h"

/* Per-call cost of small sends, alone and batched (sends.c). */
int bench_batch_sends(struct bench_ctx *c);
/* nginx and lighttpd with and without the preload, under wrk (servers.c). */
int bench_batch_servers(struct bench_ctx *c);

#endif
