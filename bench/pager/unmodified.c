/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified: issue 11's experiment 3.  Unmodified programs with a
 * memory budget well below their footprint, under libbypass-pager.so (the
 * preload, upcall mode) against the same program under Linux swap in a
 * memory cgroup, at the same memory for the whole process:
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
 * Like for like (issue 33; ../shared/BENCHMARKING.md, rule 15; issue 35's
 * equal memory, docs/BENCHMARKS.in.md): each side gets the budget and the
 * same non-anonymous slack, measured the same way on both sides by a memory
 * cgroup (cgmem.c: memory.stat's anonymous memory and page cache, and the
 * charge, sampled every 10 ms).  The preload runs with its budget (about
 * 40% of the program's footprint) and BYPASS_PAGER_HEAP_AFTER=0, so its
 * budget covers the program's allocations from the first one; each of its
 * runs sits in a cgroup without a limit that only measures.  Every run's
 * stdout goes through a pipe to a writer outside the measured cgroup, so no
 * side is charged its output's page cache.  A calibration run of the
 * preload before the rounds gives its non-anonymous slack (the largest of
 * its charge less its anonymous memory: page cache and kernel memory); the
 * Linux side's cgroup limit is the budget + that slack (unmodcal.c; zram's
 * and zswap's less their compressed pool).  Where the preload's anonymous
 * memory overruns its budget, its row says so; that memory is not given to
 * Linux.  Each row prints its side's peak charge, anonymous memory and page
 * cache, peak resident set (wait4's maxrss, max over the runs) and
 * CPU-seconds per run.
 *
 * For each: wall time per run (the row; the ratio is the per-round
 * bypass / Linux ratio, Student's t over the rounds), swap-ins (pages read
 * from swap per run, Linux: pswpin; bypass: the bytes it read, readahead
 * included), identical output.  Targets (issue 20, issue 33): the preload's
 * peak resident set at most budget + 32 MiB and at most 0.6x the program's
 * unlimited footprint measured in the same run (a program that does not
 * page fails it); its time and swap-ins at most Linux's (sort, python,
 * sqlite).  A Linux run killed by its cgroup's OOM killer leaves the
 * baseline incomplete: no verdict on time or swap-ins.
 *
 * Both sides produce byte-identical output (checked against a run with no
 * limit).  Each side runs in a fresh process, alternately, every round.
 * Issue 32 item 5's programs (unmodrun.c, unmodhash.c): a C program doing
 * random lookups in a chained hash table, Python multiprocessing (a fork
 * Pool over a large list) and Redis (DEBUG POPULATE, random reads by
 * redis-benchmark, BGSAVE; its client side outside the cgroup), each a
 * tree of processes in one cgroup.
 *
 * The quick suite leaves sort and issue 32 item 5's programs out (their
 * runs are the longest: 5 rounds do not fit its 300 s) and runs the C
 * program, which has no timing target, for 1 round (and its calibration
 * run); make bench-full judges them all at 5 rounds; --smoke runs all but
 * sort, small.
 *
 * The C program is this binary itself (unmodprog.c): a constructor runs it
 * (and exits) before bypass-bench's main when BYPASS_BENCH_UNMODIFIED_PROG
 * is set, so it is an ordinary program that never calls bypass; the
 * preload is what pages it.
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ the experiment */

/* Whether workload w runs: --param programs=a,b (keys), else every one in
 * the full suite and --smoke, and in the quick suite those whose 5 rounds
 * fit its 300 s (sort's runs are the longest; issue 32 item 5's programs:
 * pu_w_quick). */
static const bool pu_w_quick[W_N] = {
	[W_SYSCALLS] = true, [W_PYTHON] = true, [W_SQLITE] = true,
};
static bool selected(struct bench_ctx *c, int w)
{
	const char *p = bench_param(c, "programs", NULL);
	if (!p) {
		if (!bench_quick(c))
			return true;
		return bench_smoke(c) ? w != W_SORT : pu_w_quick[w];
	}
	size_t n = strlen(pu_w_key[w]);
	for (const char *q = p; q && *q; q = strchr(q, ','), q = q ? q + 1 : NULL)
		if (!strncmp(q, pu_w_key[w], n) && (q[n] == ',' || !q[n]))
			return true;
	return false;
}

