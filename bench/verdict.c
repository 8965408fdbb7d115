/* SPDX-License-Identifier: MIT */
/*
 * Targets and their verdicts: per-round estimates (a t or percentile
 * bootstrap interval of the per-round figure), the order in which a
 * verdict is given, and a target's printed line.  bench.h, "Targets and
 * their verdicts", says what each verdict means.
 */
#include "bench.h"
#include "bench_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct bench_tgt *add_target(struct bench_ctx *c, const char *what, double value,
				     const char *op, double goal)
{
	struct bench_exp *e = c->cur;
	if (!e)
		return NULL;
	bool met = false;
	if (!strcmp(op, "<="))
		met = value <= goal;
	else if (!strcmp(op, ">="))
		met = value >= goal;
	else if (!strcmp(op, "<"))
		met = value < goal;
	else if (!strcmp(op, ">"))
		met = value > goal;
	e->targets = realloc(e->targets, (e->ntargets + 1) * sizeof(*e->targets));
	struct bench_tgt *t = &e->targets[e->ntargets++];
	memset(t, 0, sizeof(*t));
	t->what = strdup(what);
	t->op = strdup(op);
	t->value = value;
	t->goal = goal;
	t->method = -1;
	t->met = met && isfinite(value);
	t->verdict = t->met ? BV_MET : BV_NOT_MET;
	return t;
}

void bench_target_est(struct bench_ctx *c, const char *what, const struct bench_est *est,
		      const char *op, double goal)
{
	struct bench_tgt *t = add_target(c, what, est->value, op, goal);
	if (!t)
		return;
	t->ci_lo = est->lo;
	t->ci_hi = est->hi;
	t->n = est->n;
	t->planned = est->planned;
	t->method = (int)est->method;
}

void bench_target_exact_runs(struct bench_ctx *c, const char *what, double value,
			     const char *op, double goal, int runs, int planned)
{
	struct bench_tgt *t = add_target(c, what, value, op, goal);
	if (t) {
		t->exact = true;
		t->n = runs;
		t->planned = planned;
	}
}

void bench_target_exact(struct bench_ctx *c, const char *what, double value,
			const char *op, double goal)
{
	bench_target_exact_runs(c, what, value, op, goal, 1, 1);
}

void bench_target_none(struct bench_ctx *c, const char *what, const char *reason)
{
	struct bench_tgt *t = add_target(c, what, NAN, "-", NAN);
	if (t) {
		t->why = strdup(reason ? reason : "not measured here");
		t->verdict = BV_NONE;
	}
}

const char *bench_verdict_str(enum bench_verdict v)
{
	switch (v) {
	case BV_MET: return "met";
	case BV_NOT_MET: return "not met";
	case BV_UNRESOLVED: return "not resolved";
	case BV_FEW_ROUNDS: return "not resolved: fewer than 5 rounds";
	case BV_DISTURBED: return "not resolved: disturbed";
	case BV_TOO_SHORT: return "not resolved: too short to judge quiet";
	case BV_INCOMPLETE: return "not resolved: baseline incomplete";
	case BV_FAILED: return "no verdict: failed";
	case BV_NO_FIGURE: return "no verdict: no figure";
	case BV_NONE: return "no verdict";
	}
	return "?";
}

const char *bench_tgt_verdict(const struct bench_tgt *t, char *buf, size_t len)
{
	if (t->verdict == BV_NONE && t->why) {
		snprintf(buf, len, "no verdict: %s", t->why);
		return buf;
	}
	return bench_verdict_str(t->verdict);
}

static bool exp_failed(const struct bench_exp *e)
{
	return e->nfailures || (e->same_runs && e->same_runs->nfailures);
}

