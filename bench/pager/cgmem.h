/* SPDX-License-Identifier: MIT */
/* A memory cgroup's memory over one run (cgmem.c), apart from the rest of
 * pager_bench.h so that tests/pager/bench-slack.c can build cgmem.c alone. */
#ifndef BYPASS_BENCH_CGMEM_H
#define BYPASS_BENCH_CGMEM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * A memory cgroup's memory over one run (cgmem.c): pb_cg_mem_begin before
 * the process joins cg (a thread samples cg's memory.stat and charge every
 * PB_CG_MEM_PERIOD_MS; cg empty: nothing), pb_cg_mem_end after it exits:
 * the peaks of its anonymous memory (v1 rss, v2 anon), its page cache (v1
 * cache, v2 file, less swapcached) and its charge less its anonymous
 * memory (page cache and kernel memory: nonanon, the highest sample), and
 * the run's slack (nonanon_at: the highest level of that charge less
 * anonymous memory held while the anonymous memory was within
 * PB_CG_SLACK_NEAR_PCT % of its peak, a level being the median of
 * PB_CG_SLACK_RUN samples in a row: what sat beside the program's working
 * size, without brief spikes such as the exit's teardown), in bytes, and
 * how many samples.  pb_cg_mem_max: the larger of each peak into sum
 * (samples added; nonanon_at: the one of the larger anonymous peak).
 * pb_cg_mem_trace (after pb_cg_mem_begin, before pb_cg_mem_end): at its
 * end, the run's samples are appended to a file (--param cg_trace=FILE):
 * a header of comment lines, then one line a sample: the milliseconds since
 * pb_cg_mem_begin, the anonymous memory, the charge less it, the page
 * cache (KiB), and the level the slack's rule read there (KiB; "-" outside
 * the band near the anonymous peak); s->trace_err is then 0, or -errno if
 * the file could not be written.
 */
#define PB_CG_MEM_PERIOD_MS 10
#define PB_CG_SLACK_NEAR_PCT 90
#define PB_CG_SLACK_RUN 5
#define PB_CG_MEM_MAX_SAMPLES (1u << 20) /* ~3 h of samples; later ones not kept */
struct pb_cg_mem {
	uint64_t anon, file, nonanon, nonanon_at;
	int samples;
};
struct pb_cg_pt {
	uint64_t anon, nonanon, file;
	uint32_t ms; /* since pb_cg_mem_begin */
};
struct pb_cg_sampler {
	char cg[400];
	volatile int stop;
	struct pb_cg_mem m;
	unsigned long thread; /* pthread_t */
	struct pb_cg_pt *pts; /* every sample kept, for the slack */
	size_t n, cap;
	struct timespec t0;           /* pb_cg_mem_begin's */
	char trace[400], label[200]; /* pb_cg_mem_trace's file ("": none) */
	int trace_err;               /* pb_cg_mem_end's -errno writing it */
};
void pb_cg_mem_begin(struct pb_cg_sampler *s, const char *cg);
void pb_cg_mem_trace(struct pb_cg_sampler *s, const char *path, const char *label);
void pb_cg_mem_end(struct pb_cg_sampler *s, struct pb_cg_mem *m);
void pb_cg_mem_max(struct pb_cg_mem *sum, const struct pb_cg_mem *m);

#endif
