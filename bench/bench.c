/* SPDX-License-Identifier: MIT */
/* The benchmark harness: summaries, tables, targets, JSON, helpers. */
#include "bench.h"
#include "bench_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- summaries */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static size_t pct_index(size_t n, double p)
{
	size_t i = (size_t)ceil(p * (double)n) - 1;
	return i >= n ? n - 1 : i;
}

/* No samples: every figure NaN (never a median of 0 that meets a "<="
 * target); n stays 0. */
static void summary_none(struct bench_summary *o)
{
	o->n = 0;
	o->median = o->mean = o->p99 = o->min = o->max = NAN;
}

void bench_summarize(uint64_t *v, size_t n, struct bench_summary *o)
{
	memset(o, 0, sizeof(*o));
	if (!n) {
		summary_none(o);
		return;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	long double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	o->n = n;
	o->min = (double)v[0];
	o->max = (double)v[n - 1];
	o->median = n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
	o->p99 = (double)v[pct_index(n, 0.99)];
	o->mean = (double)(sum / n);
}

void bench_summarize_d(double *v, size_t n, struct bench_summary *o)
{
	memset(o, 0, sizeof(*o));
	if (!n) {
		summary_none(o);
		return;
	}
	qsort(v, n, sizeof(*v), cmp_d);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	o->n = n;
	o->min = v[0];
	o->max = v[n - 1];
	o->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	o->p99 = v[pct_index(n, 0.99)];
	o->mean = sum / (double)n;
}

void bench_summarize_finite(const double *v, size_t n, struct bench_summary *out)
{
	double w[256];
	size_t k = 0;
	for (size_t i = 0; i < n && k < 256; i++)
		if (isfinite(v[i]))
			w[k++] = v[i];
	bench_summarize_d(w, k, out);
}

/* ----------------------------------------------------------- experiments */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void add_str(char ***v, size_t *n, char *s)
{
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = s;
}

/* A failure of table e, and of every table that shares its runs (or whose
 * runs it shares). */
static void add_failure(struct bench_ctx *c, struct bench_exp *e, char *s)
{
	add_str(&e->failures, &e->nfailures, s);
	if (e->same_runs)
		add_str(&e->same_runs->failures, &e->same_runs->nfailures, strdup(s));
	for (struct bench_exp *f = c->first; f; f = f->next)
		if (f->same_runs == e && f != e)
			add_str(&f->failures, &f->nfailures, strdup(s));
}

void bench_begin(struct bench_ctx *c, const char *id, const char *title,
		 const char *ratio_base)
{
	struct bench_exp *e = calloc(1, sizeof(*e));
	e->id = xstrdup(id);
	e->title = xstrdup(title);
	e->ratio_base = xstrdup(ratio_base);
	e->next = NULL;
	if (c->last)
		c->last->next = e;
	else
		c->first = e;
	c->last = e;
	c->cur = e;
	fprintf(c->out, "\n== %s: %s\n", id, title);
	fflush(c->out);
	e->since = c->mark_snap;
	/* bench_same_runs: this table's figures come from the last one's runs */
	e->same_runs = c->link;
	c->link = NULL;
	if (e->same_runs)
		for (size_t i = 0; i < e->same_runs->nfailures; i++)
			add_str(&e->failures, &e->nfailures,
				strdup(e->same_runs->failures[i]));
	/* failures reported before any table began belong to this one */
	for (size_t i = 0; i < c->npending; i++)
		add_failure(c, e, c->pending[i]);
	free(c->pending);
	c->pending = NULL;
	c->npending = 0;
	bench_snap_take(&e->begun);
}

void bench_row(struct bench_ctx *c, const struct bench_row *r)
{
	struct bench_exp *e = c->cur;
	if (!e)
		return;
	if (e->nrows == e->caprows) {
		e->caprows = e->caprows ? 2 * e->caprows : 16;
		e->rows = realloc(e->rows, e->caprows * sizeof(*e->rows));
	}
	struct bench_row *d = &e->rows[e->nrows++];
	*d = *r;
	d->variant = xstrdup(r->variant);
	d->kind = xstrdup(r->kind);
	d->unit = xstrdup(r->unit);
	d->source = xstrdup(r->source);
	d->note = xstrdup(r->note);
	d->params = xstrdup(r->params);
}

void bench_note(struct bench_ctx *c, const char *fmt, ...)
{
	if (!c->cur)
		return;
	char *s;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		add_str(&c->cur->notes, &c->cur->nnotes, s);
}

void bench_first_error(char *buf, size_t len, const char *fmt, ...)
{
	if (!len || buf[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

void bench_fail(struct bench_ctx *c, const char *fmt, ...)
{
	char *s;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		s = strdup("(no reason)");
	c->nfailed++;
	if (c->cur) {
		add_failure(c, c->cur, s);
		return;
	}
	/* No table open: it belongs to the next table this module begins (or,
	 * none, to a table of its own: bench_flush_failures). */
	fprintf(c->out, "   FAILED: %s\n", s);
	fflush(c->out);
	add_str(&c->pending, &c->npending, s);
}

void bench_flush_failures(struct bench_ctx *c, const char *module)
{
	if (!c->npending)
		return;
	char id[96];
	snprintf(id, sizeof(id), "%s", module);
	bench_begin(c, id, "failed before its table", NULL);
	bench_end(c);
}

void bench_fact(struct bench_ctx *c, const char *key, const char *fmt, ...)
{
	char *s;
	va_list ap;
	va_start(ap, fmt);
	int n_ = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n_ < 0)
		return;
	for (size_t i = 0; i < c->nfacts; i++)
		if (!strcmp(c->fact_keys[i], key)) {
			free(c->fact_vals[i]);
			c->fact_vals[i] = s;
			return;
		}
	size_t n = c->nfacts;
	add_str(&c->fact_keys, &c->nfacts, strdup(key));
	add_str(&c->fact_vals, &n, s);
}

void bench_skip(struct bench_ctx *c, const char *id, const char *fmt, ...)
{
	char *s;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!c->cur || strcmp(c->cur->id, id))
		bench_begin(c, id, "skipped", NULL);
	c->cur->skipped = s ? s : strdup("(no reason)");
	memset(&c->pend, 0, sizeof(c->pend));
	c->cur->seconds = c->mark > 0 ? now_s() - c->mark : NAN;
	c->mark = now_s();
	bench_snap_take(&c->mark_snap);
	c->link = NULL;
	fprintf(c->out, "   SKIPPED: %s\n", c->cur->skipped);
	fflush(c->out);
	c->cur = NULL;
}

static void fmt_num(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (fabs(v) >= 1e7)
		snprintf(buf, len, "%.3g", v);
	else if (fabs(v) >= 100)
		snprintf(buf, len, "%.0f", v);
	else if (fabs(v) >= 10)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.2f", v);
}

/* A ratio: two decimals, or three significant digits below 0.1 (0.0035x,
 * not 0.00x). */
static void fmt_ratio(char *buf, size_t len, double v)
{
	if (fabs(v) >= 0.1 || v == 0 || isnan(v))
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3g", v);
}

bool bench_row_is_rate(const struct bench_row *r)
{
	size_t n = r->unit ? strlen(r->unit) : 0;
	return r->higher_is_better || (n >= 2 && !strcmp(r->unit + n - 2, "/s"));
}

const char *bench_ratio_rule(const struct bench_exp *e)
{
	bool time = false, rate = false;
	for (size_t i = 0; i < e->nrows; i++) {
		if (isnan(e->rows[i].ratio))
			continue;
		if (bench_row_is_rate(&e->rows[i]))
			rate = true;
		else
			time = true;
	}
	if (time && rate)
		return "x baseline time, lower is better (time rows); "
		       "x baseline rate, higher is better (rate rows)";
	if (rate)
		return "x baseline rate, higher is better";
	if (time)
		return "x baseline time, lower is better";
	return NULL;
}

/* One place for the ratio: row median / base row median. */
static void compute_ratios(struct bench_exp *e)
{
	const struct bench_row *base = NULL;
	for (size_t i = 0; i < e->nrows; i++)
		if (e->rows[i].is_base) {
			base = &e->rows[i];
			break;
		}
	if (!base)
		return;
	double b = base->s.median;
	for (size_t i = 0; i < e->nrows; i++) {
		struct bench_row *r = &e->rows[i];
		if (r->ratio == 0 || r == base)
			r->ratio = b > 0 && r->s.n ? r->s.median / b : NAN;
	}
}

void bench_print_table(FILE *out, const struct bench_exp *e)
{
	if (!e->nrows)
		return;
	bool any_cycles = false, any_src = false, any_ratio = false, any_note = false;
	size_t w = strlen("variant");
	for (size_t i = 0; i < e->nrows; i++) {
		const struct bench_row *r = &e->rows[i];
		if (r->unit && !strcmp(r->unit, "cycles"))
			any_cycles = true;
		if (r->source)
			any_src = true;
		if (r->note)
			any_note = true;
		if (!isnan(r->ratio))
			any_ratio = true;
		if (strlen(r->variant) > w)
			w = strlen(r->variant);
	}
	fprintf(out, "%-*s | %-8s | %10s | %10s | %10s |", (int)w, "variant", "kind",
		"median", "mean", "p99");
	if (any_cycles)
		fprintf(out, " %9s | %9s |", "median ns", "p99 ns");
	fprintf(out, " %-10s |", "unit");
	if (any_ratio)
		fprintf(out, " %8s |", "ratio");
	if (any_src)
		fprintf(out, " %-10s |", "source");
	if (any_note)
		fprintf(out, " note");
	fprintf(out, "\n");
	for (size_t i = 0; i < e->nrows; i++) {
		const struct bench_row *r = &e->rows[i];
		char m[32], a[32], p[32], mn[32], pn[32], ra[96];
		fmt_num(m, sizeof(m), r->s.median);
		fmt_num(a, sizeof(a), r->s.mean);
		fmt_num(p, sizeof(p), r->s.p99);
		fprintf(out, "%-*s | %-8s | %10s | %10s | %10s |", (int)w, r->variant,
			r->kind ? r->kind : "", m, a, p);
		if (any_cycles) {
			bool cyc = r->unit && !strcmp(r->unit, "cycles");
			fmt_num(mn, sizeof(mn), cyc ? bench_cycles_to_ns(r->s.median) : NAN);
			fmt_num(pn, sizeof(pn), cyc ? bench_cycles_to_ns(r->s.p99) : NAN);
			fprintf(out, " %9s | %9s |", mn, pn);
		}
		fprintf(out, " %-10s |", r->unit ? r->unit : "");
		if (any_ratio) {
			char x[3][24];
			fmt_ratio(x[0], sizeof(x[0]), r->ratio);
			fmt_ratio(x[1], sizeof(x[1]), r->ci_lo);
			fmt_ratio(x[2], sizeof(x[2]), r->ci_hi);
			if (isnan(r->ratio))
				snprintf(ra, sizeof(ra), "-");
			else if ((r->ci_lo != 0 || r->ci_hi != 0) && r->ci_n > 0 &&
				 r->ci_n < BENCH_MIN_ROUNDS)
				snprintf(ra, sizeof(ra), "%sx (range of %d: %s-%s)", x[0], r->ci_n,
					 x[1], x[2]);
			else if (r->ci_lo != 0 || r->ci_hi != 0)
				snprintf(ra, sizeof(ra), "%sx [%s, %s]", x[0], x[1], x[2]);
			else
				snprintf(ra, sizeof(ra), "%sx", x[0]);
			fprintf(out, " %8s |", ra);
		}
		if (any_src)
			fprintf(out, " %-10s |", r->source ? r->source : "");
		if (any_note && r->note)
			fprintf(out, " %s", r->note);
		fprintf(out, "\n");
	}
}

void bench_same_runs(struct bench_ctx *c)
{
	c->pend = c->prev;
	c->link = c->last;
}

void bench_end(struct bench_ctx *c)
{
	struct bench_exp *e = c->cur;
	if (!e)
		return;
	compute_ratios(e);
	/* how quiet: its rounds, or (none went through bench_round) the
	 * whole table as one span */
	if (c->pend.spans) {
		e->quiet = c->pend;
		/* its short rounds together (a shared record is judged once) */
		if (!e->same_runs)
			bench_quiet_pool(c, &e->quiet, &e->since);
	} else {
		/* no rounds through bench_round: the table's span as one round
		 * (from the previous table's end where that is longer) */
		struct bench_snap now;
		double frac;
		bench_snap_take(&now);
		memset(&e->quiet, 0, sizeof(e->quiet));
		const struct bench_snap *from = e->since.ok ? &e->since : &e->begun;
		bool d = bench_quiet_add(c, &e->quiet, from, &now, &frac);
		e->quiet.rounds = e->quiet.spans;
		e->quiet.disturbed = d && e->quiet.spans;
		if (e->quiet.spans && now.wall - from->wall >= bench_quiet_min_s(c)) {
			e->quiet.judged_alone = 1;
		} else if (e->quiet.spans) { /* shorter than a judged span */
			e->quiet.short_rounds = 1;
			e->quiet.short_wall = e->quiet.pool_wall = now.wall - from->wall;
			e->quiet.too_short = true;
		}
	}
	memset(&c->pend, 0, sizeof(c->pend));
	c->prev = e->quiet;
	e->seconds = c->mark > 0 ? now_s() - c->mark : NAN;
	c->mark = now_s();
	bench_snap_take(&c->mark_snap);
	bench_judge(c, e);
	const char *rule = bench_ratio_rule(e);
	bool per_round = false;
	for (size_t i = 0; i < e->nrows; i++)
		per_round |= e->rows[i].ci_n > 0;
	if (e->ratio_base || rule)
		fprintf(c->out, "ratio = row median / median of %s: %s%s\n",
			e->ratio_base ? e->ratio_base : "the base row",
			rule ? rule : "(no ratios)",
			per_round ? "; a ratio with an interval: the per-round ratio's estimate "
				    "(see the notes) and its 95% interval, or the range of fewer "
				    "than 5 rounds" : "");
	char q[900];
	bench_quiet_line(q, sizeof(q), c, &e->quiet);
	fprintf(c->out, "quiet: %s (%.0f s)\n", q, e->seconds);
	bench_print_table(c->out, e);
	for (size_t i = 0; i < e->nnotes; i++)
		fprintf(c->out, "  * %s\n", e->notes[i]);
	for (size_t i = 0; i < e->nfailures; i++)
		fprintf(c->out, "  FAILED: %s\n", e->failures[i]);
	for (size_t i = 0; i < e->ntargets; i++) {
		char line[1200];
		bench_target_line(line, sizeof(line), &e->targets[i]);
		fprintf(c->out, "  target: %s\n", line);
	}
	fflush(c->out);
	c->cur = NULL;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void bench_free(struct bench_ctx *c)
{
	struct bench_exp *e = c->first;
	while (e) {
		struct bench_exp *next = e->next;
		for (size_t i = 0; i < e->nrows; i++) {
			struct bench_row *r = &e->rows[i];
			free((char *)r->variant);
			free((char *)r->kind);
			free((char *)r->unit);
			free((char *)r->source);
			free((char *)r->note);
			free((char *)r->params);
		}
		free(e->rows);
		free_strs(e->notes, e->nnotes);
		free_strs(e->failures, e->nfailures);
		for (size_t i = 0; i < e->ntargets; i++) {
			free(e->targets[i].what);
			free(e->targets[i].op);
			free(e->targets[i].why);
		}
		free(e->targets);
		free(e->id);
		free(e->title);
		free(e->ratio_base);
		free(e->skipped);
		free(e);
		e = next;
	}
	c->first = c->last = c->cur = NULL;
	free_strs(c->pending, c->npending);
	c->pending = NULL;
	c->npending = 0;
	free_strs(c->fact_keys, c->nfacts);
	free_strs(c->fact_vals, c->nfacts);
	c->fact_keys = c->fact_vals = NULL;
	c->nfacts = 0;
}

/* ------------------------------------------------------------ parameters */

bool bench_quick(const struct bench_ctx *c)
{
	return c->quick;
}

bool bench_smoke(const struct bench_ctx *c)
{
	return c->smoke;
}

int bench_rounds(const struct bench_ctx *c)
{
	return c->rounds;
}

int bench_rounds_or(const struct bench_ctx *c, int quick, int full)
{
	if (c->rounds_set || c->smoke)
		return c->rounds;
	return c->quick ? quick : full;
}

const char *bench_param(const struct bench_ctx *c, const char *name, const char *def)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < c->nparams; i++)
		if (!strncmp(c->params[i], name, n) && c->params[i][n] == '=')
			return c->params[i] + n + 1;
	return def;
}

bool bench_planted(const struct bench_ctx *c, const char *id)
{
	const char *p = bench_param(c, "plant", NULL);
	size_t n = strlen(id);
	while (p && *p) {
		if (!strncmp(p, id, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

uint64_t bench_count(struct bench_ctx *c, const char *name, uint64_t full,
		     uint64_t quick)
{
	const char *p = bench_param(c, name, NULL);
	if (p)
		return strtoull(p, NULL, 0);
	if (c->smoke) {
		uint64_t s = quick / 100;
		return s < 10 ? (quick < 10 ? quick : 10) : s;
	}
	return c->quick ? quick : full;
}

int bench_ncpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

int bench_run_cpus(const struct bench_ctx *c)
{
	return c->ncpus > 0 ? c->ncpus : bench_ncpus();
}

void bench_cpus(const struct bench_ctx *c, int *a, int *b)
{
	*a = c->cpu_a;
	*b = c->cpu_b;
}

int bench_pin(int cpu)
{
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) ? -1 : 0;
}

double bench_cycles_to_ns(double cycles)
{
	uint64_t hz = bypass_tsc_hz();
	return hz ? cycles * 1e9 / (double)hz : NAN;
}

static char wd_what[256];
static volatile pid_t wd_child;

static void wd_fire(int sig)
{
	(void)sig;
	static const char pre[] = "\nbypass-bench: FAILED: ", post[] = " stalled (watchdog)\n";
	ssize_t r = write(2, pre, sizeof(pre) - 1);
	r = write(2, wd_what, strlen(wd_what));
	r = write(2, post, sizeof(post) - 1);
	(void)r;
	if (wd_child > 0) {
		kill(-wd_child, SIGKILL); /* its process group, where it leads one */
		kill(wd_child, SIGKILL);
	}
	_exit(1);
}

void bench_watchdog(unsigned seconds, const char *what, pid_t child)
{
	if (!seconds) {
		alarm(0);
		wd_child = 0;
		return;
	}
	snprintf(wd_what, sizeof(wd_what), "%s", what ? what : "an experiment");
	wd_child = child;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wd_fire;
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

void *bench_shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void bench_shared_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

const char *bench_build_dir(void)
{
	const char *e = getenv("BYPASS_BUILD");
	return e && *e ? e : BYPASS_BUILD_DIR;
}

const char *bench_source_dir(void)
{
	const char *e = getenv("BYPASS_SOURCE");
	return e && *e ? e : BYPASS_SOURCE_DIR;
}

/* ------------------------------------------------------- row rotation */

void bench_order(int round, size_t n, size_t *order)
{
	size_t start = n ? (size_t)(round < 0 ? -round : round) % n : 0;
	for (size_t i = 0; i < n; i++)
		order[i] = (start + i) % n;
}
