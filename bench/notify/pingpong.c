/* SPDX-License-Identifier: MIT */
/*
 * The User Interrupts ping-pong (seeds/001): 1,000,000 round trips of a
 * 1-byte notification between two processes pinned to different CPUs, for
 * every classic mechanism, the reviewer's fairer variants (two eventfds;
 * busy-polling non-blocking descriptors), the physical limit (a shared-
 * memory spin on sequence numbers) and each bypass doorbell mode (their code:
 * mechanisms.c).  This driver alternates the rows round by round (each round
 * forks a fresh responder), measures the limit right before and after every
 * row, and reports each row's ratio as the median of its per-round ratios.
 */
#include "notify_bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/*
 * The limit's shape against a doorbell's (issue 24: the ratio of the awake
 * doorbell to the limit moved 2.17x, 1.08x, 1.00x in three runs): the same
 * two lines in two shared pages, a responder thread, but each side rings
 * with a locked add on its own sequence line and takes the other's ring
 * with a compare-and-swap on a consumed counter in a third line of its own,
 * as bypass_notify_ring and bp_db_consume do; no library code, no clock in
 * the spin.
 */
struct shaped_side {
	_Atomic uint32_t seq __attribute__((aligned(64)));
	_Atomic uint32_t consumed __attribute__((aligned(64)));
};
struct shaped_arg {
	struct shaped_side *ping, *pong;
	uint64_t iters;
	int cpu;
};

