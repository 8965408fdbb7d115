/* SPDX-License-Identifier: MIT */
/*
 * How quiet the machine was: the CPU time the rest of the machine used while
 * a round ran, and the rounds bench_round() runs again when it was too much.
 *
 * Per snapshot: /proc/stat's busy ticks of all CPUs (user, nice, system,
 * irq, softirq, steal), the CPU time of this process and of every process
 * descended from it (utime + stime + the reaped children's cutime + cstime,
 * from /proc/<pid>/stat), the time of kernel threads (the experiments' own
 * write-back and swap I/O runs there; not counted against the round), and
 * the load average.  "Other" CPU time in a round = busy - ours - kernel
 * threads: processes that are not the bench's, the ones that started and
 * ended inside the round included, plus the time the hypervisor stole.
 * The ticks are sampled (USER_HZ), so a span is judged only when it is long
 * enough for --disturbed-at (0.10) of a CPU to reach a floor of a few
 * ticks (BENCH_QUIET_FLOOR_TICKS: 0.4 s at 10%); shorter rounds are judged
 * together over the table (bench_quiet_pool).  See bench.h.
 */
#include "bench.h"
#include "bench_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PF_KTHREAD_FLAG 0x00200000u

struct proc_ent {
	int pid, ppid;
	bool kthread;
	uint64_t ticks; /* utime + stime + cutime + cstime */
};

static bool read_stat(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return n > 0;
}

/* /proc/<pid>/stat: the fields after the command name (which may hold
 * spaces and parentheses). */
static bool parse_proc(int pid, struct proc_ent *e)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!read_stat(path, buf, sizeof(buf)))
		return false;
	char *p = strrchr(buf, ')');
	if (!p)
		return false;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime */
	char state;
	int ppid, pgrp, sess, tty, tpgid;
	unsigned flags;
	unsigned long minflt, cminflt, majflt, cmajflt, ut, st;
	long cut, cst;
	if (sscanf(p + 1, " %c %d %d %d %d %d %u %lu %lu %lu %lu %lu %lu %ld %ld", &state, &ppid,
		   &pgrp, &sess, &tty, &tpgid, &flags, &minflt, &cminflt, &majflt, &cmajflt, &ut,
		   &st, &cut, &cst) != 15)
		return false;
	e->pid = pid;
	e->ppid = ppid;
	e->kthread = (flags & PF_KTHREAD_FLAG) || pid == 2 || ppid == 2;
	e->ticks = (uint64_t)ut + st + (uint64_t)(cut > 0 ? cut : 0) + (uint64_t)(cst > 0 ? cst : 0);
	return true;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_snap_take(struct bench_snap *s)
{
	memset(s, 0, sizeof(*s));
	s->wall = mono_s();
	char buf[512];
	if (read_stat("/proc/stat", buf, sizeof(buf))) {
		unsigned long long v[10] = { 0 };
		if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8) {
			/* user nice system idle iowait irq softirq steal (guest is
			 * inside user) */
			s->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
			s->steal = v[7];
			s->ok = true;
		}
	}
	if (read_stat("/proc/loadavg", buf, sizeof(buf)))
		s->load1 = strtod(buf, NULL);
	/* Every process: ours (this one and its descendants) and kernel
	 * threads.  A few hundred small reads. */
	size_t cap = 512, n = 0;
	struct proc_ent *v = malloc(cap * sizeof(*v));
	DIR *d = opendir("/proc");
	if (!v || !d) {
		free(v);
		if (d)
			closedir(d);
		s->ok = false;
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == cap) {
			struct proc_ent *nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		if (parse_proc(atoi(de->d_name), &v[n]))
			n++;
	}
	closedir(d);
	int self = getpid();
	/* mark descendants: repeat until no change (the tree is shallow) */
	bool *mine = calloc(n ? n : 1, sizeof(bool));
	if (!mine) {
		free(v);
		s->ok = false;
		return;
	}
	for (size_t i = 0; i < n; i++)
		mine[i] = v[i].pid == self;
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t i = 0; i < n; i++) {
			if (mine[i])
				continue;
			for (size_t j = 0; j < n; j++)
				if (mine[j] && v[j].pid == v[i].ppid) {
					mine[i] = changed = true;
					break;
				}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (mine[i])
			s->own += v[i].ticks;
		else if (v[i].kthread)
			s->kthreads += v[i].ticks;
	}
	free(mine);
	free(v);
}

