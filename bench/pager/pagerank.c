/* SPDX-License-Identifier: MIT */
/*
 * pager.pagerank: issue 11's experiment 2 (ExtMem's graph figure: a policy
 * for CSR graphs that keeps the per-vertex data resident and streams the
 * edges through a sliding window).  Pull PageRank as in the GAP suite
 * (damping 0.85, contribution = rank / out-degree, doubles, a fixed number
 * of iterations) over a Kronecker graph that kron.c generates, written once
 * as a CSR file in a scratch directory and loaded by each side into memory
 * under the same budget (CSR 2-4x the budget, the per-vertex arrays
 * fitting inside it):
 *
 *   - all in memory, no budget: the limit;
 *   - Linux swap in a memory cgroup of the budget's size (anonymous memory,
 *     a swap file);
 *   - bypass, policy "2q", no hints;
 *   - bypass, policy "window" with hints: PRIORITY on the per-vertex arrays
 *     (offsets, ranks, contributions), SEQUENTIAL on the edge array.
 *
 * Each side runs in a fresh process, rounds rotated; the rows are the time
 * per iteration (median and p99 over all iterations of all rounds).  The
 * same code in the same order gives bit-identical ranks: every run's final
 * ranks are compared, vertex by vertex, with a reference run's, and a
 * difference fails the run.
 */
#include "pager_bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum { S_RAM, S_LINUX, S_2Q, S_WINDOW, S_N };
static const char *s_name[S_N] = {
	"in memory, no budget",
	"Linux swap (memory cgroup)",
	"bypass, policy \"2q\", no hints",
	"bypass, policy \"window\" + hints",
};
static const char *s_key[S_N] = { "ram", "linux", "2q", "window" };

#define MAX_ITERS 200
#define DAMP 0.85
#define GAP_SEED 27491095ull /* GAP's kRandSeed */

struct pr_result {
	struct pb_side_report rep; /* first */
	double load_secs;
	double iter_secs[MAX_ITERS];
	double last_err; /* sum of |rank change| in the last iteration */
	struct bypass_pager_stats st;
	bool policy_default;
};

