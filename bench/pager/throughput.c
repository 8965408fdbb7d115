/* SPDX-License-Identifier: MIT */
/*
 * pager.throughput: ExtMem's same-policy comparison.  One access loop over a
 * region four times larger than the memory budget, run (a) on plain
 * anonymous memory in a memory cgroup limited to the budget, with Linux
 * swapping to a swap file, and (b) on a bypass region with the same budget,
 * swapping to a swap file of the same size on the same filesystem.  Both run
 * in a fresh child process, alternately, each round.
 *
 * The Linux side needs root (swapon, the cgroup); it is skipped with the
 * reason otherwise, and the bypass rows are still reported.
 */
#include "throughput.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *phase_name[PH_N] = { "first touch", "sequential", "random" };

/* ------------------------------------------------------------ the experiment */

/* The sides of a round: Linux with its swap file, bypass, Linux with zram,
 * Linux with zswap in front of the file (issue 35). */
static const char *const t_row[T_SIDES] = { "Linux swap (memory cgroup)", "bypass (upcall)",
					    "Linux zram (memory cgroup)",
					    "Linux zswap + swap file (memory cgroup)",
					    "bypass + compressed tier (upcall)" };
static const char *const t_key[T_SIDES] = { "file", "bypass", "zram", "zswap", "tier" };
static const int t_backend[T_SIDES] = { PB_FILE, -1, PB_ZRAM, PB_ZSWAP, -1 };
/* A side of bypass (without or with the tier), not of Linux. */
static bool t_bypass(int side)
{
	return side == 1 || side == T_TIER;
}

