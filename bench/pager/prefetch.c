/* SPDX-License-Identifier: MIT */
/*
 * pager.prefetch: issue 11's experiment 1 (ExtMem's prefetch figure).  A
 * region four times the budget is written once (so most of it is in the
 * swap file), then scanned in ascending order:
 *
 *   read  every word of every page is read (a checksum per page);
 *   rmw   every page is read and one word of it incremented (the page is
 *         dirtied, so evictions write back behind the scan).
 *
 * Side by side in one run, each in a fresh process, rounds rotated:
 *   - Linux swap in a memory cgroup of the budget's size (swap file, Linux's
 *     own read-ahead: vm.page-cluster and VMA-based read-ahead, recorded);
 *   - bypass, read-ahead off (config.readahead = 1: one 4 KiB read per
 *     fault);
 *   - bypass's default: synchronous cluster read-ahead in the fault (pages
 *     evicted together are read together, config.readahead = 0 = 8);
 *   - bypass with the policy "prefetch": reads issued through io_uring
 *     ahead of the faults (bypass_pager_set_policy);
 *   - the swap device's own sequential rate (1 MiB O_DIRECT reads of the
 *     bypass side's swap file): the limit.
 *
 * Throughput (MiB/s per round), and the time to scan each 64 KiB chunk
 * (16 pages) of the read scan, median and p99 over all chunks of all
 * rounds.  Every page's checksum is checked on every side: in both scans
 * (the contents written) and after them (the increment written back).
 */
#include "pager_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum { S_LINUX, S_NORA, S_SYNC, S_PREFETCH, S_DEV, S_N };
static const char *s_name[S_N] = {
	"Linux swap (memory cgroup, kernel read-ahead)",
	"bypass, read-ahead off (readahead = 1)",
	"bypass, synchronous read-ahead (default)",
	"bypass, policy \"prefetch\" (io_uring, ahead of faults)",
	"swap device: sequential 1 MiB O_DIRECT reads",
};
static const char *s_key[S_N] = { "linux", "none", "sync", "prefetch", "device" };

#define CHUNK_PAGES 16

struct pf_result {
	struct pb_side_report rep; /* first */
	double secs[2];     /* read scan, rmw scan */
	double write_secs;  /* the untimed first write */
	uint64_t pages_bad; /* the final check (increments written back) */
	uint64_t first_bad;
	struct bypass_pager_stats st;
};

