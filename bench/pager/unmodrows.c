/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified's rows, notes and targets (split from unmodified.c,
 * which runs the programs and fills struct pu_st): per program, the
 * bypass / Linux per-round ratios against each Linux side and the best of
 * Linux's three, one row per side with its memory, CPU-seconds and swap-ins,
 * the notes that put the sides side by side, and the targets.
 */
#include "unmodified.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB(x) ((double)(x) / 1048576.0)

void pu_report(struct bench_ctx *c, struct pu_st *s)
{
	const struct sizes z = s->z, zb = s->zb;
	uint64_t budget_mib = s->budget_mib;
	int rounds = s->rounds, c_rounds = s->c_rounds, ret = s->ret;
	bool plant_kill = s->plant_kill, plant_nopage = s->plant_nopage;
	bool have_python = s->have_python, have_linux = s->have_linux;
	const char *why = s->why, *facts = s->facts, *tier_fail = s->tier_fail;
	bool *lb = s->lb;
	char (*lwhy)[1024] = s->lwhy, (*lfacts)[400] = s->lfacts;
	double (*t)[SD_N][64] = s->t;
	int *nr = s->nr, *planned = s->planned, (*oom)[SD_N] = s->oom;
	int *runs_b = s->runs_b, (*runs_l)[SD_N] = s->runs_l;
	uint64_t (*pool)[SD_N] = s->pool, (*total_l)[SD_N] = s->total_l;
	bool *bad = s->bad, *skipped = s->skipped, *notsel = s->notsel;
	struct brun *bsum = s->bsum, *tsum = s->tsum;
	uint64_t (*pswpin)[SD_N] = s->pswpin, (*zswpin)[SD_N] = s->zswpin;
	long (*rss)[S_N] = s->rss;
	uint64_t *cg_ref = s->cg_ref, *cg_cal = s->cg_cal, *cg_b = s->cg_b;
	uint64_t (*cg_l)[SD_N] = s->cg_l;
	uint64_t *cg_bmin = s->cg_bmin;
	struct pb_cg_mem (*mem)[SD_N] = s->mem, *mem_ref = s->mem_ref, *mem_cal = s->mem_cal;
	double (*cpu)[SD_N] = s->cpu;
	struct pu_lim *L = s->L;
	double *ref_s = s->ref_s;
	char (*fail_why)[1024] = s->fail_why;
	/* per program: the bypass / Linux per-round ratio against each
	 * baseline, and the best of Linux's three (the lowest median time of
	 * those that ran every round unkilled; else of those that ran) */
	struct bench_est est[W_N], est_sd[W_N][SD_N], est_best[W_N];
	/* the preload + tier side's: to each side (SD_B: the preload without
	 * the tier), to the best of Linux's three */
	struct bench_est est_t[W_N][SD_N], est_tbest[W_N];
	double med[W_N][SD_N];
	int best[W_N];
	for (int w = 0; w < W_N; w++) {
		best[w] = -1;
		for (int sd = 0; sd < SD_N; sd++) {
			struct bench_summary sum;
			bench_summarize_finite(t[w][sd], (size_t)nr[w], &sum);
			med[w][sd] = sum.n ? sum.median : NAN;
			bench_est_ratio(t[w][1], t[w][sd], (size_t)nr[w], planned[w], BENCH_CI_T,
					&est_sd[w][sd]);
			bench_est_ratio(t[w][SD_T], t[w][sd], (size_t)nr[w], planned[w], BENCH_CI_T,
					&est_t[w][sd]);
		}
		for (int pass = 0; pass < 2 && best[w] < 0; pass++)
			for (int sd = 0; sd < SD_N; sd++) {
				if (pu_sd_bypass(sd) || !runs_l[w][sd] || !isfinite(med[w][sd]))
					continue;
				if (!pass && (oom[w][sd] || runs_l[w][sd] < nr[w]))
					continue;
				if (best[w] < 0 || med[w][sd] < med[w][best[w]])
					best[w] = sd;
			}
		est[w] = est_sd[w][0];
		est_best[w] = est_sd[w][best[w] >= 0 ? best[w] : 0];
		est_tbest[w] = est_t[w][best[w] >= 0 ? best[w] : 0];
		if (!nr[w])
			continue;
		for (int sd = 0; sd < SD_N; sd++) {
			bool lx = sd == SD_B ? best[w] >= 0 : runs_l[w][sd] > 0;
			if (sd != SD_B && !lx)
				continue;
			struct bench_summary sum;
			bench_summarize_finite(t[w][sd], (size_t)nr[w], &sum);
			char name[128], params[3000], note[600];
			enum side side = pu_sd_side[sd];
			uint64_t cgp = sd == SD_B ? cg_b[w] : cg_l[w][sd];
			snprintf(name, sizeof(name), "%s: %s", pu_w_name[w], pu_sd_row[sd]);
			const struct brun *bs = sd == SD_B ? &bsum[w] : &tsum[w];
			int bruns = sd == SD_B ? runs_b[w] : runs_l[w][sd];
			double swin = pu_sd_bypass(sd) ? (bruns ? (double)bs->rdpages / bruns : 0.0)
				: (runs_l[w][sd] ? (double)(pswpin[w][sd] + zswpin[w][sd]) /
						   runs_l[w][sd] : 0.0);
			bool calib = sd == 2 || sd == 3;
			const struct pb_cg_mem *m = &mem[w][sd];
			double cpus = bruns ? cpu[w][sd] / bruns : 0.0;
			if (pu_sd_bypass(sd))
				snprintf(note, sizeof(note), "peak %.1f MiB charged (%.1f anon, %.1f "
					 "file), %.1f MiB resident; %.2f CPU-s per run; ratio: per round, "
					 "to the best of Linux's three (%s)%s", MIB(cgp), MIB(m->anon),
					 MIB(m->file), rss[w][side] / 1024.0, cpus,
					 best[w] >= 0 ? pu_sd_key[best[w]] : "none",
					 sd == SD_T ? "; the tier's pool inside the budget" : "");
			else
				snprintf(note, sizeof(note), "peak %.1f MiB charged (%.1f anon, %.1f "
					 "file) + %.1f MiB compressed pool, %.1f MiB resident; %.2f CPU-s "
					 "per run; limit %.1f MiB: the budget + the preload's "
					 "non-anonymous slack %.1f%s%s%s", MIB(cgp), MIB(m->anon), MIB(m->file),
					 MIB(pool[w][sd]), rss[w][side] / 1024.0, cpus,
					 MIB(L[w].side[sd]), MIB(L[w].slack),
					 L[w].cal_ok[sd] ? ", lowered by its pool's calibration" : "",
					 sd == best[w] ? "; the best of Linux's three" : "",
					 oom[w][sd] ? "; OOM-killed in some runs" : "");
			char incl[600];
			if (sd == 0)
				snprintf(incl, sizeof(incl), "the budget + the preload's non-anonymous "
					 "slack (%.1f MiB: its cgroup's charge less its anonymous memory "
					 "held near its anonymous peak in its calibration run: page "
					 "cache and kernel memory; every "
					 "side's output written outside its cgroup); anonymous memory, "
					 "page cache and kernel memory charged to the cgroup (no pool)",
					 MIB(L[w].slack));
			else if (calib && L[w].cal_ok[sd])
				snprintf(incl, sizeof(incl), "calibrated: the cgroup's limit is the "
					 "budget + the preload's non-anonymous slack (%.1f MiB) lowered "
					 "in %d calibration runs until charge + pool was that memory "
					 "within %.0f%% (%s; the last run's pool peak %.1f MiB, %s); the "
					 "pool itself is not charged to a cgroup v1", MIB(L[w].slack),
					 L[w].cal[sd].n, L[w].tol * 100, L[w].cal[sd].below ? "below "
					 "it, the charge short of its limit" : L[w].cal[sd].converged ?
					 "reached" : "NOT reached", MIB(L[w].pool_cal[sd]),
					 sd == 2 ? "zram mm_stat mem_used_max" : "/proc/meminfo Zswap");
			else
				snprintf(incl, sizeof(incl), "NOT CALIBRATED: the cgroup's charge only "
					 "(the compressed pool is not charged to a cgroup v1: zram never, "
					 "zswap only on v2): this side had the limit plus its pool");
			char j[4][32];
			int nb = snprintf(params, sizeof(params),
				 "{\"workload\": \"%s\", \"side\": \"%s\", \"budget_mib\": %zu, "
				 "\"footprint_mib\": %.1f, "
				 "\"footprint_charged_mib\": %.1f, \"peak_rss_mib\": %.1f, "
				 "\"peak_charged_mib\": %.1f, \"linux_limit_mib\": %.1f, "
				 "\"swap_in_pages_per_run\": %.0f, \"runs\": %d, "
				 "\"peak_anon_mib\": %.1f, \"peak_file_mib\": %.1f, "
				 "\"cpu_s_per_run\": %.3f, \"nonanon_slack_mib\": %.1f, "
				 "\"nonanon_max_mib\": %.1f, "
				 "\"footprint_anon_mib\": %.1f, \"footprint_file_mib\": %.1f, "
				 "\"output\": \"through a pipe to a writer outside the cgroup\"",
				 pu_w_key[w], pu_sd_key[sd], zb.budget >> 20, rss[w][S_REF] / 1024.0,
				 MIB(cg_ref[w]), rss[w][side] / 1024.0, MIB(cgp), MIB(L[w].limit), swin,
				 bruns, MIB(m->anon), MIB(m->file), cpus, MIB(L[w].slack),
				 MIB(L[w].slack_max),
				 MIB(mem_ref[w].anon), MIB(mem_ref[w].file));
			if (pu_sd_bypass(sd) && best[w] >= 0) {
				/* the other side of the comparison, beside it */
				int lb_ = best[w];
				const struct pb_cg_mem *ml = &mem[w][lb_];
				nb += snprintf(params + nb, sizeof(params) - (size_t)nb,
					       ", \"best_linux_peak_anon_mib\": %.1f, "
					       "\"best_linux_peak_file_mib\": %.1f, "
					       "\"best_linux_pool_peak_mib\": %.1f, "
					       "\"best_linux_cpu_s_per_run\": %.3f", MIB(ml->anon),
					       MIB(ml->file), MIB(pool[w][lb_]), runs_l[w][lb_] ?
					       cpu[w][lb_] / runs_l[w][lb_] : 0.0);
			}
			const struct bench_est *eb = sd == SD_T ? est_t[w] : est_sd[w];
			if (!pu_sd_bypass(sd))
				nb += snprintf(params + nb, sizeof(params) - (size_t)nb,
					       ", \"backend\": \"%s\", \"side_limit_mib\": %.1f, "
					       "\"pool_calibration_mib\": %.1f, \"pool_peak_mib\": %.1f, "
					       "\"charged_plus_pool_mib\": %.1f, "
					       "\"calibration_runs\": %d, \"calibration_gap_mib\": %.2f, "
					       "\"calibration_converged\": %s, \"limit_includes\": "
					       "\"%s\", \"oom_killed_runs\": %d, \"zswpin_per_run\": %.0f, "
					       "\"best_of_linux\": %s, \"bypass_ratio\": %s, "
					       "\"tier_ratio\": %s}",
					       pb_backend_name[pu_sd_backend[sd]], MIB(L[w].side[sd]),
					       MIB(L[w].pool_cal[sd]), MIB(pool[w][sd]),
					       MIB(total_l[w][sd]), L[w].cal[sd].n,
					       L[w].cal[sd].gap / 1048576.0,
					       L[w].cal[sd].converged ? "true" : "false", incl,
					       oom[w][sd], runs_l[w][sd] ? (double)zswpin[w][sd] /
					       runs_l[w][sd] : 0.0, sd == best[w] ? "true" : "false",
					       pb_jratio(j[0], sizeof(j[0]), est_sd[w][sd].value),
					       pb_jratio(j[1], sizeof(j[1]), est_t[w][sd].value));
			else
				nb += snprintf(params + nb, sizeof(params) - (size_t)nb,
					       ", \"limit_includes\": \"the budget: resident pages%s\", "
					       "\"best_of_linux\": \"%s\", \"ratio_to_best\": %s, "
					       "\"ratio_to_file\": %s, \"ratio_to_zram\": %s, "
					       "\"ratio_to_zswap\": %s, \"linux_cannot_run\": \"%s\"",
					       sd == SD_T ? " and the tier's pool" : "",
					       best[w] >= 0 ? pu_sd_key[best[w]] : "none",
					       pb_jratio(j[0], sizeof(j[0]), (sd == SD_T ? est_tbest[w]
								 : est_best[w]).value),
					       pb_jratio(j[1], sizeof(j[1]), eb[0].value),
					       pb_jratio(j[2], sizeof(j[2]), eb[2].value),
					       pb_jratio(j[3], sizeof(j[3]), eb[3].value), L[w].cannot);
			if (sd == SD_T)
				nb += snprintf(params + nb, sizeof(params) - (size_t)nb,
					       ", \"ratio_to_preload\": %s, \"tier_stored_per_run\": "
					       "%.0f, \"tier_swapin_pool_per_run\": %.0f, "
					       "\"tier_swapin_file_per_run\": %.0f}",
					       pb_jratio(j[0], sizeof(j[0]), est_t[w][SD_B].value),
					       bruns ? (double)bs->tstored / bruns : 0.0,
					       bruns ? (double)bs->tpool / bruns : 0.0,
					       bruns ? (double)bs->tfile / bruns : 0.0);
			else if (sd == SD_B)
				nb += snprintf(params + nb, sizeof(params) - (size_t)nb, "}");
			(void)nb;
			struct bench_row row = {
				.variant = name, .kind = pu_sd_bypass(sd) ? BENCH_BYPASS : BENCH_BASELINE,
				.unit = "s", .s = sum, .higher_is_better = false,
				.ratio = pu_sd_bypass(sd) ? NAN : (sd == best[w] ? 1.0 : NAN), .note = note,
				.params = params,
			};
			if (sd == SD_B && best[w] >= 0)
				bench_row_est(&row, &est_best[w]);
			if (sd == SD_T && best[w] >= 0)
				bench_row_est(&row, &est_tbest[w]);
			bench_row(c, &row);
		}
	}
	bench_note(c, "budget %zu MiB (BYPASS_PAGER_BUDGET, with BYPASS_PAGER_HEAP_AFTER=0: "
		   "every allocation from the first is the pager's); C program: %zu MiB input "
		   "read() into one malloc, a second buffer from it grown by a quarter with "
		   "realloc, %llu random updates, written with write() and pwrite(), pread() back "
		   "and compared; sort: GNU sort -S over %zu MiB of lines, LC_ALL=C; python: a "
		   "list of %llu ints read twice, a list of a seventh of them; sqlite: %llu rows "
		   "and an index in an in-memory database (Python's sqlite3, cache_size 4 GB)",
		   zb.budget >> 20, z.prog_bytes >> 20, (unsigned long long)z.updates,
		   z.sort_bytes >> 20, (unsigned long long)z.py_n, (unsigned long long)z.sq_n);
	if (!notsel[W_HASH] || !notsel[W_MP] || !notsel[W_REDIS])
		bench_note(c, "issue 32 item 5's programs: hash table: %llu nodes of 64 bytes (a "
			   "key, the next pointer, a 48-byte value), each its own malloc, chained "
			   "from a power-of-two bucket array, then %llu lookups of random keys (half "
			   "present), the nodes never freed (this binary, unmodhash.c); "
			   "multiprocessing: a list of %llu ints summed in 8 parts by "
			   "multiprocessing's fork Pool(4) (each worker's reads write the objects' "
			   "reference counts: their pages copied in every worker); redis: Debian's "
			   "redis-server on a Unix socket, DEBUG POPULATE %llu keys of 200 bytes, "
			   "%llu random reads by redis-benchmark (4 clients, pipelines of 16, a Lua "
			   "GET of key:N), BGSAVE to a file, DBSIZE, SHUTDOWN NOSAVE; its client side "
			   "(redis-cli, redis-benchmark) runs outside the cgroup without the "
			   "preload, its output (BGSAVE's status, DBSIZE) and the dump loaded after "
			   "the run by a server without the preload outside the cgroup (its key "
			   "count and DEBUG DIGEST) are the run's output; a run is the server's "
			   "life. Each is a tree of processes in one cgroup (the pool's workers, the "
			   "BGSAVE child): the peaks are the tree's, its CPU-seconds the waited "
			   "children's included (wait4: the server's and its BGSAVE child's, not "
			   "the client side's); the preload's counters come only from processes "
			   "that end by exit() (not from a pool's workers, ended by the pool, nor "
			   "from the BGSAVE child, which ends by _exit); the preload's budget "
			   "scope: --param scope=process|tree (BYPASS_PAGER_BUDGET_SCOPE; here: "
			   "%s)",
			   (unsigned long long)zb.hash_n, (unsigned long long)zb.hash_lookups,
			   (unsigned long long)zb.mp_n, (unsigned long long)zb.rd_keys,
			   (unsigned long long)zb.rd_reads, zb.scope ? zb.scope : "not set: the "
			   "preload's default, one budget for the tree since f0246be");
	bench_note(c, "same memory (issue 35's rule): each side gets the budget and the same "
		   "non-anonymous slack; every run's output (stdout) goes through a pipe to a "
		   "writer outside the measured cgroup, so the output's page cache is charged "
		   "to no side; each preload run sits in a cgroup without a limit that only "
		   "measures; a calibration run of the preload before the rounds gives its "
		   "non-anonymous slack (its cgroup's charge less its anonymous memory: page "
		   "cache and kernel memory: the highest level of it held while its anonymous "
		   "memory was within %d%% of its peak, a level being the median of %d "
		   "samples in a row, so that brief spikes do not count; at most its peak "
		   "charge less the budget; the highest single sample of it is in each "
		   "program's note, not used), and the Linux side's cgroup "
		   "limit is the budget + that slack; where the preload's anonymous memory overran its "
		   "budget, that is reported in its row, not given to Linux; every cgroup's "
		   "memory.stat (anonymous memory: v1 rss; page cache: v1 cache less "
		   "swapcached) sampled every %d ms in every run; each row gives its side's "
		   "peak charge, peak anonymous memory and page cache, peak resident set "
		   "(wait4's maxrss), max over its runs, and its CPU-seconds per run (the "
		   "program's user + system time)", PB_CG_SLACK_NEAR_PCT, PB_CG_SLACK_RUN,
		   PB_CG_MEM_PERIOD_MS);
	for (int w = 0; w < W_N; w++) {
		if (!rss[w][S_REF])
			continue;
		if (L[w].cannot[0])
			bench_note(c, "%s: cannot run at this memory, not run and left out of the "
				   "best of Linux's three: %s (the compressed pool's peak in a "
				   "calibration run at the %.1f MiB limit: the pool alone is larger)",
				   pu_w_name[w], L[w].cannot, MIB(L[w].limit));
		double lim = MIB(L[w].limit), b = MIB(cg_b[w] > cg_cal[w] ? cg_b[w] : cg_cal[w]);
		char lfl[200] = "";
		if (L[w].limit && cg_l[w][0] && b > 0)
			snprintf(lfl, sizeof(lfl), "; peak charges, Linux / preload: %.2f",
				 MIB(cg_l[w][0]) / b);
		bench_note(c, "%s: footprint %.1f MiB resident, %.1f MiB charged (without a limit); "
			   "the preload (budget %zu MiB): peak %.1f MiB resident, %.1f MiB charged "
			   "(calibration %.1f, its rounds %.1f-%.1f), non-anonymous slack %.1f MiB "
			   "held near its anonymous peak%s (its highest sample %.1f; calibration run: "
			   "%.1f MiB anonymous, %.1f MiB page cache at their peaks); Linux: limit "
			   "%.1f MiB, peak "
			   "%.1f MiB resident, %.1f "
			   "MiB charged%s; pages read from swap per run (mean): %.0f bypass (%.0f "
			   "swap-in faults, the rest readahead), %.0f Linux swap file (pswpin); bypass "
			   "evictions %llu, access samples %llu (hits %llu), resident peak %llu "
			   "pages, over %d runs", pu_w_name[w], rss[w][S_REF] / 1024.0, MIB(cg_ref[w]),
			   zb.budget >> 20, rss[w][S_BYPASS] / 1024.0, b, MIB(cg_cal[w]),
			   MIB(cg_bmin[w]), MIB(cg_b[w]), MIB(L[w].slack),
			   L[w].capped ? ", cut to its peak charge less the budget" : "",
			   MIB(L[w].slack_max), MIB(mem_cal[w].anon),
			   MIB(mem_cal[w].file), lim,
			   rss[w][S_LINUX] / 1024.0, MIB(cg_l[w][0]), lfl,
			   runs_b[w] ? (double)bsum[w].rdpages / runs_b[w] : 0.0,
			   runs_b[w] ? (double)bsum[w].swapin / runs_b[w] : 0.0,
			   runs_l[w][0] ? (double)pswpin[w][0] / runs_l[w][0] : 0.0,
			   (unsigned long long)bsum[w].evict, (unsigned long long)bsum[w].samples,
			   (unsigned long long)bsum[w].hits, (unsigned long long)bsum[w].peak,
			   runs_b[w] + 1);
	}
	char refs[400] = "";
	for (int w = 0, o = 0; w < W_N && o < (int)sizeof(refs); w++)
		if (rss[w][S_REF])
			o += snprintf(refs + o, sizeof(refs) - (size_t)o, "%s%.2f s %s", o ? ", " : "",
				      ref_s[w], pu_w_key[w]);
	bench_note(c, "same output: each run's output (stdout; the C program's output file too; "
		   "Redis: its client side's output and the dump) is compared byte for byte with "
		   "a run without the preload and without a limit (%s)", refs);
	bench_note(c, "each side runs in a fresh process, alternately (the first side alternates "
		   "by round; the Linux side after a sync, its cgroup's charge reclaimed), %d "
		   "rounds (the C program %d); ratio = the mean of the per-round bypass / Linux "
		   "time ratios, Student's t 95%% interval", rounds, c_rounds);
	bench_note(c, "the preload: threshold 1 MiB, BYPASS_PAGER_HEAP_AFTER=0 (its heap, "
		   "jemalloc over pager regions, from the first allocation), access samples on, "
		   "its default policy (prefetch: 2Q and asynchronous prefetch of fault "
		   "streams), swap in an unnamed file in %s (O_DIRECT)", pb_swapdir(c));
	if (have_linux)
		bench_note(c, "Linux: %s; memory.swappiness = 100 where the cgroup has it (at the "
			   "default 60 the cgroup's OOM killer killed sort within a second, swap "
			   "empty)", facts);
	else
		bench_note(c, "Linux side not run: %s", why);
	for (int sd = 2; sd < SD_N; sd++) {
		if (lwhy[sd][0])
			bench_note(c, "%s not run: %s", pu_sd_row[sd], lwhy[sd]);
		else if (lfacts[sd][0])
			bench_note(c, "%s: %s; its cgroup made anew for each run, its limit the "
				   "budget + the preload's non-anonymous slack (L) lowered by "
				   "calibration runs before the rounds until charge + pool came within "
				   "--param calibrate_tol_pct (2%%) of L, at most --param calibrate "
				   "runs (%s; the first at L, each next lowered by the last one's "
				   "charge + pool - L; 0: not lowered), because on cgroup v1 the pool "
				   "is not "
				   "charged to the cgroup; the pool's peak sampled every 5 ms in every "
				   "run (%s) and given beside the cgroup's charge (charged_plus_pool_mib: "
				   "the largest sum in one run)", pu_sd_row[sd], lfacts[sd],
				   bench_quick(c) ? "2 in the quick suite" : "3",
				   sd == 2 ? "zram's mm_stat mem_used_total, and mem_used_max reset "
				   "before each run" : "/proc/meminfo Zswap, the pool's total size "
				   "(debugfs pool_total_size is the same figure; debugfs is not "
				   "mounted here), system-wide: no other swap was active");
	}
	for (int w = 0; w < W_N; w++)
		for (int sd = 2; sd < 4; sd++)
			if (nr[w] && runs_l[w][sd])
				bench_note(c, "%s, %s: limit %.1f MiB, calibrated from %.1f (the "
					   "budget + the preload's non-anonymous slack) in %d run%s (the "
					   "last: pool peak %.1f MiB, charge + pool - %.1f = %+.2f MiB: "
					   "%s, tolerance %.0f%%)%s; in the rounds charge + pool peaked at "
					   "%.1f MiB "
					   "(%+.1f%% of %.1f)", pu_w_name[w], pu_sd_row[sd],
					   MIB(L[w].side[sd]), MIB(L[w].limit), L[w].cal[sd].n,
					   L[w].cal[sd].n == 1 ? "" : "s", MIB(L[w].pool_cal[sd]),
					   MIB(L[w].limit), L[w].cal[sd].gap / 1048576.0,
					   L[w].cal[sd].below ? "below, its charge short of its "
					   "limit: agreeing" : L[w].cal[sd].converged ? "within" :
					   "NOT within",
					   L[w].tol * 100, L[w].cal_ok[sd] ? "" : " (NOT CALIBRATED: the "
					   "calibration run failed or was not made)", MIB(total_l[w][sd]),
					   L[w].limit ? 100.0 * ((double)total_l[w][sd] /
								 (double)L[w].limit - 1) : 0.0,
					   MIB(L[w].limit));
	if (lb[SD_T] || tier_fail[0])
		bench_note(c, "the preload + compressed tier side: the same preload and budget "
			   "with BYPASS_PAGER_TIER=1 (LZ4, the pool's share starting at 50%% of the "
			   "budget, %s, pages that compress to 60%% kept; the pool counts in the "
			   "budget), in a measuring cgroup of its own like the preload's",
			   getenv("BYPASS_PAGER_TIER_ADAPT") &&
			   !strcmp(getenv("BYPASS_PAGER_TIER_ADAPT"), "0") ?
			   "fixed there (BYPASS_PAGER_TIER_ADAPT=0, the bench's environment)" :
			   "adapting to what the pool saves");
	for (int w = 0; w < W_N; w++)
		if (nr[w] && runs_l[w][SD_T])
			bench_note(c, "%s, preload + tier: median %.2f s; / best of Linux's three "
				   "(%s) %.2f, / the preload without the tier %.2f (per round, mean "
				   "of %d); per run: %.0f pages put in the pool, %.0f swap-ins from "
				   "the pool, %.0f from the file; peak charge %.1f MiB", pu_w_name[w],
				   med[w][SD_T], best[w] >= 0 ? pu_sd_key[best[w]] : "none",
				   est_tbest[w].value, est_t[w][SD_B].value, est_tbest[w].n,
				   (double)tsum[w].tstored / runs_l[w][SD_T],
				   (double)tsum[w].tpool / runs_l[w][SD_T],
				   (double)tsum[w].tfile / runs_l[w][SD_T], MIB(cg_l[w][SD_T]));
	if (tier_fail[0])
		bench_fail(c, "pager.unmodified: the preload + tier side: %s", tier_fail);
	for (int w = 0; w < W_N; w++) {
		if (!nr[w] || best[w] < 0)
			continue;
		bench_note(c, "%s: median s per run: swap file %.2f, zram %.2f, zswap %.2f, "
			   "bypass %.2f; best of Linux's three: %s; bypass / best %.2f (per round, "
			   "mean of %d), / swap file %.2f, / zram %.2f, / zswap %.2f; compressed "
			   "pool peak MiB: zram %.1f, zswap %.1f; pages read from swap per run "
			   "(pswpin + zswpin): file %.0f+%.0f, zram %.0f+%.0f, zswap %.0f+%.0f",
			   pu_w_name[w], med[w][0], med[w][2], med[w][3], med[w][1],
			   pu_sd_row[best[w]], est_best[w].value, est_best[w].n, est_sd[w][0].value,
			   est_sd[w][2].value, est_sd[w][3].value, MIB(pool[w][2]), MIB(pool[w][3]),
			   runs_l[w][0] ? (double)pswpin[w][0] / runs_l[w][0] : 0.0,
			   runs_l[w][0] ? (double)zswpin[w][0] / runs_l[w][0] : 0.0,
			   runs_l[w][2] ? (double)pswpin[w][2] / runs_l[w][2] : 0.0,
			   runs_l[w][2] ? (double)zswpin[w][2] / runs_l[w][2] : 0.0,
			   runs_l[w][3] ? (double)pswpin[w][3] / runs_l[w][3] : 0.0,
			   runs_l[w][3] ? (double)zswpin[w][3] / runs_l[w][3] : 0.0);
	}
	/* issue 35: both sides' memory beside their time, per program */
	for (int w = 0; w < W_N; w++) {
		if (!nr[w])
			continue;
		char sides[1200] = "";
		size_t o = 0;
		static const int order[SD_N] = { 0, 2, 3, 1, 4 };
		for (int i = 0; i < SD_N; i++) {
			int sd = order[i], n = sd == SD_B ? runs_b[w] : runs_l[w][sd];
			if (!n || o >= sizeof(sides))
				continue;
			char wall[32] = "killed";
			if (isfinite(med[w][sd]))
				snprintf(wall, sizeof(wall), "%.2f", med[w][sd]);
			o += (size_t)snprintf(sides + o, sizeof(sides) - o, "%s%s %s / %.2f / "
					      "%.1f / %.1f / %.1f", o ? ", " : "", pu_sd_key[sd], wall,
					      cpu[w][sd] / n, MIB(mem[w][sd].anon),
					      MIB(mem[w][sd].file), MIB(pool[w][sd]));
		}
		bench_note(c, "%s, side by side (wall s median / CPU-s per run / peak anonymous "
			   "MiB / peak page cache MiB / compressed pool MiB, Linux's outside its "
			   "cgroup): %s; Linux's limit %.1f MiB = budget %zu + the preload's "
			   "non-anonymous slack %.1f; without a limit: %.1f anonymous, %.1f page "
			   "cache", pu_w_name[w], sides, MIB(L[w].limit), z.budget >> 20,
			   MIB(L[w].slack), MIB(mem_ref[w].anon), MIB(mem_ref[w].file));
	}
	if (!have_python)
		bench_note(c, "python, sqlite and multiprocessing not run: no %s", PYTHON);
	if (!s->have_redis && !notsel[W_REDIS])
		bench_note(c, "redis not run: redis-server, redis-cli or redis-benchmark not on "
			   "PATH (Debian: redis-server, redis-tools)");
	for (int w = 0; w < W_N; w++)
		if (notsel[w])
			bench_note(c, "%s: not run%s", pu_w_name[w], w == W_SORT && bench_quick(c) &&
				   !bench_param(c, "programs", NULL) ?
				   ": judged only in make bench-full (its runs are the longest: 5 "
				   "rounds of both sides do not fit the quick suite's 300 s)" :
				   bench_quick(c) && !bench_param(c, "programs", NULL) ?
				   ": judged only in make bench-full (5 rounds of its five sides do "
				   "not fit the quick suite's 300 s; --param programs=KEY runs it)" :
				   " (--param programs)");
	for (int w = 0; w < W_N; w++)
		for (int sd = 0; sd < SD_N; sd++)
			if (oom[w][sd])
				bench_note(c, "%s: %s was killed by the memory cgroup's OOM killer in "
					   "%d of %d runs%s: its rounds have no figure for it, so "
					   "that baseline is incomplete%s", pu_w_name[w], pu_sd_row[sd],
					   oom[w][sd], oom[w][sd] + runs_l[w][sd],
					   plant_kill ? " (planted: --param plant=pager.unmodified.kill)"
					   : "", sd ? " (an outcome of that backend, recorded: not "
					   "a failure of the run)" : "");
	for (int w = 0; w < W_N; w++)
		if (s->left_n[w])
			bench_note(c, "%s: %d process%s outlived %s program (a killed parent's "
				   "pool workers or BGSAVE child%s): killed when its side ended "
				   "and reaped by the bench (their subreaper); their %.2f CPU-s "
				   "are the bench's own, not other processes' (and the run's "
				   "CPU-seconds, where its run has a figure: an OOM-killed one "
				   "has none)", pu_w_name[w], s->left_n[w],
				   s->left_n[w] == 1 ? "" : "es", s->left_n[w] == 1 ? "its" : "their",
				   s->z.orphans && w == W_SYSCALLS ? "; planted: --param plant="
				   "pager.unmodified.orphan" : "", s->left_cpu[w]);
	if (s->left_stuck)
		bench_note(c, "%d run%s left processes that were still there 10 s after they "
			   "were killed", s->left_stuck, s->left_stuck == 1 ? "" : "s");
	for (int w = 0; w < W_N; w++)
		if (bad[w]) {
			bench_note(c, "%s stopped: %s", pu_w_name[w], fail_why[w]);
			if (ret)
				bench_fail(c, "pager.unmodified: %s", fail_why[w]);
		}
	if (plant_nopage)
		bench_note(c, "planted (--param plant=pager.unmodified.nopage): the preload's budget "
			   "is 1 GiB, above every footprint: the programs do not page");
	if (!bench_quick(c) && !bench_smoke(c))
		bench_note(c, "full size: budget %llu MiB", (unsigned long long)budget_mib);
	for (int w = 0; w < W_N; w++) {
		if (skipped[w] || notsel[w])
			continue;
		char what[300];
		snprintf(what, sizeof(what), "%s: identical output at a budget below the "
			 "footprint (every run matched)", pu_w_name[w]);
		bench_target_exact_runs(c, what, bad[w] ? 0 : 1, ">=", 1, bad[w] ? 0 : runs_b[w] + 1,
					planned[w] + 1);
		if (bad[w] || !nr[w])
			continue;
		/* a tree of processes (issue 32 item 5): the tree's memory, its
		 * cgroup's anonymous peak, not one process's resident set */
		bool tree = w == W_MP || w == W_REDIS;
		double fp = tree ? MIB(mem_ref[w].anon) : rss[w][S_REF] / 1024.0;
		double goal = (double)(zb.budget >> 20) + 32;
		if (0.6 * fp < goal)
			goal = 0.6 * fp;
		if (tree)
			snprintf(what, sizeof(what), "%s: peak of the tree's anonymous memory under the "
				 "preload (its cgroup), MiB (<= budget + 32 MiB and <= 0.6x the tree's "
				 "without a limit, %.1f MiB)", pu_w_name[w], fp);
		else
			snprintf(what, sizeof(what), "%s: peak resident set under the preload, MiB (<= "
				 "budget + 32 MiB and <= 0.6x its unlimited footprint of %.1f MiB)",
				 pu_w_name[w], fp);
		if (!tree || have_linux) /* without cgroups the tree is not measured */
			bench_target_exact_runs(c, what, tree ? MIB(mem[w][SD_B].anon) :
						rss[w][S_BYPASS] / 1024.0, "<=", goal,
						runs_b[w] + 1, planned[w] + 1);
		if (w == W_SYSCALLS || !have_linux || !runs_l[w][0])
			continue;
		snprintf(what, sizeof(what), "%s: time vs Linux swap at the same memory", pu_w_name[w]);
		bench_target_est(c, what, &est[w], "<=", 1.0);
		snprintf(what, sizeof(what), "%s: time vs the best of Linux's swap file, zram and "
			 "zswap at the same memory (issue 35)", pu_w_name[w]);
		bench_target_est(c, what, &est_best[w], "<=", 1.0);
		snprintf(what, sizeof(what), "%s: swap-ins (pages read from swap per run), "
			 "bypass / Linux (<= 1)", pu_w_name[w]);
		double rb = runs_b[w] ? (double)bsum[w].rdpages / runs_b[w] : 0.0;
		double rl = runs_l[w][0] ? (double)pswpin[w][0] / runs_l[w][0] : 0.0;
		/* complete when every round kept has both sides' runs */
		bench_target_exact_runs(c, what, rl > 0 ? rb / rl : (rb > 0 ? INFINITY : 0), "<=", 1.0,
					est[w].n, planned[w]);
	}
	/* issue 35: at least three of the timed rows (sort, python, sqlite)
	 * at <= 0.7x the best of Linux's three */
	int n07 = 0, rows_t = 0, rows_done = 0;
	for (int w = 0; w < W_N; w++) {
		if (w == W_SYSCALLS || skipped[w] || notsel[w] || !have_linux)
			continue;
		rows_t++;
		if (bad[w] || best[w] < 0 || est_best[w].n < planned[w])
			continue;
		rows_done++;
		if (est_best[w].value <= 0.7)
			n07++;
	}
	if (rows_t)
		bench_target_exact_runs(c, "timed programs at <= 0.7x the best of Linux's swap "
					"file, zram and zswap (issue 35: at least 3)", n07, ">=", 3,
					rows_done, 3);
	/* the same two with the compressed tier on (issue 35's own side) */
	n07 = rows_t = rows_done = 0;
	for (int w = 0; w < W_N; w++) {
		if (w == W_SYSCALLS || skipped[w] || notsel[w] || !have_linux || !nr[w] ||
		    !runs_l[w][SD_T])
			continue;
		rows_t++;
		char what[300];
		snprintf(what, sizeof(what), "%s: time, preload + compressed tier vs the best of "
			 "Linux's swap file, zram and zswap at the same memory (issue 35)",
			 pu_w_name[w]);
		if (best[w] >= 0)
			bench_target_est(c, what, &est_tbest[w], "<=", 1.0);
		if (bad[w] || best[w] < 0 || est_tbest[w].n < planned[w])
			continue;
		rows_done++;
		if (est_tbest[w].value <= 0.7)
			n07++;
	}
	if (rows_t)
		bench_target_exact_runs(c, "timed programs, preload + compressed tier, at <= 0.7x "
					"the best of Linux's swap file, zram and zswap (issue 35: "
					"at least 3)", n07, ">=", 3, rows_done, 3);
	bench_end(c);
}
