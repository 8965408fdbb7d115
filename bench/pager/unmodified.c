/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified: issue 11's experiment 3.  Unmodified programs with a
 * memory budget well below their footprint, under libbypass-pager.so (the
 * preload, upcall mode) against the same program under Linux swap in a
 * memory cgroup of the same size:
 *
 *   syscalls  a C program doing large mallocs with reads and writes through
 *             system calls: read() of a file into a malloc'd buffer, a
 *             second buffer built from it, grown with realloc, written out
 *             with write(), random updates, pread() back, a checksum;
 *   sort      GNU sort (LC_ALL=C) of a generated file larger than the budget;
 *   python    a Python program whose memory is mostly small objects (a list
 *             of ints read twice in order, and a second list from a slice);
 *   sqlite    an in-memory SQLite database with a cache as large as it
 *             (Python's sqlite3 module): a table and an index built, then
 *             a range query and a sorted read.
 *
 * Both sides at a budget of about 40% of the program's footprint (its peak
 * resident set without a limit, measured by the reference run and
 * reported); for each: wall time, the peak resident set of the whole
 * process (wait4's rusage), swap-ins (pages read from swap per run, Linux:
 * pswpin; bypass: the bytes it read, readahead included), identical output.  Issue 20's targets: the preload's peak at
 * most budget + 32 MiB, its time and swap-ins at most Linux's (sort,
 * python, sqlite).
 *
 * Both sides produce byte-identical output (checked against a run with no
 * limit); the time of each run is the row (lower is better).  Each side
 * runs in a fresh process, alternately, every round.
 *
 * The C program is this binary itself: a constructor runs it (and exits)
 * before bypass-bench's main when BYPASS_BENCH_UNMODIFIED_PROG is set, so
 * it is an ordinary program that never calls bypass; the preload is what
 * pages it.
 */
#include "pager_bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ the C program */

static int prog_fail(const char *what)
{
	fprintf(stderr, "unmodified program: %s: %s\n", what, strerror(errno));
	_exit(2);
}

/*
 * BYPASS_BENCH_UNMODIFIED_PROG=<input> <output> <bytes> <updates>: only
 * libc, only malloc and system calls.
 */
static void prog_main(const char *spec)
{
	char in[512], out[512];
	unsigned long long size, updates;
	if (sscanf(spec, "%511s %511s %llu %llu", in, out, &size, &updates) != 4)
		_exit(3);
	size_t n = (size_t)size, grow = n / 4;
	unsigned char *a = malloc(n);
	if (!a)
		prog_fail("malloc");
	int fd = open(in, O_RDONLY);
	if (fd < 0)
		prog_fail(in);
	for (size_t done = 0; done < n;) { /* one read() asks for it all */
		ssize_t r = read(fd, a + done, n - done);
		if (r <= 0)
			prog_fail("read");
		done += (size_t)r;
	}
	close(fd);
	unsigned char *b = malloc(n);
	if (!b)
		prog_fail("malloc");
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(a[n - 1 - i] ^ 0x5a);
	b = realloc(b, n + grow);
	if (!b)
		prog_fail("realloc");
	for (size_t i = 0; i < grow; i++)
		b[n + i] = (unsigned char)(a[i] + b[i]);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (unsigned long long k = 0; k < updates; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t i = (size_t)(x % n);
		a[i] = (unsigned char)(a[i] + b[(i * 7) % (n + grow)]);
	}
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		prog_fail(out);
	if (write(fd, b, n + grow) != (ssize_t)(n + grow) ||
	    pwrite(fd, a, n, (off_t)(n + grow)) != (ssize_t)n)
		prog_fail("write");
	/* read the first part back over b and compare with what was written */
	unsigned char *c = malloc(n);
	if (!c)
		prog_fail("malloc");
	if (pread(fd, c, n, 0) != (ssize_t)n)
		prog_fail("pread");
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i] != b[i]) {
			errno = EIO;
			prog_fail("the file does not hold what was written");
		}
		sum = sum * 31 + a[i];
	}
	close(fd);
	free(c);
	free(b);
	free(a);
	printf("%016llx\n", (unsigned long long)sum);
	exit(0); /* not _exit: the preload writes its statistics at exit */
}

