/* SPDX-License-Identifier: MIT */
/*
 * pager.sockcost (issue 32): what the pager preload adds to a socket call
 * made right after the calling thread's own evicting fault, while the
 * write-backs that fault put in flight count against the thread (the
 * preload's send/recv wrappers settle them first: src/pager/writeback.c's
 * count, preload/pager/io.c), against the same program without the preload.
 *
 * The program is this binary itself, run with BYPASS_BENCH_SOCKCOST set (a
 * constructor runs it and exits before bypass-bench's main, as unmodprog.c's
 * C program): a blocking AF_UNIX stream pair; 16 MiB of anonymous memory
 * written (4x the preload's 4 MiB budget: the budget fills with dirty
 * pages); then, per sample, one write to a new page of another region (under
 * the preload a fault that evicts: a dirty victim's write-back goes to the
 * ring; without it a first-touch fault) and right after it one 1-byte send
 * and recv on the pair, timed; then, after 10 ms without faults (the
 * write-backs done), pairs with no fault before them, timed one by one.
 * Each round runs the program with the preload and without it (the order
 * rotated); a pair's byte is checked (a wrong one is a failure).
 *
 * Two tables of the same runs: pager.sockcost (a pair right after a fault)
 * and pager.sockcost-idle (no fault before it).  No target: the figures are
 * the price of the preload's settle layer (docs/pager-preload.md).
 * --param sock_samples=N (pairs of each kind a run; quick 2,000, full
 * 20,000).  Skipped in an AddressSanitizer build (as pager.unmodified).
 */
#include "unmodified.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SC_BUDGET (4ul << 20)
#define SC_FILL (16ul << 20)
#define SC_MAX 200000ul

/* ------------------------------------------------------------ the program */

static uint64_t sc_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* One pair: byte b sent on a, received on b; false if it did not arrive. */
static bool sc_pair(int a, int bfd, unsigned char b)
{
	unsigned char d = 0;
	return send(a, &b, 1, 0) == 1 && recv(bfd, &d, 1, 0) == 1 && d == b;
}

/* BYPASS_BENCH_SOCKCOST=<fd> <samples> <plant>: the samples (ns) written
 * to fd: a header {samples, wrong pairs}, then the pairs after a fault,
 * then those without. */
static void sc_main(const char *spec)
{
	int fd, plant;
	unsigned long n;
	if (sscanf(spec, "%d %lu %d", &fd, &n, &plant) != 3 || !n || n > SC_MAX)
		_exit(3);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		_exit(4);
	/* below the preload's 256 KiB threshold: never paged */
	uint64_t *s = calloc(2 * n + 2, sizeof(*s));
	unsigned char *fill = mmap(NULL, SC_FILL, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *area = mmap(NULL, n * PB_PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!s || fill == MAP_FAILED || area == MAP_FAILED)
		_exit(5);
	uint64_t wrong = 0;
	for (int i = 0; i < 256; i++) /* warm the socket path */
		wrong += !sc_pair(sv[0], sv[1], (unsigned char)i);
	for (size_t i = 0; i < SC_FILL; i += PB_PAGE)
		fill[i] = (unsigned char)(i >> 12 | 1);
	uint64_t *af = s + 2, *idle = s + 2 + n;
	for (unsigned long k = 0; k < n; k++) {
		area[k * PB_PAGE] = (unsigned char)(k | 1);
		uint64_t t0 = sc_now();
		bool ok = sc_pair(sv[0], sv[1], (unsigned char)k);
		af[k] = sc_now() - t0;
		wrong += !ok || (plant && k == 0);
	}
	nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	for (unsigned long k = 0; k < n; k++) {
		uint64_t t0 = sc_now();
		bool ok = sc_pair(sv[0], sv[1], (unsigned char)(k + 7));
		idle[k] = sc_now() - t0;
		wrong += !ok;
	}
	s[0] = n;
	s[1] = wrong;
	size_t len = (2 * n + 2) * sizeof(*s);
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, (char *)s + done, len - done);
		if (w <= 0)
			_exit(6);
		done += (size_t)w;
	}
	exit(0); /* not _exit: the preload writes its statistics at exit */
}

__attribute__((constructor)) static void sc_hook(void)
{
	const char *spec = getenv("BYPASS_BENCH_SOCKCOST");
	if (spec && *spec)
		sc_main(spec);
}

/* ------------------------------------------------------------ the bench */

/* One run of the program (with the preload when pre is not NULL): its
 * samples into af[] and idle[] (n each), its wrong pairs into *wrong.
 * 0, or -1 with the reason in why. */