struct pr_run {
	int side, iters;
	const char *csr_path, *swapfile;
	uint32_t nv;
	uint64_t ne;
	size_t budget, swap_size;
	struct pr_result *res;
	double *ranks; /* the final ranks (shared, faulted in by the parent) */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t round_page(size_t n)
{
	return (n + PB_PAGE - 1) & ~(PB_PAGE - 1);
}

/* One iteration of GAP's PageRankPull (doubles); returns the error. */
static __attribute__((noinline)) double pr_iter(const uint64_t *off, const uint32_t *nb,
						double *score, double *contrib, uint32_t nv)
{
	const double base = (1.0 - DAMP) / nv;
	for (uint32_t v = 0; v < nv; v++) {
		uint64_t deg = off[v + 1] - off[v];
		contrib[v] = deg ? score[v] / (double)deg : 0.0;
	}
	double err = 0;
	for (uint32_t u = 0; u < nv; u++) {
		double in = 0;
		for (uint64_t k = off[u], end = off[u + 1]; k < end; k++)
			in += contrib[nb[k]];
		double old = score[u];
		score[u] = base + DAMP * in;
		err += fabs(score[u] - old);
	}
	return err;
}

/* --param plant=pager.pagerank: the window side's ranks are changed by one
 * part in 10^9, which the comparison must catch. */
static bool plant_rank;

/* One side, in its child process. */
static void pr_side(void *arg)
{
	struct pr_run *r = arg;
	struct pr_result *res = r->res;
	size_t len[4] = { round_page(((size_t)r->nv + 1) * 8), round_page((size_t)r->ne * 4),
			  round_page((size_t)r->nv * 8), round_page((size_t)r->nv * 8) };
	void *a[4];
	bypass_pager *p = NULL;
	if (r->side == S_RAM || r->side == S_LINUX) {
		for (int i = 0; i < 4; i++) {
			a[i] = mmap(NULL, len[i], PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (a[i] == MAP_FAILED)
				pb_side_fail(&res->rep, "mmap", -errno);
			madvise(a[i], len[i], MADV_NOHUGEPAGE); /* 4 KiB pages, as bypass's */
		}
	} else {
		struct bypass_pager_config cfg = {
			.budget = r->budget, .swap_path = r->swapfile, .swap_size = r->swap_size,
			.mode = BYPASS_PAGER_UPCALL,
		};
		int e = bypass_pager_create(&cfg, &p);
		if (e)
			pb_side_fail(&res->rep, "bypass_pager_create", e);
		e = pb_set_policy(p, r->side == S_WINDOW ? "window" : "2q");
		if (e == -ENOSYS && r->side == S_2Q) {
			res->policy_default = true; /* no set_policy: 2Q is the pager's only policy */
		} else if (e) {
			res->rep.skipped = true;
			snprintf(res->rep.msg, sizeof(res->rep.msg), "policy %s not available: %s",
				 r->side == S_WINDOW ? "window" : "2q",
				 e == -ENOSYS ? "this build's pager has no bypass_pager_set_policy"
					      : strerror(-e));
			bypass_pager_destroy(p);
			return;
		}
		for (int i = 0; i < 4; i++)
			if ((e = bypass_pager_map(p, len[i], 0, &a[i])))
				pb_side_fail(&res->rep, "bypass_pager_map", e);
		if (r->side == S_WINDOW)
			for (int i = 0; i < 4; i++)
				if ((e = pb_advise(p, a[i], len[i],
						   i == 1 ? PB_ADV_SEQUENTIAL : PB_ADV_PRIORITY)))
					pb_side_fail(&res->rep, "bypass_pager_advise", e);
	}
	uint64_t *off = a[0];
	uint32_t *nb = a[1];
	double *score = a[2], *contrib = a[3];
	double t0 = now_s();
	int e = pb_csr_load(r->csr_path, off, nb, r->nv, r->ne);
	if (e)
		pb_side_fail(&res->rep, "loading the CSR", e);
	for (uint32_t v = 0; v < r->nv; v++)
		score[v] = 1.0 / r->nv;
	res->load_secs = now_s() - t0;
	for (int k = 0; k < r->iters; k++) {
		t0 = now_s();
		res->last_err = pr_iter(off, nb, score, contrib, r->nv);
		res->iter_secs[k] = now_s() - t0;
	}
	/* untimed: the ranks, for the comparison */
	if (plant_rank && r->side == S_WINDOW)
		score[r->nv / 2] *= 1.0 + 1e-9; /* tests/pager/bench-plant.sh */
	memcpy(r->ranks, score, (size_t)r->nv * 8);
	if (p) {
		bypass_pager_stats(p, &res->st);
		bypass_pager_destroy(p);
	}
}

struct scratch {
	char dir[300], csr[340], swap[340];
};

static void scratch_remove(struct scratch *s)
{
	if (s->csr[0])
		unlink(s->csr);
	if (s->swap[0])
		unlink(s->swap);
	if (s->dir[0])
		rmdir(s->dir);
}

int bench_pager_pagerank(struct bench_ctx *c)
{
	const char *id = "pager.pagerank";
	unsigned scale = (unsigned)bench_count(c, "scale", 22, 18);
	/* quick: 3 iterations a run (5 until the quick suite outgrew its
	 * 300 s; the row is the median iteration, the target's interval over
	 * the rounds) */
	int iters = (int)bench_count(c, "iters", 20, 3);
	if (bench_smoke(c)) {
		if (!bench_param(c, "scale", NULL))
			scale = 18;
		if (!bench_param(c, "iters", NULL))
			iters = 3;
	}
	if (iters < 1)
		iters = 1;
	if (iters > MAX_ITERS)
		iters = MAX_ITERS;
	int rounds = bench_smoke(c) ? 1 : bench_rounds(c);
	unsigned limit = bench_quick(c) ? 900 : 3600;
	int ret = 0;

	/* the graph, written once */
	double t0 = now_s();
	struct pb_csr g;
	int e = pb_kron_csr(scale, 16, GAP_SEED, &g);
	if (e) {
		bench_skip(c, id, "generating the graph (scale %u): %s", scale, strerror(-e));
		return 0;
	}
	double gen_s = now_s() - t0;
	uint32_t nv = g.nv;
	uint64_t ne = g.ne;
	size_t b_off = round_page(((size_t)nv + 1) * 8), b_nb = round_page((size_t)ne * 4);
	size_t b_vec = round_page((size_t)nv * 8);
	size_t csr = b_off + b_nb, per_vertex = b_off + 2 * b_vec, total = csr + 2 * b_vec;
	/* CSR 2.5x the budget, unless the per-vertex arrays would then take
	 * more than 70% of it */
	size_t budget = csr * 2 / 5;
	if (budget < per_vertex * 10 / 7)
		budget = per_vertex * 10 / 7;
	/* below 8 MiB the cgroup's OOM killer takes the Linux side (its own
	 * pages, the load buffer) */
	if (budget < (8u << 20))
		budget = 8u << 20;
	if (bench_param(c, "budget_mib", NULL))
		budget = (size_t)bench_count(c, "budget_mib", 0, 0) << 20;
	budget = round_page(budget);
	struct scratch sc = { "", "", "" };
	struct statvfs vfs;
	if (statvfs(pb_swapdir(c), &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < 4 * (uint64_t)total) {
		pb_csr_free(&g);
		bench_skip(c, id, "%s has less than %zu MiB free", pb_swapdir(c), 4 * total >> 20);
		return 0;
	}
	snprintf(sc.dir, sizeof(sc.dir), "%s/bypass-bench-pagerank-XXXXXX", pb_swapdir(c));
	if (!mkdtemp(sc.dir)) {
		e = -errno;
		pb_csr_free(&g);
		bench_skip(c, id, "mkdtemp in %s: %s", pb_swapdir(c), strerror(-e));
		return 0;
	}
	/* Linux first: it installs the signal handler that removes all of it */
	struct pb_linux_env env;
	char facts[1024] = "", linux_why[1024] = "";
	struct pb_sides t;
	memset(&t, 0, sizeof(t));
	for (int s = 0; s < S_N; s++)
		t.have[s] = true;
	t.have[S_LINUX] = pb_linux_setup(c, budget, total + total / 2, &env, linux_why,
				       sizeof(linux_why), facts, sizeof(facts)) == 0;
	if (t.have[S_LINUX]) {
		char path[400];
		snprintf(path, sizeof(path), "%s/memory.swappiness", env.cg);
		if (access(path, W_OK) == 0)
			pb_write_small(path, "100");
	}
	snprintf(sc.csr, sizeof(sc.csr), "%s/graph.csr", sc.dir);
	snprintf(sc.swap, sizeof(sc.swap), "%s/bypass.swap", sc.dir);
	env.extra_file = sc.csr;
	env.bypass_file = sc.swap;
	env.scratch_dir = sc.dir;
	e = pb_csr_write(sc.csr, &g);
	pb_csr_free(&g);
	if (!e)
		e = pb_write_file(sc.swap, total);
	if (e) {
		pb_linux_teardown(&env);
		pb_cleanup_on_signal(NULL);
		scratch_remove(&sc);
		bench_skip(c, id, "writing the CSR and swap files in %s: %s", sc.dir, strerror(-e));
		return 0;
	}

	struct pr_result *res = bench_shared_alloc(sizeof(*res));
	double *ranks = bench_shared_alloc((size_t)nv * 8);
	double *ref = malloc((size_t)nv * 8);
	double *it_all[S_N], *round_med[S_N], load_s[S_N] = { 0 }, last_err = 0;
	bool nomem = !res || !ranks || !ref;
	for (int s = 0; s < S_N; s++) {
		it_all[s] = calloc((size_t)rounds * (size_t)iters, sizeof(double));
		round_med[s] = calloc((size_t)rounds, sizeof(double));
		nomem |= !it_all[s] || !round_med[s];
		for (int k = 0; round_med[s] && k < rounds; k++)
			round_med[s][k] = NAN; /* a round the side did not finish */
	}
	if (nomem) {
		pb_linux_teardown(&env);
		pb_cleanup_on_signal(NULL);
		scratch_remove(&sc);
		bench_skip(c, id, "out of memory for the results");
		goto out;
	}
	memset(ranks, 0, (size_t)nv * 8); /* faulted in here: not charged to a side */
	struct bypass_pager_stats bst[S_N];
	memset(bst, 0, sizeof(bst));
	uint64_t pswpin = 0, pswpout = 0;
	bool policy_default = false;
	int n = 0, cnt[S_N] = { 0 }; /* rounds; runs per side */
	struct pr_run run = { S_RAM, iters, sc.csr, sc.swap, nv, ne, budget, total, res, ranks };
	plant_rank = bench_planted(c, id);
	/* the reference ranks: in memory, before the rounds */
	if (pb_side_run(&t, S_RAM, NULL, pr_side, &run, limit, &res->rep,
			       "the reference run (in memory)")) {
		last_err = res->last_err;
		memcpy(ref, ranks, (size_t)nv * 8);
	} else if (!t.fail[0]) {
		snprintf(t.fail, sizeof(t.fail), "the reference run (in memory) did not run: %s",
			 t.skip_why[S_RAM][0] ? t.skip_why[S_RAM] : "?");
	}
	struct bench_rounds rr;
	int r, cnt_round[S_N] = { 0 };
	bench_rounds_init(c, &rr, rounds, 0);
	while (!t.fail[0] && bench_round(c, &rr, &r)) {
		/* a rerun round overwrites the disturbed one's figures */
		for (int s = 0; s < S_N; s++) {
			if (!rr.tries)
				cnt_round[s] = cnt[s];
			cnt[s] = cnt_round[s];
			round_med[s][r] = NAN;
		}
		size_t order[S_N];
		bench_order(r, S_N, order);
		for (int k = 0; k < S_N && !t.fail[0]; k++) {
			int s = (int)order[k];
			if (!t.have[s])
				continue;
			memset(ranks, 0, (size_t)nv * 8);
			run.side = s;
			uint64_t in0 = pb_vmstat("pswpin"), out0 = pb_vmstat("pswpout");
			if (!pb_side_run(&t, s, s == S_LINUX ? &env : NULL, pr_side, &run, limit,
					 &res->rep, s_name[s]))
				continue;
			/* the ranks themselves, vertex by vertex (bits: NaN too) */
			double maxd = 0;
			uint64_t ndiff = 0;
			for (uint32_t v = 0; v < nv; v++)
				if (memcmp(&ranks[v], &ref[v], sizeof(double))) {
					ndiff++;
					if (fabs(ranks[v] - ref[v]) > maxd || isnan(ranks[v]))
						maxd = fabs(ranks[v] - ref[v]);
				}
			if (ndiff) {
				snprintf(t.fail, sizeof(t.fail),
					 "%s: THE RANKS DIFFER from the reference run's: %llu of %u "
					 "vertices, max abs difference %g", s_name[s],
					 (unsigned long long)ndiff, nv, maxd);
				break;
			}
			policy_default |= res->policy_default;
			memcpy(it_all[s] + (size_t)cnt[s] * (size_t)iters, res->iter_secs,
			       (size_t)iters * sizeof(double));
			struct bench_summary rs;
			double tmp[MAX_ITERS];
			memcpy(tmp, res->iter_secs, (size_t)iters * sizeof(double));
			bench_summarize_d(tmp, (size_t)iters, &rs);
			round_med[s][r] = rs.median; /* at the round's place */
			cnt[s]++;
			load_s[s] += res->load_secs;
			if (s == S_LINUX) {
				pswpin += pb_vmstat("pswpin") - in0;
				pswpout += pb_vmstat("pswpout") - out0;
			} else if (s != S_RAM) {
				pb_stats_add(&bst[s], &res->st);
			}
		}
		if (!t.fail[0])
			n = r + 1;
	}
	pb_linux_teardown(&env);
	pb_cleanup_on_signal(NULL);
	scratch_remove(&sc);

	bench_begin(c, id, "pull PageRank over a Kronecker graph, CSR larger than the budget: "
		    "seconds per iteration (x baseline time, lower is better)", s_name[S_LINUX]);
	for (int s = 0; s < S_N; s++)
		if (!cnt[s])
			t.have[s] = false;
	for (int s = 0; s < S_N; s++) {
		if (!t.have[s])
			continue;
		char params[300];
		snprintf(params, sizeof(params),
			 "{\"side\": \"%s\", \"scale\": %u, \"vertices\": %u, \"edges\": %llu, "
			 "\"csr_mib\": %.1f, \"budget_mib\": %.1f, \"iterations\": %d}", s_key[s],
			 scale, nv, (unsigned long long)ne, (double)csr / 1048576.0,
			 (double)budget / 1048576.0, iters);
		struct bench_row row = {
			.variant = s_name[s], .unit = "s", .higher_is_better = false,
			.kind = s == S_RAM ? BENCH_LIMIT : s == S_LINUX ? BENCH_BASELINE
									: BENCH_BYPASS,
			.is_base = s == S_LINUX, .params = params,
		};
		if (s == S_RAM)
			row.note = "no budget";
		bench_summarize_d(it_all[s], (size_t)cnt[s] * (size_t)iters, &row.s);
		if (s >= S_2Q && t.have[S_LINUX]) {
			struct bench_est re;
			bench_est_ratio(round_med[s], round_med[S_LINUX], (size_t)n, rounds,
					BENCH_CI_T, &re);
			bench_row_est(&row, &re);
		}
		bench_row(c, &row);
	}
	bench_note(c, "graph: Kronecker scale %u, edge factor 16 (A 0.57, B 0.19, C 0.19, seed "
		   "%llu, ids permuted), symmetrized, self-loops and duplicates removed: %u "
		   "vertices, %llu directed edges; generated in %.1f s", scale,
		   (unsigned long long)GAP_SEED, nv, (unsigned long long)ne, gen_s);
	bench_note(c, "CSR %.1f MiB (offsets uint64 %.1f MiB + neighbours uint32 %.1f MiB), "
		   "budget %.1f MiB: the CSR is %.2fx the budget; per-vertex arrays (offsets, "
		   "ranks, contributions) %.1f MiB = %.0f%% of it; all arrays %.1f MiB = %.2fx",
		   (double)csr / 1048576.0, (double)b_off / 1048576.0, (double)b_nb / 1048576.0,
		   (double)budget / 1048576.0, (double)csr / (double)budget,
		   (double)per_vertex / 1048576.0, 100.0 * (double)per_vertex / (double)budget,
		   (double)total / 1048576.0, (double)total / (double)budget);
	bench_note(c, "GAP's PageRankPull in doubles, damping 0.85, %d iterations (no early "
		   "exit; the last changed the ranks by %.3g in sum); each side loads the CSR "
		   "file (O_DIRECT, 1 MiB buffer) into its memory, then iterates; %d round%s, "
		   "each side in a fresh process, rows rotated; rows are over all iterations "
		   "of all rounds", iters, last_err, n, n == 1 ? "" : "s");
	bench_note(c, "ranks: every run's final ranks are bit-identical to the reference run's "
		   "(in memory, before the rounds)%s", t.fail[0] ? ", up to the failure" : "");
	char loads[600] = "";
	for (int s = 0; s < S_N; s++)
		if (t.have[s])
			snprintf(loads + strlen(loads), sizeof(loads) - strlen(loads), "%s%s %.2f s",
				 loads[0] ? ", " : "", s_key[s], load_s[s] / cnt[s]);
	bench_note(c, "CSR load (not in the rows), mean per run: %s", loads);
	pb_note_linux(c, &t, S_LINUX, cnt[S_LINUX], facts, "", linux_why, pswpin, pswpout);
	for (int s = S_2Q; s < S_N; s++) {
		if (!t.have[s]) {
			bench_note(c, "%s: skipped: %s", s_name[s], t.skip_why[s]);
			continue;
		}
		uint64_t pf, pfu;
		pb_prefetch_counts(&bst[s], &pf, &pfu);
		bench_note(c, "%s, all rounds (load included): %llu swap-in faults + %llu pages "
			   "read ahead + %llu prefetched (%llu seen used), %llu evictions, %.0f MiB "
			   "read, %.0f MiB written", s_name[s],
			   (unsigned long long)bst[s].faults_swapin,
			   (unsigned long long)bst[s].readahead_pages, (unsigned long long)pf,
			   (unsigned long long)pfu,
			   (unsigned long long)bst[s].evictions,
			   (double)bst[s].bytes_read / 1048576.0,
			   (double)bst[s].bytes_written / 1048576.0);
	}
	if (policy_default)
		bench_note(c, "2q row: this build's pager has no bypass_pager_set_policy; 2Q is "
			   "its only policy");
	bench_note(c, "window hints: PRIORITY on offsets, ranks and contributions, SEQUENTIAL "
		   "on the neighbour array; the 2q row gives none");
	if (t.fail[0]) {
		bench_fail(c, "pager.pagerank: %s", t.fail);
		ret = 1;
	}
	if (t.have[S_LINUX] && t.have[S_WINDOW]) {
		/* per round: the window side's median iteration over Linux's in
		 * the same round (a round where either did not finish, Linux
		 * killed by its OOM killer say, leaves the baseline incomplete) */
		struct bench_est est;
		bench_est_ratio(round_med[S_WINDOW], round_med[S_LINUX], (size_t)n, rounds,
				BENCH_CI_T, &est);
		bench_target_est(c, "window time per iteration / Linux swap's (at least 2x faster: "
				 "<= 0.5)", &est, "<=", 0.5);
		bench_note(c, "ratios with an interval and the target: per round, the side's "
			   "median iteration / Linux's in the same round; the mean over the rounds "
			   "with Student's t 95%% interval");
	}
	bench_end(c);
out:
	for (int s = 0; s < S_N; s++) {
		free(it_all[s]);
		free(round_med[s]);
	}
	free(ref);
	bench_shared_free(res, sizeof(*res));
	bench_shared_free(ranks, (size_t)nv * 8);
	if (ret)
		fprintf(stderr, "bypass-bench: pager.pagerank failed: %s\n", t.fail);
	return ret;
}