__attribute__((constructor)) static void prog_hook(void)
{
	const char *spec = getenv("BYPASS_BENCH_UNMODIFIED_PROG");
	if (spec && *spec)
		prog_main(spec);
}

/* ------------------------------------------------------------ the experiment */

enum { W_SYSCALLS, W_SORT, W_PYTHON, W_SQLITE, W_N };
static const char *w_name[W_N] = { "C program (malloc + read/write)", "sort",
				   "python (small objects)", "sqlite (in memory)" };
static const char *w_key[W_N] = { "syscalls", "sort", "python", "sqlite" };

/* The Python programs: argv[1] sizes them; stdout is the result. */
static const char py_objects[] =
	"import sys\n"
	"n = int(sys.argv[1])\n"
	"a = [i * 3 for i in range(n)]\n"
	"s = 0\n"
	"for p in range(2):\n"
	"    for x in a:\n"
	"        s += x\n"
	"b = [x + 1 for x in a[::7]]\n"
	"print(s, len(a), sum(b))\n";
static const char py_sqlite[] =
	"import sqlite3, sys\n"
	"n = int(sys.argv[1])\n"
	"db = sqlite3.connect(':memory:')\n"
	"db.execute('PRAGMA cache_size=-4000000')\n"
	"db.execute('CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)')\n"
	"db.executemany('INSERT INTO t VALUES(?, ?)', ((i, 'v%08d-%s' % ((i * 7919) % n, 'x' * 60))"
	" for i in range(n)))\n"
	"db.execute('CREATE INDEX tv ON t(v)')\n"
	"print(db.execute(\"SELECT count(*), sum(k % 1000), min(v), max(v) FROM t WHERE v >= "
	"'v00000500'\").fetchone())\n"
	"print(db.execute('SELECT k FROM t ORDER BY v LIMIT 5 OFFSET ?', (n // 2,)).fetchall())\n";
#define PYTHON "/usr/bin/python3"

struct sizes {
	size_t budget, prog_bytes, sort_bytes;
	uint64_t updates, py_n, sq_n;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Lines of the sort input: a pseudo-random key, a line number, a payload. */
static int make_sort_input(const char *path, size_t bytes)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	uint64_t x = 88172645463325252ull;
	size_t done = 0;
	for (unsigned long i = 0; done < bytes; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int k = fprintf(f, "%016llx %lu payload-%llu-payload-payload-payload\n",
				(unsigned long long)x, i, (unsigned long long)(x % 100000));
		if (k < 0)
			break;
		done += (size_t)k;
	}
	return fclose(f) ? -errno : 0;
}

static int make_prog_input(const char *path, size_t bytes)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	unsigned char buf[65536];
	uint64_t x = 1234567;
	int e = 0;
	for (size_t done = 0; !e && done < bytes;) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			buf[i] = (unsigned char)(x >> 56);
		}
		size_t k = bytes - done < sizeof(buf) ? bytes - done : sizeof(buf);
		if (write(fd, buf, k) != (ssize_t)k)
			e = -EIO;
		done += k;
	}
	close(fd);
	return e;
}

/* --param plant=pager.unmodified: the bypass side's output gains a byte,
 * which the comparison with the reference must catch. */
static void append_byte(const char *path)
{
	FILE *f = fopen(path, "a");
	if (f) {
		fputc('x', f);
		fclose(f);
	}
}