void bench_judge(const struct bench_ctx *c, struct bench_exp *e)
{
	(void)c;
	const struct bench_quiet *q = &e->quiet;
	bool disturbed = q->disturbed || q->pool_disturbed;
	for (size_t i = 0; i < e->ntargets; i++) {
		struct bench_tgt *t = &e->targets[i];
		bool ci = !t->exact && (t->ci_lo != 0 || t->ci_hi != 0);
		if (exp_failed(e))
			t->verdict = BV_FAILED; /* a failed variant decides nothing */
		else if (t->why)
			t->verdict = BV_NONE;
		else if (t->n < t->planned)
			t->verdict = BV_INCOMPLETE;
		else if (!isfinite(t->value) || (ci && !(isfinite(t->ci_lo) && isfinite(t->ci_hi))))
			t->verdict = BV_NO_FIGURE;
		else if (t->exact)
			t->verdict = t->met ? BV_MET : BV_NOT_MET; /* every run, never disturbed */
		else if (t->n < BENCH_MIN_ROUNDS)
			t->verdict = BV_FEW_ROUNDS;
		else if (disturbed)
			t->verdict = BV_DISTURBED;
		else if (q->too_short)
			t->verdict = BV_TOO_SHORT;
		else if (ci && t->ci_lo <= t->goal && t->goal <= t->ci_hi)
			t->verdict = BV_UNRESOLVED;
		else
			t->verdict = t->met ? BV_MET : BV_NOT_MET;
	}
}

/* A small deterministic generator (xorshift64*) for the bootstrap. */
static uint64_t ci_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1Dull;
}

static double median_d(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_ratio_ci(const double *a, size_t na, const double *b, size_t nb,
		   double *lo, double *hi)
{
	enum { RESAMPLES = 2000 };
	if (na < 2 || nb < 2 || !lo || !hi)
		return -EINVAL;
	double *ra = malloc(na * sizeof(double)), *rb = malloc(nb * sizeof(double));
	double *q = malloc(RESAMPLES * sizeof(double));
	if (!ra || !rb || !q) {
		free(ra);
		free(rb);
		free(q);
		return -ENOMEM;
	}
	uint64_t x = 0x9E3779B97F4A7C15ull;
	size_t nq = 0;
	for (int k = 0; k < RESAMPLES; k++) {
		for (size_t i = 0; i < na; i++)
			ra[i] = a[ci_next(&x) % na];
		for (size_t i = 0; i < nb; i++)
			rb[i] = b[ci_next(&x) % nb];
		double mb = median_d(rb, nb);
		if (mb != 0)
			q[nq++] = median_d(ra, na) / mb;
	}
	int r = -EINVAL;
	if (nq >= 2) {
		qsort(q, nq, sizeof(*q), cmp_d);
		*lo = q[(size_t)(0.025 * (double)(nq - 1))];
		*hi = q[(size_t)ceil(0.975 * (double)(nq - 1))];
		r = 0;
	}
	free(ra);
	free(rb);
	free(q);
	return r;
}

int bench_median_ci(const double *v, size_t n, double *lo, double *hi)
{
	enum { RESAMPLES = 2000 };
	if (n < 2 || !lo || !hi)
		return -EINVAL;
	double *r = malloc(n * sizeof(double)), *q = malloc(RESAMPLES * sizeof(double));
	if (!r || !q) {
		free(r);
		free(q);
		return -ENOMEM;
	}
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int k = 0; k < RESAMPLES; k++) {
		for (size_t i = 0; i < n; i++)
			r[i] = v[ci_next(&x) % n];
		q[k] = median_d(r, n);
	}
	qsort(q, RESAMPLES, sizeof(*q), cmp_d);
	*lo = q[(size_t)(0.025 * (RESAMPLES - 1))];
	*hi = q[(size_t)ceil(0.975 * (RESAMPLES - 1))];
	free(r);
	free(q);
	return 0;
}

/* Student's t, two-sided 95% (0.975 quantile), by degrees of freedom. */
static double t975(int df)
{
	static const double t[] = { 0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
				    2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
				    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
				    2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042 };
	if (df < 1)
		return NAN;
	if (df <= 30)
		return t[df];
	return df <= 60 ? 2.000 : df <= 120 ? 1.980 : 1.960;
}

const char *bench_ci_name(enum bench_ci_method m)
{
	return m == BENCH_CI_BOOT ? "bootstrap" : "t";
}