/* Whether Linux backend sd runs: --param linux=file,zram,zswap (all by
 * default). */
static bool linux_selected(struct bench_ctx *c, int sd)
{
	const char *p = bench_param(c, "linux", NULL);
	if (!p)
		return true;
	size_t n = strlen(pu_sd_key[sd]);
	for (const char *q = p; q && *q; q = strchr(q, ','), q = q ? q + 1 : NULL)
		if (!strncmp(q, pu_sd_key[sd], n) && (q[n] == ',' || !q[n]))
			return true;
	return false;
}


/* A planted check's file (tests/pager/bench-plant.sh): the path in the
 * environment variable env (the test's), else dir/name; buf returned. */
static const char *plant_path(char *buf, size_t len, const char *env, const char *dir,
			      const char *name)
{
	const char *f = getenv(env);
	if (f)
		snprintf(buf, len, "%s", f);
	else
		snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}
#define MIB(x) ((double)(x) / 1048576.0)

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
	/* issue 32 item 5's programs, about 2.5 budgets each as well: the hash
	 * table's nodes (64 bytes, 80 with malloc's header) and an eighth as
	 * many lookups (at 16 MiB each lookup of a node not resident is a
	 * swap-in: 8 of them a node); multiprocessing: the list's ints (~36
	 * bytes each, about 5 copies of their pages: the parent's and 4
	 * workers'); Redis: keys of 200 bytes (~330 bytes each with the dict)
	 * and a quarter as many reads (BGSAVE reads every key once more) */
	z.hash_n = (uint64_t)(z.budget * 5 / 2) / 80;
	z.hash_lookups = bench_count(c, "hash_lookups", z.hash_n / 8, z.hash_n / 8);
	z.mp_n = (uint64_t)(z.budget / 64);
	z.rd_keys = (uint64_t)(z.budget * 5 / 2) / 330;
	z.rd_reads = bench_count(c, "redis_reads", z.rd_keys / 4, z.rd_keys / 4);
	z.scope = bench_param(c, "scope", NULL); /* the preload's budget scope */
	z.orphans = NULL;
	z.rd_wait_s = (unsigned)strtoul(bench_param(c, "redis_wait_s", "300"), NULL, 10);
	if (!z.rd_wait_s)
		z.rd_wait_s = 1;
	z.rd_stall = NULL;
	/* --param cg_trace=FILE: every run's cgroup samples (cgmem.h), the
	 * file emptied here and appended to run by run */
	z.cg_trace = bench_param(c, "cg_trace", NULL);
	if (z.cg_trace && !z.cg_trace[0])
		z.cg_trace = NULL;
	/* 5 rounds for the programs with a timing target; the C program has
	 * none (identical output, peak memory: judged on every run), 1 in the
	 * quick suite */
	int rounds = bench_rounds_or(c, 5, 5), c_rounds = bench_rounds_or(c, 1, 5);
	if (bench_smoke(c)) { /* proves it runs: smaller footprints, --rounds (2) */
		z.prog_bytes = z.budget / 2;
		z.sort_bytes = z.budget;
		z.py_n /= 4;
		z.sq_n /= 4;
		z.hash_n /= 4;
		z.mp_n /= 4;
		z.rd_keys /= 4;
		if (!bench_param(c, "hash_lookups", NULL))
			z.hash_lookups = z.hash_n / 8;
		if (!bench_param(c, "redis_reads", NULL))
			z.rd_reads = z.rd_keys / 4;
	}
	if (rounds > 64)
		rounds = 64;
	if (c_rounds > 64)
		c_rounds = 64;
	/* planted checks (tests/pager/bench-plant.sh): a bypass output that
	 * differs; a Linux run killed in the first round; a budget the
	 * programs never reach (they do not page) */
	bool plant_kill = bench_planted(c, "pager.unmodified.kill");
	bool plant_nopage = bench_planted(c, "pager.unmodified.nopage");
	struct sizes zb = z; /* the preload's */
	char orphans[500];
	if (plant_nopage)
		zb.budget = (size_t)1 << 30;
	bool have_python = access(PYTHON, X_OK) == 0;
	bool have_redis = pu_have_redis();
	int ret = 0;

	char pre[600];
	if (!pu_preload(c, id, "crashes inside the uninstrumented programs (sort, python3) "
			"without libasan loaded first; tests/pager/preload-* run them "
			"under ASan that way and check their output", pre, sizeof(pre)))
		return 0;
	if (z.cg_trace) { /* emptied now: a file that cannot be written stops it here */
		int tfd = open(z.cg_trace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (tfd < 0) {
			bench_skip(c, id, "cg_trace=%s: %s", z.cg_trace, strerror(errno));
			return 0;
		}
		close(tfd);
	}
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/bypass-bench-unmod-%d", pb_swapdir(c), (int)getpid());
	if (mkdir(dir, 0700)) {
		bench_skip(c, id, "mkdir %s: %s", dir, strerror(errno));
		return 0;
	}
	bench_begin(c, id, "unmodified programs at the same memory for the whole process: the "
		    "pager preload at a budget below their footprint vs Linux swap in a memory "
		    "cgroup limited to the budget + the preload's measured non-anonymous memory, "
		    "swapping to a file, to zram, or "
		    "to a file behind zswap (seconds per run, x baseline time, lower is better)",
		    "the best of Linux's swap file, zram and zswap (per program)");
	char path[500], why[1024] = "", facts[1024] = "";
	/* plant=pager.unmodified.orphan (tests/pager/bench-plant.sh): every
	 * run of the C program leaves a process behind, its pid in this file
	 * (BYPASS_BENCH_PLANT_ORPHANS: the test's, else the scratch
	 * directory's) */
	if (bench_planted(c, "pager.unmodified.orphan"))
		z.orphans = zb.orphans = plant_path(orphans, sizeof(orphans),
						    "BYPASS_BENCH_PLANT_ORPHANS", dir, "orphans");
	/* plant=pager.unmodified.redis.stall (tests/pager/bench-plant.sh):
	 * Redis's client side writes its pid into this file
	 * (BYPASS_BENCH_PLANT_REDIS: the test's, else the scratch
	 * directory's) and waits for a BGSAVE end that never comes: its
	 * bound (--param redis_wait_s) or the bench's cleanup must end it */
	char rstall[500];
	if (bench_planted(c, "pager.unmodified.redis.stall"))
		z.rd_stall = zb.rd_stall = plant_path(rstall, sizeof(rstall),
						      "BYPASS_BENCH_PLANT_REDIS", dir, "redis-stall");
	/* the runs' leftovers come to the bench, which kills and reaps them
	 * (pu_run); their CPU is the run's, not other processes' */
	memset(pu_left_n, 0, sizeof(pu_left_n));
	memset(pu_left_cpu, 0, sizeof(pu_left_cpu));
	pu_left_stuck = 0;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	snprintf(path, sizeof(path), "%s/sort.in", dir);
	int e = pu_make_sort_input(path, z.sort_bytes);
	snprintf(path, sizeof(path), "%s/prog.in", dir);
	if (!e)
		e = pu_make_prog_input(path, z.prog_bytes);
	if (e) {
		prctl(PR_SET_CHILD_SUBREAPER, 0);
		bench_skip(c, id, "writing the inputs in %s: %s", dir, strerror(-e));
		pu_rmtree(dir);
		return 0;
	}
	/* The Linux side swaps to a file with room for either footprint
	 * twice over (a full swap file makes the cgroup's OOM killer act). */
	struct pb_linux_env env;
	size_t swap_size = 4 * (z.prog_bytes + z.sort_bytes);
	bool have_linux = pb_linux_setup(c, z.budget, swap_size, &env,
					 why, sizeof(why), facts, sizeof(facts)) == 0;
	/* a signal's cleanup (pb_linux_setup installed it, whether or not
	 * the Linux side could be set up) removes the scratch directory and
	 * its files, and kills the running program's process group */
	env.scratch_dir = dir;
	/* the three Linux baselines: each tried once here (set up, then back
	 * to the file); one that cannot run is skipped with its reason */
	/* the run's state, read by its rows and notes (unmodrows.c) */
	static struct pu_st S;
	memset(&S, 0, sizeof(S));
	bool *lb = S.lb;
	char (*lwhy)[1024] = S.lwhy, (*lfacts)[400] = S.lfacts;
	for (int sd = 0; sd < SD_N; sd++) {
		lwhy[sd][0] = lfacts[sd][0] = 0;
		if (sd == SD_B)
			continue;
		if (sd == SD_T) { /* --param tier=0 leaves it out */
			if (!strcmp(bench_param(c, "tier", "1"), "0"))
				snprintf(lwhy[sd], sizeof(lwhy[sd]), "not selected (--param tier=0)");
			else
				lb[sd] = pb_tier_check(c, lwhy[sd], sizeof(lwhy[sd])) == 0;
			continue;
		}
		if (!have_linux) {
			snprintf(lwhy[sd], sizeof(lwhy[sd]), "%s", why);
			continue;
		}
		if (!linux_selected(c, sd)) {
			snprintf(lwhy[sd], sizeof(lwhy[sd]), "not selected (--param linux)");
			continue;
		}
		if (pu_sd_backend[sd] != PB_FILE && !strcmp(bench_param(c, "compressed", "1"), "0")) {
			snprintf(lwhy[sd], sizeof(lwhy[sd]), "not selected (--param compressed=0: "
				 "zram and zswap, system-wide settings, left alone)");
			continue;
		}
		lb[sd] = pb_linux_use(&env, pu_sd_backend[sd], swap_size, lwhy[sd], sizeof(lwhy[sd]),
				      lfacts[sd], sizeof(lfacts[sd])) == 0;
	}
	if (have_linux)
		pb_linux_use(&env, PB_FILE, swap_size, why, sizeof(why), NULL, 0);
	char out[W_N][S_N][500];
	for (int w = 0; w < W_N; w++)
		for (int k = 0; k < S_N; k++)
			snprintf(out[w][k], sizeof(out[w][k]), "%s/%s-%d.out", dir, pu_w_key[w], k);
	/* per workload: each round's time per side (NaN: no run), runs, kills,
	 * the compressed pool's peaks, the memory measured, the Linux sides'
	 * limits (struct pu_st, unmodified.h) */
	double (*t)[SD_N][64] = S.t;
	int *nr = S.nr, *planned = S.planned, (*oom)[SD_N] = S.oom;
	int *runs_b = S.runs_b, (*runs_l)[SD_N] = S.runs_l;
	uint64_t (*pool)[SD_N] = S.pool, (*total_l)[SD_N] = S.total_l;
	bool *bad = S.bad, *skipped = S.skipped, *notsel = S.notsel;
	struct brun *bsum = S.bsum, *tsum = S.tsum;
	uint64_t (*pswpin)[SD_N] = S.pswpin, (*zswpin)[SD_N] = S.zswpin;
	long (*rss)[S_N] = S.rss;
	uint64_t *cg_ref = S.cg_ref, *cg_cal = S.cg_cal, *cg_b = S.cg_b;
	uint64_t (*cg_l)[SD_N] = S.cg_l;
	uint64_t *cg_bmin = S.cg_bmin;
	struct pb_cg_mem (*mem)[SD_N] = S.mem, *mem_ref = S.mem_ref, *mem_cal = S.mem_cal;
	double (*cpu)[SD_N] = S.cpu;
	struct pu_lim *L = S.L;
	double *ref_s = S.ref_s;
	char tier_fail[1024] = "";
	char (*fail_why)[1024] = S.fail_why;
	for (int w = 0; w < W_N; w++) {
		for (int k = 0; k < SD_N; k++)
			for (int r = 0; r < 64; r++)
				t[w][k][r] = NAN;
		fail_why[w][0] = 0;
		if (!selected(c, w)) {
			notsel[w] = true;
			continue;
		}
		if (((w == W_PYTHON || w == W_SQLITE || w == W_MP) && !have_python) ||
		    (w == W_REDIS && !have_redis)) {
			skipped[w] = true;
			continue;
		}
		int wr = w == W_SYSCALLS ? c_rounds : rounds;
		planned[w] = wr;
		char cgm[400] = "";
		struct pu_res res;
		/* the reference output and footprint: no limit, no preload */
		if (have_linux)
			pb_cg_make(&env, "ref", cgm, sizeof(cgm));
		e = pu_run(S_REF, w, &z, dir, cgm, out[w][S_REF], &res, fail_why[w],
			   sizeof(fail_why[w]));
		ref_s[w] = res.secs;
		rss[w][S_REF] = res.maxrss_kb;
		mem_ref[w] = res.mem;
		if (e) {
			bad[w] = true;
			if (cgm[0])
				pb_cg_remove(cgm);
			continue;
		}
		if (cgm[0]) {
			cg_ref[w] = pb_cg_peak(cgm);
			pb_cg_remove(cgm);
		}
		/* the calibration run of the preload: its non-anonymous slack
		 * (its cgroup's charge less its anonymous memory), added to the
		 * budget, is the Linux side's limit */
		cgm[0] = 0;
		if (have_linux)
			pb_cg_make(&env, "cal", cgm, sizeof(cgm));
		e = pu_run(S_BYPASS, w, &zb, dir, cgm, out[w][S_BYPASS], &res, fail_why[w],
			   sizeof(fail_why[w]));
		mem_cal[w] = res.mem;
		if (!e && !pu_same_file(out[w][S_REF], out[w][S_BYPASS])) {
			e = -EIO;
			snprintf(fail_why[w], sizeof(fail_why[w]), "%s: the output differs from the "
				 "reference (bypass, calibration run)", pu_w_name[w]);
		}
		if (cgm[0]) {
			cg_cal[w] = pb_cg_peak(cgm);
			pb_cg_remove(cgm);
		}
		if (e) {
			bad[w] = true;
			ret = 1;
			continue;
		}
		if (res.maxrss_kb > rss[w][S_BYPASS])
			rss[w][S_BYPASS] = res.maxrss_kb;
		pb_cg_mem_max(&mem[w][SD_B], &res.mem);
		struct brun br;
		pu_brun_take(dir, &br);
		if (br.peak > bsum[w].peak)
			bsum[w].peak = br.peak;
		/* Linux's memory, each side's limit (unmodcal.c) */
		bool lx = have_linux && pu_limits(c, &env, w, &z, dir, out[w], swap_size,
						  &mem_cal[w], cg_cal[w], lb, lwhy, &L[w], why,
						  sizeof(why));
		struct bench_rounds rr;
		int r;
		bench_rounds_init(c, &rr, wr, 0);
		while (!bad[w] && bench_round(c, &rr, &r)) {
			/* a rerun round overwrites the disturbed one's figures */
			for (int k = 0; k < SD_N; k++)
				t[w][k][r] = NAN;
			for (int k = 0; k < SD_N && !bad[w]; k++) {
				/* rotate which side goes first, round by round */
				int sd = (k + r) % SD_N;
				if (sd == SD_T ? !lb[sd] : sd != SD_B && (!lx || !lb[sd] ||
									  L[w].nomem[sd]))
					continue;
				enum side side = pu_sd_side[sd];
				if (!pu_sd_bypass(sd)) {
					/* this backend's swap, a fresh cgroup at the limit
					 * (its peak from nothing, nothing charged) */
					if (env.backend != pu_sd_backend[sd] &&
					    pb_linux_use(&env, pu_sd_backend[sd], swap_size, lwhy[sd],
							 sizeof(lwhy[sd]), NULL, 0)) {
						lb[sd] = false;
						continue;
					}
					sync();
					e = pb_linux_limit(&env, L[w].side[sd]);
					if (e) {
						snprintf(fail_why[w], sizeof(fail_why[w]), "the cgroup's "
							 "limit of %zu bytes: %s", L[w].side[sd],
							 strerror(-e));
						bad[w] = true;
						break;
					}
					pb_linux_pool_begin(&env);
				}
				uint64_t in0 = pb_vmstat("pswpin"), zin0 = pb_vmstat("zswpin");
				bool kill_it = plant_kill && side == S_LINUX && r == 0;
				/* each preload run in a measuring cgroup of its own */
				char cgb[400] = "";
				if (pu_sd_bypass(sd) && have_linux)
					pb_cg_make(&env, sd == SD_B ? "byp" : "tier", cgb, sizeof(cgb));
				e = pu_run(side, w, pu_sd_bypass(sd) ? &zb : &z, dir,
					   pu_sd_bypass(sd) ? cgb : env.cg, out[w][side], &res,
					   fail_why[w], sizeof(fail_why[w]));
				uint64_t pl = 0, pk_l = 0;
				if (!pu_sd_bypass(sd)) {
					pl = pb_linux_pool_end(&env);
					pk_l = pb_cg_peak(env.cg);
					if (pl > pool[w][sd])
						pool[w][sd] = pl;
					if (pk_l > cg_l[w][sd])
						cg_l[w][sd] = pk_l;
					if (pk_l + pl > total_l[w][sd])
						total_l[w][sd] = pk_l + pl;
				}
				if (cgb[0] && sd == SD_T) {
					uint64_t pk = pb_cg_peak(cgb);
					pb_cg_remove(cgb);
					if (!e && pk > cg_l[w][sd])
						cg_l[w][sd] = pk;
				} else if (cgb[0]) {
					uint64_t pk = pb_cg_peak(cgb);
					pb_cg_remove(cgb);
					if (!e && pk > cg_b[w])
						cg_b[w] = pk;
					if (!e && pk && (!cg_bmin[w] || pk < cg_bmin[w]))
						cg_bmin[w] = pk;
				}
				if (kill_it && !e) /* as if its OOM killer had struck */
					e = -EINTR;
				if (res.maxrss_kb > rss[w][side])
					rss[w][side] = res.maxrss_kb;
				if (!e || !pu_sd_bypass(sd))
					pb_cg_mem_max(&mem[w][sd], &res.mem);
				if (!e && side == S_BYPASS && w == W_SYSCALLS && bench_planted(c, id))
					pu_append_byte(out[w][side]); /* tests/pager/bench-plant.sh */
				if (!e && !pu_same_file(out[w][S_REF], out[w][side])) {
					e = -EIO;
					snprintf(fail_why[w], sizeof(fail_why[w]),
						 "%s: the output differs from the reference (%s)",
						 pu_w_name[w], sd == SD_B ? "bypass" : pu_sd_row[sd]);
				}
				if (e && sd == SD_T) {
					/* the tier side failed: a failure of the run,
					 * said in the failures; the other sides go on */
					snprintf(tier_fail, sizeof(tier_fail), "%.1000s", fail_why[w]);
					fail_why[w][0] = 0;
					lb[sd] = false;
					ret = 1;
					continue;
				}
				if (e == -EINTR && !pu_sd_bypass(sd)) {
					/* The cgroup's OOM killer: a result about Linux,
					 * not a failure of the run, but the round has no
					 * figure for this baseline. */
					oom[w][sd]++;
					fail_why[w][0] = 0;
					continue;
				}
				if (e) {
					bad[w] = true;
					if (side == S_BYPASS || e == -EIO)
						ret = 1;
					break;
				}
				t[w][sd][r] = res.secs;
				cpu[w][sd] += res.cpu_s;
				if (!pu_sd_bypass(sd)) {
					pswpin[w][sd] += pb_vmstat("pswpin") - in0;
					zswpin[w][sd] += pb_vmstat("zswpin") - zin0;
					runs_l[w][sd]++;
				} else {
					pu_brun_take(dir, &br);
					pu_brun_add(sd == SD_B ? &bsum[w] : &tsum[w], &br);
					if (sd == SD_B)
						runs_b[w]++;
					else
						runs_l[w][sd]++;
				}
			}
			if (!bad[w])
				nr[w] = r + 1;
		}
	}
	if (have_linux)
		pb_linux_teardown(&env);
	pb_cleanup_on_signal(NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 0);

	/* the rows, notes and targets (unmodrows.c) */
	S.z = z;
	S.zb = zb;
	S.budget_mib = budget_mib;
	S.rounds = rounds;
	S.c_rounds = c_rounds;
	S.plant_kill = plant_kill;
	S.plant_nopage = plant_nopage;
	S.have_python = have_python;
	S.have_redis = have_redis;
	S.have_linux = have_linux;
	S.ret = ret;
	memcpy(S.left_n, pu_left_n, sizeof(S.left_n));
	memcpy(S.left_cpu, pu_left_cpu, sizeof(S.left_cpu));
	S.left_stuck = pu_left_stuck;
	snprintf(S.why, sizeof(S.why), "%s", why);
	snprintf(S.facts, sizeof(S.facts), "%s", facts);
	snprintf(S.tier_fail, sizeof(S.tier_fail), "%s", tier_fail);
	pu_report(c, &S);
	pu_rmtree(dir);
	return ret;
}
