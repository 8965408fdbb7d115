/* SPDX-License-Identifier: MIT */
/*
 * batch.nginx / batch.lighttpd: ESCA's experiment.  wrk -c 50 against
 * nginx (one worker, then one per core) and lighttpd serving a 20 KB html
 * (ESCA's file) and a 100 B file on 127.0.0.1, each server with and without
 * libbypass-batch.so, running side by side and measured alternately.  Then,
 * to explain the figures, the system calls each server makes per request
 * (perf counting raw_syscalls:sys_enter) and what the preload deferred.
 */
#include "bench.h"
#include "batch_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NGINX "/usr/sbin/nginx"
#define LIGHTTPD "/usr/sbin/lighttpd"
#define WRK "/usr/bin/wrk"

/*
 * nginx sends the header and the file in separate packets unless
 * tcp_nopush is on (Debian's default configuration turns it on); bypass
 * merges them by itself.  So nginx is measured both ways: the fair
 * comparison for what bypass adds is with tcp_nopush on.  lighttpd corks
 * its responses itself.
 */
enum { V_BASE, V_DEF, V_NP_BASE, V_NP_DEF, NVAR };
static const char *var_name[NVAR] = { "without the preload", "bypass preload",
				      "tcp_nopush on, without the preload",
				      "tcp_nopush on, bypass preload" };

struct srv {
	bool nginx;
	int workers;
	int var;
	int port;
	pid_t pid;
	char dir[300];
	double requests; /* served while measured, for per-request counters */
};

static char top[256];

static void sleep_ms(unsigned ms)
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

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

static bool make_conf(struct srv *s)
{
	char path[400], text[4096];
	snprintf(path, sizeof(path), "%s/tmp", s->dir);
	mkdir(path, 0755);
	if (s->nginx) {
		snprintf(text, sizeof(text),
			 "daemon off;\nmaster_process on;\nworker_processes %d;\nuser root;\n"
			 "pid %s/nginx.pid;\nerror_log %s/error.log;\n"
			 "events { worker_connections 1024; }\n"
			 "http {\n  access_log off;\n  sendfile on;\n  tcp_nopush %s;\n"
			 "  keepalive_requests 1000000;\n"
			 "  client_body_temp_path %s/tmp; proxy_temp_path %s/tmp;\n"
			 "  fastcgi_temp_path %s/tmp; uwsgi_temp_path %s/tmp; scgi_temp_path %s/tmp;\n"
			 "  server { listen 127.0.0.1:%d; root %s/www; }\n}\n",
			 s->workers, s->dir, s->dir, s->var >= V_NP_BASE ? "on" : "off", s->dir,
			 s->dir, s->dir, s->dir, s->dir, s->port, top);
		snprintf(path, sizeof(path), "%s/nginx.conf", s->dir);
	} else {
		snprintf(text, sizeof(text),
			 "server.document-root = \"%s/www\"\nserver.bind = \"127.0.0.1\"\n"
			 "server.port = %d\nserver.pid-file = \"%s/lighttpd.pid\"\n"
			 "server.errorlog = \"%s/error.log\"\n"
			 "server.max-keep-alive-requests = 1000000\n"
			 "server.event-handler = \"linux-sysepoll\"\n",
			 top, s->port, s->dir, s->dir);
		snprintf(path, sizeof(path), "%s/lighttpd.conf", s->dir);
	}
	return write_file(path, text);
}

static bool srv_start(struct srv *s)
{
	for (int tries = 0; tries < 5; tries++) {
		s->port = free_port();
		if (!s->port || !make_conf(s))
			return false;
		char conf[400], out[400], stats[400], so[400];
		snprintf(conf, sizeof(conf), "%s/%s.conf", s->dir, s->nginx ? "nginx" : "lighttpd");
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
			if (s->var == V_DEF || s->var == V_NP_DEF) {
				setenv("LD_PRELOAD", so, 1);
				setenv("BYPASS_BATCH_STATS", stats, 1);
			} else {
				unsetenv("LD_PRELOAD");
			}
			if (s->nginx)
				execl(NGINX, "nginx", "-c", conf, "-p", s->dir, (char *)NULL);
			else
				execl(LIGHTTPD, "lighttpd", "-D", "-f", conf, (char *)NULL);
			_exit(127);
		}
		for (int i = 0; i < 200; i++) {
			if (port_up(s->port))
				return true;
			int st;
			if (waitpid(s->pid, &st, WNOHANG) == s->pid)
				break;
			sleep_ms(25);
		}
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	return false;
}