/* What the rest of the machine did between a and b. */
static void snap_diff(const struct bench_snap *a, const struct bench_snap *b, double *wall,
		      double *other_ticks, double *steal_ticks, double *own_ticks)
{
	*wall = b->wall - a->wall;
	double busy = (double)(b->busy - a->busy);
	double own = (double)b->own - (double)a->own;
	*own_ticks = own > 0 ? own : 0;
	double kt = (double)b->kthreads - (double)a->kthreads;
	double o = busy - own - (kt > 0 ? kt : 0);
	*other_ticks = o > 0 ? o : 0;
	if (getenv("BYPASS_BENCH_QUIET_DEBUG"))
		fprintf(stderr, "quiet: %.3f s busy %.0f own %.0f kthreads %.0f other %.0f ticks\n",
			*wall, busy, own, kt, o);
	*steal_ticks = (double)(b->steal - a->steal);
}

/* The shortest span judged: --disturbed-at of a CPU over it reaches the
 * floor of tick sampling (0.4 s at 10% and USER_HZ 100). */
double bench_quiet_min_s(const struct bench_ctx *c)
{
	double hz = (double)sysconf(_SC_CLK_TCK);
	return hz > 0 && c->disturbed_at > 0 ? BENCH_QUIET_FLOOR_TICKS / (c->disturbed_at * hz) : 0.4;
}

/* --param plant=disturbed: every span as if another process took a whole
 * CPU (the planted checks of the verdicts). */
static bool planted_busy(const struct bench_ctx *c)
{
	return bench_planted(c, "disturbed");
}

/* Others' CPU seconds and the span's length; false if not measured. */
static bool span_of(const struct bench_ctx *c, const struct bench_snap *a,
		    const struct bench_snap *b, double *wall, double *other_s, double *steal_s,
		    double *own_s)
{
	if (!a->ok || !b->ok)
		return false;
	double other, steal, own;
	snap_diff(a, b, wall, &other, &steal, &own);
	double hz = (double)sysconf(_SC_CLK_TCK);
	if (*wall <= 0 || hz <= 0)
		return false;
	*other_s = other / hz;
	if (planted_busy(c))
		*other_s = *wall;
	*steal_s = steal / hz;
	*own_s = own / hz;
	return true;
}

/* Fold one measured span into a record; *frac gets the share of one CPU the
 * rest of the machine took.  Returns whether the span was disturbed: judged
 * alone (0.4 s or more) and over --disturbed-at of a CPU. */
bool bench_quiet_add(struct bench_ctx *c, struct bench_quiet *q, const struct bench_snap *a,
		     const struct bench_snap *b, double *frac_out)
{
	*frac_out = 0;
	double wall, other, steal, own;
	if (!span_of(c, a, b, &wall, &other, &steal, &own))
		return false;
	double frac = other / wall; /* CPUs' worth of other work */
	if (frac > c->ncpus && c->ncpus > 0)
		frac = c->ncpus; /* ticks land on a span's ends */
	bool alone = wall >= bench_quiet_min_s(c);
	bool disturbed = alone && frac > c->disturbed_at;
	double lo = b->load1 < a->load1 ? b->load1 : a->load1;
	double hi = b->load1 > a->load1 ? b->load1 : a->load1;
	if (!q->spans || lo < q->load_min)
		q->load_min = lo;
	if (!q->spans || hi > q->load_max)
		q->load_max = hi;
	q->spans++;
	q->wall += wall;
	q->other_s += other;
	q->steal_s += steal;
	q->own_s += own;
	if (alone && frac > q->other_max)
		q->other_max = frac;
	*frac_out = frac;
	return disturbed;
}

void bench_quiet_pool(struct bench_ctx *c, struct bench_quiet *q, const struct bench_snap *since)
{
	if (!q->short_rounds)
		return;
	double min = bench_quiet_min_s(c);
	if (q->short_wall >= min) {
		q->pool_wall = q->short_wall;
		q->pool_share = q->short_other / q->short_wall;
	} else {
		/* too short together: the table's whole span around them */
		struct bench_snap now;
		double wall = 0, other = 0, steal, own;
		bench_snap_take(&now);
		if (!span_of(c, since, &now, &wall, &other, &steal, &own) || wall < min) {
			q->too_short = true;
			q->pool_wall = wall;
			q->pool_share = wall > 0 ? other / wall : 0;
			return;
		}
		q->pool_span = true;
		q->pool_wall = wall;
		q->pool_share = other / wall;
	}
	q->pool_disturbed = q->pool_share > c->disturbed_at;
}

void bench_quiet_merge(struct bench_quiet *into, const struct bench_quiet *q)
{
	if (!q->spans)
		return;
	if (!into->spans || q->load_min < into->load_min)
		into->load_min = q->load_min;
	if (!into->spans || q->load_max > into->load_max)
		into->load_max = q->load_max;
	into->spans += q->spans;
	into->rounds += q->rounds;
	into->disturbed += q->disturbed;
	into->reruns += q->reruns;
	into->wall += q->wall;
	into->other_s += q->other_s;
	into->steal_s += q->steal_s;
	into->own_s += q->own_s;
	if (q->other_max > into->other_max)
		into->other_max = q->other_max;
	into->short_rounds += q->short_rounds;
	into->short_wall += q->short_wall;
	into->short_other += q->short_other;
	into->judged_alone += q->judged_alone;
	into->pool_disturbed |= q->pool_disturbed;
	into->too_short |= q->too_short;
}

