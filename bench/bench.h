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

/* Rounds per side a met / not met verdict needs, and the interval methods
 * (see "Targets and their verdicts" below). */
#define BENCH_MIN_ROUNDS 5
enum bench_ci_method {
	BENCH_CI_T,    /* mean of per-round values, Student's t interval */
	BENCH_CI_BOOT, /* median of per-round values, percentile bootstrap */
};

struct bench_ctx;

/* A summary of samples, in the unit of the row. */
struct bench_summary {
	size_t n;
	double median, mean, p99, min, max;
};

/* Sort samples in place and summarize them. */
void bench_summarize(uint64_t *samples, size_t n, struct bench_summary *out);
void bench_summarize_d(double *samples, size_t n, struct bench_summary *out);
/* The finite values of v[0..n) summarized, v left as it is (a NaN stands
 * for a round without a run); at most 256 of them. */
void bench_summarize_finite(const double *v, size_t n, struct bench_summary *out);

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
	bool higher_is_better;   /* throughput (true) or latency (false); a
				    unit ending in "/s" is a rate regardless */
	/*
	 * The ratio convention of every module: ratio = this row's median /
	 * the base row's median, for times and for rates alike (a time: lower
	 * is better; a rate: higher is better; the table's header says which).
	 * Mark the base row with is_base and leave ratio 0: the harness then
	 * computes every row's ratio at bench_end (one place).  A row that sets
	 * ratio itself (non-zero, or NAN for none) keeps it; say in its note
	 * what it is relative to.
	 */
	double ratio;
	bool is_base;            /* the row every ratio is relative to */
	/*
	 * Optional interval of ratio (ci_lo == ci_hi == 0: none), printed
	 * beside it and written to JSON as "ratio_ci": [lo, hi].  ci_n is
	 * the number of rounds behind it (0: not stated): from 5 rounds up it
	 * is printed as a 95% interval, below as the range of those rounds
	 * ("range of 3"), since a bootstrap over 3 rounds is their lowest and
	 * highest figure (about 75% coverage, not 95%).  bench_row_est() fills
	 * ratio, the interval and ci_n from per-round figures.  A row's
	 * interval decides nothing: targets do (bench_target_est).
	 */
	double ci_lo, ci_hi;
	int ci_n;
	/* ci_n > 0: ratio is the per-round estimate (bench_row_est) by this
	 * method, not median / base median; the table's header says so */
	enum bench_ci_method ci_method;
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
 * Targets and their verdicts (../shared/BENCHMARKING.md, rules 11-15).
 *
 * A timing target (a ratio of times or rates, an absolute time) is judged
 * on per-round figures: one value per alternation round, normally the
 * per-round ratio (the row's figure in round r over its base's in the same
 * round r, both sides having run in that round), reduced by a stated
 * method to a figure and a 95% interval (struct bench_est):
 *
 *   BENCH_CI_T     the mean of the per-round values and Student's t
 *                  interval (mean +- t(0.975, n-1) * sd / sqrt(n));
 *   BENCH_CI_BOOT  the median of the per-round values and a percentile
 *                  bootstrap interval of that median (2000 resamples,
 *                  deterministic seed).
 *
 * A verdict of met or not met needs BENCH_MIN_ROUNDS (5) rounds per side;
 * from fewer the interval is printed as the range of the rounds and the
 * target is "not resolved: fewer than 5 rounds".  The harness gives every
 * target its verdict at bench_end, in this order:
 *
 *   no verdict: failed               the table (or a table whose runs it
 *                                    shares, bench_same_runs) recorded a
 *                                    failure: a failed variant decides nothing
 *   no verdict: <reason>             bench_target_none: cannot be measured
 *                                    here (e.g. no protection keys)
 *   not resolved: baseline incomplete  a run of either side failed, was
 *                                    killed or is missing (n < planned)
 *   no verdict: no figure            the figure is not a finite number
 *   not resolved: fewer than 5 rounds  (timings)
 *   not resolved: disturbed          (timings) a round, or the table's
 *                                    short rounds together, stayed disturbed
 *   not resolved                     the goal lies inside the 95% interval
 *   met / not met
 *
 * Targets that are not timings (identical output, peak memory, counts of
 * calls, crossings or pages: bench_target_exact) hold on every run: their
 * figure is the worst over all runs, they have no interval and no round
 * minimum, and they are never "disturbed" (a byte-identical output does not
 * depend on what else ran); an incomplete set of runs still leaves them
 * "not resolved: baseline incomplete".
 */