/* Byte-identical files? */
static bool same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
	bool same = fa && fb;
	char ba[65536], bb[65536];
	while (same) {
		size_t na = fread(ba, 1, sizeof(ba), fa), nb = fread(bb, 1, sizeof(bb), fb);
		if (na != nb || memcmp(ba, bb, na))
			same = false;
		if (!na)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

enum side { S_REF, S_LINUX, S_BYPASS };

/*
 * Run workload w on one side; its stdout goes to out.  0 and the wall time,
 * or -errno with the reason in why.
 */
static int run(enum side side, int w, const struct sizes *z, const char *dir,
	       const struct pb_linux_env *env, const char *out, double *secs,
	       long *maxrss_kb, char *why, size_t whylen)
{
	char in[400], pout[400], spec[1000], buf[64], pre[600], stats[400];
	snprintf(in, sizeof(in), "%s/%s.in", dir, w == W_SORT ? "sort" : "prog");
	snprintf(pout, sizeof(pout), "%s/prog-%d.out", dir, (int)side);
	snprintf(stats, sizeof(stats), "%s/stats", dir);
	snprintf(spec, sizeof(spec), "%s %s %zu %llu", in, pout, z->prog_bytes,
		 (unsigned long long)z->updates);
	snprintf(pre, sizeof(pre), "%s/libbypass-pager.so", bench_build_dir());
	double t0 = now_s();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		pb_cleanup_on_signal(NULL);
		if (side == S_LINUX) {
			snprintf(buf, sizeof(buf), "%d", (int)getpid());
			if (pb_write_small(env->procs, buf))
				_exit(4);
		}
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			_exit(5);
		dup2(fd, 1);
		close(fd);
		setenv("LC_ALL", "C", 1);
		if (side == S_BYPASS) {
			setenv("LD_PRELOAD", pre, 1);
			snprintf(buf, sizeof(buf), "%zu", z->budget);
			setenv("BYPASS_PAGER_BUDGET", buf, 1);
			setenv("BYPASS_PAGER_THRESHOLD", "1M", 1);
			setenv("BYPASS_PAGER_SWAP", dir, 1);
			setenv("BYPASS_STATS_FILE", stats, 1);
		}
		if (w == W_SORT) {
			/* sort's buffer: room for all of the input in one piece */
			snprintf(buf, sizeof(buf), "%zuK", (z->sort_bytes * 3) >> 10);
			execlp("sort", "sort", "-S", buf, in, (char *)NULL);
			_exit(127);
		}
		if (w == W_PYTHON || w == W_SQLITE) {
			snprintf(buf, sizeof(buf), "%llu",
				 (unsigned long long)(w == W_PYTHON ? z->py_n : z->sq_n));
			execl(PYTHON, "python3", "-c", w == W_PYTHON ? py_objects : py_sqlite,
			      buf, (char *)NULL);
			_exit(127);
		}
		setenv("BYPASS_BENCH_UNMODIFIED_PROG", spec, 1);
		execl("/proc/self/exe", "bypass-bench-unmodified", (char *)NULL);
		_exit(127);
	}
	pb_running_child = pid;
	bench_watchdog(900, "pager.unmodified: a run", pid); /* a stall fails, never hangs */
	int st;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	*maxrss_kb = ru.ru_maxrss; /* the whole process's peak resident set */
	bench_watchdog(0, NULL, 0);
	pb_running_child = 0;
	*secs = now_s() - t0;
	if (WIFSIGNALED(st)) {
		snprintf(why, whylen, "%s killed by signal %d", w_name[w], WTERMSIG(st));
		return -EINTR;
	}
	if (WEXITSTATUS(st)) {
		snprintf(why, whylen, "%s exited with %d", w_name[w], WEXITSTATUS(st));
		return -EIO;
	}
	if (w == W_SYSCALLS) { /* its output file is part of its output */
		char ref[400];
		snprintf(ref, sizeof(ref), "%s/prog-%d.out", dir, (int)S_REF);
		if (side != S_REF && !same_file(ref, pout)) {
			snprintf(why, whylen, "%s: its output file differs from the reference",
				 w_name[w]);
			return -EIO;
		}
	}
	return 0;
}

/* The sum of a counter over the stats file's lines (then the file goes). */
static uint64_t stats_take(const char *dir, const char *key, bool remove)
{
	char path[400], pat[64], line[8192];
	snprintf(path, sizeof(path), "%s/stats", dir);
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	uint64_t sum = 0;
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, pat);
		if (p)
			sum += strtoull(p + strlen(pat), NULL, 10);
	}
	if (f)
		fclose(f);
	if (remove)
		unlink(path);
	return sum;
}

/* The scratch directory and every file in it (it holds no directory). */
static void rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[800];
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* This bench, and so the preload beside it, built with AddressSanitizer. */
static bool built_with_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#else
	return false;
#endif
#else
	return false;
#endif
}

