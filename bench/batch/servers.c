/* SPDX-License-Identifier: MIT */
/*
 * batch.nginx / batch.lighttpd: ESCA's experiment.  wrk -c 50 against nginx
 * and lighttpd serving ESCA's 20 KB html on 127.0.0.1, each with the
 * configuration its Debian package ships (the baseline of each target),
 * with and without libbypass-batch.so; every variant runs side by side and
 * is measured in turn, round after round, so that each ratio gets a 95%
 * confidence interval (bootstrap over rounds).  Per variant, beside req/s:
 * wrk's socket errors and timeouts, CPU time per request (utime + stime of
 * the server's processes, /proc/<pid>/stat, io_uring's workers included),
 * kernel crossings per request (perf: raw_syscalls:sys_enter of the
 * server's processes, io_uring_enter included, in one more run), and the
 * preload's counters.  Each server must exit cleanly.
 *
 * Server start/stop and the measurements are shared with redis.c.
 */
#include "bench.h"
#include "batch_bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NGINX "/usr/sbin/nginx"
#define LIGHTTPD "/usr/sbin/lighttpd"
#define WRK "/usr/bin/wrk"

char bsrv_top[256];

void bsrv_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0)
		;
}

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int port = 0;
	if (s >= 0 && !bind(s, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(s, (struct sockaddr *)&a, &al))
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

static bool port_up(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

/* ------------------------------------------------------------ servers */

static void exec_server(struct bsrv *s)
{
	char conf[400];
	snprintf(conf, sizeof(conf), "%s/server.conf", s->dir);
	switch (s->kind) {
	case BSRV_NGINX_DEBIAN:
		/* Debian's prefix: its modules-enabled name modules/... under it. */
		execl(NGINX, "nginx", "-c", conf, "-p", "/usr/share/nginx/", (char *)NULL);
		break;
	case BSRV_NGINX_PART1:
		execl(NGINX, "nginx", "-c", conf, "-p", s->dir, (char *)NULL);
		break;
	case BSRV_LIGHTTPD_DEBIAN:
		execl(LIGHTTPD, "lighttpd", "-D", "-f", conf, (char *)NULL);
		break;
	default: {
		char port[16];
		snprintf(port, sizeof(port), "%d", s->port);
		execl(BSRV_REDIS, "redis-server", "--port", port, "--bind", "127.0.0.1",
		      "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", s->dir,
		      "--logfile", "", "--protected-mode", "no", (char *)NULL);
	}
	}
}

bool bsrv_start(struct bsrv *s)
{
	for (int tries = 0; tries < 5; tries++) {
		s->port = free_port();
		if (!s->port || !bsrv_make_conf(s))
			return false;
		char out[400], stats[400], so[400];
		snprintf(out, sizeof(out), "%s/out", s->dir);
		snprintf(stats, sizeof(stats), "%s/stats", s->dir);
		snprintf(so, sizeof(so), "%s/libbypass-batch.so", bench_build_dir());
		s->pid = fork();
		if (s->pid < 0)
			return false;
		if (s->pid == 0) {
			setsid(); /* lighttpd signals its process group */
			int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			if (s->preload) {
				setenv("LD_PRELOAD", so, 1);
				setenv("BYPASS_STATS_FILE", stats, 1);
				for (int i = 0; s->env[i]; i++)
					putenv((char *)s->env[i]);
			} else {
				unsetenv("LD_PRELOAD");
			}
			exec_server(s);
			_exit(127);
		}
		for (int i = 0; i < 200; i++) {
			if (port_up(s->port))
				return true;
			int st;
			if (waitpid(s->pid, &st, WNOHANG) == s->pid)
				break;
			bsrv_sleep_ms(25);
		}
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	return false;
}

/* Stop; true when it exited by itself with status 0 (a clean exit). */
bool bsrv_stop(struct bsrv *s)
{
	if (s->pid <= 0)
		return false;
	bool nginx = s->kind == BSRV_NGINX_DEBIAN || s->kind == BSRV_NGINX_PART1;
	kill(s->pid, nginx ? SIGQUIT : SIGTERM);
	for (int i = 0; i < 400; i++) {
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->pid = 0;
			return WIFEXITED(st) && WEXITSTATUS(st) == 0;
		}
		bsrv_sleep_ms(25);
	}
	kill(-s->pid, SIGKILL); /* its session: master and workers */
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
	return false;
}

/* The processes that serve: nginx's master and workers, or the server. */
static int srv_pids(struct bsrv *s, pid_t *out, int max)
{
	out[0] = s->pid;
	int n = 1;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)s->pid, (int)s->pid);
	FILE *f = fopen(path, "r");
	while (f && n < max && fscanf(f, "%d", &out[n]) == 1)
		n++;
	if (f)
		fclose(f);
	return n;
}