static void shaped_take(struct shaped_side *s)
{
	uint32_t c = atomic_load_explicit(&s->consumed, memory_order_relaxed);
	for (;;) {
		uint32_t v = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (v == c) {
			__builtin_ia32_pause();
			continue;
		}
		if (atomic_compare_exchange_weak_explicit(&s->consumed, &c, v,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			return;
	}
}

static void *shaped_responder(void *p)
{
	struct shaped_arg *a = p;
	bench_pin(a->cpu);
	for (uint64_t i = 0; i < a->iters; i++) {
		shaped_take(a->ping);
		atomic_fetch_add_explicit(&a->pong->seq, 1, memory_order_seq_cst);
	}
	return NULL;
}

static int shaped_rtt(int cpu_a, int cpu_b, uint64_t *out, size_t iters)
{
	/* each side's lines in a page of their own, as a doorbell's */
	char *mem = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	struct shaped_side *ping = (void *)mem, *pong = (void *)(mem + 4096);
	size_t warm = bench_cacheline_warmup(iters);
	struct shaped_arg a = { ping, pong, warm + iters, cpu_b };
	cpu_set_t old;
	bool restore = pthread_getaffinity_np(pthread_self(), sizeof(old), &old) == 0;
	bench_pin(cpu_a);
	pthread_t t;
	int e = pthread_create(&t, NULL, shaped_responder, &a);
	if (!e) {
		for (size_t i = 0; i < warm + iters; i++) {
			uint64_t t0 = bypass_rdtscp(NULL);
			atomic_fetch_add_explicit(&ping->seq, 1, memory_order_seq_cst);
			shaped_take(pong);
			if (i >= warm)
				out[i - warm] = bypass_rdtscp(NULL) - t0;
		}
		pthread_join(t, NULL);
	}
	if (restore)
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	munmap(mem, 2 * 4096);
	return -e;
}

/* Rows whose receiver sleeps in the kernel (tens of microseconds a round
 * trip): fewer round trips in the quick suite, the median settles long
 * before. */
static bool slow_row(size_t v)
{
	return !(v == V_LIMIT || v == V_EFD_POLL || v == V_SOCK_POLL || v == V_ADAPTIVE ||
		 v == V_SPIN || v == V_SHAPED);
}

/* The slow rows no target reads (the blocking baselines beside them): a
 * quarter of the slow rows' round trips in the quick suite (until the
 * quick suite outgrew its 300 s they had as many: their per-round medians
 * settle long before). */
static bool context_row(size_t v)
{
	return slow_row(v) && v != V_SLEEP && v != V_EFD && v != V_INTR && v != V_SIGBUSY;
}

static double median_u64(uint64_t *v, size_t n)
{
	struct bench_summary s;
	bench_summarize(v, n, &s);
	return s.median;
}

/* Limit blocks: LIM_BLOCK cache-line round trips right before and right
 * after every row's run, in every round. */
#define LIM_BLOCK 2000

int bench_notify_pingpong(struct bench_ctx *c)
{
	uint64_t total = bench_count(c, "roundtrips", 1000000, 100000);
	/* More rounds than the harness's 3: the ratio's interval is over the
	 * rounds (each round's row against the limit measured beside it). */
	int rounds = bench_rounds_or(c, 6, 10);
	uint64_t per = (total + (uint64_t)rounds - 1) / (uint64_t)rounds;
	uint64_t per_slow = bench_quick(c) ? (per / 5 ? per / 5 : 1) : per;
	uint64_t per_ctx = bench_quick(c) ? (per_slow / 4 ? per_slow / 4 : 1) : per_slow;
	uint64_t warm = per / 100 < 100 ? 100 : per / 100;
	/* Round 0 warms everything up (page cache of the binaries, the
	 * scheduler's view of both CPUs, frequency) and is not recorded. */
	uint64_t warm_round = per / 4 < 100 ? (per < 100 ? per : 100) : per / 4;
	size_t lim_block = bench_smoke(c) ? 200 : LIM_BLOCK;
	int cpu_a, cpu_b;
	bench_cpus(c, &cpu_a, &cpu_b);
	pp_inject_fail(!strcmp(bench_param(c, "fail", ""), "responder"));

	bench_begin(c, "notify.pingpong",
		    "1-byte ping-pong between two processes on different CPUs (User Interrupts RFC table)",
		    "the cache-line round trip measured beside the row in the same round (the "
		    "limit row: all those blocks); the source column is relative to a hardware "
		    "user IPI");

	struct pp *p = bench_shared_alloc(pp_state_size());
	uint64_t *samples[NVARIANTS];
	uint64_t *scratch = malloc(sizeof(uint64_t) * (warm_round > lim_block ? warm_round
									  : lim_block));
	size_t nlim = 2 * (NVARIANTS - 1) * lim_block;
	uint64_t *lim_all = malloc(sizeof(uint64_t) * nlim * (size_t)rounds);
	double *lim_r[NVARIANTS], *row_r[NVARIANTS];
	for (size_t v = 0; v < NVARIANTS; v++) {
		samples[v] = malloc(sizeof(uint64_t) * per * (size_t)rounds);
		lim_r[v] = calloc((size_t)rounds, sizeof(double));
		row_r[v] = calloc((size_t)rounds, sizeof(double));
	}
	bool failed[NVARIANTS] = { false };
	size_t order[NVARIANTS];
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds + 1, 1); /* round 0: the warm-up */
	while (bench_round(c, &rr, &r)) {
		bench_order(r, NVARIANTS, order);
		size_t li = 0; /* limit blocks of this round */
		for (size_t k = 0; k < NVARIANTS; k++) {
			size_t v = order[k];
			if (failed[v] || v == V_LIMIT)
				continue;
			uint64_t n = r ? (context_row(v) ? per_ctx : slow_row(v) ? per_slow : per)
				       : warm_round;
			uint64_t *dst = r ? samples[v] + (size_t)(r - 1) * per : scratch;
			double lm[2] = { 0, 0 };
			int e = 0;
			for (int side = 0; side < 3 && !e; side++) {
				if (side == 1) {
					e = v == V_SHAPED ? shaped_rtt(cpu_a, cpu_b, dst, n)
							  : pp_run_round(&pp_variants[v], p, warm, n, dst,
								      cpu_a, cpu_b);
					continue;
				}
				/* the limit, right before and right after the row */
				uint64_t *lb = r ? lim_all + (size_t)(r - 1) * nlim + li * lim_block
						 : scratch;
				e = bench_cacheline_rtt(cpu_a, cpu_b, lb, lim_block);
				if (!e) {
					uint64_t *tmp = malloc(lim_block * sizeof(uint64_t));
					memcpy(tmp, lb, lim_block * sizeof(uint64_t));
					lm[side / 2] = median_u64(tmp, lim_block);
					free(tmp);
					if (r)
						li++;
				} else {
					v = V_LIMIT;
				}
			}
			if (e < 0) {
				failed[v] = true;
				bench_fail(c, "%s: failed in %s %d (%s)", pp_variants[v].name,
					   r ? "round" : "warm-up round", r,
					   e == -EIO ? "its responder did not exit cleanly"
						     : strerror(-e));
				continue;
			}
			if (r) {
				uint64_t *tmp = malloc(n * sizeof(uint64_t));
				memcpy(tmp, dst, n * sizeof(uint64_t));
				row_r[v][r - 1] = median_u64(tmp, n);
				free(tmp);
				lim_r[v][r - 1] = (lm[0] + lm[1]) / 2;
			}
		}
		if (r) /* the limit row: every block of the round */
			row_r[V_LIMIT][r - 1] = (double)li;
	}

	/* per-round ratios: the row's median over the limit's beside it */
	double ratio_r[NVARIANTS][64];
	struct bench_summary s[NVARIANTS];
	for (size_t v = 0; v < NVARIANTS; v++) {
		size_t n = context_row(v) ? per_ctx : slow_row(v) ? per_slow : per;
		if (v == V_LIMIT) {
			/* all the blocks (each round's count in row_r) */
			size_t m = 0;
			for (int k = 0; k < rounds; k++) {
				size_t nb = (size_t)row_r[V_LIMIT][k] * lim_block;
				memmove(lim_all + m, lim_all + (size_t)k * nlim, nb * sizeof(uint64_t));
				m += nb;
			}
			bench_summarize(lim_all, failed[v] ? 0 : m, &s[v]);
			continue;
		}
		/* the samples of each round sit at round * per: pack them */
		for (int k = 1; k < rounds; k++)
			memmove(samples[v] + (size_t)k * n, samples[v] + (size_t)k * per,
				n * sizeof(uint64_t));
		bench_summarize(samples[v], failed[v] ? 0 : n * (size_t)rounds, &s[v]);
		for (int k = 0; k < rounds && k < 64; k++)
			ratio_r[v][k] = lim_r[v][k] > 0 ? row_r[v][k] / lim_r[v][k] : NAN;
	}
	for (size_t v = 0; v < NVARIANTS; v++) {
		if (failed[v])
			continue;
		struct bench_row row = {
			.variant = pp_variants[v].name,
			.kind = pp_variants[v].kind,
			.unit = "cycles",
			.s = s[v],
			.is_base = v == V_LIMIT,
			.source = pp_variants[v].source,
			.note = pp_variants[v].note,
		};
		char params[1200];
		if (v != V_LIMIT) {
			int nr = rounds < 64 ? rounds : 64;
			struct bench_est re;
			bench_est_of(ratio_r[v], (size_t)nr, rounds, BENCH_CI_BOOT, &re);
			bench_row_est(&row, &re);
			/* each round's ratio and the limit beside it, for the reader */
			int o = snprintf(params, sizeof(params), "{\"round_ratio\": [");
			for (int k = 0; k < nr && o < (int)sizeof(params) - 40; k++)
				o += snprintf(params + o, sizeof(params) - (size_t)o, "%s%.4g",
					      k ? ", " : "", ratio_r[v][k]);
			o += snprintf(params + o, sizeof(params) - (size_t)o,
				      "], \"round_limit_cycles\": [");
			for (int k = 0; k < nr && o < (int)sizeof(params) - 8; k++)
				o += snprintf(params + o, sizeof(params) - (size_t)o, "%s%.0f",
					      k ? ", " : "", lim_r[v][k]);
			snprintf(params + o, sizeof(params) - (size_t)o, "]}");
			row.params = params;
		}
		bench_row(c, &row);
	}
	bench_note(c, "%llu round trips per row, %llu for the rows that sleep in the kernel, "
		   "%llu for those of them no target reads (signal to a sleeping receiver, pipe, "
		   "Unix socket, futex, eventfd-armed) (the source: 1,000,000)",
		   (unsigned long long)(per * (uint64_t)rounds),
		   (unsigned long long)(per_slow * (uint64_t)rounds),
		   (unsigned long long)(per_ctx * (uint64_t)rounds));
	bench_note(c, "%d rounds after one warm-up round (%llu round trips per row, not recorded); "
		   "the order of the rows rotates each round; each round forks a fresh responder; "
		   "CPUs %d and %d; %llu warm-up round trips per round", rounds,
		   (unsigned long long)warm_round, cpu_a, cpu_b, (unsigned long long)warm);
	bench_note(c, "ratio: the median over rounds of (the row's median in the round / the "
		   "median of the cache-line round trips measured right before and right after "
		   "it, %zu each), with a bootstrap 95%% interval over the rounds: the limit "
		   "moves with where the hypervisor puts the two vCPUs (SMT siblings or not), "
		   "and it is measured where the row ran", lim_block);
	{
		double lo = 1e300, hi = 0;
		for (size_t v = 0; v < NVARIANTS; v++)
			for (int k = 0; k < rounds && k < 64 && v != V_LIMIT && !failed[v]; k++)
				if (lim_r[v][k] > 0) {
					lo = lim_r[v][k] < lo ? lim_r[v][k] : lo;
					hi = lim_r[v][k] > hi ? lim_r[v][k] : hi;
				}
		if (hi > 0)
			bench_note(c, "the limit beside the rows ranged from %.0f to %.0f cycles over "
				   "the rounds (row params: round_ratio, round_limit_cycles)", lo, hi);
	}
	/* the awake doorbell's ratio against where the vCPUs sat, round by round */
	if (!failed[V_ADAPTIVE] && !failed[V_SHAPED]) {
		char txt[600];
		int o = 0;
		int nrr = rounds < 64 ? rounds : 64;
		size_t idx[64];
		for (int k = 0; k < nrr; k++)
			idx[k] = (size_t)k;
		for (int i = 1; i < nrr; i++) /* by the limit beside it */
			for (int j = i; j > 0 && lim_r[V_ADAPTIVE][idx[j]] <
						      lim_r[V_ADAPTIVE][idx[j - 1]]; j--) {
				size_t t = idx[j];
				idx[j] = idx[j - 1];
				idx[j - 1] = t;
			}
		double tmpr[64];
		struct bench_summary shs;
		memcpy(tmpr, ratio_r[V_SHAPED], (size_t)nrr * sizeof(double));
		bench_summarize_d(tmpr, (size_t)nrr, &shs);
		double shaped_med = shs.median;
		for (int k = 0; k < nrr && o < (int)sizeof(txt) - 32; k++)
			o += snprintf(txt + o, sizeof(txt) - (size_t)o, "%s%.2fx at %.0f",
				      k ? ", " : "", ratio_r[V_ADAPTIVE][idx[k]],
				      lim_r[V_ADAPTIVE][idx[k]]);
		bench_note(c, "adaptive doorbell per round, by the limit beside it (cycles): %s; the "
			   "doorbell's atomics alone (the reference row) %.2fx: what a round trip "
			   "costs beyond the limit is the library's own work, and its share shrinks "
			   "where the line is slow", txt, shaped_med);
	}
	bench_note(c, "the limit row is bench_cacheline_rtt, the routine every module's limit uses: "
		   "one line per side, each in its own shared page like a doorbell; all rows "
		   "summarized alike (every sample, no trimming)");
	bench_note(c, "source column: the RFC's mean latency relative to user IPI "
		   "(Sapphire Rapids, not this machine)");
	/* the targets: per-round ratios, with their intervals */
	int nr = rounds < 64 ? rounds : 64;
	struct bench_est est;
	bench_est_of(ratio_r[V_ADAPTIVE], failed[V_ADAPTIVE] ? 0 : (size_t)nr, rounds,
		     BENCH_CI_BOOT, &est);
	bench_target_est(c, "adaptive doorbell, awake receiver: median / cache-line limit median "
			 "(per round, the limit beside it)", &est, "<=", 1.5);
	static const struct {
		size_t a, b;
		const char *what, *op;
	} pairs[] = {
		{ V_SLEEP, V_EFD, "sleeping doorbell median / two-eventfd blocking median", "<=" },
		{ V_INTR, V_SIGBUSY,
		  "interrupt (busy receiver) median / signal to a busy receiver median", "<" },
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		size_t a = pairs[i].a, b = pairs[i].b;
		bench_est_ratio(row_r[a], row_r[b], failed[a] || failed[b] ? 0 : (size_t)nr,
				rounds, BENCH_CI_BOOT, &est);
		bench_target_est(c, pairs[i].what, &est, pairs[i].op, 1.0);
	}
	bench_note(c, "targets: the median over rounds of the per-round ratio (row_r: each "
		   "row's median in the round), percentile bootstrap 95%% interval");
	bench_end(c);

	for (size_t v = 0; v < NVARIANTS; v++) {
		free(samples[v]);
		free(lim_r[v]);
		free(row_r[v]);
	}
	free(lim_all);
	free(scratch);
	bench_shared_free(p, pp_state_size());
	for (size_t v = 0; v < NVARIANTS; v++)
		if (failed[v])
			return -1;
	return 0;
}
