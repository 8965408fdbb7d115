/* SPDX-License-Identifier: MIT */
/*
 * bypass-bench: run each source document's experiment, baselines beside
 * bypass in the same run, print side-by-side tables and write JSON.
 *
 *   bypass-bench [<module>|all] [--quick|--full|--smoke] [--json FILE]
 *                [--rounds N] [--cpus A,B] [--param name=value ...]
 *                [--disturbed-at F] [--reruns N]
 *   bypass-bench --compare A.json B.json [--floors]
 */
#include "bench.h"
#include "bench_internal.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Each module's experiment; weak, so a module not built yet is reported. */
#define BENCH_MODULES(X) X(notify) X(batch) X(syslet) X(ipc) X(pager)
#define DECLARE(m) extern int bench_##m(struct bench_ctx *c) __attribute__((weak));
BENCH_MODULES(DECLARE)
#define ENTRY(m) { #m, bench_##m },
static const struct {
	const char *name;
	int (*fn)(struct bench_ctx *);
} modules[] = { BENCH_MODULES(ENTRY) };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bypass-bench [<module>|all] [options]   (no module: all)\n"
		"       bypass-bench --compare A.json B.json [--floors]\n"
		"modules:");
	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++)
		fprintf(f, " %s%s", modules[i].name, modules[i].fn ? "" : "(not built)");
	fprintf(f,
		"\noptions:\n"
		"  --quick          the quick suite (make bench: within 300 s on 2 cores)\n"
		"  --full           the full suite, the source documents' sizes (the default;\n"
		"                   make bench-full)\n"
		"  --smoke          tiny sizes: proves the experiments run (CI)\n"
		"  --json FILE      write every row, note and target as JSON\n"
		"  --rounds N       alternation rounds per experiment (default 5, the fewest a\n"
		"                   verdict takes; --smoke: 2)\n"
		"  --cpus A,B       the two CPUs for cross-core experiments\n"
		"  --param K=V      experiment parameter (see docs/BENCHMARKS.md)\n"
		"  --disturbed-at F a round in which other processes took more than F of a\n"
		"                   CPU is disturbed (default 0.10)\n"
		"  --reruns N       run a disturbed round again up to N times (default 2; 0 in\n"
		"                   --smoke), half a table's rounds at most; still disturbed:\n"
		"                   its table's targets are not resolved\n"
		"  --compare A B    two runs' JSON side by side, each ratio with its interval\n"
		"                   (tools/report.py --compare)\n"
		"  --floors         with --compare: whether a floor row of its table (limit,\n"
		"                   baseline, base) explains each row that moved\n"
		"  --quiet-check S  watch the machine for S seconds, say how much CPU other\n"
		"                   processes took, exit 1 if a round would count as disturbed\n");
}

/* ------------------------------------------------------------------ JSON */

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.6g", v);
}

static char *read_first_line_matching(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char line[512];
	char *res = NULL;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, strlen(key))) {
			char *p = strchr(line, ':');
			if (!p)
				continue;
			p++;
			while (*p == ' ' || *p == '\t')
				p++;
			p[strcspn(p, "\n")] = 0;
			res = strdup(p);
			break;
		}
	}
	fclose(f);
	return res;
}

/* -------------------------------------------------------------- provenance */

/* The first line a shell command prints (trailing newline removed), or NULL. */
static char *command_line(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	char buf[256];
	char *res = fgets(buf, sizeof(buf), p) ? strdup(buf) : NULL;
	while (fgets(buf, sizeof(buf), p))
		;
	if (pclose(p) != 0) {
		free(res);
		return NULL;
	}
	if (res)
		res[strcspn(res, "\n")] = 0;
	return res;
}

/* A one-line file's contents (a sysctl, a sysfs knob), or NULL. */
static char *file_line(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char buf[256];
	char *res = fgets(buf, sizeof(buf), f) ? strdup(buf) : NULL;
	fclose(f);
	if (res)
		res[strcspn(res, "\n")] = 0;
	return res;
}

/* The commit of the source tree and whether it differs from it, taken when
 * the run starts (a tree edited during the run still reads as it was). */
static char *git_commit;
static int git_dirty = -1; /* -1: unknown (no git, not a work tree) */
static int git_dirty_files; /* changed tracked + untracked compiled files */
static char *git_dirty_list; /* the first 20 of them, space-separated */
static char *load_start;   /* /proc/loadavg when the run started */