double bsrv_cpu_ticks(struct bsrv *s)
{
	pid_t pids[32];
	int n = srv_pids(s, pids, 32);
	double t = 0;
	for (int i = 0; i < n; i++) {
		char path[64], buf[1024];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pids[i]);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t got = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[got] = 0;
		/* Fields after the command's closing parenthesis: utime and
		 * stime are the 12th and 13th. */
		char *p = strrchr(buf, ')');
		unsigned long ut = 0, stime = 0;
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&ut, &stime) == 2)
			t += (double)(ut + stime);
	}
	return t;
}

int bsrv_run_capture(char *const argv[], char *buf, size_t len)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		int nul = open("/dev/null", O_WRONLY);
		if (nul >= 0)
			dup2(nul, 2);
		unsetenv("LD_PRELOAD");
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t n;
	while (got + 1 < len && (n = read(p[0], buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The load of a table: wrk's connections (and threads: at most 2), and
 * whether each request asks for its connection's close (a new connection
 * per request: nginx's accept path, where EPOLLEXCLUSIVE matters). */
struct web_load {
	int conns;
	bool close;
};
static const struct web_load keepalive_50 = { 50, false };

/* wrk against the server: requests per second (NAN on failure); errors gets
 * wrk's socket errors (connect, read, write) and non-2xx replies, the
 * server's timeouts its timeouts. */
static double wrk(struct bsrv *s, const struct web_load *ld, const char *path, int secs,
		  double *total, double *errors)
{
	char url[128], d[16], out[4096], t[16], cn[16];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s", s->port, path);
	snprintf(d, sizeof(d), "%ds", secs);
	snprintf(t, sizeof(t), "%d", ld->conns < 2 ? 1 : 2);
	snprintf(cn, sizeof(cn), "%d", ld->conns);
	char *argv[] = { WRK, "-t", t, "-c", cn, "-d", d, url, NULL, NULL, NULL };
	if (ld->close) {
		argv[8] = "-H";
		argv[9] = "Connection: close";
	}
	if (bsrv_run_capture(argv, out, sizeof(out)) != 0)
		return NAN;
	char *p = strstr(out, "Requests/sec:");
	if (!p)
		return NAN;
	double rps = atof(p + 13);
	char *q = strstr(out, " requests in ");
	if (total && q) {
		while (q > out && q[-1] >= '0' && q[-1] <= '9')
			q--;
		*total = atof(q);
	}
	if (errors) {
		unsigned long a = 0, b = 0, cc = 0, dd = 0, e = 0;
		char *se = strstr(out, "Socket errors:");
		if (se)
			sscanf(se, "Socket errors: connect %lu, read %lu, write %lu, timeout %lu", &a,
			       &b, &cc, &dd);
		char *nx = strstr(out, "Non-2xx or 3xx responses:");
		if (nx)
			e = strtoul(nx + 25, NULL, 10);
		/* Timeouts (no reply within wrk's 2 s) are counted apart: on a
		 * loaded machine they are the machine's, not the server's. */
		*errors += (double)(a + b + cc + e);
		s->timeouts += (double)dd;
	}
	return rps;
}

/* perf stat of the server's processes while load runs: kernel crossings. */
pid_t bsrv_perf_start(struct bsrv *s, int secs)
{
	pid_t pids[32];
	int n = srv_pids(s, pids, 32);
	if (n <= 0 || access("/usr/bin/perf", X_OK))
		return -1;
	char list[512] = "", tmp[32], outf[400];
	for (int i = 0; i < n; i++) {
		snprintf(tmp, sizeof(tmp), "%s%d", i ? "," : "", (int)pids[i]);
		strncat(list, tmp, sizeof(list) - strlen(list) - 1);
	}
	snprintf(outf, sizeof(outf), "%s/perf.out", s->dir);
	unlink(outf);
	pid_t perf = fork();
	if (perf == 0) {
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 1);
		dup2(nul, 2);
		unsetenv("LD_PRELOAD");
		/* No workload: it counts until bsrv_perf_end interrupts it
		 * (or secs pass: the watchdog of a lost run). */
		alarm((unsigned)secs);
		execl("/usr/bin/perf", "perf", "stat", "-x,", "-o", outf, "-e",
		      "raw_syscalls:sys_enter", "-p", list, (char *)NULL);
		_exit(127);
	}
	bsrv_sleep_ms(150);
	return perf;
}

double bsrv_perf_end(struct bsrv *s, pid_t perf)
{
	if (perf <= 0)
		return NAN;
	/* perf stat ends on SIGINT and writes its counts: it counted exactly
	 * while the load ran (from 150 ms before it). */
	kill(perf, SIGINT);
	int st;
	waitpid(perf, &st, 0);
	char outf[400], line[512];
	snprintf(outf, sizeof(outf), "%s/perf.out", s->dir);
	FILE *f = fopen(outf, "r");
	double count = NAN;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "raw_syscalls:sys_enter") && line[0] >= '0' && line[0] <= '9')
			count = atof(line);
	if (f)
		fclose(f);
	return count;
}

