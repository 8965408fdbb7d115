/* SPDX-License-Identifier: MIT */
/*
 * bypass run: an unmodified program under libbypass-batch.so and/or
 * libbypass-pager.so, with their environment set.  The preloads append
 * their counters to BYPASS_STATS_FILE (one JSON object per process and
 * line) at each process's exit; when the program ends, bypass run prints
 * a report of them for the whole process tree (report.c; --report FILE
 * puts it there, --no-report leaves it out), --stats prints the raw lines
 * too, and --stats=json FILE keeps them.  While the program runs, the
 * tree's memory is sampled (monitor.c) and, under a terminal, a live
 * status line shows it.
 * bypass bench: exec bypass-bench.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void run_usage(FILE *f)
{
	fprintf(f,
		"usage: bypass run [--batch] [--pager SIZE[,scope=S][,swap=PATH]] [--report FILE|--no-report]\n"
		"                  [--stats] [--stats=json FILE] [--status|--no-status] [--] PROGRAM [ARGS...]\n"
		"  --batch             preload libbypass-batch.so (system-call batching, see libbypass-batch(3))\n"
		"  --pager SIZE        preload libbypass-pager.so with a memory budget of SIZE bytes\n"
		"                      (suffix K, M, G or T: powers of 1024); swap=PATH: its swap file;\n"
		"                      scope=tree (the default): one budget for the whole process\n"
		"                      tree, scope=process: a budget per process\n"
		"  --report FILE       the report of what the preloads did for the whole process tree,\n"
		"                      written when the program ends to FILE ('-': stderr); without\n"
		"                      it, on stderr when stderr is a terminal\n"
		"  --no-report         no report, even under a terminal\n"
		"  --stats             print the preloads' raw counters too, one line per process\n"
		"  --stats=json FILE   keep the raw counters in FILE, one JSON object per process\n"
		"  --status            the live status line (on when stderr is a terminal), --no-status: off\n"
		"exit status: the program's (128+N if signal N ended it), 126 not executable,\n"
		"127 not found, 1 bypass failed (a preload missing), 2 bad usage\n");
}

/* "512M" -> bytes; 0 on a bad size. */
static uint64_t parse_size(const char *s, const char **end)
{
	if (!isdigit((unsigned char)*s))
		return 0;
	errno = 0;
	char *e;
	unsigned long long v = strtoull(s, &e, 10);
	if (errno || e == s)
		return 0;
	unsigned shift = 0;
	switch (toupper((unsigned char)*e)) {
	case 'K': shift = 10; e++; break;
	case 'M': shift = 20; e++; break;
	case 'G': shift = 30; e++; break;
	case 'T': shift = 40; e++; break;
	}
	if (shift && (*e == 'i' || *e == 'I'))
		e++;
	if (shift && (*e == 'b' || *e == 'B'))
		e++;
	if (v > (UINT64_MAX >> shift))
		return 0;
	*end = e;
	return (uint64_t)v << shift;
}

static int pager_spec(const char *spec, char *budget, size_t blen, const char **swap,
		      const char **scope)
{
	const char *e;
	uint64_t bytes = parse_size(spec, &e);
	if (!bytes) {
		fprintf(stderr, "bypass run: --pager %s: SIZE must be a positive number of bytes "
			"(suffix K, M, G or T)\n", spec);
		return -EINVAL;
	}
	*swap = NULL;
	*scope = NULL;
	while (*e == ',') {
		e++;
		if (!strncmp(e, "scope=tree", 10) && (!e[10] || e[10] == ',')) {
			*scope = "tree";
			e += 10;
			continue;
		}
		if (!strncmp(e, "scope=process", 13) && (!e[13] || e[13] == ',')) {
			*scope = "process";
			e += 13;
			continue;
		}
		if (!strncmp(e, "swap=", 5) && e[5] && e[5] != ',') {
			*swap = e + 5; /* the rest: a path may hold commas */
			break;
		}
		fprintf(stderr, "bypass run: --pager %s: unknown option '%s' (scope=tree, "
			"scope=process, swap=PATH)\n",
			spec, e);
		return -EINVAL;
	}
	if (*e && *e != ',' && !*swap) {
		fprintf(stderr, "bypass run: --pager %s: SIZE must be a positive number of bytes "
			"(suffix K, M, G or T)\n", spec);
		return -EINVAL;
	}
	snprintf(budget, blen, "%" PRIu64, bytes);
	return 0;
}