static void provenance_start(void)
{
	char cmd[1200];
	const char *src = bench_source_dir();
	load_start = file_line("/proc/loadavg");
	if (strchr(src, '\''))
		return;
	snprintf(cmd, sizeof(cmd), "git -C '%s' rev-parse HEAD 2>/dev/null", src);
	git_commit = command_line(cmd);
	if (!git_commit)
		return;
	/* Tracked files changed, and untracked files the build compiles
	 * anyway: CMake globs *.c (src/, bench/, tests/, preload/, cli/), and
	 * headers, CMake files and the version script reach the build too. */
	snprintf(cmd, sizeof(cmd),
		 "git -C '%s' status --porcelain --untracked-files=all 2>/dev/null | "
		 "awk '$1 != \"??\" || $2 ~ /(\\.[chS]|CMakeLists\\.txt|\\.cmake|\\.map|\\.in)$/' | "
		 "awk '{ n++; if (n <= 20) l = l (n > 1 ? \" \" : \"\") $NF } "
		 "END { printf \"%%d %%s\\n\", n, l }'", src);
	char *n = command_line(cmd);
	if (n) {
		git_dirty_files = atoi(n);
		git_dirty = git_dirty_files > 0;
		char *sp = strchr(n, ' ');
		if (sp && sp[1])
			git_dirty_list = strdup(sp + 1);
	}
	free(n);
}

static const struct {
	const char *key, *path;
} kernel_facts[] = {
	{ "vm.page-cluster", "/proc/sys/vm/page-cluster" },
	{ "vm.swappiness", "/proc/sys/vm/swappiness" },
	{ "mglru", "/sys/kernel/mm/lru_gen/enabled" },
	{ "thp.enabled", "/sys/kernel/mm/transparent_hugepage/enabled" },
	{ "thp.defrag", "/sys/kernel/mm/transparent_hugepage/defrag" },
	{ "zswap.enabled", "/sys/module/zswap/parameters/enabled" },
	{ "kernel.io_uring_disabled", "/proc/sys/kernel/io_uring_disabled" },
	{ "cpufreq.governor", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor" },
};

/* A CPU's topology file (core_id, thread_siblings_list ...), or NULL. */
static char *cpu_topo(int cpu, const char *name)
{
	char path[160];
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/%s", cpu, name);
	return file_line(path);
}

/*
 * Where the two CPUs of the cross-core experiments sit: a cache line's round
 * trip between SMT siblings (one core, its L1/L2) is several times shorter
 * than between cores, and between cores than between packages, so every
 * "x the limit" depends on it.
 */
static void write_pair(FILE *f, int a, int b)
{
	char *pa = cpu_topo(a, "topology/physical_package_id");
	char *pb = cpu_topo(b, "topology/physical_package_id");
	char *ca = cpu_topo(a, "topology/core_id"), *cb = cpu_topo(b, "topology/core_id");
	char *sib = cpu_topo(a, "topology/thread_siblings_list");
	char *llc = cpu_topo(a, "cache/index3/shared_cpu_list");
	char *llcb = cpu_topo(b, "cache/index3/shared_cpu_list");
	const char *rel = "unknown";
	if (a == b)
		rel = "the same CPU";
	else if (pa && pb && ca && cb) {
		if (strcmp(pa, pb))
			rel = "different packages";
		else if (!strcmp(ca, cb))
			rel = "SMT siblings (one core)";
		else if (llc && llcb && !strcmp(llc, llcb))
			rel = "different cores sharing the last-level cache";
		else
			rel = "different cores, different last-level caches";
	}
	fprintf(f, "    \"cpu_pair\": {\"cpus\": [%d, %d], \"relation\": ", a, b);
	json_str(f, rel);
	fprintf(f, ", \"a_thread_siblings\": ");
	json_str(f, sib);
	fprintf(f, ", \"a_llc_shared_with\": ");
	json_str(f, llc);
	fprintf(f, "},\n");
	free(pa);
	free(pb);
	free(ca);
	free(cb);
	free(sib);
	free(llc);
	free(llcb);
}

static void write_provenance(FILE *f, struct bench_ctx *c, const char *model)
{
	extern char **environ;
	fprintf(f, "  \"provenance\": {\"git_commit\": ");
	json_str(f, git_commit);
	fprintf(f, ", \"git_dirty\": %s, \"git_dirty_files\": %d, \"git_dirty_list\": ",
		git_dirty < 0 ? "null" : git_dirty ? "true" : "false", git_dirty_files);
	json_str(f, git_dirty_list);
	fprintf(f, ",\n    \"env\": {");
	bool first = true;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (strncmp(*e, "BYPASS_", 7) || !eq)
			continue;
		char *k = strndup(*e, (size_t)(eq - *e));
		fprintf(f, "%s", first ? "" : ", ");
		json_str(f, k);
		fprintf(f, ": ");
		json_str(f, eq + 1);
		free(k);
		first = false;
	}
	fprintf(f, "},\n    \"kernel\": {");
	for (size_t i = 0; i < sizeof(kernel_facts) / sizeof(kernel_facts[0]); i++) {
		char *v = file_line(kernel_facts[i].path);
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, kernel_facts[i].key);
		fprintf(f, ": ");
		/* absent: the kernel has no such knob (MGLRU not built, no zswap) */
		json_str(f, v ? v : "absent");
		free(v);
	}
	fprintf(f, "},\n    \"cpu\": {\"model\": ");
	json_str(f, model);
	fprintf(f, ", \"online\": %ld, \"configured\": %ld, \"usable\": %d},\n",
		sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF), c->ncpus);
	write_pair(f, c->cpu_a, c->cpu_b);
	/* Other work on the machine moves every figure, the limits too. */
	char *load_end = file_line("/proc/loadavg");
	fprintf(f, "    \"loadavg_start\": ");
	json_str(f, load_start);
	fprintf(f, ", \"loadavg_end\": ");
	json_str(f, load_end);
	fprintf(f, ",\n");
	free(load_end);
	fprintf(f, "    \"facts\": {");
	for (size_t i = 0; i < c->nfacts; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, c->fact_keys[i]);
		fprintf(f, ": ");
		json_str(f, c->fact_vals[i]);
	}
	fprintf(f, "}},\n");
}

