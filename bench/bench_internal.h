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
	double other_max;   /* the largest share of a CPU others took in a span
			       judged alone (0.4 s or more) */
	double load_min, load_max;
	/* rounds shorter than a judged span: judged together (bench_end) */
	int short_rounds;
	double short_wall, short_other; /* seconds, CPU seconds */
	int judged_alone;   /* rounds judged alone */
	double pool_wall, pool_share; /* the window the short rounds were judged
					 on, and others' share of a CPU in it */
	bool pool_span;     /* that window was the table's whole span */
	bool pool_disturbed;
	bool too_short;     /* no window of 0.4 s: not judged */
};

/* A target's verdict, from the figure, its interval and the run
 * (bench.h gives the order). */
enum bench_verdict {
	BV_MET,
	BV_NOT_MET,
	BV_UNRESOLVED,      /* the goal inside the 95% interval */
	BV_FEW_ROUNDS,      /* a timing from fewer than BENCH_MIN_ROUNDS rounds */
	BV_DISTURBED,       /* a round (or the short rounds together) disturbed */
	BV_TOO_SHORT,       /* the table too short to judge how quiet it was */
	BV_INCOMPLETE,      /* a run of either side failed, was killed or missing */
	BV_FAILED,          /* the experiment recorded a failure: no verdict */
	BV_NO_FIGURE,       /* the value is not a finite number */
	BV_NONE,            /* bench_target_none: cannot be judged here (why) */
};
#define BV_COUNT (BV_NONE + 1)

struct bench_tgt {
	char *what, *op;
	char *why;           /* BV_NONE: the reason */
	double value, goal;
	double ci_lo, ci_hi; /* the interval (timings), or both 0 */
	bool exact;          /* not a timing: no interval, never disturbed */
	int n, planned;      /* rounds (timings) or runs (exact) behind it */
	int method;          /* enum bench_ci_method; -1: none (exact) */
	bool met;            /* value <op> goal (before the run's verdict) */
	enum bench_verdict verdict;
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
	struct bench_quiet quiet; /* its rounds (or, none, bench_begin..end) */
	struct bench_snap begun;  /* at bench_begin */
	struct bench_snap since;  /* when the module's previous table ended */
	double seconds;           /* since the module's previous table ended */
	struct bench_exp *same_runs; /* bench_same_runs: the table whose runs
					these figures come from */
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
	struct bench_quiet prev; /* the last table's, for bench_same_runs */
	struct bench_exp *link;  /* bench_same_runs: the next table shares its runs */
	struct bench_snap run_start;
	double mark;         /* when the module started or its last table ended */
	struct bench_snap mark_snap; /* the machine at mark */
};

/* The ratio rule of an experiment's rows, for the header ("x baseline
 * time, lower is better", ...); is_rate(row) decides a row's direction. */
bool bench_row_is_rate(const struct bench_row *r);
const char *bench_ratio_rule(const struct bench_exp *e);

void bench_print_table(FILE *out, const struct bench_exp *e);
/* A verdict's words (BV_NONE: "no verdict", its reason apart). */
const char *bench_verdict_str(enum bench_verdict v);
/* A target's verdict in full ("no verdict: no protection keys"), in buf. */
const char *bench_tgt_verdict(const struct bench_tgt *t, char *buf, size_t len);
/* A target as the table prints it: figure, interval (method, rounds) or
 * range, goal, verdict. */
void bench_target_line(char *buf, size_t len, const struct bench_tgt *t);
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
/* The shortest span judged for disturbance (0.4 s at 10%). */
double bench_quiet_min_s(const struct bench_ctx *c);
/* Judge a table's short rounds together (bench_end): since is the machine
 * when the table's span began (the previous table's end). */
void bench_quiet_pool(struct bench_ctx *c, struct bench_quiet *q, const struct bench_snap *since);
/* Free every experiment and fact (the driver, after writing the JSON). */
void bench_free(struct bench_ctx *c);

#endif