static int sc_run(const char *pre, const char *dir, unsigned long n, bool plant, uint64_t *af,
		  uint64_t *idle, uint64_t *wrong, char *why, size_t whylen)
{
	int p[2];
	if (pipe(p)) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (!pid) {
		close(p[0]);
		char spec[64], buf[420];
		snprintf(spec, sizeof(spec), "%d %lu %d", p[1], n, plant && pre);
		setenv("BYPASS_BENCH_SOCKCOST", spec, 1);
		unsetenv("LD_PRELOAD");
		if (pre) {
			unsetenv("BYPASS_PAGER_TIER");
			setenv("LD_PRELOAD", pre, 1);
			snprintf(buf, sizeof(buf), "%lu", SC_BUDGET);
			setenv("BYPASS_PAGER_BUDGET", buf, 1);
			setenv("BYPASS_PAGER_THRESHOLD", "256K", 1);
			setenv("BYPASS_PAGER_BUDGET_SCOPE", "process", 1);
			setenv("BYPASS_PAGER_SWAP", dir, 1);
			snprintf(buf, sizeof(buf), "%lu", 2 * (SC_FILL + n * PB_PAGE));
			setenv("BYPASS_PAGER_SWAP_SIZE", buf, 1);
			snprintf(buf, sizeof(buf), "%s/stats", dir);
			setenv("BYPASS_STATS_FILE", buf, 1);
		}
		execl("/proc/self/exe", "bypass-bench-sockcost", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	pb_running_child = pid; /* a signal's cleanup kills it */
	bench_watchdog(300, "pager.sockcost: a run", pid);
	size_t len = (2 * n + 2) * sizeof(uint64_t), got = 0;
	uint64_t *buf = malloc(len);
	while (buf && got < len) {
		ssize_t r = read(p[0], (char *)buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	pb_running_child = 0;
	bench_watchdog(0, NULL, 0);
	int ret = 0;
	if (!buf || got < len || buf[0] != n) {
		snprintf(why, whylen, "%s: the program gave %zu of %zu bytes (status 0x%x)",
			 pre ? "with the preload" : "without the preload", got, len, st);
		ret = -1;
	} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(why, whylen, "%s: the program ended with status 0x%x",
			 pre ? "with the preload" : "without the preload", st);
		ret = -1;
	} else {
		*wrong += buf[1];
		memcpy(af, buf + 2, n * sizeof(uint64_t));
		memcpy(idle, buf + 2 + n, n * sizeof(uint64_t));
	}
	free(buf);
	return ret;
}

/* Per-round medians m[r] of samples s (n a round). */
static void sc_medians(uint64_t *s, size_t n, int rounds, double *m)
{
	uint64_t *t = malloc(n * sizeof(*t));
	for (int r = 0; t && r < rounds; r++) {
		struct bench_summary q;
		memcpy(t, s + (size_t)r * n, n * sizeof(*t));
		bench_summarize(t, n, &q);
		m[r] = q.median;
	}
	free(t);
}

/* One table: the pairs without the preload (base) and with it. */
static void sc_table(struct bench_ctx *c, const char *id, const char *title, const char *what,
		     const char *what_pl, uint64_t *plain, uint64_t *pl, size_t n, int rounds,
		     const char *fail, const char *note, const char *params)
{
	bench_begin(c, id, title, "without the preload");
	if (fail[0])
		bench_fail(c, "%s", fail);
	double *m = calloc(2 * (size_t)rounds, sizeof(double));
	if (m) {
		sc_medians(plain, n, rounds, m);
		sc_medians(pl, n, rounds, m + rounds);
	}
	size_t tot = n * (size_t)rounds;
	struct bench_summary sb, sp;
	bench_summarize(plain, tot, &sb);
	bench_summarize(pl, tot, &sp);
	char v0[160], v1[160];
	snprintf(v0, sizeof(v0), "without the preload (%s)", what);
	snprintf(v1, sizeof(v1), "the pager preload (%s)", what_pl);
	bench_row(c, &(struct bench_row){ .variant = v0, .kind = BENCH_BASELINE, .unit = "ns",
					  .s = sb, .is_base = true });
	struct bench_row row = { .variant = v1, .kind = BENCH_BYPASS, .unit = "ns", .s = sp,
				 .params = params };
	double dsum = 0;
	for (int r = 0; m && r < rounds; r++)
		dsum += m[rounds + r] - m[r];
	if (m) {
		struct bench_est e;
		bench_est_ratio(m + rounds, m, (size_t)rounds, rounds, BENCH_CI_BOOT, &e);
		bench_row_est(&row, &e);
	}
	bench_row(c, &row);
	bench_note(c, "the preload's extra cost a pair: %+.0f ns (mean over %d rounds of the "
		      "difference of the rounds' medians); means %.0f and %.0f ns; the ratio is "
		      "the median of per-round median ratios; %s",
		   m ? dsum / rounds : NAN, rounds, sb.mean, sp.mean, note);
	bench_end(c);
	free(m);
}

int bench_pager_sockcost(struct bench_ctx *c)
{
	const char *id = "pager.sockcost";
	char pre[600];
	if (!pu_preload(c, id, "LD_PRELOAD puts it before libasan in the program's "
			"libraries, which ASan refuses (tests/pager/preload-* preload libasan "
			"first)", pre, sizeof(pre)))
		return 0;
	unsigned long n = bench_count(c, "sock_samples", 20000, 2000);
	if (n < 16)
		n = 16;
	if (n > SC_MAX)
		n = SC_MAX;
	int rounds = bench_rounds(c);
	bool plant = bench_planted(c, id);
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/bypass-bench-sock-%d", pb_swapdir(c), (int)getpid());
	if (mkdir(dir, 0700)) {
		bench_skip(c, id, "mkdir %s: %s", dir, strerror(errno));
		return 0;
	}
	/* a signal's cleanup kills the running program and removes the
	 * directory (no Linux side here: nothing else to undo) */
	struct pb_linux_env env;
	memset(&env, 0, sizeof(env));
	env.zram_dev = -1;
	env.scratch_dir = dir;
	pb_cleanup_on_signal(&env);
	size_t tot = n * (size_t)rounds;
	/* [0] without the preload, [1] with it */
	uint64_t *af[2] = { calloc(tot, 8), calloc(tot, 8) };
	uint64_t *idle[2] = { calloc(tot, 8), calloc(tot, 8) };
	uint64_t wrong[2] = { 0, 0 }, ev = 0, wr = 0, runs = 0;
	char fail[700] = "";
	int ret = 0;
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds, 0);
	while (af[0] && af[1] && idle[0] && idle[1] && !fail[0] && bench_round(c, &rr, &r)) {
		size_t order[2];
		bench_order(r, 2, order);
		for (int k = 0; k < 2 && !fail[0]; k++) {
			int s = (int)order[k];
			size_t at = (size_t)r * n;
			if (sc_run(s ? pre : NULL, dir, n, plant, af[s] + at, idle[s] + at, &wrong[s],
				   fail, sizeof(fail)))
				break;
			if (s) {
				ev += pu_stats_take(dir, "evictions", false);
				wr += pu_stats_take(dir, "bytes_written", true) / PB_PAGE;
				runs++;
			}
		}
	}
	if (!af[0] || !af[1] || !idle[0] || !idle[1])
		snprintf(fail, sizeof(fail), "out of memory for %zu samples", tot);
	if (!fail[0] && (wrong[0] || wrong[1]))
		snprintf(fail, sizeof(fail), "%llu pairs without the preload and %llu with it "
			 "received a wrong byte%s", (unsigned long long)wrong[0],
			 (unsigned long long)wrong[1],
			 plant ? " (planted: --param plant=pager.sockcost)" : "");
	if (!fail[0] && runs && !ev)
		snprintf(fail, sizeof(fail), "the preload evicted nothing: its runs did not page "
			 "(the rows measure nothing)");
	if (fail[0]) {
		bench_begin(c, id, "a socket pair's send+recv right after the thread's own "
			    "evicting fault (ns per pair)", "without the preload");
		bench_fail(c, "%s", fail);
		bench_end(c);
		ret = 1;
		goto out;
	}
	char note[500], params[300];
	snprintf(note, sizeof(note), "%lu pairs of each kind a run, %d rounds; the preload at a "
		 "%lu MiB budget (process scope, threshold 256 KiB, no tier), %lu MiB written "
		 "first; its runs evicted %.0f pages and wrote %.0f a run (the fill's included)",
		 n, rounds, SC_BUDGET >> 20, SC_FILL >> 20, (double)ev / (double)runs,
		 (double)wr / (double)runs);
	snprintf(params, sizeof(params), "{\"samples\": %lu, \"evictions_per_run\": %.0f, "
		 "\"pages_written_per_run\": %.0f, \"budget_mib\": %lu, \"fill_mib\": %lu}",
		 n, (double)ev / (double)runs, (double)wr / (double)runs, SC_BUDGET >> 20,
		 SC_FILL >> 20);
	sc_table(c, id, "a 1-byte send+recv on a socket pair right after the thread's own "
		 "fault: under the preload one that evicts, its write-backs in flight (ns per "
		 "pair, lower is better)", "a write fault before each pair",
		 "an evicting write fault before each pair", af[0], af[1], n,
		 rounds, fail, note, params);
	bench_same_runs(c);
	sc_table(c, "pager.sockcost-idle", "the same pairs with no fault before them, 10 ms "
		 "after the last (the write-backs done; ns per pair, lower is better)",
		 "no fault before the pairs", "no fault before the pairs", idle[0], idle[1], n,
		 rounds, fail, note, params);
out:
	for (int s = 0; s < 2; s++) {
		free(af[s]);
		free(idle[s]);
	}
	pb_cleanup_on_signal(NULL);
	pu_rmtree(dir);
	return ret;
}