static void json_quiet(FILE *f, const struct bench_ctx *c, const struct bench_quiet *q)
{
	char line[900];
	bench_quiet_line(line, sizeof(line), c, q);
	fprintf(f, "{\"measured\": %s, \"rounds\": %d, \"disturbed_rounds\": %d, "
		"\"reruns\": %d, \"judged_alone\": %d, \"short_rounds\": %d, "
		"\"short_judged_over\": \"%s\", \"short_disturbed\": %s, \"too_short\": %s, "
		"\"disturbed\": %s, \"judge_min_seconds\": ", q->spans ? "true" : "false",
		q->rounds, q->disturbed, q->reruns, q->judged_alone, q->short_rounds,
		!q->short_rounds ? "none" : q->too_short ? "not judged" :
		q->pool_span ? "the table's span" : "the short rounds",
		q->pool_disturbed ? "true" : "false", q->too_short ? "true" : "false",
		q->disturbed || q->pool_disturbed ? "true" : "false");
	json_num(f, bench_quiet_min_s(c));
	fprintf(f, ", \"floor_ticks\": ");
	json_num(f, BENCH_QUIET_FLOOR_TICKS);
	fprintf(f, ", \"short_other_cpu\": ");
	json_num(f, q->short_rounds && !q->too_short ? q->pool_share : NAN);
	fprintf(f, ", \"short_seconds\": ");
	json_num(f, q->short_rounds ? q->pool_wall : NAN);
	fprintf(f, ", \"seconds\": ");
	json_num(f, q->wall);
	fprintf(f, ", \"other_cpu_mean\": ");
	json_num(f, q->wall > 0 ? q->other_s / q->wall : NAN);
	fprintf(f, ", \"other_cpu_max\": ");
	json_num(f, q->spans ? q->other_max : NAN);
	fprintf(f, ", \"own_cpu_seconds\": ");
	json_num(f, q->own_s);
	fprintf(f, ", \"steal_mean\": ");
	json_num(f, q->wall > 0 ? q->steal_s / q->wall : NAN);
	fprintf(f, ", \"loadavg_min\": ");
	json_num(f, q->spans ? q->load_min : NAN);
	fprintf(f, ", \"loadavg_max\": ");
	json_num(f, q->spans ? q->load_max : NAN);
	fprintf(f, ", \"threshold\": ");
	json_num(f, c->disturbed_at);
	fprintf(f, ", \"line\": ");
	json_str(f, line);
	fprintf(f, "}");
}

