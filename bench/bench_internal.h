/* SPDX-License-Identifier: MIT */
/* The driver's view of the harness state (bench.c and bypass-bench.c). */
#ifndef BYPASS_BENCH_INTERNAL_H
#define BYPASS_BENCH_INTERNAL_H

#include "bench.h"

struct bench_tgt {
	char *what, *op;
	double value, goal;
	bool met;
};

struct bench_exp {
	char *id, *title, *ratio_base, *skipped;
	struct bench_row *rows;
	size_t nrows, caprows;
	char **notes;
	size_t nnotes;
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
};

void bench_print_table(FILE *out, const struct bench_exp *e);

#endif