int bench_pager_unmodified(struct bench_ctx *c)
{
	const char *id = "pager.unmodified";
	struct sizes z;
	/* Below 16 MiB the Linux side is killed by the cgroup's OOM killer
	 * (the program's own pages and the page cache share the limit). */
	uint64_t budget_mib = bench_count(c, "budget_mib", 256, 16);
	if (bench_smoke(c) || budget_mib < 16)
		budget_mib = 16;
	z.budget = (size_t)budget_mib << 20;
	/* footprints of about 2.5 budgets (the budget about 40% of each
	 * program's peak; the reference run measures and reports it) */
	z.prog_bytes = z.budget * 10 / 13; /* 13/4 of it in malloc at once */
	z.sort_bytes = z.budget * 5 / 4;   /* sort's working set is about twice that */
	z.py_n = (uint64_t)(z.budget * 5 / 2) / 50;  /* ~50 bytes per int, the lists */
	z.sq_n = (uint64_t)(z.budget * 5 / 2) / 330; /* ~330 bytes per row, index too */
	z.updates = bench_count(c, "updates", 100000, 10000);
	int rounds = bench_rounds_or(c, 2, 3);
	if (bench_smoke(c)) { /* proves it runs: one round, smaller footprints */
		z.prog_bytes = z.budget / 2;
		z.sort_bytes = z.budget;
		z.py_n /= 4;
		z.sq_n /= 4;
		rounds = 1;
	}
	bool have_python = access(PYTHON, X_OK) == 0;
	int ret = 0;

	if (built_with_asan()) {
		bench_skip(c, id, "an AddressSanitizer build: its preload, instrumented, "
			   "crashes inside the uninstrumented programs (sort, python3) "
			   "without libasan loaded first; tests/pager/preload-* run them "
			   "under ASan that way and check their output");
		return 0;
	}
	char pre[600];
	snprintf(pre, sizeof(pre), "%s/libbypass-pager.so", bench_build_dir());
	if (access(pre, R_OK)) {
		bench_skip(c, id, "no %s (the preload is built with the pager module)", pre);
		return 0;
	}
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/bypass-bench-unmod-%d", pb_swapdir(c), (int)getpid());
	if (mkdir(dir, 0700)) {
		bench_skip(c, id, "mkdir %s: %s", dir, strerror(errno));
		return 0;
	}
	bench_begin(c, id, "unmodified programs at a budget below their footprint: the pager "
		    "preload vs Linux swap in a memory cgroup of the same size (seconds per run, "
		    "x baseline time, lower is better)", "Linux swap (memory cgroup)");
	char path[500], why[1024] = "", facts[1024] = "";
	snprintf(path, sizeof(path), "%s/sort.in", dir);
	int e = make_sort_input(path, z.sort_bytes);
	snprintf(path, sizeof(path), "%s/prog.in", dir);
	if (!e)
		e = make_prog_input(path, z.prog_bytes);
	if (e) {
		bench_skip(c, id, "writing the inputs in %s: %s", dir, strerror(-e));
		rmtree(dir);
		return 0;
	}
	/* The Linux side swaps to a file with room for either footprint
	 * twice over (a full swap file makes the cgroup's OOM killer act). */
	struct pb_linux_env env;
	bool have_linux = pb_linux_setup(c, z.budget, 4 * (z.prog_bytes + z.sort_bytes), &env,
					 why, sizeof(why), facts, sizeof(facts)) == 0;
	if (!have_linux)
		pb_cleanup_on_signal(NULL);
	/*
	 * cgroup v1 with its default swappiness (60) killed sort at once (in
	 * 0.4 s at a 16 MiB limit, swap empty): reclaim went for the page
	 * cache it was reading and gave up.  At 100 anonymous pages go to swap
	 * first, as this comparison is about; the note says so.
	 */
	bool swappy = false;
	if (have_linux) {
		snprintf(path, sizeof(path), "%s/memory.swappiness", env.cg);
		swappy = access(path, W_OK) == 0 && pb_write_small(path, "100") == 0;
	}
	double *t[W_N][2];
	for (int w = 0; w < W_N; w++)
		for (int s = 0; s < 2; s++)
			t[w][s] = calloc((size_t)rounds, sizeof(double));
	char out[W_N][3][500];
	for (int w = 0; w < W_N; w++)
		for (int s = 0; s < 3; s++)
			snprintf(out[w][s], sizeof(out[w][s]), "%s/%s-%d.out", dir, w_key[w], s);
	int n[W_N] = { 0 };
	int nl[W_N] = { 0 }, oom[W_N] = { 0 }; /* Linux runs done, killed */
	bool bad[W_N] = { false }, skipped[W_N] = { false };
	uint64_t evict[W_N] = { 0 }, swapin[W_N] = { 0 }, peak[W_N] = { 0 };
	uint64_t pswpin[W_N] = { 0 }, hits[W_N] = { 0 }, samples[W_N] = { 0 };
	/* pages read from swap, both sides (bypass: readahead included, as
	 * pswpin counts it), and the runs they were counted over */
	uint64_t rdpages[W_N] = { 0 }, runs_b[W_N] = { 0 }, runs_l[W_N] = { 0 };
	long rss[W_N][3] = { { 0 } }; /* peak resident set, KiB: max over the runs */
	double ref_s[W_N] = { 0 };
	char fail_why[W_N][1024];
	for (int w = 0; w < W_N; w++) {
		fail_why[w][0] = 0;
		if ((w == W_PYTHON || w == W_SQLITE) && !have_python) {
			skipped[w] = true;
			continue;
		}
		/* the reference output: the program with no limit and no preload */
		if (run(S_REF, w, &z, dir, &env, out[w][S_REF], &ref_s[w], &rss[w][S_REF],
			fail_why[w], sizeof(fail_why[w]))) {
			bad[w] = true;
			continue;
		}
		struct bench_rounds rr;
		int r, nl_round = 0;
		bench_rounds_init(c, &rr, rounds, 0);
		while (!bad[w] && bench_round(c, &rr, &r)) {
			/* a rerun round overwrites the disturbed one's figures */
			if (!rr.tries)
				nl_round = nl[w];
			nl[w] = nl_round;
			n[w] = r;
			for (int k = 0; k < 2 && !bad[w]; k++) {
				/* alternate which side goes first */
				int s = (k + r) % 2;
				if (s == 0 && !have_linux)
					continue;
				enum side side = s ? S_BYPASS : S_LINUX;
				uint64_t in0 = pb_vmstat("pswpin");
				double secs;
				long kb = 0;
				e = run(side, w, &z, dir, &env, out[w][side], &secs, &kb, fail_why[w],
					sizeof(fail_why[w]));
				if (kb > rss[w][side])
					rss[w][side] = kb;
				if (!e && side == S_BYPASS && w == W_SYSCALLS && bench_planted(c, id))
					append_byte(out[w][side]); /* tests/pager/bench-plant.sh */
				if (!e && !same_file(out[w][S_REF], out[w][side])) {
					e = -EIO;
					snprintf(fail_why[w], sizeof(fail_why[w]),
						 "%s: the output differs from the reference (%s)",
						 w_name[w], side == S_BYPASS ? "bypass" : "Linux");
				}
				if (e == -EINTR && side == S_LINUX) {
					/* The cgroup's OOM killer (a budget this small
					 * leaves Linux's reclaim behind): a result about
					 * Linux, not a failure of the run. */
					oom[w]++;
					fail_why[w][0] = 0;
					continue;
				}
				if (e) {
					bad[w] = true;
					if (side == S_BYPASS || e == -EIO)
						ret = 1;
					break;
				}
				if (side == S_LINUX)
					t[w][0][nl[w]++] = secs;
				else
					t[w][1][n[w]] = secs;
				if (side == S_LINUX) {
					pswpin[w] += pb_vmstat("pswpin") - in0;
					runs_l[w]++;
				} else {
					rdpages[w] += stats_take(dir, "bytes_read", false) / 4096;
					runs_b[w]++;
					evict[w] += stats_take(dir, "evictions", false);
					swapin[w] += stats_take(dir, "faults_swapin", false);
					hits[w] += stats_take(dir, "access_hits", false);
					samples[w] += stats_take(dir, "access_samples", false);
					uint64_t pk = stats_take(dir, "resident_peak", true);
					if (pk > peak[w])
						peak[w] = pk;
				}
			}
			if (!bad[w])
				n[w] = r + 1;
		}
	}
	if (have_linux)
		pb_linux_teardown(&env);
	pb_cleanup_on_signal(NULL);

	double ratio[W_N], rlo[W_N], rhi[W_N];
	for (int w = 0; w < W_N; w++)
		ratio[w] = NAN, rlo[w] = rhi[w] = 0;
	for (int w = 0; w < W_N; w++) {
		if (!n[w])
			continue;
		struct bench_summary sum[2];
		bool lx = have_linux && nl[w] > 0;
		bench_summarize_d(t[w][1], (size_t)n[w], &sum[1]);
		if (lx) {
			bench_summarize_d(t[w][0], (size_t)nl[w], &sum[0]);
			ratio[w] = sum[1].median / sum[0].median;
		}
		double lo = 0, hi = 0;
		if (lx && n[w] >= 2 && nl[w] >= 2)
			bench_ratio_ci(t[w][1], (size_t)n[w], t[w][0], (size_t)nl[w], &lo, &hi);
		rlo[w] = lo;
		rhi[w] = hi;
		for (int s = lx ? 0 : 1; s < 2; s++) {
			char name[128], params[400];
			snprintf(name, sizeof(name), "%s: %s", w_name[w],
				 s ? "bypass preload (upcall)" : "Linux swap (memory cgroup)");
			snprintf(params, sizeof(params),
				 "{\"workload\": \"%s\", \"budget_mib\": %zu, \"footprint_mib\": %.1f, "
				 "\"peak_rss_mib\": %.1f, \"swap_in_pages_per_run\": %.0f}",
				 w_key[w], z.budget >> 20, rss[w][S_REF] / 1024.0,
				 rss[w][s ? S_BYPASS : S_LINUX] / 1024.0,
				 s ? (runs_b[w] ? (double)rdpages[w] / (double)runs_b[w] : 0.0)
				   : (runs_l[w] ? (double)pswpin[w] / (double)runs_l[w] : 0.0));
			struct bench_row row = {
				.variant = name, .kind = s ? BENCH_BYPASS : BENCH_BASELINE,
				.unit = "s", .s = sum[s], .higher_is_better = false,
				.ratio = s ? ratio[w] : (lx ? 1.0 : NAN),
				.ci_lo = s ? lo : 0, .ci_hi = s ? hi : 0, .params = params,
			};
			bench_row(c, &row);
		}
	}
	bench_note(c, "budget %zu MiB on both sides (BYPASS_PAGER_BUDGET; the cgroup's limit); "
		   "C program: %zu MiB input read() into one malloc, a second buffer from it grown "
		   "by a quarter with realloc, %llu random updates, written with write() and "
		   "pwrite(), pread() back and compared; sort: GNU sort -S over %zu MiB of lines, "
		   "LC_ALL=C; python: a list of %llu ints read twice, a list of a seventh of them; sqlite: %llu rows and an "
		   "index in an in-memory database (Python's sqlite3, cache_size 4 GB)",
		   z.budget >> 20, z.prog_bytes >> 20, (unsigned long long)z.updates,
		   z.sort_bytes >> 20, (unsigned long long)z.py_n, (unsigned long long)z.sq_n);
	for (int w = 0; w < W_N; w++)
		if (rss[w][S_REF])
			bench_note(c, "%s: footprint %.1f MiB (peak resident set without a limit): "
				   "the budget is %.0f%% of it; peak resident set (wait4, max over the "
				   "runs): %.1f MiB under the preload, %.1f MiB under Linux; pages read "
				   "from swap per run (mean): %.0f bypass (%.0f swap-in faults, the "
				   "rest readahead), %.0f Linux (pswpin); bypass evictions %llu, "
				   "access samples %llu (hits %llu) over %llu runs", w_name[w],
				   rss[w][S_REF] / 1024.0, 100.0 * (double)z.budget /
				   ((double)rss[w][S_REF] * 1024.0), rss[w][S_BYPASS] / 1024.0,
				   rss[w][S_LINUX] / 1024.0,
				   runs_b[w] ? (double)rdpages[w] / (double)runs_b[w] : 0.0,
				   runs_b[w] ? (double)swapin[w] / (double)runs_b[w] : 0.0,
				   runs_l[w] ? (double)pswpin[w] / (double)runs_l[w] : 0.0,
				   (unsigned long long)evict[w], (unsigned long long)samples[w],
				   (unsigned long long)hits[w], (unsigned long long)runs_b[w]);
	bench_note(c, "same output: each run's output (stdout; the C program's output file too) "
		   "is compared byte for byte with a run without the preload and without a limit "
		   "(%.2f s C program, %.2f s sort, %.2f s python, %.2f s sqlite)", ref_s[0],
		   ref_s[1], ref_s[2], ref_s[3]);
	bench_note(c, "each side runs in a fresh process, alternately (the first side "
		   "alternates by round), %d round%s; ratio = bypass median / Linux median, with "
		   "a bootstrap 95%% interval", rounds, rounds == 1 ? "" : "s");
	bench_note(c, "the preload: threshold 1 MiB, its heap (jemalloc over pager regions) "
		   "engaged after 16 MiB outside the pager, access samples on, its default policy "
		   "(prefetch: 2Q and asynchronous prefetch of fault streams), swap in an unnamed "
		   "file in %s (O_DIRECT); the cgroup charges the page cache of the inputs and "
		   "outputs too, the preload's budget only its own regions", pb_swapdir(c));
	if (have_linux)
		bench_note(c, "Linux: %s%s", facts, swappy ? "; memory.swappiness = 100 (at the "
			   "default 60 the cgroup's OOM killer killed sort within a second, swap "
			   "empty)" : "");
	else
		bench_note(c, "Linux side not run: %s", why);
	if (!have_python)
		bench_note(c, "python and sqlite not run: no %s", PYTHON);
	for (int w = 0; w < W_N; w++)
		if (oom[w])
			bench_note(c, "%s: the Linux side was killed by the memory cgroup's OOM killer "
				   "in %d of %d runs (swap had room: its reclaim did not keep up at "
				   "this budget); its row has the runs that finished%s", w_name[w],
				   oom[w], oom[w] + nl[w], nl[w] ? "" : ": none, so no ratio");
	for (int w = 0; w < W_N; w++)
		if (bad[w]) {
			bench_note(c, "%s stopped: %s", w_name[w], fail_why[w]);
			if (ret)
				bench_fail(c, "pager.unmodified: %s", fail_why[w]);
		}
	if (!bench_quick(c) && !bench_smoke(c))
		bench_note(c, "full size: budget %llu MiB", (unsigned long long)budget_mib);
	for (int w = 0; w < W_N; w++) {
		if (skipped[w])
			continue;
		char what[200];
		snprintf(what, sizeof(what), "%s: identical output at a budget below the "
			 "footprint (runs that matched)", w_name[w]);
		bench_target_exact(c, what, bad[w] ? 0 : 1, ">=", 1);
		if (bad[w] || !n[w])
			continue;
		snprintf(what, sizeof(what), "%s: peak resident set under the preload, MiB "
			 "(<= budget + 32 MiB)", w_name[w]);
		bench_target_exact(c, what, rss[w][S_BYPASS] / 1024.0, "<=",
				   (double)(z.budget >> 20) + 32);
		if (w == W_SYSCALLS || isnan(ratio[w]))
			continue;
		snprintf(what, sizeof(what), "%s: time vs Linux swap at the same budget", w_name[w]);
		bench_target_ci(c, what, ratio[w], rlo[w], rhi[w], "<=", 1.0);
		/* per run: Linux's runs killed by its OOM killer count on
		 * neither side's total */
		snprintf(what, sizeof(what), "%s: swap-ins (pages read from swap per run), "
			 "bypass / Linux (<= 1)", w_name[w]);
		double rb = runs_b[w] ? (double)rdpages[w] / (double)runs_b[w] : 0.0;
		double rl = runs_l[w] ? (double)pswpin[w] / (double)runs_l[w] : 0.0;
		bench_target_exact(c, what, rl > 0 ? rb / rl : (rb > 0 ? INFINITY : 0), "<=", 1.0);
	}
	bench_end(c);
	for (int w = 0; w < W_N; w++)
		for (int s = 0; s < 2; s++)
			free(t[w][s]);
	rmtree(dir);
	return ret;
}