static struct bench_quiet run_quiet; /* the whole run, start to end */
static char *run_command;
static double run_seconds;

static void write_json(const char *path, struct bench_ctx *c, const char *what)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	struct utsname u;
	uname(&u);
	char *model = read_first_line_matching("/proc/cpuinfo", "model name");
	char date[64];
	time_t now = time(NULL);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "{\n  \"tool\": \"bypass-bench\",\n  \"version\": ");
	json_str(f, bypass_version());
	fprintf(f, ",\n  \"date\": ");
	json_str(f, date);
	fprintf(f, ",\n  \"modules\": ");
	json_str(f, what);
	fprintf(f, ",\n  \"mode\": ");
	json_str(f, c->smoke ? "smoke" : c->quick ? "quick" : "full");
	fprintf(f, ",\n  \"rounds\": %d,\n  \"seconds\": ", c->rounds);
	json_num(f, run_seconds);
	fprintf(f, ",\n  \"command\": ");
	json_str(f, run_command);
	fprintf(f, ",\n  \"quiet\": ");
	json_quiet(f, c, &run_quiet);
	fprintf(f, ",\n  \"machine\": {\"cpu_model\": ");
	json_str(f, model);
	fprintf(f, ", \"kernel\": ");
	json_str(f, u.release);
	fprintf(f, ", \"arch\": ");
	json_str(f, u.machine);
	fprintf(f, ", \"cores\": %d, \"tsc_hz\": %llu, \"cpus_used\": [%d, %d]},\n",
		c->ncpus, (unsigned long long)bypass_tsc_hz(), c->cpu_a, c->cpu_b);
	write_provenance(f, c, model);
	free(model);
	fprintf(f, "  \"experiments\": [");
	bool first = true;
	for (struct bench_exp *e = c->first; e; e = e->next) {
		fprintf(f, "%s\n    {\"id\": ", first ? "" : ",");
		first = false;
		json_str(f, e->id);
		fprintf(f, ", \"title\": ");
		json_str(f, e->title);
		fprintf(f, ", \"ratio_base\": ");
		json_str(f, e->ratio_base);
		fprintf(f, ", \"skipped\": ");
		json_str(f, e->skipped);
		fprintf(f, ", \"ratio_rule\": ");
		json_str(f, bench_ratio_rule(e));
		fprintf(f, ", \"seconds\": ");
		json_num(f, e->seconds);
		fprintf(f, ",\n     \"quiet\": ");
		json_quiet(f, c, &e->quiet);
		fprintf(f, ",\n     \"rows\": [");
		for (size_t i = 0; i < e->nrows; i++) {
			struct bench_row *r = &e->rows[i];
			fprintf(f, "%s\n       {\"variant\": ", i ? "," : "");
			json_str(f, r->variant);
			fprintf(f, ", \"kind\": ");
			json_str(f, r->kind);
			fprintf(f, ", \"unit\": ");
			json_str(f, r->unit);
			fprintf(f, ", \"higher_is_better\": %s", bench_row_is_rate(r) ? "true" : "false");
			fprintf(f, ", \"n\": %zu, \"median\": ", r->s.n);
			json_num(f, r->s.median);
			fprintf(f, ", \"mean\": ");
			json_num(f, r->s.mean);
			fprintf(f, ", \"p99\": ");
			json_num(f, r->s.p99);
			fprintf(f, ", \"min\": ");
			json_num(f, r->s.min);
			fprintf(f, ", \"max\": ");
			json_num(f, r->s.max);
			if (r->unit && !strcmp(r->unit, "cycles")) {
				fprintf(f, ", \"median_ns\": ");
				json_num(f, bench_cycles_to_ns(r->s.median));
				fprintf(f, ", \"mean_ns\": ");
				json_num(f, bench_cycles_to_ns(r->s.mean));
				fprintf(f, ", \"p99_ns\": ");
				json_num(f, bench_cycles_to_ns(r->s.p99));
			}
			fprintf(f, ", \"ratio\": ");
			json_num(f, r->ratio);
			fprintf(f, ", \"is_base\": %s", r->is_base ? "true" : "false");
			if (r->ci_lo != 0 || r->ci_hi != 0) {
				fprintf(f, ", \"ratio_ci\": [");
				json_num(f, r->ci_lo);
				fprintf(f, ", ");
				json_num(f, r->ci_hi);
				fprintf(f, "], \"ratio_ci_rounds\": %d", r->ci_n);
				if (r->ci_n > 0)
					fprintf(f, ", \"ratio_method\": \"%s\"",
						bench_ci_name(r->ci_method));
			}
			fprintf(f, ", \"source\": ");
			json_str(f, r->source);
			fprintf(f, ", \"note\": ");
			json_str(f, r->note);
			fprintf(f, ", \"params\": %s}", r->params ? r->params : "null");
		}
		fprintf(f, "],\n     \"notes\": [");
		for (size_t i = 0; i < e->nnotes; i++) {
			fprintf(f, "%s", i ? ", " : "");
			json_str(f, e->notes[i]);
		}
		fprintf(f, "],\n     \"failures\": [");
		for (size_t i = 0; i < e->nfailures; i++) {
			fprintf(f, "%s", i ? ", " : "");
			json_str(f, e->failures[i]);
		}
		fprintf(f, "],\n     \"targets\": [");
		for (size_t i = 0; i < e->ntargets; i++) {
			struct bench_tgt *t = &e->targets[i];
			fprintf(f, "%s{\"what\": ", i ? ", " : "");
			json_str(f, t->what);
			fprintf(f, ", \"value\": ");
			json_num(f, t->value);
			fprintf(f, ", \"op\": ");
			json_str(f, t->op);
			fprintf(f, ", \"goal\": ");
			json_num(f, t->goal);
			bool ci = !t->exact && (t->ci_lo != 0 || t->ci_hi != 0);
			if (ci) {
				fprintf(f, ", \"ci\": [");
				json_num(f, t->ci_lo);
				fprintf(f, ", ");
				json_num(f, t->ci_hi);
				/* a 95% interval from 5 rounds up; below, the range */
				fprintf(f, "], \"ci_kind\": \"%s\", \"method\": \"%s\"",
					t->n >= BENCH_MIN_ROUNDS ? "95%" : "range",
					bench_ci_name((enum bench_ci_method)t->method));
			}
			fprintf(f, ", \"%s\": %d, \"planned\": %d", t->exact ? "runs" : "rounds",
				t->n, t->planned);
			bool resolved = t->verdict == BV_MET || t->verdict == BV_NOT_MET;
			char vb[200];
			fprintf(f, ", \"met\": %s, \"resolved\": %s, \"verdict\": ",
				t->verdict == BV_MET ? "true" : "false", resolved ? "true" : "false");
			json_str(f, bench_tgt_verdict(t, vb, sizeof(vb)));
			fprintf(f, ", \"value_meets_goal\": %s, \"exact\": %s, \"timing\": %s}",
				t->met ? "true" : "false", t->exact ? "true" : "false",
				t->exact || t->why ? "false" : "true");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n  ]\n}\n");
	fclose(f);
}