double bsrv_stats_sum(struct bsrv *s, const char *key)
{
	char path[400], line[2048], pat[64];
	snprintf(path, sizeof(path), "%s/stats", s->dir);
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	FILE *f = fopen(path, "r");
	if (!f)
		return NAN;
	double sum = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, pat);
		if (p)
			sum += atof(p + strlen(pat));
	}
	fclose(f);
	return sum;
}

bool bsrv_have(const char *bin, const char *pkg)
{
	if (!access(bin, X_OK))
		return true;
	if (geteuid() == 0) {
		/* Install only what is missing. */
		char cmd[256];
		snprintf(cmd, sizeof(cmd),
			 "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq %s >/dev/null 2>&1",
			 pkg);
		int r = system(cmd);
		(void)r;
	}
	return !access(bin, X_OK);
}

int bsrv_rounds(struct bench_ctx *c)
{
	if (bench_smoke(c))
		return 1;
	int r = bench_quick(c) ? 5 : 10;
	const char *p = bench_param(c, "server_rounds", NULL);
	if (p && atoi(p) > 0)
		r = atoi(p);
	return bench_rounds(c) > r ? bench_rounds(c) : r;
}

/* ------------------------------------------------------------ the table */

/* A null system call (getppid), ns: the least of a few timed loops. */
double bsrv_null_call_ns(void)
{
	double best = NAN;
	for (int k = 0; k < 5; k++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < 100000; i++)
			syscall(SYS_getppid);
		clock_gettime(CLOCK_MONOTONIC, &b);
		double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) /
			    100000;
		if (isnan(best) || ns < best)
			best = ns;
	}
	return best;
}