static int add_preload(char *list, size_t len, const char *so, const char *why)
{
	char path[PATH_MAX * 4];
	if (cli_find(so, path, sizeof(path))) {
		fprintf(stderr, "bypass run: %s needs %s, which is not built or installed "
			"(looked for %s)\n", why, so, path);
		return -ENOENT;
	}
	size_t n = strlen(list);
	snprintf(list + n, len - n, "%s%s", n ? ":" : "", path);
	return 0;
}

/* ------------------------------------------------------------ --stats */

struct counter {
	char module[32];
	char key[48];
	uint64_t sum;
	unsigned procs;
};

/* One flat JSON object per line: print it as key=value and add it up. */
static void stats_line(char *line, struct counter *c, size_t *nc, size_t max)
{
	char module[32] = "?", pid[24] = "?", rest[2048] = "";
	size_t rl = 0;
	const char *keys[64];
	uint64_t vals[64];
	size_t nk = 0;
	char *p = line;
	while ((p = strchr(p, '"'))) {
		char *k = ++p;
		p = strchr(p, '"');
		if (!p)
			break;
		*p++ = 0;
		while (*p == ' ' || *p == ':')
			p++;
		char val[256];
		size_t vl = 0;
		int str = *p == '"', arr = *p == '[';
		if (str)
			p++;
		/* a string, an array (a histogram: kept whole), or a number */
		while (*p && (str ? *p != '"' : arr ? *p != ']' : (*p != ',' && *p != '}'))) {
			if (vl + 1 < sizeof(val) && !(arr && *p == ' '))
				val[vl++] = *p;
			p++;
		}
		if (arr && *p == ']') {
			if (vl + 1 < sizeof(val))
				val[vl++] = ']';
			p++;
		}
		val[vl] = 0;
		if (str && *p == '"')
			p++;
		while (vl && val[vl - 1] == ' ')
			val[--vl] = 0;
		if (!strcmp(k, "module"))
			snprintf(module, sizeof(module), "%.31s", val);
		else if (!strcmp(k, "pid"))
			snprintf(pid, sizeof(pid), "%.23s", val);
		else {
			rl += (size_t)snprintf(rest + rl, rl < sizeof(rest) ? sizeof(rest) - rl : 0,
					       " %s=%s", k, val);
			if (rl >= sizeof(rest))
				rl = sizeof(rest) - 1;
			if (!str && nk < 64 && isdigit((unsigned char)val[0])) {
				keys[nk] = k;
				vals[nk++] = strtoull(val, NULL, 10);
			}
		}
	}
	fprintf(stderr, "bypass: %s pid %s:%s\n", module, pid, rest);
	for (size_t i = 0; i < nk; i++) {
		size_t j;
		for (j = 0; j < *nc; j++)
			if (!strcmp(c[j].module, module) && !strcmp(c[j].key, keys[i]))
				break;
		if (j == *nc) {
			if (*nc == max)
				continue;
			snprintf(c[j].module, sizeof(c[j].module), "%s", module);
			snprintf(c[j].key, sizeof(c[j].key), "%s", keys[i]);
			c[j].sum = 0;
			c[j].procs = 0;
			(*nc)++;
		}
		c[j].sum += vals[i];
		c[j].procs++;
	}
}

static void stats_print(const char *path, long from)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (from > 0)
		fseek(f, from, SEEK_SET);
	static struct counter c[256];
	size_t nc = 0, lines = 0;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '{'))
			continue;
		line[strcspn(line, "\n")] = 0;
		stats_line(line, c, &nc, 256);
		lines++;
	}
	fclose(f);
	if (!lines) {
		fprintf(stderr, "bypass: no counters were written (a preload writes them when a "
			"process that used it exits normally; a statically linked program, or one "
			"killed by a signal, writes none)\n");
		return;
	}
	/* Several processes (workers, children): each module's total too. */
	for (size_t i = 0; i < nc; i++) {
		if (c[i].procs < 2)
			continue;
		int first = 1;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c[j].module, c[i].module) && c[j].procs >= 2)
				first = 0;
		if (!first)
			continue;
		fprintf(stderr, "bypass: %s total:", c[i].module);
		for (size_t j = i; j < nc; j++)
			if (!strcmp(c[j].module, c[i].module))
				fprintf(stderr, " %s=%" PRIu64, c[j].key, c[j].sum);
		fprintf(stderr, "\n");
	}
}

/* --stats: SIGTERM and SIGHUP sent to bypass go on to the program, which
 * then ends as it would alone (and bypass prints what it wrote). */
static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static int exec_failed(const char *prog)
{
	int e = errno;
	fprintf(stderr, "bypass run: %s: %s\n", prog, strerror(e));
	return e == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
}