struct bench_est {
	double value;  /* the figure: mean (t) or median (bootstrap); NaN: none */
	double lo, hi; /* 95% interval; with n < BENCH_MIN_ROUNDS, min and max */
	int n;         /* rounds that gave a value (both sides ran) */
	int planned;   /* rounds the experiment set out to run */
	enum bench_ci_method method;
};
/*
 * The estimate from per-round values v[0..nv) (a NaN or infinite value is
 * a round without a figure: it is left out and makes the estimate
 * incomplete, as does nv < planned).  planned 0 means nv.
 */
void bench_est_of(const double *v, size_t nv, int planned, enum bench_ci_method m,
		  struct bench_est *e);
/*
 * The same for per-round ratios a[r] / b[r] (a round where either is
 * missing, NaN, or b is not positive has no ratio).
 */
void bench_est_ratio(const double *a, const double *b, size_t nv, int planned,
		     enum bench_ci_method m, struct bench_est *e);
/* The method's name for tables and JSON: "t" or "bootstrap". */
const char *bench_ci_name(enum bench_ci_method m);
/* Set a row's ratio, interval and ci_n from an estimate (ratio = e->value:
 * say in the row's note or the table's that it is the per-round figure). */
void bench_row_est(struct bench_row *row, const struct bench_est *e);
/* A timing target: e->value <op> goal, op one of "<=", ">=", "<", ">". */
void bench_target_est(struct bench_ctx *c, const char *what, const struct bench_est *e,
		      const char *op, double goal);
/* A target that is not a timing, its figure the worst over every run, all
 * runs complete. */
void bench_target_exact(struct bench_ctx *c, const char *what, double value,
			const char *op, double goal);
/* The same over runs of runs planned (fewer: "baseline incomplete"). */
void bench_target_exact_runs(struct bench_ctx *c, const char *what, double value,
			     const char *op, double goal, int runs, int planned);
/* A target that cannot be judged here, for a stated reason: "no verdict:
 * <reason>" (e.g. "no protection keys"). */
void bench_target_none(struct bench_ctx *c, const char *what, const char *reason);
/*
 * A 95% interval of median(a) / median(b) by bootstrap, resampling each
 * side (deterministic seed): a row's interval where its rounds are not
 * paired.  Returns 0, or -EINVAL (fewer than 2 each).
 */
int bench_ratio_ci(const double *a, size_t na, const double *b, size_t nb,
		   double *lo, double *hi);
/*
 * A 95% interval of the median of v[0..n) by percentile bootstrap,
 * deterministic seed.  Returns 0, or -EINVAL (n < 2).  With n < 5 this is
 * close to min..max: pass n as the row's ci_n.
 */
int bench_median_ci(const double *v, size_t n, double *lo, double *hi);
/*
 * A variant (or the whole experiment) failed: it is reported under the
 * table, kept in the JSON ("failures"), leaves every target of the table
 * without a verdict and makes bypass-bench exit 1.  Wrong results (lost
 * data, wrong ranks, a call that returned the wrong thing, an engine
 * error) are failures.  Called while no table is open, the failure goes to
 * the next table the module begins (or a table of its own).  A variant
 * that cannot run here for a stated reason is not a failure: use
 * bench_note (a row) or bench_skip (the experiment).
 */