void bsrv_report(struct bench_ctx *c, struct bsrv *s, int nv, const double *rate, int rounds,
		 const char *unit)
{
	for (int v = 0; v < nv; v++) {
		struct bench_summary sum, base;
		const double *mine = &rate[v * rounds], *theirs = &rate[s[v].base * rounds];
		double a[64], b[64];
		size_t na = 0, nb = 0;
		for (int r = 0; r < rounds && r < 64; r++) {
			if (!isnan(mine[r]))
				a[na++] = mine[r];
			if (!isnan(theirs[r]))
				b[nb++] = theirs[r];
		}
		bench_summarize_d(a, na, &sum);
		bench_summarize_d(b, nb, &base);
		/* the per-round ratio to the base row, in the rounds where both
		 * ran (a round where either failed leaves the estimate
		 * incomplete) */
		bench_est_ratio(mine, theirs, (size_t)rounds, rounds, BENCH_CI_T, &s[v].est);
		double req = s[v].requests;
		char note[400], params[400];
		double cpu_us = req > 0 ? s[v].cpu_ticks * 1e6 / (double)sysconf(_SC_CLK_TCK) / req
					: NAN;
		char tmo[48] = "";
		if (s[v].timeouts > 0)
			snprintf(tmo, sizeof(tmo), ", %.0f client timeouts", s[v].timeouts);
		snprintf(note, sizeof(note), "%.1f µs CPU/request, %.2f crossings/request%s%s%s",
			 cpu_us, s[v].crossings, tmo, s[v].errors > 0 ? ", CLIENT ERRORS" : "",
			 s[v].clean ? "" : ", UNCLEAN EXIT");
		snprintf(params, sizeof(params),
			 "{\"cpu_us_per_request\": %.3f, \"crossings_per_request\": %.3f, "
			 "\"client_errors\": %.0f, \"client_timeouts\": %.0f, \"clean_exit\": %s, "
			 "\"requests\": %.0f, "
			 "\"base_row\": %d}",
			 isnan(cpu_us) ? -1.0 : cpu_us, isnan(s[v].crossings) ? -1.0 : s[v].crossings,
			 s[v].errors, s[v].timeouts, s[v].clean ? "true" : "false", req, s[v].base);
		struct bench_row row = {
			.variant = s[v].label,
			.kind = s[v].preload ? BENCH_BYPASS : BENCH_BASELINE,
			.unit = unit, .s = sum, .higher_is_better = true,
			/* no base figure (its runs failed): no ratio, never
			 * +inf (a rate over a base of 0) */
			.ratio = !sum.n || !base.n || !(base.median > 0) ? NAN
				 : v == s[v].base ? 1.0 : sum.median / base.median,
			.is_base = v == 0,
			.source = s[v].source,
			.note = note, .params = params,
		};
		if (v != s[v].base && sum.n && base.n)
			bench_row_est(&row, &s[v].est);
		bench_row(c, &row);
		s[v].ratio = row.ratio;
		s[v].ci_lo = row.ci_lo;
		s[v].ci_hi = row.ci_hi;
		if (!sum.n)
			bench_fail(c, "%s: no run gave a figure (every run failed)", s[v].label);
		if (s[v].errors > 0)
			bench_fail(c, "%s: %.0f client errors (socket errors or bad replies)",
				   s[v].label, s[v].errors);
		if (!s[v].clean)
			bench_fail(c, "%s: the server did not exit cleanly", s[v].label);
	}
	/* The preload's counters cover a server's whole life: per request
	 * served by it (rows of one server share its directory). */
	for (int v = 0; v < nv; v++) {
		bool first = true;
		double req = 0;
		for (int k = 0; k < nv; k++) {
			if (strcmp(s[k].dir, s[v].dir))
				continue;
			first = first && k >= v;
			req += s[k].served;
		}
		if (!first || !s[v].preload || req <= 0 || isnan(bsrv_stats_sum(&s[v], "deferred")))
			continue;
		bench_note(c, "%s: per request (whole run) %.2f calls deferred, %.2f ran "
			   "directly, %.3f io_uring_enter, %.3f merged waits, %.3f spliced",
			   s[v].label, bsrv_stats_sum(&s[v], "deferred") / req,
			   bsrv_stats_sum(&s[v], "direct") / req,
			   bsrv_stats_sum(&s[v], "enters") / req,
			   bsrv_stats_sum(&s[v], "merged_waits") / req,
			   bsrv_stats_sum(&s[v], "spliced") / req);
	}
	/* Why: what a crossing costs here, against what a request costs. */
	double null_ns = bsrv_null_call_ns();
	for (int v = 0; v < nv; v++) {
		struct bsrv *b = &s[s[v].base];
		if (!s[v].preload || isnan(s[v].crossings) || isnan(b->crossings) ||
		    b->requests <= 0)
			continue;
		double b_cpu = b->cpu_ticks * 1e6 / (double)sysconf(_SC_CLK_TCK) / b->requests;
		double saved_us = (b->crossings - s[v].crossings) * null_ns / 1000;
		bench_note(c, "%s: %.2f crossings/request fewer x %.0f ns (a null system call, "
			   "measured now) = %.2f us of the base's %.1f us CPU/request: at most "
			   "%+.1f%% requests/s from crossings alone", s[v].label,
			   b->crossings - s[v].crossings, null_ns, saved_us, b_cpu,
			   b_cpu > saved_us ? 100.0 * saved_us / (b_cpu - saved_us) : NAN);
	}
	bench_note(c, "ratio: row median / its base row's median (a rate: higher is better), "
		   "95%% CI by bootstrap over %d rounds; rows with their own base say so in "
		   "the label", rounds);
	bench_note(c, "crossings/request: system calls the server's processes entered "
		   "(perf raw_syscalls:sys_enter, io_uring_enter included) over requests, in "
		   "one extra run per variant; CPU/request: utime+stime of the server's "
		   "processes (io_uring workers included) over the measured runs");
}