static void srv_stop(struct srv *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, s->nginx ? SIGQUIT : SIGTERM);
	for (int i = 0; i < 200; i++) {
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			return;
		}
		sleep_ms(25);
	}
	kill(-s->pid, SIGKILL); /* its session: master and workers */
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

/* The processes that serve: nginx's workers, or lighttpd itself. */
static int srv_pids(struct srv *s, pid_t *out, int max)
{
	if (!s->nginx) {
		out[0] = s->pid;
		return 1;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)s->pid, (int)s->pid);
	FILE *f = fopen(path, "r");
	int n = 0;
	while (f && n < max && fscanf(f, "%d", &out[n]) == 1)
		n++;
	if (f)
		fclose(f);
	return n;
}

/* Run a command, its stdout into buf; returns its exit status or -1. */
static int run_capture(char *const argv[], char *buf, size_t len)
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

/* wrk against the server: requests per second (NAN on failure). */
static double wrk(struct srv *s, const char *path, int secs, int conns, double *total)
{
	char url[128], d[16], cs[16], out[4096];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s", s->port, path);
	snprintf(d, sizeof(d), "%ds", secs);
	snprintf(cs, sizeof(cs), "%d", conns);
	char *argv[] = { WRK, "-t", "2", "-c", cs, "-d", d, url, NULL };
	if (run_capture(argv, out, sizeof(out)) != 0)
		return NAN;
	char *p = strstr(out, "Requests/sec:");
	if (!p || strstr(out, "Non-2xx"))
		return NAN;
	double rps = atof(p + 13);
	char *q = strstr(out, " requests in ");
	if (total && q) {
		while (q > out && q[-1] >= '0' && q[-1] <= '9')
			q--;
		*total = atof(q);
	}
	return rps;
}

/* System calls per request while wrk runs (perf, raw_syscalls:sys_enter). */
static double syscalls_per_req(struct srv *s, const char *path, int secs)
{
	pid_t pids[16];
	int n = srv_pids(s, pids, 16);
	if (n <= 0 || access("/usr/bin/perf", X_OK))
		return NAN;
	char list[256] = "", tmp[32], outf[400], secs_s[16];
	for (int i = 0; i < n; i++) {
		snprintf(tmp, sizeof(tmp), "%s%d", i ? "," : "", (int)pids[i]);
		strncat(list, tmp, sizeof(list) - strlen(list) - 1);
	}
	snprintf(outf, sizeof(outf), "%s/perf.out", s->dir);
	snprintf(secs_s, sizeof(secs_s), "%d", secs);
	pid_t perf = fork();
	if (perf == 0) {
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 1);
		dup2(nul, 2);
		unsetenv("LD_PRELOAD");
		execl("/usr/bin/perf", "perf", "stat", "-x,", "-o", outf, "-e",
		      "raw_syscalls:sys_enter", "-p", list, "--", "sleep", secs_s, (char *)NULL);
		_exit(127);
	}
	if (perf < 0)
		return NAN;
	sleep_ms(100);
	double total = 0;
	double rps = wrk(s, path, secs - 1 > 0 ? secs - 1 : 1, 50, &total);
	int st;
	waitpid(perf, &st, 0);
	FILE *f = fopen(outf, "r");
	double count = NAN;
	char line[512];
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "raw_syscalls:sys_enter") && line[0] >= '0' && line[0] <= '9')
			count = atof(line);
	if (f)
		fclose(f);
	if (isnan(rps) || total <= 0)
		return NAN;
	return count / total;
}

