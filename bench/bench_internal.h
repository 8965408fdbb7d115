/* SPDX-License-Identifier: MIT */
/* The driver's view of the harness state (bench.c and bypass-bench.c). */
#ifndef BYPASS_BENCH_INTERNAL_H
#define BYPASS_BENCH_INTERNAL_H

#include "bench.h"

/* How quiet the machine was over some rounds (bench/quiet.c). */
struct bench_quiet {
	int spans;          /* measured spans: rounds and their reruns */
	int rounds;         /* rounds kept */
	int disturbed;      /* rounds kept although disturbed (reruns spent) */
	int reruns;
	double wall;        /* seconds measured */
	double other_s;     /* CPU seconds other processes used */
	double steal_s;     /* CPU seconds the hypervisor stole */
	double own_s;       /* CPU seconds the bench's own processes used */
	double other_max;   /* the largest share of a CPU others took in a span */
	double load_min, load_max;
};

/* A target's verdict, from the figure, its interval and the run. */
enum bench_verdict {
	BV_MET,
	BV_NOT_MET,
	BV_UNRESOLVED,      /* the goal inside the 95% interval */
	BV_NEAR,            /* no interval, and within 20% of the goal */
	BV_DISTURBED,       /* a round stayed disturbed */
	BV_FAILED,          /* the experiment recorded a failure: no verdict */
	BV_NO_FIGURE,       /* the value is not a finite number */
};

struct bench_tgt {
	char *what, *op;
	double value, goal;
	double ci_lo, ci_hi; /* both 0: no interval */
	bool exact;          /* a count, not a timing: no 20% rule */
	bool met;            /* value <op> goal (before the run's verdict) */
	enum bench_verdict verdict;
};

/* The margin within which a target without an interval is not resolved. */
#define BENCH_NEAR 0.20

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
	struct bench_quiet quiet; /* its rounds (or, none, bench_begin..end) */
	struct bench_snap begun;  /* at bench_begin */
	double seconds;           /* since the module's previous table ended */
	struct bench_exp *next;
};

struct bench_ctx {
	bool quick, smoke;
	int rounds;
	bool rounds_set;    /* --rounds given */
	int cpu_a, cpu_b;
	int ncpus;          /* online CPUs at start (before any pinning) */
	FILE *out;
	char **params;
	size_t nparams;
	struct bench_exp *first, *last, *cur;
	int nfailed;        /* bench_fail calls: bypass-bench exits non-zero */
	char **fact_keys, **fact_vals; /* bench_fact */
	size_t nfacts;
	char **pending;      /* failures while no table was open */
	size_t npending;
	double disturbed_at; /* share of a CPU others may take in a round */
	int reruns;          /* reruns of one disturbed round, at most */
	struct bench_quiet pend; /* rounds run since the last table ended */
	struct bench_quiet prev; /* the last table's, for bench_quiet_again */
	struct bench_snap run_start;
	double mark;         /* when the module started or its last table ended */
};

/* The ratio rule of an experiment's rows, for the header ("x baseline
 * time, lower is better", ...); is_rate(row) decides a row's direction. */
bool bench_row_is_rate(const struct bench_row *r);
const char *bench_ratio_rule(const struct bench_exp *e);

void bench_print_table(FILE *out, const struct bench_exp *e);
/* A target's verdict: its words, and whether it counts as met. */
const char *bench_verdict_str(enum bench_verdict v);
/* Give every target of e its verdict (failures and disturbance included);
 * again whenever a failure arrives after the table ended. */
void bench_judge(const struct bench_ctx *c, struct bench_exp *e);

/* A module's failures that no table took: a table of their own. */
void bench_flush_failures(struct bench_ctx *c, const char *module);

/* bench/quiet.c */
void bench_snap_take(struct bench_snap *s);
bool bench_quiet_add(struct bench_ctx *c, struct bench_quiet *q, const struct bench_snap *a,
		     const struct bench_snap *b, double *frac);
void bench_quiet_merge(struct bench_quiet *into, const struct bench_quiet *q);
void bench_quiet_line(char *buf, size_t len, const struct bench_ctx *c,
		      const struct bench_quiet *q);
/* Free every experiment and fact (the driver, after writing the JSON). */
void bench_free(struct bench_ctx *c);

#endif