/* ------------------------------------------------------------ web servers */

static const char *const merged_off[] = { "BYPASS_BATCH_MERGED_WAIT=0", NULL };
/* The 20 KB body deferred too: read into the queued send (copied) rather
 * than a sendfile system call that takes the queued header with it. */
static const char *const sf_copy[] = { "BYPASS_BATCH_SENDFILE_MAX=65536", NULL };
static const char *const no_env[] = { NULL };
/* Bodies above 4 KiB deferred without copying: linked splices through a
 * pipe (off by default). */
static const char *const sf_splice[] = { "BYPASS_BATCH_SPLICE=1", NULL };

static int web_table(struct bench_ctx *c, const char *id, const char *title,
		     struct bsrv *s, int nv, const struct web_load *ld, const char *path,
		     double goal, const char *what)
{
	int rounds = bsrv_rounds(c);
	int secs = bench_smoke(c) ? 1 : bench_quick(c) ? 1 : 3;
	const char *p = bench_param(c, "wrk_seconds", NULL);
	if (p && atoi(p) > 0)
		secs = atoi(p);
	bench_begin(c, id, title, s[0].label);
	for (int v = 0; v < nv; v++) {
		snprintf(s[v].dir, sizeof(s[v].dir), "%s/%s-%d", bsrv_top, id, v);
		mkdir(s[v].dir, 0755);
		if (!bsrv_start(&s[v])) {
			for (int k = 0; k < v; k++)
				bsrv_stop(&s[k]);
			bench_fail(c, "%s: %s did not start (see %s)", id, s[v].label, s[v].dir);
			bench_end(c);
			return 1;
		}
	}
	double *rate = calloc((size_t)(nv * rounds), sizeof(double));
	for (int v = 0; v < nv; v++) {
		double total = 0;
		wrk(&s[v], ld, path, 1, &total, NULL); /* warm up */
		s[v].served += total;
	}
	size_t order[16];
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &r)) {
		bench_order(r, (size_t)nv, order);
		for (int k = 0; k < nv; k++) {
			int v = (int)order[k];
			double total = 0, t0 = bsrv_cpu_ticks(&s[v]);
			double x = wrk(&s[v], ld, path, secs, &total, &s[v].errors);
			if (v == 0 && bench_planted(c, id))
				x = NAN; /* the base row's wrk failed: tests/batch/bench-plant.sh */
			rate[v * rounds + r] = x;
			if (isnan(x)) {
				s[v].errors += 1;
				continue;
			}
			s[v].cpu_ticks += bsrv_cpu_ticks(&s[v]) - t0;
			s[v].requests += total;
			s[v].served += total;
		}
	}
	for (int v = 0; v < nv; v++) {
		s[v].crossings = NAN;
		if (bench_smoke(c))
			continue;
		pid_t perf = bsrv_perf_start(&s[v], 120);
		double total = 0, extra_err = 0;
		wrk(&s[v], ld, path, 1, &total, &extra_err);
		double n = bsrv_perf_end(&s[v], perf);
		s[v].served += total;
		if (total > 0)
			s[v].crossings = n / total;
	}
	for (int v = 0; v < nv; v++)
		s[v].clean = bsrv_stop(&s[v]);
	bsrv_report(c, s, nv, rate, rounds, "req/s");
	bench_note(c, "wrk -t %d -c %d -d %ds%s /%s (ESCA: -t 4 -c 50 -d 5s, 20 KB); wrk shares "
		   "the %d CPUs with the server; variants alternate, order rotated per round",
		   ld->conns < 2 ? 1 : 2, ld->conns, secs,
		   ld->close ? " -H 'Connection: close'" : "", path, bench_ncpus());
	if (goal > 0)
		bench_target_est(c, what, &s[1].est, ">=", goal);
	if (goal > 0 && s[0].kind == BSRV_NGINX_DEBIAN && !isnan(s[0].crossings) &&
	    !isnan(s[1].crossings))
		bench_target_exact(c, "nginx (Debian) kernel crossings per request, preload / "
				   "without", s[1].crossings / s[0].crossings, "<=", 0.5);
	bench_end(c);
	free(rate);
	return 0;
}

