/* SPDX-License-Identifier: MIT */
/*
 * The benchmark harness shared by every experiment of bypass-bench.
 *
 * An experiment (bench_<module>() in bench/<module>/) runs its baselines and
 * bypass variants alternately in one run, reduces each variant's samples to
 * a summary (bench_summarize) and reports rows with bench_row(); the driver
 * prints one side-by-side table per experiment and writes every row, with
 * the machine's facts, to JSON.  See ../shared/BENCHMARKING.md.
 */
#ifndef BYPASS_BENCH_H
#define BYPASS_BENCH_H

#include <bypass/core.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define BENCH_SKIP 77

struct bench_ctx;

/* A summary of samples, in the unit of the row. */
struct bench_summary {
	size_t n;
	double median, mean, p99, min, max;
};

/* Sort samples in place and summarize them. */
void bench_summarize(uint64_t *samples, size_t n, struct bench_summary *out);
void bench_summarize_d(double *samples, size_t n, struct bench_summary *out);

/* Row kinds, for the reader and the report. */
#define BENCH_BASELINE "baseline"
#define BENCH_BYPASS "bypass"
#define BENCH_LIMIT "limit"
#define BENCH_PEER "peer"

struct bench_row {
	const char *variant;     /* row label */
	const char *kind;        /* BENCH_BASELINE, BENCH_BYPASS, ... */
	const char *unit;        /* "cycles", "ns", "req/s", "accesses/s", ... */
	struct bench_summary s;  /* in unit */
	bool higher_is_better;   /* throughput (true) or latency (false) */
	double ratio;            /* vs the experiment's base row; NAN = none */
	const char *source;      /* what the source document reported, or NULL */
	const char *note;        /* short remark, or NULL */
	const char *params;      /* extra JSON object text, or NULL */
};

/*
 * Start an experiment: an id ("notify.pingpong"), a title, and the name of
 * the row that ratios are relative to (printed in the header).
 */
void bench_begin(struct bench_ctx *c, const char *id, const char *title,
		 const char *ratio_base);
/* Add a row (copied). */
void bench_row(struct bench_ctx *c, const struct bench_row *row);
/* A line printed under the table and kept in the JSON (printf format). */
void bench_note(struct bench_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * A target from the issue, checked on figures of this run: met when
 * value <op> goal, op one of "<=", ">=", "<", ">".
 */
void bench_target(struct bench_ctx *c, const char *what, double value,
		  const char *op, double goal);
/* Print the table of the current experiment. */
void bench_end(struct bench_ctx *c);
/* The experiment could not run here: say why (kept in the JSON). */
void bench_skip(struct bench_ctx *c, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Run parameters. */
bool bench_quick(const struct bench_ctx *c);
bool bench_smoke(const struct bench_ctx *c); /* CI: tiny sizes, proves it runs */
int bench_rounds(const struct bench_ctx *c); /* alternation rounds (>= 1) */
/*
 * The iteration count for a source figure: full, or full/10 with --quick,
 * or a tiny count with --smoke; --param name=N overrides.
 */
uint64_t bench_count(struct bench_ctx *c, const char *name, uint64_t full,
		     uint64_t quick);
/* A --param name=value string, or def. */
const char *bench_param(const struct bench_ctx *c, const char *name, const char *def);
/* The two CPUs to pin the sides of a cross-core experiment to. */
void bench_cpus(const struct bench_ctx *c, int *a, int *b);
int bench_ncpus(void);

/* Helpers. */
int bench_pin(int cpu);                   /* pin the calling thread */
double bench_cycles_to_ns(double cycles); /* via the calibrated TSC */
/* The physical limit for cross-core experiments: iters round trips of a
 * cache line between CPUs a and b, each one's cycles stored in out[]. */
void bench_cacheline_rtt(int cpu_a, int cpu_b, uint64_t *out, size_t iters);
/* Shared anonymous memory that survives fork. */
void *bench_shared_alloc(size_t len);
void bench_shared_free(void *p, size_t len);
/* Path of a file in the build tree (programs the experiments start). */
const char *bench_build_dir(void);
const char *bench_source_dir(void);

#endif