struct pf_run {
	int side;
	size_t region, budget;
	const char *swapfile;
	uint64_t seed;
	struct pf_result *res;
	uint64_t *got[2]; /* per-page checksums seen by the two scans */
	uint64_t *lat;    /* ns per chunk of the read scan */
	bool plant; /* --param plant=pager.prefetch: one word changes before the scans */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t word_weight(uint64_t j)
{
	return (2 * j + 1) * 0x9e3779b97f4a7c15ull;
}

/* The value of word j of page i (a different set in every round). */
static inline uint64_t word_value(uint64_t seed, uint64_t i, uint64_t j)
{
	uint64_t z = seed + (i << 9 | j) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	return z ^ (z >> 31);
}

static inline uint64_t page_sum(const volatile uint64_t *w)
{
	uint64_t s = 0;
	for (uint64_t j = 0; j < PB_PAGE / 8; j++)
		s += w[j] * word_weight(j);
	return s;
}

/* One side, in its child process. */
static void pf_side(void *arg)
{
	struct pf_run *r = arg;
	struct pf_result *res = r->res;
	uint64_t np = r->region / PB_PAGE;
	bypass_pager *p = NULL;
	char *m;
	if (r->side == S_LINUX) {
		m = mmap(NULL, r->region, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			pb_side_fail(&res->rep, "mmap", -errno);
		madvise(m, r->region, MADV_NOHUGEPAGE); /* 4 KiB pages, as bypass's */
	} else {
		struct bypass_pager_config cfg = {
			.budget = r->budget, .swap_path = r->swapfile, .swap_size = r->region,
			.mode = BYPASS_PAGER_UPCALL,
			.readahead = r->side == S_NORA ? 1 : 0,
		};
		int e = bypass_pager_create(&cfg, &p);
		if (e)
			pb_side_fail(&res->rep, "bypass_pager_create", e);
		if (r->side == S_PREFETCH && (e = pb_set_policy(p, "prefetch"))) {
			res->rep.skipped = true;
			snprintf(res->rep.msg, sizeof(res->rep.msg), "policy \"prefetch\" not available: %s",
				 e == -ENOSYS ? "this build's pager has no bypass_pager_set_policy"
					      : strerror(-e));
			bypass_pager_destroy(p);
			return;
		}
		e = bypass_pager_map(p, r->region, 0, (void **)&m);
		if (e)
			pb_side_fail(&res->rep, "bypass_pager_map", e);
	}
	/* untimed: write every word once; most pages end in the swap file */
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < np; i++) {
		uint64_t *w = (uint64_t *)(m + i * PB_PAGE);
		for (uint64_t j = 0; j < PB_PAGE / 8; j++)
			w[j] = word_value(r->seed, i, j);
	}
	res->write_secs = (double)(now_ns() - t0) * 1e-9;
	if (r->plant) /* the scans' checksums must catch it (tests/pager/bench-plant.sh) */
		((volatile uint64_t *)m)[np / 2 * (PB_PAGE / 8) + 3] += 1;
	/* the read scan, timed per chunk */
	t0 = now_ns();
	uint64_t tc = t0;
	for (uint64_t i = 0; i < np; i++) {
		r->got[0][i] = page_sum((const volatile uint64_t *)(m + i * PB_PAGE));
		if ((i + 1) % CHUNK_PAGES == 0) {
			uint64_t t = now_ns();
			r->lat[i / CHUNK_PAGES] = t - tc;
			tc = t;
		}
	}
	res->secs[0] = (double)(now_ns() - t0) * 1e-9;
	/* the read-modify-write scan */
	t0 = now_ns();
	for (uint64_t i = 0; i < np; i++) {
		uint64_t *w = (uint64_t *)(m + i * PB_PAGE);
		r->got[1][i] = page_sum(w);
		__asm__ __volatile__("addq $1, %0" : "+m"(w[i % 512]));
	}
	res->secs[1] = (double)(now_ns() - t0) * 1e-9;
	/* untimed: every increment must have been kept */
	res->first_bad = UINT64_MAX;
	for (uint64_t i = 0; i < np; i++)
		if (page_sum((const volatile uint64_t *)(m + i * PB_PAGE)) !=
		    r->got[1][i] + word_weight(i % 512) && !res->pages_bad++)
			res->first_bad = i;
	if (p) {
		bypass_pager_stats(p, &res->st);
		bypass_pager_destroy(p);
	}
}

/* The limit: sequential 1 MiB O_DIRECT reads of the swap file; MiB/s. */
static int device_seq(const char *path, size_t size, double *mibs)
{
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t chunk = 1 << 20;
	char *buf = NULL;
	int e = posix_memalign((void **)&buf, PB_PAGE, chunk) ? -ENOMEM : 0;
	size -= size % chunk;
	uint64_t t0 = now_ns();
	for (size_t off = 0; off < size && !e; off += chunk)
		if (pread(fd, buf, chunk, (off_t)off) != (ssize_t)chunk)
			e = errno ? -errno : -EIO;
	*mibs = (double)size / 1048576.0 / ((double)(now_ns() - t0) * 1e-9);
	free(buf);
	close(fd);
	return e;
}

/* Rows; pr[s][r]: side s's figure in round r (NaN: none), for the ratios'
 * per-round estimates over nr rounds (planned: rounds). */
static void rows(struct bench_ctx *c, const char *id, const char *title, int scan,
		 double *mibs[S_N], const bool have[S_N], const int cnt[S_N], size_t region,
		 size_t budget, double *pr[S_N], int nr, int planned)
{
	bench_begin(c, id, title, s_name[S_LINUX]);
	for (int s = 0; s < S_N; s++) {
		if (!have[s] || (s == S_DEV && scan))
			continue;
		char params[200];
		snprintf(params, sizeof(params),
			 "{\"side\": \"%s\", \"scan\": \"%s\", \"region_mib\": %zu, "
			 "\"budget_mib\": %zu}", s_key[s], scan ? "rmw" : "read", region >> 20,
			 budget >> 20);
		struct bench_row row = {
			.variant = s_name[s],
			.kind = s == S_LINUX ? BENCH_BASELINE : s == S_DEV ? BENCH_LIMIT
									   : BENCH_BYPASS,
			.unit = "MiB/s", .higher_is_better = true, .is_base = s == S_LINUX,
			.params = params,
		};
		if (s != S_LINUX && s != S_DEV && have[S_LINUX]) { /* per-round figures */
			struct bench_est re;
			bench_est_ratio(pr[s], pr[S_LINUX], (size_t)nr, planned, BENCH_CI_T, &re);
			bench_row_est(&row, &re);
		}
		bench_summarize_d(mibs[s], (size_t)cnt[s], &row.s);
		bench_row(c, &row);
	}
}

int bench_pager_prefetch(struct bench_ctx *c)
{
	const char *id = "pager.prefetch";
	/* quick: 8 MiB (a region of 32): 5 rounds within the pager's share of
	 * the 300 s (bench.h) */
	uint64_t budget_mib = bench_count(c, "budget_mib", 512, 8);
	if (bench_smoke(c) && !bench_param(c, "budget_mib", NULL))
		budget_mib = 8;
	if (budget_mib < 4)
		budget_mib = 4;
	size_t budget = (size_t)budget_mib << 20, region = 4 * budget;
	/* two files of the region's size, with room to spare */
	struct statvfs vfs;
	if (statvfs(pb_swapdir(c), &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < 3 * (uint64_t)region) {
		bench_skip(c, id, "%s has less than %zu MiB free", pb_swapdir(c),
			   3 * region >> 20);
		return 0;
	}
	/* 5 rounds: a verdict needs them (bench.h) */
	int rounds = bench_smoke(c) ? 1 : bench_rounds_or(c, 5, 5);
	uint64_t np = region / PB_PAGE, nchunks = np / CHUNK_PAGES;

	struct pb_linux_env env;
	char why[1024] = "", facts[1024] = "", ra[200];
	struct pb_sides t;
	memset(&t, 0, sizeof(t));
	for (int s = 0; s < S_N; s++)
		t.have[s] = true;
	t.have[S_LINUX] = pb_linux_setup(c, budget, region + region / 4, &env, why, sizeof(why),
				       facts, sizeof(facts)) == 0;
	char linux_why[1024];
	snprintf(linux_why, sizeof(linux_why), "%s", why);
	if (t.have[S_LINUX]) { /* anonymous pages go to swap first (see unmodified.c) */
		char path[400];
		snprintf(path, sizeof(path), "%s/memory.swappiness", env.cg);
		if (access(path, W_OK) == 0)
			pb_write_small(path, "100");
	}
	char bswap[300];
	snprintf(bswap, sizeof(bswap), "%s/bypass-bench-prefetch-%d.swap", pb_swapdir(c),
		 (int)getpid());
	env.bypass_file = bswap;
	int e = pb_write_file(bswap, region);
	if (e) {
		pb_linux_teardown(&env);
		pb_cleanup_on_signal(NULL);
		bench_skip(c, id, "writing swap file %s: %s", bswap, strerror(-e));
		return 0;
	}

	struct pf_result *res = bench_shared_alloc(sizeof(*res));
	uint64_t *exp = malloc(np * sizeof(*exp));
	uint64_t *got[2] = { bench_shared_alloc(np * 8), bench_shared_alloc(np * 8) };
	uint64_t *lat = bench_shared_alloc(nchunks * 8);
	uint64_t *lat_all[S_N];
	double *mibs[2][S_N], *pr[2][S_N]; /* runs in order; each round's at its place */
	for (int s = 0; s < S_N; s++) {
		lat_all[s] = calloc((size_t)rounds * nchunks, sizeof(uint64_t));
		for (int k = 0; k < 2; k++) {
			mibs[k][s] = calloc((size_t)rounds, sizeof(double));
			pr[k][s] = calloc((size_t)rounds, sizeof(double));
		}
	}
	bool nomem = !res || !exp || !got[0] || !got[1] || !lat;
	for (int s = 0; s < S_N; s++)
		nomem |= !lat_all[s] || !mibs[0][s] || !mibs[1][s] || !pr[0][s] || !pr[1][s];
	if (nomem) {
		snprintf(t.fail, sizeof(t.fail), "out of memory for the results");
		rounds = 0;
	}
	struct bypass_pager_stats bst[S_N];
	memset(bst, 0, sizeof(bst));
	double write_s[S_N] = { 0 };
	uint64_t pswpin = 0, pswpout = 0;
	int n = 0, ret = 0, cnt[S_N] = { 0 }; /* rounds; runs per side */
	unsigned limit = bench_quick(c) ? 900 : 3600;
	struct bench_rounds rr;
	int r, cnt_round[S_N] = { 0 };
	bench_rounds_init(c, &rr, rounds, 0);
	while (!t.fail[0] && bench_round(c, &rr, &r)) {
		/* a rerun round overwrites the disturbed one's figures */
		for (int s = 0; s < S_N; s++) {
			if (!rr.tries)
				cnt_round[s] = cnt[s];
			cnt[s] = cnt_round[s];
			pr[0][s][r] = pr[1][s][r] = NAN;
		}
		size_t order[S_N];
		bench_order(r, S_N, order);
		uint64_t seed = 0x6a09e667f3bcc908ull * (uint64_t)(r + 1);
		for (uint64_t i = 0; i < np; i++) {
			uint64_t s = 0;
			for (uint64_t j = 0; j < PB_PAGE / 8; j++)
				s += word_value(seed, i, j) * word_weight(j);
			exp[i] = s;
		}
		for (int k = 0; k < S_N && !t.fail[0]; k++) {
			int s = (int)order[k];
			if (!t.have[s])
				continue;
			if (s == S_DEV) {
				e = device_seq(bswap, region, &mibs[0][s][cnt[s]]);
				if (e) {
					t.have[s] = false;
					snprintf(t.skip_why[s], sizeof(t.skip_why[s]),
						 "O_DIRECT reads of %s: %s", bswap, strerror(-e));
				} else {
					pr[0][s][r] = mibs[0][s][cnt[s]];
					cnt[s]++;
				}
				continue;
			}
						struct pf_run run = { s, region, budget, bswap, seed, res,
					      { got[0], got[1] }, lat,
					      s == S_SYNC && bench_planted(c, id) };
			uint64_t in0 = pb_vmstat("pswpin"), out0 = pb_vmstat("pswpout");
			if (!pb_side_run(&t, s, s == S_LINUX ? &env : NULL, pf_side, &run, limit,
					 &res->rep, s_name[s]))
				continue;
			uint64_t bad[2] = { 0, 0 }, first = UINT64_MAX;
			for (int scan = 0; scan < 2; scan++)
				for (uint64_t i = 0; i < np; i++)
					if (got[scan][i] != exp[i] && !bad[scan]++ && i < first)
						first = i;
			if (bad[0] || bad[1] || res->pages_bad) {
				snprintf(t.fail, sizeof(t.fail),
					 "%s LOST DATA: %llu pages wrong in the read scan, %llu in the "
					 "rmw scan, %llu after it (first page %llu)", s_name[s],
					 (unsigned long long)bad[0], (unsigned long long)bad[1],
					 (unsigned long long)res->pages_bad,
					 (unsigned long long)(first < res->first_bad ? first
										 : res->first_bad));
				break;
			}
			for (int scan = 0; scan < 2; scan++)
				pr[scan][s][r] = mibs[scan][s][cnt[s]] =
					(double)region / 1048576.0 / res->secs[scan];
			memcpy(lat_all[s] + (size_t)cnt[s] * nchunks, lat, nchunks * 8);
			cnt[s]++;
			write_s[s] += res->write_secs;
			if (s == S_LINUX) {
				pswpin += pb_vmstat("pswpin") - in0;
				pswpout += pb_vmstat("pswpout") - out0;
			} else {
				pb_stats_add(&bst[s], &res->st);
			}
		}
		if (!t.fail[0])
			n = r + 1;
	}
	unlink(bswap);
	pb_linux_teardown(&env);
	pb_cleanup_on_signal(NULL);
	for (int s = 0; s < S_N; s++)
		if (!cnt[s])
			t.have[s] = false;
	if (t.fail[0] && !n) {
		bench_begin(c, id, "sequential scan of a swapped-out region 4x the budget",
			    s_name[S_LINUX]);
		bench_fail(c, "pager.prefetch: %s", t.fail);
		bench_end(c);
		ret = 1;
		goto out;
	}

	rows(c, id, "sequential read scan of a region 4x the budget, already swapped out "
	     "(MiB/s, x baseline rate, higher is better)", 0, mibs[0], t.have, cnt, region, budget,
	     pr[0], n, rounds);
	bench_note(c, "region %zu MiB, budget %zu MiB (the cgroup's limit on the Linux side), "
		   "4 KiB pages; written once in full, then scanned in ascending order reading "
		   "every word; each side in a fresh process, %d round%s, rows rotated",
		   region >> 20, budget >> 20, n, n == 1 ? "" : "s");
	pb_linux_readahead(ra, sizeof(ra));
	bench_fact(c, "pager.linux_swap_readahead", "%s", ra);
	pb_note_linux(c, &t, S_LINUX, cnt[S_LINUX], facts, ra, linux_why, pswpin, pswpout);
	for (int s = S_NORA; s <= S_PREFETCH; s++) {
		if (!t.have[s]) {
			bench_note(c, "%s: skipped: %s", s_name[s], t.skip_why[s]);
			continue;
		}
		uint64_t pf, pfu;
		pb_prefetch_counts(&bst[s], &pf, &pfu);
		bench_note(c, "%s, all rounds: %llu swap-in faults + %llu pages read ahead, %llu "
			   "pages prefetched (%llu seen used), %llu faults found the page already "
			   "served, %.0f MiB read, %.0f MiB written", s_name[s],
			   (unsigned long long)bst[s].faults_swapin,
			   (unsigned long long)bst[s].readahead_pages, (unsigned long long)pf,
			   (unsigned long long)pfu, (unsigned long long)bst[s].faults_other,
			   (double)bst[s].bytes_read / 1048576.0,
			   (double)bst[s].bytes_written / 1048576.0);
	}
	if (!t.have[S_DEV])
		bench_note(c, "device row missing: %s", t.skip_why[S_DEV]);
	char ws[400] = "";
	for (int s = 0; s < S_DEV; s++)
		if (t.have[s])
			snprintf(ws + strlen(ws), sizeof(ws) - strlen(ws), "%s%s %.2f s",
				 ws[0] ? ", " : "", s_key[s], write_s[s] / cnt[s]);
	bench_note(c, "the first write of the region (not in the rows), mean per run: %s", ws);
	bench_note(c, "data: every page's checksum (all 512 words) checked in both scans and "
		   "after the rmw scan, on every side: all right%s", t.fail[0] ? " before the failure"
									: "");
	if (t.fail[0]) {
		bench_fail(c, "pager.prefetch: %s", t.fail);
		ret = 1;
	}
	if (t.have[S_LINUX] && t.have[S_PREFETCH]) {
		struct bench_est est;
		bench_est_ratio(pr[0][S_PREFETCH], pr[0][S_LINUX], (size_t)n, rounds, BENCH_CI_T,
				&est);
		bench_target_est(c, "prefetch read scan / Linux read-ahead (at least as fast)", &est,
				 ">=", 1.0);
	}
	bench_note(c, "ratios with an interval and the target: per round, the side's rate / "
		   "Linux's in the same round; the mean over the rounds with Student's t 95%% "
		   "interval (a round where a side did not finish leaves it incomplete)");
	bench_end(c);

	bench_same_runs(c); /* the same rounds */
	rows(c, "pager.prefetch.rmw", "sequential read-modify-write scan (one word per page "
	     "incremented) of the same region (MiB/s, x baseline rate, higher is better)", 1,
	     mibs[1], t.have, cnt, region, budget, pr[1], n, rounds);
	bench_note(c, "run right after the read scan in the same process; every page is "
		   "dirtied, so evictions write back behind the scan");
	bench_end(c);

	bench_same_runs(c);
	bench_begin(c, "pager.prefetch.latency", "time to scan one 64 KiB chunk (16 pages) "
		    "of the read scan, all chunks of all rounds (us, x baseline time, lower is "
		    "better)", s_name[S_LINUX]);
	for (int s = 0; s < S_DEV; s++) {
		if (!t.have[s])
			continue;
		size_t k = (size_t)cnt[s] * nchunks;
		double *us = malloc(k * sizeof(double));
		for (size_t i = 0; i < k && us; i++)
			us[i] = (double)lat_all[s][i] * 1e-3;
		struct bench_row row = {
			.variant = s_name[s], .kind = s == S_LINUX ? BENCH_BASELINE : BENCH_BYPASS,
			.unit = "us", .higher_is_better = false, .is_base = s == S_LINUX,
			.params = "{\"chunk_kib\": 64}",
		};
		if (us)
			bench_summarize_d(us, k, &row.s);
		free(us);
		bench_row(c, &row);
	}
	bench_note(c, "a chunk's time includes the faults taken in it (and, on the Linux side, "
		   "the reclaim its allocations did): the p99 is a chunk that waited longest for "
		   "the device or for eviction");
	bench_end(c);
out:
	for (int s = 0; s < S_N; s++) {
		free(lat_all[s]);
		for (int k = 0; k < 2; k++) {
			free(mibs[k][s]);
			free(pr[k][s]);
		}
	}
	free(exp);
	bench_shared_free(res, sizeof(*res));
	bench_shared_free(got[0], np * 8);
	bench_shared_free(got[1], np * 8);
	bench_shared_free(lat, nchunks * 8);
	if (ret)
		fprintf(stderr, "bypass-bench: pager.prefetch failed: %s\n", t.fail);
	return ret;
}