/* The preload's counters over the server's life (all its processes). */
static double stats_sum(struct srv *s, const char *key)
{
	char path[400], line[1024], pat[64];
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

static bool have(const char *bin, const char *pkg)
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

struct file_case {
	const char *path;
	const char *label;
};

/* One server configuration: all variants up at once, measured in turn. */
static int one_config(struct bench_ctx *c, const char *id, const char *title, bool nginx,
		      int workers, bool target)
{
	static const struct file_case files[] = { { "a20.html", "20 KB html" },
						  { "small.html", "100 B file" } };
	int nfiles = bench_smoke(c) ? 1 : 2;
	int nvar = bench_smoke(c) || !nginx ? 2 : NVAR;
	int secs = bench_smoke(c) ? 1 : bench_quick(c) ? 2 : 5;
	const char *p = bench_param(c, "wrk_seconds", NULL);
	if (p)
		secs = atoi(p) > 0 ? atoi(p) : secs;
	int rounds = bench_smoke(c) ? 1 : bench_rounds(c);
	bench_begin(c, id, title, "the same server without the preload, same file");
	struct srv s[NVAR];
	memset(s, 0, sizeof(s));
	for (int v = 0; v < nvar; v++) {
		s[v].nginx = nginx;
		s[v].workers = workers;
		s[v].var = v;
		snprintf(s[v].dir, sizeof(s[v].dir), "%s/%s-%d", top, id, v);
		mkdir(s[v].dir, 0755);
		if (!srv_start(&s[v])) {
			for (int k = 0; k < v; k++)
				srv_stop(&s[k]);
			bench_skip(c, id, "%s did not start (see %s)", nginx ? "nginx" : "lighttpd",
				   s[v].dir);
			return BENCH_SKIP;
		}
	}
	double *rps = calloc((size_t)(nfiles * nvar * rounds), sizeof(double));
	/* Warm up: each server once per file. */
	for (int f = 0; f < nfiles; f++)
		for (int v = 0; v < nvar; v++)
			wrk(&s[v], files[f].path, 1, 50, NULL);
	for (int r = 0; r < rounds; r++)
		for (int f = 0; f < nfiles; f++)
			for (int v = 0; v < nvar; v++) {
				double total = 0;
				double x = wrk(&s[v], files[f].path, secs, 50, &total);
				rps[(f * nvar + v) * rounds + r] = x;
				if (!isnan(x))
					s[v].requests += total;
			}
	/* Why: system calls per request, and the preload's own counters. */
	double sys[2][NVAR];
	for (int f = 0; f < nfiles; f++)
		for (int v = 0; v < nvar; v++)
			sys[f][v] = bench_smoke(c) ? NAN
						   : syscalls_per_req(&s[v], files[f].path,
								      bench_quick(c) ? 2 : 4);
	for (int v = 0; v < nvar; v++)
		srv_stop(&s[v]);

	double ratio_20k = NAN;
	for (int f = 0; f < nfiles; f++) {
		struct bench_summary sum[NVAR];
		for (int v = 0; v < nvar; v++)
			bench_summarize_d(&rps[(f * nvar + v) * rounds], (size_t)rounds, &sum[v]);
		for (int v = 0; v < nvar; v++) {
			char name[128], note[160] = "";
			snprintf(name, sizeof(name), "%s, %s", files[f].label, var_name[v]);
			if (!isnan(sys[f][v]))
				snprintf(note, sizeof(note), "%.2f system calls per request",
					 sys[f][v]);
			/* With tcp_nopush, relative to nginx with tcp_nopush. */
			int base = v >= V_NP_BASE ? V_NP_BASE : V_BASE;
			double ratio = sum[v].median / sum[base].median;
			struct bench_row row = {
				.variant = name,
				.kind = v == V_BASE || v == V_NP_BASE ? BENCH_BASELINE : BENCH_BYPASS,
				.unit = "req/s", .s = sum[v], .higher_is_better = true,
				.ratio = ratio,
				.source = v == V_DEF && f == 0 ? (nginx ? "ESCA: +11%" : "ESCA: +13%")
								: NULL,
				.note = note[0] ? note : NULL,
			};
			bench_row(c, &row);
			if (f == 0 && v == V_DEF)
				ratio_20k = ratio;
		}
	}
	double np_20k = NAN;
	if (nvar > V_NP_DEF) {
		struct bench_summary a, b;
		bench_summarize_d(&rps[(0 * nvar + V_NP_DEF) * rounds], (size_t)rounds, &a);
		bench_summarize_d(&rps[(0 * nvar + V_NP_BASE) * rounds], (size_t)rounds, &b);
		np_20k = a.median / b.median;
		bench_note(c, "ratios of the tcp_nopush rows are relative to nginx with tcp_nopush "
			   "on: that configuration already sends header and body together, which "
			   "is much of what the preload gains over nginx's default");
	}
	for (int v = 1; v < nvar; v++) {
		if (v == V_NP_BASE)
			continue;
		double req = s[v].requests;
		if (req > 0 && !isnan(stats_sum(&s[v], "deferred")))
			bench_note(c, "%s: per request %.2f calls deferred, %.2f ran directly, "
				   "%.3f io_uring_enter (%.0f segments)", var_name[v],
				   stats_sum(&s[v], "deferred") / req,
				   stats_sum(&s[v], "direct") / req, stats_sum(&s[v], "enters") / req,
				   stats_sum(&s[v], "segments"));
	}
	bench_note(c, "wrk -t 2 -c 50 -d %ds (ESCA: -t 4 -c 50 -d 5s; 2 threads on this %d-CPU "
		   "machine, which wrk shares with the server); %d rounds, variants alternate",
		   secs, bench_ncpus(), rounds);
	if (target) {
		bench_target(c, nginx ? "nginx 20 KB req/s with the preload / without (ESCA +11%)"
				      : "lighttpd 20 KB req/s with the preload / without (ESCA +13%)",
			     ratio_20k, ">=", nginx ? 1.11 : 1.13);
		if (!isnan(np_20k))
			bench_target(c, "same, both with tcp_nopush on (the fair comparison)",
				     np_20k, ">=", 1.11);
	}
	bench_end(c);
	free(rps);
	return 0;
}

static void rm_top(void)
{
	if (!strncmp(top, "/tmp/bypass-bench-batch-", 24)) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
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
	if (!have(WRK, "wrk")) {
		bench_skip(c, "batch.nginx", "wrk is not installed and could not be");
		return BENCH_SKIP;
	}
	snprintf(top, sizeof(top), "/tmp/bypass-bench-batch-XXXXXX");
	if (!mkdtemp(top))
		return 1;
	char path[400];
	snprintf(path, sizeof(path), "%s/www", top);
	mkdir(path, 0755);
	/* ESCA's 20 KB html and a ~100 B file. */
	char *html = malloc(20481);
	for (int i = 0; i < 20480; i++)
		html[i] = (char)(i % 64 == 63 ? '\n' : 'a' + i % 26);
	html[20480] = 0;
	snprintf(path, sizeof(path), "%s/www/a20.html", top);
	write_file(path, html);
	free(html);
	snprintf(path, sizeof(path), "%s/www/small.html", top);
	write_file(path, "<html><body>a small file of about one hundred bytes, "
			 "served from the page cache</body></html>\n");
	signal(SIGPIPE, SIG_IGN);
	int ncpu = bench_ncpus();
	/* --param server=nginx|lighttpd runs one server's tables. */
	const char *which = bench_param(c, "server", NULL);
	if (which && strcmp(which, "nginx")) {
		/* not asked for */
	} else if (have(NGINX, "nginx-light")) {
		one_config(c, "batch.nginx", "nginx, 1 worker: requests/s under wrk", true, 1, true);
		if (!bench_smoke(c) && ncpu > 1) {
			char title[96];
			snprintf(title, sizeof(title), "nginx, %d workers (one per CPU): requests/s",
				 ncpu);
			one_config(c, "batch.nginx-percpu", title, true, ncpu, false);
		}
	} else {
		bench_skip(c, "batch.nginx", "nginx is not installed and could not be");
	}
	if (which && strcmp(which, "lighttpd")) {
		/* not asked for */
	} else if (have(LIGHTTPD, "lighttpd")) {
		one_config(c, "batch.lighttpd", "lighttpd: requests/s under wrk", false, 0, true);
	} else {
		bench_skip(c, "batch.lighttpd", "lighttpd is not installed and could not be");
	}
	rm_top();
	return 0;
}