static int addf(char *buf, size_t len, int n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int addf(char *buf, size_t len, int n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, fmt, ap);
	va_end(ap);
	return n + (k > 0 ? k : 0);
}

void bench_quiet_line(char *buf, size_t len, const struct bench_ctx *c,
		      const struct bench_quiet *q)
{
	if (!q->spans) {
		snprintf(buf, len, "not measured");
		return;
	}
	int n = addf(buf, len, 0, "%d round%s", q->rounds, q->rounds == 1 ? "" : "s");
	if (q->reruns)
		n = addf(buf, len, n, " (%d rerun%s)", q->reruns, q->reruns == 1 ? "" : "s");
	bool dist = q->disturbed || q->pool_disturbed;
	if (q->disturbed)
		n = addf(buf, len, n, ", %d DISTURBED", q->disturbed);
	else if (!dist && !q->too_short)
		n = addf(buf, len, n, ", none disturbed");
	n = addf(buf, len, n, "; other processes %.1f%% of a CPU on average",
		 q->wall > 0 ? 100 * q->other_s / q->wall : 0.0);
	if (q->judged_alone || !q->short_rounds)
		n = addf(buf, len, n, ", %.1f%% at most in a round judged alone", 100 * q->other_max);
	n = addf(buf, len, n, " (threshold %.0f%%)", 100 * c->disturbed_at);
	if (q->short_rounds) {
		if (q->too_short)
			n = addf(buf, len, n, "; %d round%s under %.1f s, too short to judge even "
				 "together (%.2f s in all): NOT JUDGED", q->short_rounds,
				 q->short_rounds == 1 ? "" : "s", bench_quiet_min_s(c), q->pool_wall);
		else
			n = addf(buf, len, n, "; %d round%s under %.1f s judged together%s: "
				 "%.1f%% of a CPU over %.2f s%s", q->short_rounds,
				 q->short_rounds == 1 ? "" : "s", bench_quiet_min_s(c),
				 q->pool_span ? " (over the table's whole span)" : "",
				 100 * q->pool_share, q->pool_wall,
				 q->pool_disturbed ? ", DISTURBED" : "");
	}
	addf(buf, len, n, ", steal %.1f%%, load average %.2f-%.2f; the bench itself %.1f CPU-s",
	     q->wall > 0 ? 100 * q->steal_s / q->wall : 0.0, q->load_min, q->load_max, q->own_s);
}

/* ---------------------------------------------------------------- rounds */

void bench_rounds_init(struct bench_ctx *c, struct bench_rounds *rr, int n, int warm)
{
	(void)c;
	memset(rr, 0, sizeof(*rr));
	rr->n = n;
	rr->warm = warm;
	rr->r = -1;
}

bool bench_round(struct bench_ctx *c, struct bench_rounds *rr, int *r)
{
	struct bench_quiet *q = &c->pend;
	if (rr->open) {
		struct bench_snap now;
		bench_snap_take(&now);
		rr->open = false;
		bool checked = rr->r >= rr->warm;
		double frac = 0;
		bool dist = checked && bench_quiet_add(c, q, &rr->start, &now, &frac);
		bool alone = now.wall - rr->start.wall >= bench_quiet_min_s(c);
		/* at most --reruns a round, and half the rounds (at least one) in
		 * all: a machine that stays busy costs the run 1.5x, not 3x */
		int bound = (rr->n - rr->warm + 1) / 2;
		if (dist && rr->tries < c->reruns && rr->reruns < (bound > 0 ? bound : 1)) {
			/* the same round again: the experiment overwrites it */
			rr->tries++;
			rr->reruns++;
			q->reruns++;
			fprintf(c->out, "   (round %d of %d disturbed: other processes took %.0f%% "
				"of a CPU; running it again)\n", rr->r - rr->warm + 1,
				rr->n - rr->warm, 100 * frac);
			fflush(c->out);
		} else {
			if (checked) {
				q->rounds++;
				q->disturbed += dist;
				if (alone) {
					q->judged_alone++;
				} else { /* judged with the others at bench_end */
					double wall, other, steal, own;
					if (span_of(c, &rr->start, &now, &wall, &other, &steal, &own)) {
						q->short_rounds++;
						q->short_wall += wall;
						q->short_other += other;
					}
				}
			}
			rr->r++;
			rr->tries = 0;
		}
	} else if (rr->r < 0) {
		rr->r = 0;
	}
	if (rr->r >= rr->n)
		return false;
	*r = rr->r;
	rr->open = true;
	bench_snap_take(&rr->start);
	return true;
}