int bench_pager_throughput(struct bench_ctx *c)
{
	int ret = 0;
	const char *id = "pager.throughput";
	struct sizes z;
	/* quick: a sixteenth of the earlier 1 GiB, the same 4x budget ratio
	 * (issue 24, and issue 33's 5 rounds: make bench in 300 s) */
	uint64_t region_mib = bench_count(c, "region_mib", 32768, 64);
	if (region_mib < 16)
		region_mib = 16;
	/* Two swap files of the region's size must fit on the disk, with a
	 * third to spare for everyone else. */
	uint64_t want_mib = region_mib, avail_mib = 0;
	struct statvfs vfs;
	if (statvfs(pb_swapdir(c), &vfs) == 0) {
		avail_mib = (uint64_t)vfs.f_bavail * vfs.f_frsize >> 20;
		while (region_mib > 16 && region_mib * 3 > avail_mib)
			region_mib /= 2;
	}
	z.region = (size_t)region_mib << 20;
	z.budget = z.region / 4;
	z.check_linux = true; /* the calibration runs too; the rounds: below */
	z.seq_passes = bench_count(c, "seq_passes", 2, 1);
	if (bench_smoke(c))
		z.seq_passes = 1;
	z.rand_accesses = bench_count(c, "rand_accesses", 4000000, 6250);
	/* --param readahead=N: bypass's readahead window (pages) */
	z.readahead = (unsigned)strtoul(bench_param(c, "readahead", "0"), NULL, 10);
	/* --param batch=N: bypass's eviction round (pages) */
	z.batch = (unsigned)strtoul(bench_param(c, "batch", "0"), NULL, 10);
	/* --param spin=0: bypass's swap-in reads sleep, as Linux's do */
	z.no_spin = strcmp(bench_param(c, "spin", "1"), "0") == 0;
	/* --param fill=random: incompressible pages (issue 35's tier) */
	z.fill_random = strcmp(bench_param(c, "fill", "counter"), "random") == 0;
	uint64_t dev_reads = bench_count(c, "dev_reads", 20000, 1000);
	if (dev_reads < 2)
		dev_reads = 2;
	size_t dev_seq = (size_t)bench_count(c, "dev_seq_mib", 4096, 64) << 20;
	int rounds = bench_rounds(c);

	bench_begin(c, id, "accesses/s over a region 4x the budget: bypass vs Linux swap "
		    "in a memory cgroup of the same size, to a file, to zram or to a file behind "
		    "zswap", "the best of Linux's swap file, zram and zswap (per phase)");
	if (z.readahead > 64) {
		/* the library's limit (bypass_pager_config.readahead): say so
		 * here, not as an EINVAL from the bypass side's first round */
		bench_fail(c, "%s: --param readahead=%u: at most 64 pages", id, z.readahead);
		bench_end(c);
		return 0;
	}
	struct pb_linux_env env;
	char why[1024] = "", facts[1024] = "";
	bool have_linux = pb_linux_setup(c, z.budget, z.region, &env, why, sizeof(why), facts, sizeof(facts)) == 0;

	char bswap[300];
	snprintf(bswap, sizeof(bswap), "%s/bypass-bench-pager-%d.swap", pb_swapdir(c),
		 (int)getpid());
	env.bypass_file = bswap; /* removed by on_fatal too */
	int e = pb_write_file(bswap, z.region);
	if (e) {
		if (have_linux)
			pb_linux_teardown(&env);
		pb_cleanup_on_signal(NULL);
		bench_skip(c, id, "writing swap file %s: %s", bswap, strerror(-e));
		return 0;
	}
	/* the checksum every page must end with, on both sides */
	size_t exp_len = z.region / PB_PAGE * sizeof(uint64_t);
	uint64_t *exp = bench_shared_alloc(exp_len);
	pt_expected_sums(&z, exp);

	struct result *res = bench_shared_alloc(sizeof(*res));
	double *aps[T_SIDES][PH_N];
	for (int s = 0; s < T_SIDES; s++)
		for (int ph = 0; ph < PH_N; ph++) {
			aps[s][ph] = calloc((size_t)rounds, sizeof(double));
			for (int i = 0; aps[s][ph] && i < rounds; i++)
				aps[s][ph][i] = NAN;
		}
	double *dl[DL_N], *rand_in[T_SIDES];
	for (int d = 0; d < DL_N; d++)
		dl[d] = calloc((size_t)rounds, sizeof(double));
	for (int s = 0; s < T_SIDES; s++) {
		rand_in[s] = calloc((size_t)rounds, sizeof(double));
		for (int i = 0; rand_in[s] && i < rounds; i++)
			rand_in[s][i] = NAN;
	}
	/* Linux's zram and zswap sides: tried once here (then back to the
	 * file); one that cannot run is skipped with its reason */
	bool lb[T_SIDES] = { have_linux, true, false, false, false };
	char lwhy[T_SIDES][1024], lfacts[T_SIDES][400];
	int oom[T_SIDES] = { 0 }, lruns[T_SIDES] = { 0 };
	uint64_t pool[T_SIDES] = { 0 }, lin[T_SIDES] = { 0 }, zin[T_SIDES] = { 0 };
	for (int s = 2; s < T_SIDES; s++) {
		lwhy[s][0] = lfacts[s][0] = 0;
		if (s == T_TIER) { /* --param tier=0 leaves it out */
			if (!strcmp(bench_param(c, "tier", "1"), "0"))
				snprintf(lwhy[s], sizeof(lwhy[s]), "not selected (--param tier=0)");
			else
				lb[s] = pb_tier_check(c, lwhy[s], sizeof(lwhy[s])) == 0;
		} else if (!have_linux)
			snprintf(lwhy[s], sizeof(lwhy[s]), "%s", why);
		else if (!strcmp(bench_param(c, "compressed", "1"), "0"))
			snprintf(lwhy[s], sizeof(lwhy[s]), "not selected (--param compressed=0: "
				 "zram and zswap, system-wide settings, left alone)");
		else
			lb[s] = pb_linux_use(&env, t_backend[s], z.region, lwhy[s], sizeof(lwhy[s]),
					     lfacts[s], sizeof(lfacts[s])) == 0;
	}
	/* Equal memory (issue 35): zram's and zswap's pools are not charged to
	 * a cgroup v1, so one calibration run each at the budget measures the
	 * pool's peak and its side's limit becomes the budget less it; a side
	 * whose pool alone is larger than the budget cannot run at this memory
	 * and is not run (left out of the best of Linux's three, and every
	 * bypass row says so); --param calibrate=0: the budget */
	size_t lim[T_SIDES];
	uint64_t pool_cal[T_SIDES] = { 0 };
	bool cal_ok[T_SIDES] = { false };
	char cannot[200] = ""; /* the sides that cannot run at this memory */
	for (int s = 0; s < T_SIDES; s++)
		lim[s] = z.budget;
	for (int s = 2; s < 4 && strcmp(bench_param(c, "calibrate", "1"), "0"); s++) {
		if (!lb[s] || pb_linux_use(&env, t_backend[s], z.region, lwhy[s], sizeof(lwhy[s]),
					   NULL, 0)) {
			lb[s] = false;
			continue;
		}
		sync();
		pb_linux_reset(&env);
		pb_linux_pool_begin(&env);
		e = pt_run_child(s, &env, bswap, &z, exp, res);
		uint64_t pl = pb_linux_pool_end(&env);
		if (e && e != -EINTR)
			continue;
		pool_cal[s] = pl;
		if (pl + 4096 > z.budget) {
			/* its pool alone does not fit in the budget: no limit
			 * gives it the same memory (no floor: that gave it more) */
			lb[s] = false;
			snprintf(lwhy[s], sizeof(lwhy[s]), "cannot run at this memory: its "
				 "compressed pool alone peaked at %.1f MiB in a calibration run, "
				 "above the %zu MiB budget; left out of the best of Linux's three",
				 (double)pl / 1048576.0, z.budget >> 20);
			size_t o = strlen(cannot);
			snprintf(cannot + o, sizeof(cannot) - o, "%s%s (pool %.1f MiB)",
				 o ? ", " : "", t_key[s], (double)pl / 1048576.0);
			continue;
		}
		cal_ok[s] = true;
		lim[s] = (size_t)((z.budget - pl) & ~4095ull);
	}
	if (have_linux)
		pb_linux_use(&env, PB_FILE, z.region, why, sizeof(why), NULL, 0);
	bool have_dev = true;
	char dev_why[200] = "";
	double verify_s[T_SIDES] = { 0 };
	int lchecked = 0; /* Linux runs whose pages were read back */
	struct bypass_pager_tier_stats tst = { 0 };
	struct bypass_pager_stats bst = { 0 };
	uint64_t ph_zero[PH_N] = { 0 }, ph_swapin[PH_N] = { 0 }, ph_wp[PH_N] = { 0 },
		 ph_ra[PH_N] = { 0 }, ph_rad[PH_N] = { 0 }, ph_lat_ns[PH_N] = { 0 };
	uint64_t pswpin = 0, pswpout = 0;
	int n = 0;
	const char *fail = NULL;
	pt_plant_loss = bench_planted(c, id);
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds, 0);
	while (!fail && bench_round(c, &rr, &r)) {
		/* The same starting state for both sides, every round (issue 20,
		 * item 3): the side that goes first alternates by round (Linux
		 * always went first, on a machine the previous round had left
		 * in whatever state), dirty data of the previous side is written
		 * out first (sync), and the cgroup starts with nothing charged. */
		for (int k = 0; k < T_SIDES && !fail; k++) {
			/* the first side rotates by round */
			int side = (k + r) % T_SIDES;
			if (!lb[side])
				continue;
			if (!t_bypass(side) && env.backend != t_backend[side] &&
			    pb_linux_use(&env, t_backend[side], z.region, lwhy[side],
					 sizeof(lwhy[side]), NULL, 0)) {
				lb[side] = false;
				continue;
			}
			sync();
			if (!t_bypass(side)) {
				pb_linux_reset(&env);
				pb_linux_set_limit(&env, lim[side]);
				pb_linux_pool_begin(&env);
			}
			uint64_t in0 = pb_vmstat("pswpin"), out0 = pb_vmstat("pswpout");
			uint64_t zin0 = pb_vmstat("zswpin");
			/* the Linux sides' read-back checks the kernel, not
			 * bypass: the quick suite does it in the first round
			 * only (a swap file's read back took ~1 s a run) */
			z.check_linux = !bench_quick(c) || bench_smoke(c) || r == 0;
			e = pt_run_child(side, &env, bswap, &z, exp, res);
			if (!t_bypass(side)) {
				uint64_t pl = pb_linux_pool_end(&env);
				if (pl > pool[side])
					pool[side] = pl;
			}
			if (e == -EINTR && side >= 2 && side != T_TIER) {
				/* zram's or zswap's run killed (the cgroup's OOM
				 * killer): that backend's outcome, recorded; its
				 * round has no figure */
				oom[side]++;
				continue;
			}
			if (!e && res->pages_bad) {
				e = -EIO;
				snprintf(res->msg, sizeof(res->msg),
					 "LOST DATA: %llu of %llu pages have the wrong contents at the "
					 "end of the run (the first: page %llu)",
					 (unsigned long long)res->pages_bad,
					 (unsigned long long)res->pages_checked,
					 (unsigned long long)res->first_bad);
			}
			if (e) {
				fail = side == 1 ? "bypass" : t_row[side];
				snprintf(why, sizeof(why), "%s side: %s", fail,
					 res->msg[0] ? res->msg : strerror(-e));
				/* bypass failing (or either side losing data) is a
				 * failure of the run, not a skip */
				if (t_bypass(side) || res->pages_bad)
					ret = 1;
				break;
			}
			for (int ph = 0; ph < PH_N; ph++)
				aps[side][ph][r] = (double)res->accesses[ph] / res->secs[ph];
			rand_in[side][r] = (double)res->swapins[PH_RAND] / res->secs[PH_RAND];
			verify_s[side] += res->verify_secs;
			if (!t_bypass(side) && res->pages_checked)
				lchecked++;
			if (side == T_TIER) {
				lruns[side]++;
				tst.stored += res->tst.stored;
				tst.rejected += res->tst.rejected;
				tst.dropped += res->tst.dropped;
				tst.swapin_pool += res->tst.swapin_pool;
				tst.swapin_file += res->tst.swapin_file;
				tst.share_moves += res->tst.share_moves;
				tst.pool_bytes = res->tst.pool_bytes; /* the last run's */
			} else if (side != 1) {
				lin[side] += pb_vmstat("pswpin") - in0;
				zin[side] += pb_vmstat("zswpin") - zin0;
				lruns[side]++;
			}
			if (side == 0) {
				pswpin += pb_vmstat("pswpin") - in0;
				pswpout += pb_vmstat("pswpout") - out0;
			} else if (side == 1) {
				bst.faults_zero += res->st.faults_zero;
				bst.faults_swapin += res->st.faults_swapin;
				bst.readahead_pages += res->st.readahead_pages;
				bst.evictions += res->st.evictions;
				bst.evictions_clean += res->st.evictions_clean;
				bst.faults_wp += res->st.faults_wp;
				for (int ph = 0; ph < PH_N; ph++) {
					ph_zero[ph] += res->ph_zero[ph];
					ph_swapin[ph] += res->ph_swapin[ph];
					ph_wp[ph] += res->ph_wp[ph];
					ph_ra[ph] += res->ph_ra[ph];
					ph_rad[ph] += res->ph_rad[ph];
					ph_lat_ns[ph] += res->ph_lat_ns[ph];
				}
				bst.bytes_read += res->st.bytes_read;
				bst.bytes_written += res->st.bytes_written;
				if (res->st.resident_peak > bst.resident_peak)
					bst.resident_peak = res->st.resident_peak;
			}
		}
		if (fail)
			break;
		if (have_dev) {
			double v[DL_N] = { 0 };
			e = pt_device_limits(bswap, z.region, dev_reads, dev_seq, (unsigned)r, v);
			if (e) {
				have_dev = false;
				snprintf(dev_why, sizeof(dev_why), "%s", strerror(-e));
			} else {
				for (int d = 0; d < DL_N; d++)
					dl[d][r] = v[d];
			}
		}
		n = r + 1;
	}
	unlink(bswap);
	if (have_linux)
		pb_linux_teardown(&env);
	pb_cleanup_on_signal(NULL);
	if (fail && ret) {
		/* bypass failing, or either side losing data: a failure of
		 * the run, in "failures" (never a skip or a note) */
		bench_fail(c, "%s: %s", id, why);
		bench_end(c);
		goto out;
	}
	if (fail && !n) {
		bench_skip(c, id, "%s", why);
		goto out;
	}

	/* the ratio: the per-round ratios (both sides of a round ran minutes
	 * apart at most, on the same state), their mean with Student's t
	 * interval, over the rounds planned: a round the Linux side did not
	 * finish leaves the baseline incomplete.  (Computed before the
	 * summaries sort each side's figures: the rounds stay paired.) */
	struct bench_est est[PH_N], est_best[PH_N], est_sd[PH_N][T_SIDES];
	/* bypass + tier's: to each side (1: bypass without the tier), to the best */
	struct bench_est est_t[PH_N][T_SIDES], est_tbest[PH_N];
	int best[PH_N];
	double med[PH_N][T_SIDES];
	for (int ph = 0; ph < PH_N; ph++) {
		struct bench_summary sum[T_SIDES];
		best[ph] = -1;
		for (int side = 0; side < T_SIDES; side++) {
			bench_summarize_finite(aps[side][ph], (size_t)n, &sum[side]);
			med[ph][side] = sum[side].n ? sum[side].median : NAN;
			bench_est_ratio(aps[1][ph], aps[side][ph], have_linux ? (size_t)n : 0, rounds,
					BENCH_CI_T, &est_sd[ph][side]);
			bench_est_ratio(aps[T_TIER][ph], aps[side][ph],
					have_linux || side == 1 ? (size_t)n : 0, rounds, BENCH_CI_T,
					&est_t[ph][side]);
		}
		/* the best of Linux's three: the highest median rate of those
		 * that ran every round (else of those that ran) */
		for (int pass = 0; pass < 2 && best[ph] < 0; pass++)
			for (int side = 0; side < T_SIDES; side++) {
				if (t_bypass(side) || !lruns[side] || !isfinite(med[ph][side]))
					continue;
				if (!pass && (oom[side] || lruns[side] < n))
					continue;
				if (best[ph] < 0 || med[ph][side] > med[ph][best[ph]])
					best[ph] = side;
			}
		est[ph] = est_sd[ph][0];
		est_best[ph] = est_sd[ph][best[ph] >= 0 ? best[ph] : 0];
		est_tbest[ph] = est_t[ph][best[ph] >= 0 ? best[ph] : 0];
		char name[128], params[1200], j[5][32];
		for (int side = 0; side < T_SIDES; side++) {
			if (side != 1 && !lruns[side])
				continue;
			snprintf(name, sizeof(name), "%s: %s", phase_name[ph], t_row[side]);
			const struct bench_est *eb = side == T_TIER ? est_t[ph] : est_sd[ph];
			if (t_bypass(side))
				snprintf(params, sizeof(params),
					 "{\"phase\": \"%s\", \"region_mib\": %zu, \"budget_mib\": %zu, "
					 "\"fill\": \"%s\", \"side\": \"%s\", \"limit_includes\": "
					 "\"the budget: resident pages%s\", \"best_of_linux\": \"%s\", "
					 "\"ratio_to_best\": %s, \"ratio_to_file\": %s, "
					 "\"ratio_to_zram\": %s, \"ratio_to_zswap\": %s, "
					 "\"ratio_to_bypass\": %s, \"linux_cannot_run\": \"%s\"}",
					 phase_name[ph], z.region >> 20, z.budget >> 20,
					 z.fill_random ? "random" : "counter", t_key[side],
					 side == T_TIER ? " and the tier's pool" : "",
					 best[ph] >= 0 ? t_key[best[ph]] : "none",
					 pb_jratio(j[0], sizeof(j[0]), (side == T_TIER ? est_tbest[ph]
									: est_best[ph]).value),
					 pb_jratio(j[1], sizeof(j[1]), eb[0].value),
					 pb_jratio(j[2], sizeof(j[2]), eb[2].value),
					 pb_jratio(j[3], sizeof(j[3]), eb[3].value),
					 side == T_TIER ? pb_jratio(j[4], sizeof(j[4]), eb[1].value)
					 : "null", cannot);
			else
				snprintf(params, sizeof(params),
					 "{\"phase\": \"%s\", \"region_mib\": %zu, \"budget_mib\": %zu, "
					 "\"fill\": \"%s\", \"side\": \"%s\", \"backend\": \"%s\", "
					 "\"side_limit_mib\": %.1f, \"pool_calibration_mib\": %.1f, "
					 "\"pool_peak_mib\": %.1f, \"limit_includes\": \"%s\", "
					 "\"oom_killed_runs\": %d, \"best_of_linux\": %s, "
					 "\"tier_ratio\": %s}", phase_name[ph], z.region >> 20,
					 z.budget >> 20, z.fill_random ? "random" : "counter", t_key[side],
					 pb_backend_name[t_backend[side]], (double)lim[side] / 1048576.0,
					 (double)pool_cal[side] / 1048576.0,
					 (double)pool[side] / 1048576.0,
					 side == 0 ? "the cgroup's charge (no pool)" :
					 cal_ok[side] ? "calibrated: the cgroup's limit is the budget "
					 "less the pool's peak in a calibration run (pool_calibration_mib), "
					 "so that charge + pool is about the budget; the pool is not "
					 "charged to a cgroup v1" :
					 "NOT CALIBRATED: the cgroup's charge only: the pool is not "
					 "charged on cgroup v1 (this side had the budget plus its pool)",
					 oom[side], side == best[ph] ? "true" : "false",
					 pb_jratio(j[0], sizeof(j[0]), est_t[ph][side].value));
			struct bench_row row = {
				.variant = name, .kind = t_bypass(side) ? BENCH_BYPASS : BENCH_BASELINE,
				.unit = "accesses/s", .s = sum[side], .higher_is_better = true,
				.ratio = t_bypass(side) ? NAN : (side == best[ph] ? 1.0 : NAN),
				.params = params,
			};
			if (side == 1 && best[ph] >= 0)
				bench_row_est(&row, &est_best[ph]);
			if (side == T_TIER && best[ph] >= 0)
				bench_row_est(&row, &est_tbest[ph]);
			bench_row(c, &row);
		}
	}
	struct bench_summary dsum[DL_N];
	if (have_dev)
		for (int d = 0; d < DL_N; d++) {
			bench_summarize_d(dl[d], (size_t)n, &dsum[d]);
			struct bench_row row = {
				.variant = pt_dl_name[d], .kind = BENCH_LIMIT, .unit = pt_dl_unit[d],
				.s = dsum[d], .higher_is_better = true, .ratio = NAN,
				.params = "{\"limit\": \"swap device\"}",
			};
			bench_row(c, &row);
		}
	bench_note(c, "region %zu MiB, budget (cgroup limit) %zu MiB, 4 KiB pages both sides; "
		   "swap files of %zu MiB each, written in full beforehand, in %s", z.region >> 20,
		   z.budget >> 20, z.region >> 20, pb_swapdir(c));
	bench_note(c, "an access adds 1 to one 8-byte word of a page in one read-modify-write "
		   "instruction; first touch: every page once, in order; sequential: %llu passes "
		   "in order; random: %llu accesses to uniformly random pages",
		   (unsigned long long)z.seq_passes, (unsigned long long)z.rand_accesses);
	bench_note(c, "each side runs in a fresh child process, alternately (the first side "
		   "alternates by round), %d round%s, each side after a sync and the Linux side "
		   "with its cgroup's charged memory reclaimed first; ratio = the mean of the "
		   "per-round ratios, with Student's t 95%% interval", n, n == 1 ? "" : "s");
	if (region_mib < want_mib)
		bench_note(c, "region scaled down from %llu MiB to fit the disk (%llu MiB free in %s)",
			   (unsigned long long)want_mib, (unsigned long long)avail_mib, pb_swapdir(c));
	if (bench_quick(c) || bench_smoke(c) || region_mib < 32768)
		bench_note(c, "scaled down: ExtMem limited RAM to 8 GB; full size here is a "
			   "32 GiB region and an 8 GiB budget, this run %zu MiB and %zu MiB",
			   z.region >> 20, z.budget >> 20);
	if (have_linux)
		bench_note(c, "Linux: %s; swapped in %llu, out %llu pages over all rounds "
			   "(vm.page-cluster readahead as configured)", facts,
			   (unsigned long long)pswpin, (unsigned long long)pswpout);
	else
		bench_note(c, "Linux side not run: %s", why);
	bench_note(c, "bypass over all rounds: %llu zero-fill and %llu swap-in faults "
		   "(+%llu readahead pages), %llu evictions (%llu clean), %.0f MiB read, %.0f MiB "
		   "written, resident peak %llu pages (budget %zu)",
		   (unsigned long long)bst.faults_zero, (unsigned long long)bst.faults_swapin,
		   (unsigned long long)bst.readahead_pages, (unsigned long long)bst.evictions,
		   (unsigned long long)bst.evictions_clean, (double)bst.bytes_read / 1048576.0,
		   (double)bst.bytes_written / 1048576.0, (unsigned long long)bst.resident_peak,
		   z.budget / PB_PAGE);
	for (int ph = 0; ph < PH_N; ph++)
		bench_note(c, "bypass, %s phase over all rounds: %llu zero-fill, %llu swap-in "
			   "(+%llu readahead pages, %llu of them mapped dirty) and %llu "
			   "write-protect faults, %.0f ms in the fault handler", phase_name[ph],
			   (unsigned long long)ph_zero[ph], (unsigned long long)ph_swapin[ph],
			   (unsigned long long)ph_ra[ph], (unsigned long long)ph_rad[ph],
			   (unsigned long long)ph_wp[ph], (double)ph_lat_ns[ph] / 1e6);
	bench_note(c, "not in either budget: bypass's page table (16 bytes a page: %zu MiB) and "
		   "Linux's page tables; the cgroup also charges the child's own small footprint",
		   (z.region / PB_PAGE * 16) >> 20);
	bench_note(c, "every page's final contents checked after each run, on both sides "
		   "(a checksum of all 512 words against the one the access sequence gives; "
		   "untimed; %s): all %zu pages right in %s (reading them back took %.1f s "
		   "Linux, %.1f s bypass, over all rounds; %d Linux runs checked)",
		   bench_quick(c) && !bench_smoke(c) ? "the Linux sides only in the first "
		   "round in the quick suite: they check the kernel, not bypass" : "every run",
		   z.region / PB_PAGE, fail ? "the runs before the failure" : "every run checked",
		   verify_s[0], verify_s[1], lchecked);
	/* The pager opens its swap file with O_DIRECT where the file system
	 * takes it, as the device rows' reads do: their success says which. */
	if (have_dev)
		bench_fact(c, "pager.swap_o_direct", "true");
	else
		bench_fact(c, "pager.swap_o_direct", "false (O_DIRECT read of the swap file: %s)",
			   dev_why[0] ? dev_why : "not tried");
	if (have_dev) {
		struct bench_summary ri[2];
		for (int side = have_linux ? 0 : 1; side < 2; side++)
			bench_summarize_finite(rand_in[side], (size_t)n, &ri[side]);
		bench_note(c, "swap device rows: measured in every round after the two sides, on "
			   "bypass's swap file (%zu MiB); %llu random reads per queue depth, %zu MiB "
			   "sequential; ratio '-': a different unit", z.region >> 20,
			   (unsigned long long)dev_reads,
			   (dev_seq < z.region ? dev_seq : z.region) >> 20);
		bench_note(c, "random phase against the device (medians): bypass %.0f swap-in "
			   "reads/s = %.2fx the queue-depth-1 limit (one synchronous read per "
			   "faulting thread)", ri[1].median, ri[1].median / dsum[DL_QD1].median);
		if (have_linux)
			bench_note(c, "random phase, Linux: %.0f pages swapped in per second = %.2fx "
				   "the queue-depth-1 read rate (pswpin counts pages, readahead "
				   "included)", ri[0].median, ri[0].median / dsum[DL_QD1].median);
	} else {
		bench_note(c, "swap device rows missing: O_DIRECT reads of %s failed (%s)", bswap,
			   dev_why);
	}
	for (int side = 2; side < T_SIDES; side++) {
		if (lwhy[side][0])
			bench_note(c, "%s not run: %s", t_row[side], lwhy[side]);
		else if (lfacts[side][0])
			bench_note(c, "%s: %s; the same cgroup as the swap file's, its limit the "
				   "budget less the compressed pool's peak in one calibration run "
				   "before the rounds (%.1f MiB: limit %.1f MiB%s) because on cgroup v1 the pool is not charged to the "
				   "cgroup; the pool's peak in the rounds %.1f MiB (sampled every 5 ms: "
				   "%s); %llu pages swapped in from the device and %llu from zswap "
				   "over %d runs; the pages hold %s", t_row[side], lfacts[side],
				   (double)pool_cal[side] / 1048576.0, (double)lim[side] / 1048576.0,
				   cal_ok[side] ? "" : "; NOT CALIBRATED: the budget",
				   (double)pool[side] / 1048576.0, side == 2 ? "zram mm_stat" :
				   "/proc/meminfo Zswap, the pool's total size; debugfs is not mounted",
				   (unsigned long long)lin[side], (unsigned long long)zin[side],
				   lruns[side], z.fill_random ? "random words (incompressible)" :
				   "one counter word each and compress very well");
		if (oom[side])
			bench_note(c, "%s: killed by the memory cgroup's OOM killer in %d of %d runs "
				   "(recorded as its outcome: its rounds have no figure)", t_row[side],
				   oom[side], oom[side] + lruns[side]);
	}
	const char *adapt = getenv("BYPASS_PAGER_TIER_ADAPT");
	bool adapt_off = adapt && !strcmp(adapt, "0");
	if (lruns[T_TIER])
		bench_note(c, "bypass + compressed tier: the same pager and budget with "
			   "bypass_pager_tier() on (its defaults: LZ4, the pool's share starting "
			   "at 50%% of the budget and counted in it, %s, pages kept if they "
			   "compress to 60%%); over all rounds %llu pages put in the pool, %llu not "
			   "compressible enough, %llu dropped, %llu swap-ins from the pool, %llu "
			   "from the file, %llu moves of the pool's share; the last run's pool "
			   "held %.1f MiB at its end",
			   adapt_off ? "fixed there (BYPASS_PAGER_TIER_ADAPT=0)" :
			   "adapting to what the pool saves", (unsigned long long)tst.stored,
			   (unsigned long long)tst.rejected, (unsigned long long)tst.dropped,
			   (unsigned long long)tst.swapin_pool, (unsigned long long)tst.swapin_file,
			   (unsigned long long)tst.share_moves, (double)tst.pool_bytes / 1048576.0);
	for (int ph = 0; ph < PH_N; ph++)
		if (lruns[T_TIER])
			bench_note(c, "%s: bypass + tier median %.0f accesses/s; / bypass without "
				   "the tier %.2f, / the best of Linux's three (%s) %.2f (per round, "
				   "mean)", phase_name[ph], med[ph][T_TIER], est_t[ph][1].value,
				   best[ph] >= 0 ? t_key[best[ph]] : "none", est_tbest[ph].value);
	for (int ph = 0; ph < PH_N; ph++)
		if (best[ph] >= 0)
			bench_note(c, "%s: median accesses/s: swap file %.0f, zram %.0f, zswap %.0f, "
				   "bypass %.0f; best of Linux's three: %s; bypass / best %.2f, / file "
				   "%.2f, / zram %.2f, / zswap %.2f (per round, mean)", phase_name[ph],
				   med[ph][0], med[ph][2], med[ph][3], med[ph][1], t_key[best[ph]],
				   est_best[ph].value, est_sd[ph][0].value, est_sd[ph][2].value,
				   est_sd[ph][3].value);
	if (fail)
		bench_note(c, "stopped early: %s", why);
	if (have_linux) {
		bench_target_est(c, "random accesses/s, bypass / Linux (at least equal)",
				 &est[PH_RAND], ">=", 1.0);
		bench_target_est(c, "sequential accesses/s, bypass / Linux (at least 2x, "
				 "ExtMem's claim; issue 20)", &est[PH_SEQ], ">=", 2.0);
		bench_target_est(c, "random accesses/s, bypass / the best of Linux's swap file, "
				 "zram and zswap (issue 35: at least equal)", &est_best[PH_RAND],
				 ">=", 1.0);
		bench_target_est(c, "sequential accesses/s, bypass / the best of Linux's swap "
				 "file, zram and zswap (issue 35: at least equal)",
				 &est_best[PH_SEQ], ">=", 1.0);
		if (lruns[T_TIER] && !z.fill_random) {
			bench_target_est(c, "random accesses/s, bypass + compressed tier / the best "
					 "of Linux's swap file, zram and zswap (issue 35: at least "
					 "equal)", &est_tbest[PH_RAND], ">=", 1.0);
			bench_target_est(c, "sequential accesses/s, bypass + compressed tier / the "
					 "best of Linux's swap file, zram and zswap (issue 35: at "
					 "least equal)", &est_tbest[PH_SEQ], ">=", 1.0);
		}
	}
	if (lruns[T_TIER] && z.fill_random)
		bench_target_est(c, "random accesses/s over incompressible pages, bypass + "
				 "compressed tier / bypass without it (issue 35: at least 0.95)",
				 &est_t[PH_RAND][1], ">=", 0.95);
	bench_end(c);
out:
	for (int s = 0; s < T_SIDES; s++)
		for (int ph = 0; ph < PH_N; ph++)
			free(aps[s][ph]);
	for (int d = 0; d < DL_N; d++)
		free(dl[d]);
	for (int s = 0; s < T_SIDES; s++)
		free(rand_in[s]);
	bench_shared_free(exp, exp_len);
	bench_shared_free(res, sizeof(*res));
	if (ret)
		fprintf(stderr, "bypass-bench: pager.throughput failed: %s\n", why);
	return ret;
}
