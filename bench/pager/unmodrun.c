/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified's runs (split from unmodified.c): the programs, their
 * inputs, one run of a program on one side (the reference, the preload,
 * Linux in a cgroup), its output compared, the preload's stats file.
 */
#include "unmodified.h"

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

const char *const pu_w_name[W_N] = { "C program (malloc + read/write)", "sort",
				   "python (small objects)", "sqlite (in memory)" };
const char *const pu_w_key[W_N] = { "syscalls", "sort", "python", "sqlite" };


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
static double pu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Lines of the sort input: a pseudo-random key, a line number, a payload. */
int pu_make_sort_input(const char *path, size_t bytes)
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

int pu_make_prog_input(const char *path, size_t bytes)
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
void pu_append_byte(const char *path)
{
	FILE *f = fopen(path, "a");
	if (f) {
		fputc('x', f);
		fclose(f);
	}
}

/* Byte-identical files? */
bool pu_same_file(const char *a, const char *b)
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


/* The writer of a run's stdout (a child outside the measured cgroup):
 * the pipe's bytes into out; exits 0, or 5 (open) or 6 (write). */
static __attribute__((noreturn)) void pu_writer(int rfd, const char *out)
{
	pb_cleanup_on_signal(NULL);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		_exit(5);
	static char buf[1 << 16];
	for (;;) {
		ssize_t n = read(rfd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t o = 0; o < n;) {
			ssize_t k = write(fd, buf + o, (size_t)(n - o));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				_exit(6);
			o += k;
		}
	}
	_exit(close(fd) ? 6 : 0);
}

/*
 * Run workload w on one side; its stdout goes through a pipe to a writer
 * outside cg, into out.  0 and res, or -errno with the reason in why.
 */
int pu_run(enum side side, int w, const struct sizes *z, const char *dir,
	       const char *cg, const char *out, struct pu_res *res, char *why, size_t whylen)
{
	char in[400], pout[400], spec[1000], buf[64], pre[600], stats[400];
	snprintf(in, sizeof(in), "%s/%s.in", dir, w == W_SORT ? "sort" : "prog");
	snprintf(pout, sizeof(pout), "%s/prog-%d.out", dir, (int)side);
	snprintf(stats, sizeof(stats), "%s/stats", dir);
	snprintf(spec, sizeof(spec), "%s %s %zu %llu", in, pout, z->prog_bytes,
		 (unsigned long long)z->updates);
	snprintf(pre, sizeof(pre), "%s/libbypass-pager.so", bench_build_dir());
	memset(res, 0, sizeof(*res));
	/* the output through a pipe to a writer in the bench's own cgroup:
	 * what the measured cgroup is charged is the program's own memory */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid_t wpid = fork();
	if (wpid < 0) {
		int e = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return e;
	}
	if (!wpid) {
		close(pfd[1]); /* its EOF: the program's end */
		pu_writer(pfd[0], out);
	}
	close(pfd[0]);
	struct pb_cg_sampler smp;
	pb_cg_mem_begin(&smp, cg);
	double t0 = pu_now_s();
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(pfd[1]);
		waitpid(wpid, NULL, 0);
		pb_cg_mem_end(&smp, &res->mem);
		return e;
	}
	if (!pid) {
		pb_cleanup_on_signal(NULL);
		if (cg && cg[0] && pb_cg_join(cg, getpid()))
			_exit(4); /* the side's cgroup: its limit, or a peak to measure */
		if (dup2(pfd[1], 1) < 0)
			_exit(5);
		setenv("LC_ALL", "C", 1);
		if (side == S_BYPASS || side == S_TIER) {
			if (side == S_TIER)
				setenv("BYPASS_PAGER_TIER", "1", 1);
			setenv("LD_PRELOAD", pre, 1);
			snprintf(buf, sizeof(buf), "%zu", z->budget);
			setenv("BYPASS_PAGER_BUDGET", buf, 1);
			setenv("BYPASS_PAGER_THRESHOLD", "1M", 1);
			/* the budget covers every allocation from the first */
			setenv("BYPASS_PAGER_HEAP_AFTER", "0", 1);
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
	close(pfd[1]);
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	res->secs = pu_now_s() - t0;
	res->maxrss_kb = ru.ru_maxrss; /* the whole process's peak resident set */
	res->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	pb_cg_mem_end(&smp, &res->mem);
	int wst = 0;
	while (waitpid(wpid, &wst, 0) < 0 && errno == EINTR)
		;
	bench_watchdog(0, NULL, 0);
	pb_running_child = 0;
	if (!WIFSIGNALED(st) && !WEXITSTATUS(st) && (!WIFEXITED(wst) || WEXITSTATUS(wst))) {
		snprintf(why, whylen, "%s: the writer of its output to %s failed (status %d)",
			 pu_w_name[w], out, wst);
		return -EIO;
	}
	if (WIFSIGNALED(st)) {
		snprintf(why, whylen, "%s killed by signal %d", pu_w_name[w], WTERMSIG(st));
		return -EINTR;
	}
	if (WEXITSTATUS(st)) {
		snprintf(why, whylen, "%s exited with %d", pu_w_name[w], WEXITSTATUS(st));
		return -EIO;
	}
	if (w == W_SYSCALLS) { /* its output file is part of its output */
		char ref[400];
		snprintf(ref, sizeof(ref), "%s/prog-%d.out", dir, (int)S_REF);
		if (side != S_REF && !pu_same_file(ref, pout)) {
			snprintf(why, whylen, "%s: its output file differs from the reference",
				 pu_w_name[w]);
			return -EIO;
		}
	}
	return 0;
}

/* The sum of a counter over the stats file's lines (then the file goes). */
static uint64_t pu_stats_take(const char *dir, const char *key, bool remove)
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
void pu_rmtree(const char *dir)
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
bool pu_built_with_asan(void)
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


void pu_brun_take(const char *dir, struct brun *b)
{
	b->rdpages = pu_stats_take(dir, "bytes_read", false) / 4096;
	b->evict = pu_stats_take(dir, "evictions", false);
	b->swapin = pu_stats_take(dir, "faults_swapin", false);
	b->hits = pu_stats_take(dir, "access_hits", false);
	b->samples = pu_stats_take(dir, "access_samples", false);
	b->tstored = pu_stats_take(dir, "tier_stored", false);
	b->tpool = pu_stats_take(dir, "tier_swapin_pool", false);
	b->tfile = pu_stats_take(dir, "tier_swapin_file", false);
	b->peak = pu_stats_take(dir, "resident_peak", true);
}
void pu_brun_add(struct brun *sum, const struct brun *b)
{
	sum->rdpages += b->rdpages;
	sum->evict += b->evict;
	sum->swapin += b->swapin;
	sum->hits += b->hits;
	sum->samples += b->samples;
	sum->tstored += b->tstored;
	sum->tpool += b->tpool;
	sum->tfile += b->tfile;
	if (b->peak > sum->peak)
		sum->peak = b->peak;
}
