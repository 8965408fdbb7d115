/* SPDX-License-Identifier: MIT */
/* The pager experiments (ExtMem's): shared declarations. */
#ifndef BYPASS_BENCH_PAGER_H
#define BYPASS_BENCH_PAGER_H

#include "bench.h"

#include <bypass/pager.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
	bool swap_on, cg_made, file_made;
	const char *bypass_file; /* the bypass side's swap file, if made */
};

/* Returns 0, or -1 with the reason in why; facts gets what the reader must
 * know (zswap, cgroup version, other swap areas).  On a signal the swap,
 * the files and the cgroup are removed (pb_running_child is killed first). */
int pb_linux_setup(struct bench_ctx *c, size_t budget, size_t swap_size,
		   struct pb_linux_env *env, char *why, size_t whylen, char *facts,
		   size_t factslen);
void pb_linux_teardown(struct pb_linux_env *env);
/* Clean env up if the run is interrupted (NULL: stop doing so). */
void pb_cleanup_on_signal(struct pb_linux_env *env);
extern volatile pid_t pb_running_child;
/* A file of size bytes written in full (no holes); 0 or -errno. */
int pb_write_file(const char *path, size_t size);
/* Run cmd arg quietly; 0 if it exited 0. */
int pb_run_cmd(const char *cmd, const char *arg);
int pb_read_small(const char *path, char *buf, size_t len);
int pb_write_small(const char *path, const char *s);
/* A counter of /proc/vmstat (pswpin, pswpout ...). */
uint64_t pb_vmstat(const char *key);

#endif
