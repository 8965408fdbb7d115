/* SPDX-License-Identifier: MIT */
/* The driver's view of the harness state (bench.c and bypass-bench.c). */
#ifndef BYPASS_BENCH_INTERNAL_H
#define BYPASS_BENCH_INTERNAL_H

#include "bench.h"

struct bench_tgt {
	char *what, *op;
	double value, goal;
	double ci_lo, ci_hi; /* both 0: no interval */
	bool met;
	bool unresolved;     /* goal inside [ci_lo, ci_hi] */
};

struct bench_exp {
	char *id, *title, *ratio_base, *skipped;
	struct bench_row *rows;
	size_t nrows, caprows;
	char **notes;
	size_t nnotes;
	char **failures;
	size_t nfailures;
	struct bench_tgt *targets;
	size_t ntargets;
	struct bench_exp *next;
};

struct bench_ctx {
	bool quick, smoke;
	int rounds;
	int cpu_a, cpu_b;
	int ncpus;          /* online CPUs at start (before any pinning) */
	FILE *out;
	char **params;
	size_t nparams;
	struct bench_exp *first, *last, *cur;
	int nfailed;        /* bench_fail calls: bypass-bench exits non-zero */
	char **fact_keys, **fact_vals; /* bench_fact */
	size_t nfacts;
};

/* The ratio rule of an experiment's rows, for the header ("x baseline
 * time, lower is better", ...); is_rate(row) decides a row's direction. */
bool bench_row_is_rate(const struct bench_row *r);
const char *bench_ratio_rule(const struct bench_exp *e);

void bench_print_table(FILE *out, const struct bench_exp *e);
/* Free every experiment and fact (the driver, after writing the JSON). */
void bench_free(struct bench_ctx *c);

#endif