/* ------------------------------------------------------------------ main */

/* bypass-bench --compare A.json B.json [--floors]: tools/report.py does it
 * (Python is the report tooling's language). */
static int compare(const char *a, const char *b, bool floors)
{
	char py[600];
	snprintf(py, sizeof(py), "%s/tools/report.py", bench_source_dir());
	if (access(py, R_OK)) {
		fprintf(stderr, "bypass-bench --compare: %s not found (it renders the comparison; "
			"set BYPASS_SOURCE to the source tree)\n", py);
		return 1;
	}
	const char *python = access("/usr/bin/python3", X_OK) ? "python3" : "/usr/bin/python3";
	fflush(NULL);
	execlp(python, python, py, "--compare", a, b, floors ? "--floors" : (char *)NULL,
	       (char *)NULL);
	fprintf(stderr, "bypass-bench --compare: %s: %s\n", python, strerror(errno));
	return 1;
}

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 3;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		const char *name = i ? argv[i] : "bypass-bench";
		bool q = strpbrk(name, " \t'\"") != NULL;
		p += sprintf(p, "%s%s%s%s", i ? " " : "", q ? "'" : "", name, q ? "'" : "");
	}
	return s;
}

int main(int argc, char **argv)
{
	struct bench_ctx c = { .rounds = BENCH_MIN_ROUNDS, .out = stdout, .cpu_a = 0, .cpu_b = 1,
			       .disturbed_at = 0.10, .reruns = -1 };
	const char *json = NULL;
	bool compare_mode = false, floors = false;
	double quiet_check = 0;
	static const struct option opts[] = {
		{ "quick", no_argument, 0, 'q' },  { "smoke", no_argument, 0, 's' },
		{ "full", no_argument, 0, 'f' },
		{ "json", required_argument, 0, 'j' }, { "rounds", required_argument, 0, 'r' },
		{ "cpus", required_argument, 0, 'c' }, { "param", required_argument, 0, 'p' },
		{ "disturbed-at", required_argument, 0, 'd' },
		{ "reruns", required_argument, 0, 'R' },
		{ "compare", no_argument, 0, 'C' }, { "floors", no_argument, 0, 'F' },
		{ "quiet-check", required_argument, 0, 'Q' },
		{ "help", no_argument, 0, 'h' },   { 0, 0, 0, 0 }
	};
	run_command = join_args(argc, argv);
	int o;
	while ((o = getopt_long(argc, argv, "qsfj:r:c:p:h", opts, NULL)) != -1) {
		switch (o) {
		case 'q': c.quick = true; break;
		case 's': c.smoke = c.quick = true; break;
		case 'f': c.quick = c.smoke = false; break;
		case 'j': json = optarg; break;
		case 'r': c.rounds = atoi(optarg); c.rounds_set = true; break;
		case 'd': c.disturbed_at = atof(optarg); break;
		case 'R': c.reruns = atoi(optarg); break;
		case 'C': compare_mode = true; break;
		case 'F': floors = true; break;
		case 'Q': quiet_check = atof(optarg); break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &c.cpu_a, &c.cpu_b) != 2) {
				usage(stderr);
				return 2;
			}
			break;
		case 'p':
			if (!strchr(optarg, '=')) {
				usage(stderr);
				return 2;
			}
			c.params = realloc(c.params, (c.nparams + 1) * sizeof(char *));
			c.params[c.nparams++] = optarg;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (compare_mode) {
		if (optind != argc - 2) {
			usage(stderr);
			return 2;
		}
		return compare(argv[optind], argv[optind + 1], floors);
	}
	if (optind < argc - 1 || c.rounds < 1 || !(c.disturbed_at > 0) || c.reruns < -1) {
		usage(stderr);
		return 2;
	}
	if (c.reruns < 0)
		c.reruns = c.smoke ? 0 : 2;
	if (c.smoke && !c.rounds_set)
		c.rounds = 2; /* proves it runs: no verdict needs it */
	if (quiet_check > 0) {
		/* how quiet the machine is now, before a run: exit 1 if disturbed */
		struct bench_snap a, b;
		struct bench_quiet q = { 0 };
		double frac;
		c.ncpus = bench_ncpus();
		bench_snap_take(&a);
		struct timespec ts = { (time_t)quiet_check,
				       (long)((quiet_check - (double)(time_t)quiet_check) * 1e9) };
		nanosleep(&ts, NULL);
		bench_snap_take(&b);
		bool d = bench_quiet_add(&c, &q, &a, &b, &frac);
		q.rounds = 1;
		q.disturbed = d;
		char line[900];
		bench_quiet_line(line, sizeof(line), &c, &q);
		printf("the last %.0f s: %s\n", quiet_check, line);
		return d ? 1 : 0;
	}
	const char *what = optind < argc ? argv[optind] : "all";
	int ncpu = bench_ncpus();
	c.ncpus = ncpu;
	cpu_set_t all_cpus;
	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
	if (ncpu < 2) {
		c.cpu_b = c.cpu_a;
		fprintf(c.out, "note: one CPU only: cross-core experiments share it\n");
	}
	bool all = !strcmp(what, "all"), found = all;
	uint64_t hz = bypass_tsc_hz();
	provenance_start();
	bench_snap_take(&c.run_start);
	fprintf(c.out, "bypass-bench %s: %s mode, %d rounds, CPUs %d,%d of %d, TSC %.3f GHz\n",
		bypass_version(), c.smoke ? "smoke" : c.quick ? "quick" : "full", c.rounds,
		c.cpu_a, c.cpu_b, ncpu, (double)hz / 1e9);
	fprintf(c.out, "source: commit %.12s%s\n", git_commit ? git_commit : "unknown",
		git_dirty > 0 ? " with uncommitted changes (dirty)" : git_dirty == 0 ? " (clean)" : "");
	fprintf(c.out, "load average at start: %s; a round in which other processes take more "
		"than %.0f%% of a CPU is run again (up to %d times)\n",
		load_start ? load_start : "?", 100 * c.disturbed_at, c.reruns);
	int status = 0;
	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
		if (!all && strcmp(what, modules[i].name))
			continue;
		found = true;
		if (!modules[i].fn) {
			fprintf(c.out, "\n== %s: not built yet\n", modules[i].name);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		c.mark = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
		bench_snap_take(&c.mark_snap);
		c.link = NULL;
		int r = modules[i].fn(&c);
		if (c.cur)
			bench_end(&c); /* a table the module left open */
		bench_flush_failures(&c, modules[i].name);
		memset(&c.pend, 0, sizeof(c.pend));
		/* An experiment may have pinned this thread: undo it. */
		sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
		if (r != 0 && r != BENCH_SKIP) {
			fprintf(stderr, "bypass-bench: %s failed (%d)\n", modules[i].name, r);
			status = 1;
		}
	}
	if (!found) {
		fprintf(stderr, "bypass-bench: no module '%s'\n", what);
		usage(stderr);
		return 2;
	}
	{
		struct bench_snap end;
		double frac;
		bench_snap_take(&end);
		bench_quiet_add(&c, &run_quiet, &c.run_start, &end, &frac);
		run_seconds = end.wall - c.run_start.wall;
		for (struct bench_exp *e = c.first; e; e = e->next) {
			run_quiet.rounds += e->quiet.rounds;
			run_quiet.disturbed += e->quiet.disturbed;
			if (e->quiet.pool_disturbed && !e->same_runs)
				run_quiet.disturbed += e->quiet.short_rounds;
			run_quiet.reruns += e->quiet.reruns;
			if (e->quiet.other_max > run_quiet.other_max)
				run_quiet.other_max = e->quiet.other_max;
		}
	}
	/* One summary of the targets, across experiments. */
	size_t nt = 0, nv[BV_COUNT] = { 0 };
	for (struct bench_exp *e = c.first; e; e = e->next) {
		bench_judge(&c, e); /* failures may have arrived after its table */
		for (size_t i = 0; i < e->ntargets; i++, nt++)
			nv[e->targets[i].verdict]++;
	}
	char q[900];
	bench_quiet_line(q, sizeof(q), &c, &run_quiet);
	fprintf(c.out, "\nquiet (the whole run, %.0f s): %s\n", run_seconds, q);
	if (nt) {
		fprintf(c.out, "targets met: %zu of %zu", nv[BV_MET], nt);
		for (int v = BV_NOT_MET; v < BV_COUNT; v++)
			if (nv[v])
				fprintf(c.out, "; %s: %zu", bench_verdict_str((enum bench_verdict)v),
					nv[v]);
		fprintf(c.out, " (see each table)\n");
	}
	if (json) {
		write_json(json, &c, what);
		fprintf(c.out, "JSON written to %s\n", json);
	}
	if (c.quick && !c.smoke) {
		fprintf(c.out, "\nThis was the quick suite (smaller sizes, fewer rounds: %.0f s). "
			"The full suite, at the sizes docs/BENCHMARKS.md publishes:\n"
			"  make bench-full      (or: bypass bench --full, bypass-bench all)\n",
			run_seconds);
		if (all && run_seconds > 300)
			fprintf(c.out, "The quick suite took %.0f s, over its 300 s budget (bench/bench.h "
				"gives each module's share; each table's seconds are on its quiet: "
				"line)%s\n", run_seconds,
				run_quiet.disturbed ? ": the machine was not quiet" : "");
	}
	if (c.nfailed) {
		fprintf(stderr, "bypass-bench: %d variant%s failed (see FAILED lines)\n", c.nfailed,
			c.nfailed == 1 ? "" : "s");
		status = 1;
	}
	bench_free(&c);
	free(c.params);
	free(git_commit);
	free(git_dirty_list);
	free(load_start);
	free(run_command);
	return status;
}