void bench_fail(struct bench_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * A wrong result seen inside a sample, where bench_fail cannot be called
 * yet: the first one is kept in buf ("" while there is none; later ones are
 * dropped) for the experiment to pass to bench_fail after the sample.  Cold
 * and out of line, so a check on a timed path costs a branch.
 */
void bench_first_error(char *buf, size_t len, const char *fmt, ...)
	__attribute__((cold, noinline, format(printf, 3, 4)));
/*
 * A fact about the run that changes its figures (provenance), kept in the
 * JSON's "provenance" object and printed by tools/report.py; e.g. the pager
 * experiment's bench_fact(c, "swap_o_direct", "true").  The value is a
 * string (copied); a second call with the same key replaces it.
 */
void bench_fact(struct bench_ctx *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print the table of the current experiment. */
void bench_end(struct bench_ctx *c);
/* The experiment could not run here: say why (kept in the JSON). */
void bench_skip(struct bench_ctx *c, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Rounds, and how quiet the machine was while they ran (bench/quiet.c).
 * Every experiment runs its alternation rounds through bench_round():
 *
 *	struct bench_rounds rr;
 *	int r;
 *	bench_rounds_init(c, &rr, rounds, 0);
 *	while (bench_round(c, &rr, &r))
 *		... run round r of every row, storing its samples at round r's
 *		    place (not appended: a rerun round overwrites them) ...
 *
 * Around each round the harness reads the CPU time the rest of the machine
 * used (/proc/stat minus this process and its descendants, kernel threads
 * aside, steal included) and the load average.  The counters tick 100
 * times a second (USER_HZ), so a span's "other" figure is exact only to a
 * few ticks: the floor is BENCH_QUIET_FLOOR_TICKS (4), and a span is judged
 * only when 10% of a CPU over it is at least the floor, i.e. when it lasts
 * at least floor / (--disturbed-at x 100) = 0.4 s.  Then the rule is the
 * plain one: a span in which other processes took more than --disturbed-at
 * of a CPU (0.10) is disturbed.
 *
 * A round of 0.4 s or more is judged alone: when disturbed it is run again,
 * up to --reruns times (2; and no more reruns in all than half the rounds,
 * at least one).  Shorter rounds are judged together at bench_end: their
 * other ticks summed over their summed length (and where they last under
 * 0.4 s in all, the table's whole span, from the previous table's end to
 * this one's, in their place); a short round is never run again.  A
 * table whose judged window is still under 0.4 s cannot be judged: its
 * timing targets read "not resolved: too short to judge quiet".  If a
 * round (or the short rounds together) stays disturbed, the table's timing
 * targets read "not resolved: disturbed" with the figure shown.  The first
 * `warm` rounds (warm-up, not recorded) are not checked.  Leaving the loop
 * early (break, a failure) is allowed.  Each table's header says how quiet
 * its rounds were.  --param plant=disturbed counts every span as disturbed
 * (as if another process took a whole CPU): tests/<module>/bench-plant.sh.
 */
#define BENCH_QUIET_FLOOR_TICKS 4.0
struct bench_snap {
	double wall, load1;
	uint64_t busy, steal, own, kthreads; /* clock ticks */
	bool ok;
};
struct bench_rounds {
	int n, warm, r, tries, reruns;
	bool open;
	struct bench_snap start;
};
void bench_rounds_init(struct bench_ctx *c, struct bench_rounds *rr, int n, int warm);
bool bench_round(struct bench_ctx *c, struct bench_rounds *rr, int *r);
/* The next table's figures come from the rounds of the table just ended
 * (two tables of one run): it gets the same quiet record, and every
 * failure of either table (those recorded later too) leaves the targets of
 * both without a verdict. */
void bench_same_runs(struct bench_ctx *c);

/*
 * The quick suite's time budget.  `make bench` (bypass-bench all --quick) must
 * finish within 300 s on the project's 2-vCPU VM when nothing else runs
 * (issue 24; ../shared/BENCHMARKING.md, item 6).  Each module's share,
 * every table and its setup included (each table prints its seconds on its
 * "quiet:" line; the JSON keeps them as "seconds"):
 *
 *	notify   20 s   (pingpong: 6 rounds, the sleeping rows 1/5 of the round
 *	                 trips, those no target reads 1/20)
 *	batch    70 s   (servers: the two rows each target compares; Redis 8k and
 *	                 50k requests; batch.sends 60 samples a round)
 *	         + 32 s (batch.nginx-close and batch.nginx-idle: without and with
 *	                 the preload, 5 rounds of 1 s each; 15.2 and 16.0 s in
 *	                 the quiet window at 090b10f, whose quick run took 238 s;
 *	                 15.2 and 16.1 of 253 s at e0cac6a)
 *	syslet   20 s
 *	ipc      35 s   + 20 s for the library mode rows (ipc engineer)
 *	pager   165 s   in all (pager.unmodified with real programs 95 s of it;
 *	                 pager.sockcost 2 s: 2,000 pairs of each kind, 5 rounds)
 *	margin   45 s   (a disturbed round is run again: reruns come out of it)
 *
 * This session's target is 250 s, 50 s below the promise: the quiet quick run
 * at 0ac909d took 283 s (notify 17, batch 40, syslet 5, ipc 39, pager 182:
 * unmodified 95, throughput 26, prefetch 22, pagerank 14, latency 10,
 * swapin 9); the quick sizes were cut where the rows keep their unit and
 * their targets' intervals stay narrow: ipc.oneway 40,000 messages (was
 * 100,000), notify.pingpong a quarter of the sleeping rows' round trips
 * for the five no target reads, pager.latency 2,048
 * faults a thread (4,096) and 300 swap-ins (500), pagerank 3 iterations (5),
 * pager.throughput's untimed read-back of the Linux sides in the first
 * round only (it checks the kernel; bypass's is checked every run).
 *
 * Where it stood (f60d805 + the cuts of the commit that wrote these lines),
 * `nice -n -20 bypass-bench all --quick` on the VM at load 10-14 (other
 * engineers' builds; the spinning experiments suffer most there, the rest
 * is an upper bound): 768 s in all; notify 87 s, batch 86, syslet 20, ipc
 * 357 (ipc.oneway 275: two spinning sides pinned beside builds), pager 217:
 * latency tables 29, throughput 38, unmodified 87 (4 programs), prefetch
 * 44 (3 rounds then), pagerank 19.  The lead's quiet quick run before
 * issue 24 took 825 s with the pager at 9 minutes; re-measure in a quiet
 * window: each table's seconds are on its quiet: line.
 *
 * A change that adds rows to the quick suite takes their time from its
 * module's share (smaller counts, fewer rows in --quick) or changes this
 * table in the same commit with a timing run that shows the total fits.
 * The full suite (make bench-full, bypass bench --full) keeps the source
 * documents' sizes and is not bound by this.
 */
/* Run parameters. */
bool bench_quick(const struct bench_ctx *c);
bool bench_smoke(const struct bench_ctx *c); /* CI: tiny sizes, proves it runs */
int bench_rounds(const struct bench_ctx *c); /* alternation rounds (>= 1) */
/* An experiment's own round count, quick or full, unless --rounds was given
 * (then that; --smoke: bench_rounds). */
int bench_rounds_or(const struct bench_ctx *c, int quick, int full);
/*
 * The iteration count for a source figure: full, or full/10 with --quick,
 * or a tiny count with --smoke; --param name=N overrides.
 */
uint64_t bench_count(struct bench_ctx *c, const char *name, uint64_t full,
		     uint64_t quick);
/*
 * A planted failure, for the tests of the failure paths: true when
 * --param plant=<id>[,<id>...] names this experiment id.  The experiment
 * then makes one of its correctness checks fail where the real failure
 * would be caught (a wrong result, lost data, a base row that fails), and
 * the run must end with the failure in the JSON, no target met and exit
 * status 1 (tests/<module>/bench-plant.sh).
 */
bool bench_planted(const struct bench_ctx *c, const char *id);
/* A --param name=value string, or def. */
const char *bench_param(const struct bench_ctx *c, const char *name, const char *def);
/* The two CPUs to pin the sides of a cross-core experiment to. */
void bench_cpus(const struct bench_ctx *c, int *a, int *b);
int bench_ncpus(void);
/* The CPUs the run could use when it started (before any pinning). */
int bench_run_cpus(const struct bench_ctx *c);

/* Helpers. */
int bench_pin(int cpu);                   /* pin the calling thread */
double bench_cycles_to_ns(double cycles); /* via the calibrated TSC */
/*
 * The physical limit of every cross-core experiment (bench/cacheline.c, one
 * routine for every module): iters round trips of a cache line between CPU
 * cpu_a (the caller's thread, pinned for the call) and cpu_b (a responder
 * thread), each round trip's TSC cycles stored in out[].  Each side writes a
 * sequence number into its own line (shared memory, each line in its own
 * page, as a doorbell is) and spins with `pause` reading the other's.
 * bench_cacheline_warmup(iters) round trips run first and are not recorded.
 * Returns 0 or -errno (out[] untouched).  Summarize out[] exactly like the
 * rows it bounds (same trimming, same statistic); call it in every round, in
 * the rotation with those rows (bench_order).
 */
int bench_cacheline_rtt(int cpu_a, int cpu_b, uint64_t *out, size_t iters);
size_t bench_cacheline_warmup(size_t iters);
/*
 * The order of an experiment's n rows in alternation round `round`: a
 * rotation, round r starting with row r % n, so that no row always runs
 * first (or right after the same neighbour's disturbance).  order[] gets
 * the n row indices.
 */
void bench_order(int round, size_t n, size_t *order);
/*
 * A stall is a failure, not a hang: bench_watchdog(seconds, what, child)
 * arms a timer; if it expires before bench_watchdog(0, NULL, 0) disarms it,
 * bypass-bench prints "<what> stalled", kills child (a process the
 * experiment started, if > 0) and exits 1 (a failure, for CI).  Give a
 * generous limit: on a loaded 2-CPU machine a spinning side pinned beside
 * a build may wait a scheduler slice (milliseconds) per hand-over.
 */
void bench_watchdog(unsigned seconds, const char *what, pid_t child);
/* Shared anonymous memory that survives fork. */
void *bench_shared_alloc(size_t len);
void bench_shared_free(void *p, size_t len);
/* Path of a file in the build tree (programs the experiments start). */
const char *bench_build_dir(void);
const char *bench_source_dir(void);

#endif