int cli_run(int argc, char **argv)
{
	int batch = 0, stats = 0, report = -1, status = -1, i;
	const char *pager = NULL, *report_path = NULL, *json_path = NULL;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "--batch")) {
			batch = 1;
		} else if (!strcmp(a, "--stats")) {
			stats = 1;
		} else if (!strcmp(a, "--stats=json") || !strncmp(a, "--stats=json=", 13)) {
			if (a[12] == '=')
				json_path = a + 13;
			else if (i + 1 < argc)
				json_path = argv[++i];
			if (!json_path || !*json_path) {
				fprintf(stderr, "bypass run: --stats=json needs FILE\n");
				return CLI_EXIT_USAGE;
			}
		} else if (!strncmp(a, "--stats=", 8)) {
			fprintf(stderr, "bypass run: %s: the only format is json (--stats=json FILE)\n", a);
			return CLI_EXIT_USAGE;
		} else if (!strcmp(a, "--report") || !strncmp(a, "--report=", 9)) {
			report_path = a[8] == '=' ? a + 9 : i + 1 < argc ? argv[++i] : NULL;
			if (!report_path || !*report_path) {
				fprintf(stderr, "bypass run: --report needs FILE\n");
				return CLI_EXIT_USAGE;
			}
			if (report == 0)
				goto contradict;
			report = 1;
			if (!strcmp(report_path, "-"))
				report_path = NULL; /* stderr */
		} else if (!strcmp(a, "--no-report")) {
			if (report == 1)
				goto contradict;
			report = 0;
		} else if (!strcmp(a, "--status")) {
			status = 1;
		} else if (!strcmp(a, "--no-status")) {
			status = 0;
		} else if (!strcmp(a, "--pager")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "bypass run: --pager needs SIZE[,swap=PATH]\n");
				return CLI_EXIT_USAGE;
			}
			pager = argv[++i];
		} else if (!strncmp(a, "--pager=", 8)) {
			pager = a + 8;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			run_usage(stdout);
			return CLI_EXIT_OK;
		} else {
			fprintf(stderr, "bypass run: unknown option '%s'\n", a);
			run_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (0) {
contradict:
		fprintf(stderr, "bypass run: --report and --no-report contradict each other\n");
		return CLI_EXIT_USAGE;
	}
	if (i >= argc) {
		fprintf(stderr, "bypass run: no program to run\n");
		run_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!batch && !pager) {
		fprintf(stderr, "bypass run: nothing to preload: give --batch and/or --pager SIZE\n");
		return CLI_EXIT_USAGE;
	}
	char budget[32];
	const char *swap = NULL, *scope = NULL;
	if (pager && pager_spec(pager, budget, sizeof(budget), &swap, &scope))
		return CLI_EXIT_USAGE;

	char list[4 * PATH_MAX] = "";
	if (batch && add_preload(list, sizeof(list), "libbypass-batch.so", "--batch"))
		return CLI_EXIT_FAIL;
	if (pager && add_preload(list, sizeof(list), "libbypass-pager.so", "--pager"))
		return CLI_EXIT_FAIL;
	const char *old = getenv("LD_PRELOAD");
	if (old && *old) {
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, ":%s", old);
	}
	if (setenv("LD_PRELOAD", list, 1))
		return CLI_EXIT_FAIL;
	if (pager) {
		setenv("BYPASS_PAGER_BUDGET", budget, 1);
		if (swap)
			setenv("BYPASS_PAGER_SWAP", swap, 1);
		if (scope)
			setenv("BYPASS_PAGER_BUDGET_SCOPE", scope, 1);
	}
	char **prog = argv + i;
	/* The report is for a person: on by default where stderr is a
	 * terminal.  Elsewhere (a script, a service) bypass run stays out of
	 * the way, the program in its place, unless asked. */
	if (report < 0)
		report = isatty(STDERR_FILENO);
	if (status < 0)
		status = isatty(STDERR_FILENO);
	if (!stats && !json_path && !report && !status) {
		execvp(prog[0], prog);
		return exec_failed(prog[0]);
	}

	/* The file the preloads append to: --stats=json FILE (kept), else
	 * the caller's own BYPASS_STATS_FILE (kept, read from its end as it
	 * was), else a temporary one. */
	char path[PATH_MAX];
	int keep = 1;
	long from = 0;
	const char *callers = getenv("BYPASS_STATS_FILE");
	if (json_path) {
		snprintf(path, sizeof(path), "%s", json_path);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "bypass run: --stats=json %s: %s\n", path, strerror(errno));
			return CLI_EXIT_FAIL;
		}
		close(fd);
		/* The program may change directory: the preloads get the full path. */
		if (path[0] != '/') {
			char real[PATH_MAX];
			if (realpath(json_path, real))
				snprintf(path, sizeof(path), "%s", real);
		}
	} else if (callers && *callers && strlen(callers) < sizeof(path)) {
		snprintf(path, sizeof(path), "%s", callers);
		struct stat sb;
		if (!stat(path, &sb))
			from = (long)sb.st_size;
	} else {
		keep = 0;
		const char *tmpdir = getenv("TMPDIR");
		snprintf(path, sizeof(path), "%s/bypass-stats-XXXXXX",
			 tmpdir && *tmpdir ? tmpdir : "/tmp");
		int fd = mkstemp(path);
		if (fd < 0) {
			fprintf(stderr, "bypass run: cannot create %s for the counters: %s\n", path,
				strerror(errno));
			return CLI_EXIT_FAIL;
		}
		close(fd);
	}
	setenv("BYPASS_STATS_FILE", path, 1);
	FILE *rep = NULL;
	if (report && report_path) {
		rep = fopen(report_path, "we");
		if (!rep) {
			fprintf(stderr, "bypass run: --report %s: %s\n", report_path, strerror(errno));
			if (!keep)
				unlink(path);
			return CLI_EXIT_FAIL;
		}
	}

	/* Like system(): the program gets the terminal's signals, we wait. */
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit, oterm, ohup;
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	/* SIGTERM/SIGHUP wait (blocked) until the program's pid is known */
	sigset_t fwdset, omask;
	sigemptyset(&fwdset);
	sigaddset(&fwdset, SIGTERM);
	sigaddset(&fwdset, SIGHUP);
	sigprocmask(SIG_BLOCK, &fwdset, &omask);
	struct sigaction fwd = { .sa_handler = forward, .sa_flags = SA_RESTART };
	sigemptyset(&fwd.sa_mask);
	sigaction(SIGTERM, &fwd, &oterm);
	sigaction(SIGHUP, &fwd, &ohup);
	double t0 = cli_now();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bypass run: fork: %s\n", strerror(errno));
		sigprocmask(SIG_SETMASK, &omask, NULL);
		if (!keep)
			unlink(path);
		if (rep)
			fclose(rep);
		return CLI_EXIT_FAIL;
	}
	if (pid == 0) {
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		sigaction(SIGTERM, &oterm, NULL);
		sigaction(SIGHUP, &ohup, NULL);
		sigprocmask(SIG_SETMASK, &omask, NULL);
		execvp(prog[0], prog);
		_exit(exec_failed(prog[0]));
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &omask, NULL);

	/* Wait, sampling the tree every tick: a pidfd wakes us at its exit. */
	struct cli_monitor mon;
	uint64_t budget_bytes = pager ? strtoull(budget, NULL, 10) : 0;
	cli_mon_init(&mon, pid, budget_bytes, status);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int st = 0;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (report || status)
			cli_mon_tick(&mon);
		if (pfd >= 0) {
			struct pollfd pf = { .fd = pfd, .events = POLLIN };
			poll(&pf, 1, (int)(mon.interval * 1000));
		} else {
			struct timespec ts = { 0, (long)(mon.interval * 1e9) };
			nanosleep(&ts, NULL);
		}
	}
	double wall = cli_now() - t0;
	if (pfd >= 0)
		close(pfd);
	cli_mon_clear(&mon);
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (stats)
		stats_print(path, from);
	if (report) {
		struct rusage ru;
		struct cli_run_facts f = {
			.batch = batch, .pager = pager != NULL, .budget = budget_bytes, .swap = swap,
			.wall_s = wall, .mon = &mon,
		};
		if (!getrusage(RUSAGE_CHILDREN, &ru))
			f.largest_rss = (uint64_t)ru.ru_maxrss * 1024;
		int n = cli_report(rep ? rep : stderr, path, from, &f);
		if (!n && !stats)
			fprintf(rep ? rep : stderr,
				"bypass: no counters were written (a preload writes them when a process "
				"that used it exits normally; a statically linked program, or one killed "
				"by a signal, writes none)\n");
	}
	if (rep)
		fclose(rep);
	if (!keep)
		unlink(path);
	return code;
}

/* ------------------------------------------------------------ bench */

int cli_bench(int argc, char **argv)
{
	char path[PATH_MAX * 4];
	if (cli_find("bypass-bench", path, sizeof(path))) {
		fprintf(stderr, "bypass bench: bypass-bench is not built or installed "
			"(looked for %s)\n", path);
		return CLI_EXIT_FAIL;
	}
	argv[0] = path;
	execv(path, argv);
	fprintf(stderr, "bypass bench: %s: %s\n", path, strerror(errno));
	return CLI_EXIT_FAIL;
}