void bench_est_of(const double *v, size_t nv, int planned, enum bench_ci_method m,
		  struct bench_est *e)
{
	memset(e, 0, sizeof(*e));
	e->method = m;
	e->planned = planned > 0 ? planned : (int)nv;
	e->value = e->lo = e->hi = NAN;
	double *x = malloc((nv ? nv : 1) * sizeof(double));
	if (!x)
		return;
	size_t n = 0;
	for (size_t i = 0; i < nv; i++)
		if (isfinite(v[i]))
			x[n++] = v[i];
	e->n = (int)n;
	if (!n) {
		free(x);
		return;
	}
	double sum = 0, mn = x[0], mx = x[0];
	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		mn = x[i] < mn ? x[i] : mn;
		mx = x[i] > mx ? x[i] : mx;
	}
	double mean = sum / (double)n;
	e->value = m == BENCH_CI_BOOT ? median_d(x, n) : mean;
	if (n < BENCH_MIN_ROUNDS) { /* no 95% interval from so few: the range */
		e->lo = mn;
		e->hi = mx;
	} else if (m == BENCH_CI_BOOT) {
		bench_median_ci(x, n, &e->lo, &e->hi);
	} else {
		double ss = 0;
		for (size_t i = 0; i < n; i++)
			ss += (x[i] - mean) * (x[i] - mean);
		double half = t975((int)n - 1) * sqrt(ss / (double)(n - 1)) / sqrt((double)n);
		e->lo = mean - half;
		e->hi = mean + half;
	}
	if (e->lo == 0 && e->hi == 0) /* 0, 0 reads as "no interval" */
		e->hi = 1e-300;
	free(x);
}

void bench_est_ratio(const double *a, const double *b, size_t nv, int planned,
		     enum bench_ci_method m, struct bench_est *e)
{
	double *r = malloc((nv ? nv : 1) * sizeof(double));
	if (!r) {
		bench_est_of(NULL, 0, planned, m, e);
		return;
	}
	for (size_t i = 0; i < nv; i++)
		r[i] = isfinite(a[i]) && isfinite(b[i]) && b[i] > 0 ? a[i] / b[i] : NAN;
	bench_est_of(r, nv, planned, m, e);
	free(r);
}

void bench_row_est(struct bench_row *row, const struct bench_est *e)
{
	row->ratio = isfinite(e->value) ? e->value : NAN;
	row->ci_lo = e->lo;
	row->ci_hi = e->hi;
	row->ci_n = e->n;
	row->ci_method = e->method;
	if (!isfinite(e->lo) || !isfinite(e->hi))
		row->ci_lo = row->ci_hi = 0;
}

/* A target's line: the figure, its interval or range with the method and
 * rounds, the goal and the verdict. */
void bench_target_line(char *buf, size_t len, const struct bench_tgt *t)
{
	char vb[200];
	const char *v = bench_tgt_verdict(t, vb, sizeof(vb));
	if (t->verdict == BV_NONE) {
		snprintf(buf, len, "%s: %s", t->what, v);
		return;
	}
	int n = snprintf(buf, len, "%s: %.3g", t->what, t->value);
	size_t k = n > 0 && (size_t)n < len ? (size_t)n : len;
	if (!t->exact && (t->ci_lo != 0 || t->ci_hi != 0)) {
		if (t->n < BENCH_MIN_ROUNDS)
			n = snprintf(buf + k, len - k, " (range of %d round%s: %.3g..%.3g)", t->n,
				     t->n == 1 ? "" : "s", t->ci_lo, t->ci_hi);
		else
			n = snprintf(buf + k, len - k, " (95%% CI, %s, %d rounds: %.3g..%.3g)",
				     bench_ci_name((enum bench_ci_method)t->method), t->n,
				     t->ci_lo, t->ci_hi);
		k += n > 0 && k + (size_t)n < len ? (size_t)n : len - k;
	} else if (t->exact && t->planned > 1) {
		n = snprintf(buf + k, len - k, " (worst of %d run%s)", t->n, t->n == 1 ? "" : "s");
		k += n > 0 && k + (size_t)n < len ? (size_t)n : len - k;
	}
	snprintf(buf + k, len - k, " %s %.3g: %s", t->op, t->goal,
		 t->verdict == BV_MET ? "MET" : t->verdict == BV_NOT_MET ? "NOT MET" : v);
}