/*
 * nginx's accept path, where a new connection wakes the workers watching
 * the listening socket with EPOLLEXCLUSIVE: since 5847bb2 the preload
 * leaves such an epoll's waits unmerged (a merged wait, an armed
 * IORING_OP_EPOLL_WAIT, does not count as a sleeper, so every worker woke:
 * docs/batch.md), and these rows give that choice's price beside the
 * baseline: a new connection per request (Connection: close) with
 * Debian's workers (auto: one a CPU) under wrk's 50 connections, and with
 * 8 workers for 2 connections (most workers idle, where a herd would cost
 * most).  No target; the notes give the merged waits per request.
 */
static int nginx_accept_tables(struct bench_ctx *c)
{
	static const struct web_load close_50 = { 50, true }, close_2 = { 2, true };
	int nv = bench_quick(c) ? 2 : 3;
	struct bsrv a[3] = {
		{ .kind = BSRV_NGINX_DEBIAN, .label = "Debian's nginx.conf", .env = no_env },
		{ .kind = BSRV_NGINX_DEBIAN, .preload = true,
		  .label = "Debian's nginx.conf, bypass preload", .env = no_env },
		{ .kind = BSRV_NGINX_DEBIAN, .preload = true,
		  .label = "Debian's nginx.conf, preload without the merged wait",
		  .env = merged_off },
	};
	int rc = web_table(c, "batch.nginx-close", "nginx, Debian's configuration, a new "
			   "connection per request (Connection: close): requests/s under "
			   "wrk, 20 KB", a, nv, &close_50, "a20.html", 0, NULL);
	struct bsrv b[3] = {
		{ .kind = BSRV_NGINX_DEBIAN, .workers = 8,
		  .label = "Debian's nginx.conf, 8 workers", .env = no_env },
		{ .kind = BSRV_NGINX_DEBIAN, .workers = 8, .preload = true,
		  .label = "Debian's nginx.conf, 8 workers, bypass preload", .env = no_env },
		{ .kind = BSRV_NGINX_DEBIAN, .workers = 8, .preload = true,
		  .label = "Debian's nginx.conf, 8 workers, preload without the merged wait",
		  .env = merged_off },
	};
	rc |= web_table(c, "batch.nginx-idle", "nginx, Debian's configuration with 8 workers "
			"for 2 connections, a new connection per request: requests/s under "
			"wrk, 20 KB", b, nv, &close_2, "a20.html", 0, NULL);
	return rc;
}

static void rm_top(void)
{
	if (!strncmp(bsrv_top, "/tmp/bypass-bench-batch-", 24)) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", bsrv_top);
		int r = system(cmd);
		(void)r;
	}
}

int bench_batch_servers(struct bench_ctx *c)
{
	char so[400];
	snprintf(so, sizeof(so), "%s/libbypass-batch.so", bench_build_dir());
	if (access(so, R_OK)) {
		bench_skip(c, "batch.nginx", "no %s (build the batch module)", so);
		return BENCH_SKIP;
	}
	snprintf(bsrv_top, sizeof(bsrv_top), "/tmp/bypass-bench-batch-XXXXXX");
	if (!mkdtemp(bsrv_top))
		return 1;
	char path[400];
	snprintf(path, sizeof(path), "%s/www", bsrv_top);
	mkdir(path, 0755);
	/* ESCA's 20 KB html. */
	char *html = malloc(20481);
	for (int i = 0; i < 20480; i++)
		html[i] = (char)(i % 64 == 63 ? '\n' : 'a' + i % 26);
	html[20480] = 0;
	snprintf(path, sizeof(path), "%s/www/a20.html", bsrv_top);
	bsrv_write_file(path, html);
	free(html);
	signal(SIGPIPE, SIG_IGN);
	int rc = 0;
	/* --param server=nginx|lighttpd|redis runs one server's table. */
	const char *which = bench_param(c, "server", NULL);
	bool web = !which || strcmp(which, "redis");
	if (web && !bsrv_have(WRK, "wrk")) {
		bench_skip(c, "batch.nginx", "wrk is not installed and could not be");
		web = false;
	}
	if (web && (!which || !strcmp(which, "nginx"))) {
		if (bsrv_have(NGINX, "nginx-light") && !access("/etc/nginx/nginx.conf", R_OK)) {
			struct bsrv s[7] = {
				{ .kind = BSRV_NGINX_DEBIAN, .label = "Debian's nginx.conf",
				  .env = no_env },
				{ .kind = BSRV_NGINX_DEBIAN, .preload = true,
				  .label = "Debian's nginx.conf, bypass preload",
				  .env = no_env, .source = "ESCA: +11%" },
				{ .kind = BSRV_NGINX_DEBIAN, .preload = true,
				  .label = "Debian's nginx.conf, preload without the merged wait",
				  .env = merged_off },
				{ .kind = BSRV_NGINX_DEBIAN, .preload = true,
				  .label = "Debian's nginx.conf, preload, sendfile copied up to 64 KiB",
				  .env = sf_copy },
				{ .kind = BSRV_NGINX_PART1, .label = "part 1's configuration (1 worker, "
				  "tcp_nopush off, no access log)", .env = no_env, .base = 4 },
				{ .kind = BSRV_NGINX_PART1, .preload = true,
				  .label = "part 1's configuration, bypass preload (vs the row above)",
				  .env = no_env, .base = 4 },
				{ .kind = BSRV_NGINX_DEBIAN, .preload = true,
				  .label = "Debian's nginx.conf, preload, sendfile by splice",
				  .env = sf_splice },
			};
			/* quick: the two rows the targets compare (issue 24: make
			 * bench in 300 s); the full suite has every variant */
			int nv = bench_quick(c) ? 2 : 7;
			rc |= web_table(c, "batch.nginx",
					"nginx, Debian's configuration: requests/s under wrk, 20 KB",
					s, nv, &keepalive_50, "a20.html", 1.11,
					"nginx (Debian's configuration) 20 KB req/s, preload / "
					"without (ESCA +11%)");
			rc |= nginx_accept_tables(c);
		} else {
			bench_skip(c, "batch.nginx", "nginx (nginx-light) is not installed and "
				   "could not be");
		}
	}
	if (web && (!which || !strcmp(which, "lighttpd"))) {
		if (bsrv_have(LIGHTTPD, "lighttpd") && !access("/etc/lighttpd/lighttpd.conf", R_OK)) {
			struct bsrv s[4] = {
				{ .kind = BSRV_LIGHTTPD_DEBIAN, .label = "Debian's lighttpd.conf",
				  .env = no_env },
				{ .kind = BSRV_LIGHTTPD_DEBIAN, .preload = true,
				  .label = "Debian's lighttpd.conf, bypass preload", .env = no_env,
				  .source = "ESCA: +13%" },
				{ .kind = BSRV_LIGHTTPD_DEBIAN, .preload = true,
				  .label = "Debian's lighttpd.conf, preload without the merged wait",
				  .env = merged_off },
				{ .kind = BSRV_LIGHTTPD_DEBIAN, .preload = true,
				  .label = "Debian's lighttpd.conf, preload, sendfile by splice",
				  .env = sf_splice },
			};
			rc |= web_table(c, "batch.lighttpd",
					"lighttpd, Debian's configuration: requests/s under wrk, 20 KB",
					s, bench_quick(c) ? 2 : 4, &keepalive_50, "a20.html", 1.13,
					"lighttpd (Debian's configuration) 20 KB req/s, preload / "
					"without (ESCA +13%)");
		} else {
			bench_skip(c, "batch.lighttpd", "lighttpd is not installed and could not be");
		}
	}
	if (!which || !strcmp(which, "redis"))
		rc |= bench_batch_redis(c);
	rm_top();
	return rc;
}
