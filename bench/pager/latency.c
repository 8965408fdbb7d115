/* SPDX-License-Identifier: MIT */
/*
 * pager.latency and pager.swapin: page faults against the number of threads
 * faulting at once (1, 2, 4, ... up to twice the CPUs; ExtMem's first
 * figure and issue 12's scaling experiment).  Per-fault latency, seen by
 * the faulting thread (rdtscp around the access), and the aggregate rate
 * (faults of all threads / the time from the start until the last thread is
 * done), for:
 *
 *   - the kernel's minor fault on plain anonymous memory (first touch);
 *   - the signal limit: every thread raise()s a signal to an empty handler
 *     in a loop, the floor under any design that pays one signal per fault
 *     (the kernel takes the process's signal lock to queue, deliver and
 *     return from each);
 *   - the classic userfaultfd handler thread (one, privileged);
 *   - a pool of handler threads on a user-mode-only userfaultfd (the
 *     adaptive engine held on its pool: bp_engine_force);
 *   - bypass's upcall (the faulting thread serves its fault in its SIGBUS
 *     handler);
 *   - the adaptive engine, which measures and picks one of the two;
 *   - the upcall with fault-around (one fault installs up to 16 pages of
 *     an ascending stream): the rate counts pages, the latency accesses.
 *
 * First touch: a write to a fresh page, so no I/O (the budget holds every
 * page; fault-around off except in its row).  Swap-in: a read of a page
 * that was written and evicted (readahead off: one page per fault; each is
 * a synchronous 4 KiB read from the swap file).
 */
#include "pager_bench.h"

/* Rounds whose medians give the targets' intervals (bench_est). */
#define MAX_ROUNDS_CI 64
#include "pager/pager_internal.h" /* bp_engine_force: the pool row */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { K_KERNEL, K_SIGNAL, K_HANDLER, K_POOL, K_UPCALL, K_ADAPTIVE, K_FA, K_N };
static const char *kind_name[K_N] = {
	"kernel minor fault", "signal limit (raise, empty handler)", "userfaultfd handler thread",
	"handler pool", "bypass upcall", "bypass adaptive", "bypass upcall + fault-around",
};
static const char *kind_mode[K_N] = { "kernel", "signal", "handler", "pool",
				      "upcall", "adaptive", "fault-around" };
static const char *kind_kind[K_N] = { BENCH_LIMIT, BENCH_LIMIT, BENCH_BASELINE, BENCH_BYPASS,
				      BENCH_BYPASS, BENCH_BYPASS, BENCH_BYPASS };

enum { PH_TOUCH, PH_SWAPIN };

#define MAX_THREADS 64
#define MAX_COUNTS 8

struct lat_thread {
	char *base;
	size_t pages;
	int kind, phase;
	uint64_t *out;
	uint64_t t_end;
	_Atomic int *go;
	_Atomic int *ready;
};

static void on_usr1(int sig)
{
	(void)sig;
}

static void *lat_main(void *arg)
{
	struct lat_thread *t = arg;
	atomic_fetch_add(t->ready, 1);
	while (!atomic_load_explicit(t->go, memory_order_acquire))
		__builtin_ia32_pause();
	if (t->kind == K_SIGNAL) {
		for (size_t i = 0; i < t->pages; i++) {
			uint64_t t0 = bypass_rdtscp(NULL);
			raise(SIGUSR1);
			t->out[i] = bypass_rdtscp(NULL) - t0;
		}
	} else if (t->phase == PH_TOUCH) {
		for (size_t i = 0; i < t->pages; i++) {
			volatile char *p = t->base + i * PB_PAGE;
			uint64_t t0 = bypass_rdtscp(NULL);
			*p = 1;
			t->out[i] = bypass_rdtscp(NULL) - t0;
		}
	} else {
		for (size_t i = 0; i < t->pages; i++) {
			volatile char *p = t->base + i * PB_PAGE;
			uint64_t t0 = bypass_rdtscp(NULL);
			(void)*p;
			t->out[i] = bypass_rdtscp(NULL) - t0;
		}
	}
	t->t_end = bypass_rdtscp(NULL);
	return NULL;
}

/* A pager for kind k: returns 0 or -errno. */
static int make_pager(struct bench_ctx *c, int k, size_t len, size_t budget, bool swapin,
		      bypass_pager **pp, char **base)
{
	struct bypass_pager_config cfg = {
		.budget = budget, .swap_path = pb_swapdir(c), .swap_size = len,
		.flags = BYPASS_PAGER_SWAP_TEMP,
		.mode = k == K_HANDLER ? BYPASS_PAGER_HANDLER
			: k == K_POOL || k == K_ADAPTIVE ? BYPASS_PAGER_ADAPTIVE
							 : BYPASS_PAGER_UPCALL,
		.fault_around = k == K_FA ? 16 : 1,
		.readahead = swapin ? 1 : 0,
	};
	/* the engine is chosen here (the library reads no environment) */
	int e = bypass_pager_create(&cfg, pp);
	if (!e && k == K_POOL)
		e = bp_engine_force(*pp, BP_ENGINE_POOL);
	if (!e)
		e = bypass_pager_map(*pp, len, 0, (void **)base);
	if (e && *pp) {
		bypass_pager_destroy(*pp);
		*pp = NULL;
	}
	return e;
}

/*
 * One run: nthreads threads each `pages` accesses; samples to out, the
 * aggregate rate (pages/s) to *rate.
 */
static int lat_run(struct bench_ctx *c, int kind, int phase, int nthreads, size_t pages,
		   uint64_t *out, double *rate)
{
	size_t len = (size_t)nthreads * pages * PB_PAGE;
	bypass_pager *p = NULL;
	char *base = NULL;
	size_t flush = 0; /* swap-in: pages written last, to evict the others */
	if (kind == K_KERNEL) {
		base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base == MAP_FAILED)
			return -errno;
		madvise(base, len, MADV_NOHUGEPAGE); /* 4 KiB faults, as the pager's */
	} else if (kind != K_SIGNAL) {
		size_t budget = len + 64 * PB_PAGE;
		if (phase == PH_SWAPIN) {
			budget = 256 * PB_PAGE;
			flush = 512;
		}
		int e = make_pager(c, kind, len + flush * PB_PAGE, budget, phase == PH_SWAPIN, &p,
				   &base);
		if (e)
			return e;
		if (phase == PH_SWAPIN)
			for (size_t i = 0; i < len / PB_PAGE + flush; i++)
				((volatile char *)base)[i * PB_PAGE] = (char)(i | 1);
	}
	struct sigaction sa, old;
	if (kind == K_SIGNAL) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sigaction(SIGUSR1, &sa, &old);
	}
	_Atomic int go = 0, ready = 0;
	pthread_t th[MAX_THREADS];
	struct lat_thread lt[MAX_THREADS];
	for (int i = 0; i < nthreads; i++) {
		lt[i] = (struct lat_thread){ base ? base + (size_t)i * pages * PB_PAGE : NULL, pages,
					     kind, phase, out + (size_t)i * pages, 0, &go, &ready };
		pthread_create(&th[i], NULL, lat_main, &lt[i]);
	}
	while (atomic_load(&ready) < nthreads)
		__builtin_ia32_pause();
	uint64_t t0 = bypass_rdtscp(NULL);
	atomic_store_explicit(&go, 1, memory_order_release);
	uint64_t t_end = t0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		if (lt[i].t_end > t_end)
			t_end = lt[i].t_end;
	}
	double ns = bench_cycles_to_ns((double)(t_end - t0));
	*rate = ns > 0 ? (double)nthreads * (double)pages / (ns * 1e-9) : 0;
	if (kind == K_SIGNAL)
		sigaction(SIGUSR1, &old, NULL);
	if (p)
		bypass_pager_destroy(p);
	else if (base)
		munmap(base, len);
	return 0;
}

static void scaling_table(struct bench_ctx *c, int phase, bool one_cpu);

/* Handler threads of the adaptive engine's pool (its default: the online
 * CPUs, at most 16). */
static int pool_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

void bench_pager_latency(struct bench_ctx *c)
{
	scaling_table(c, PH_TOUCH, false);
	scaling_table(c, PH_SWAPIN, false);
	/* Again with every thread (the handler threads too) on one CPU: no
	 * cross-CPU wake-ups, which on this kind of machine (a VM whose idle
	 * CPUs halt) dominate a handler-thread fault. */
	cpu_set_t old, one;
	if (sched_getaffinity(0, sizeof(old), &old) == 0) {
		int cpu = -1;
		for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
			if (CPU_ISSET(i, &old))
				cpu = i;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) == 0) {
			scaling_table(c, PH_TOUCH, true);
			sched_setaffinity(0, sizeof(old), &old);
		}
	}
}

static bool kind_in(int k, int phase)
{
	if (phase == PH_TOUCH)
		return true;
	return k == K_HANDLER || k == K_POOL || k == K_UPCALL || k == K_ADAPTIVE;
}

static void scaling_table(struct bench_ctx *c, int phase, bool one_cpu)
{
	const char *id = phase == PH_SWAPIN ? "pager.swapin"
			 : one_cpu	   ? "pager.latency-1cpu"
					   : "pager.latency";
	int ncpu = one_cpu ? 1 : bench_ncpus();
	int counts[MAX_COUNTS], nc = 0;
	for (int t = 1; t <= ncpu && nc < MAX_COUNTS - 2; t *= 2)
		counts[nc++] = t;
	if (counts[nc - 1] != ncpu)
		counts[nc++] = ncpu;
	counts[nc++] = 2 * ncpu; /* oversubscribed */
	if (counts[nc - 1] > MAX_THREADS)
		counts[nc - 1] = MAX_THREADS;
	/* quick: 2,048 first-touch faults per thread (4,096 until the quick
	 * suite outgrew its 300 s: the per-round medians are as narrow), 300
	 * swap-ins (500) */
	size_t pages = phase == PH_SWAPIN ? bench_count(c, "swapin_faults", 10000, 300)
					  : bench_count(c, "faults", 50000, 2048);
	int rounds = bench_rounds(c);
	int base_kind = phase == PH_SWAPIN ? K_UPCALL : K_KERNEL;

	char title[200];
	snprintf(title, sizeof(title), "%s against the threads faulting at once%s: per-fault "
		 "latency and aggregate rate", phase == PH_SWAPIN ? "swap-in faults (4 KiB reads)"
		 : "first-touch write faults", one_cpu ? ", all threads on one CPU" : "");
	bench_begin(c, id, title, phase == PH_SWAPIN ? "bypass upcall with the same threads"
		    : "the kernel's minor fault with the same threads");
	uint64_t *s[MAX_COUNTS][K_N];
	double *rate[MAX_COUNTS][K_N];
	size_t ns[MAX_COUNTS] = { 0 };
	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++) {
			s[k][m] = malloc(sizeof(uint64_t) * (size_t)counts[k] * pages * (size_t)rounds);
			rate[k][m] = calloc((size_t)rounds, sizeof(double));
		}
	bool handler_ok = true;
	/* A B C ... A B C: every kind at every thread count, each round. */
	struct bench_rounds rr;
	int rnd;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &rnd))
		for (int k = 0; k < nc; k++) {
			size_t at = (size_t)rnd * (size_t)counts[k] * pages; /* a rerun overwrites */
			for (int m = 0; m < K_N; m++) {
				if (!kind_in(m, phase) || (m == K_HANDLER && !handler_ok))
					continue;
				int e = lat_run(c, m, phase, counts[k], pages, s[k][m] + at,
						&rate[k][m][rnd]);
				if (!e && m == K_UPCALL && bench_planted(c, id))
					e = -EIO; /* tests/pager/bench-plant.sh */
				if (e == -EPERM && m == K_HANDLER) {
					handler_ok = false;
					continue;
				}
				bool first = rnd == 0 && k == 0;
				if (e && first && (e == -ENOSYS || e == -EPERM || e == -EOPNOTSUPP)) {
					/* not available here: a reason, not a failure */
					bench_skip(c, id, "%s: %s", kind_name[m], strerror(-e));
					goto out;
				}
				if (e) {
					/* an engine error: a failure, not a skip */
					bench_fail(c, "%s: %s, %d thread%s, round %d: %s", id,
						   kind_name[m], counts[k], counts[k] == 1 ? "" : "s",
						   rnd + 1, strerror(-e));
					bench_end(c);
					goto out;
				}
			}
			ns[k] = ((size_t)rnd + 1) * (size_t)counts[k] * pages;
		}

	struct bench_summary sum[MAX_COUNTS][K_N], rs[MAX_COUNTS][K_N];
	memset(sum, 0, sizeof(sum));
	memset(rs, 0, sizeof(rs));
	/* each round's median per thread count and kind (before summarizing
	 * sorts the samples): the targets' intervals are over the rounds */
	double rmed[MAX_COUNTS][K_N][MAX_ROUNDS_CI], rrate[MAX_COUNTS][K_N][MAX_ROUNDS_CI];
	int nrm = rounds < MAX_ROUNDS_CI ? rounds : MAX_ROUNDS_CI;
	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++)
			for (int q = 0; q < nrm; q++) {
				rmed[k][m][q] = rrate[k][m][q] = NAN;
				if (!kind_in(m, phase) || (m == K_HANDLER && !handler_ok))
					continue;
				rrate[k][m][q] = rate[k][m][q];
				size_t len = (size_t)counts[k] * pages;
				struct bench_summary one;
				bench_summarize(s[k][m] + (size_t)q * len, len, &one);
				rmed[k][m][q] = one.median;
			}
	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++)
			if (kind_in(m, phase) && (m != K_HANDLER || handler_ok)) {
				bench_summarize(s[k][m], ns[k], &sum[k][m]);
				bench_summarize_d(rate[k][m], (size_t)rounds, &rs[k][m]);
			}

	for (int pass = 0; pass < 2; pass++) /* latency rows, then rate rows */
		for (int k = 0; k < nc; k++)
			for (int m = 0; m < K_N; m++) {
				if (!kind_in(m, phase) || (m == K_HANDLER && !handler_ok))
					continue;
				char name[128], params[320];
				const char *what = pass ? "faults/s" : "per fault";
				if (m == K_SIGNAL)
					what = pass ? "deliveries/s" : "per delivery";
				if (m == K_FA)
					what = pass ? "pages/s" : "per access";
				if (m == K_POOL)
					snprintf(name, sizeof(name), "%s (%d), %d thread%s: %s",
						 kind_name[m], pool_threads(), counts[k],
						 counts[k] > 1 ? "s" : "", what);
				else
					snprintf(name, sizeof(name), "%s, %d thread%s: %s",
						 kind_name[m], counts[k], counts[k] > 1 ? "s" : "",
						 what);
				/* series/x: tools/report.py draws these rows as curves */
				snprintf(params, sizeof(params),
					 "{\"series\": \"%s%s\", \"x\": %d, \"x_label\": \"threads "
					 "faulting at once\", \"threads\": %d, \"mode\": \"%s\", "
					 "\"phase\": \"%s\", \"figure\": \"%s\"}",
					 kind_name[m], pass ? " (rate)" : "", counts[k], counts[k],
					 kind_mode[m], phase == PH_SWAPIN ? "swap-in" : "first touch",
					 pass ? "rate" : "latency");
				const struct bench_summary *b = pass ? &rs[k][base_kind]
								     : &sum[k][base_kind];
				const struct bench_summary *v = pass ? &rs[k][m] : &sum[k][m];
				struct bench_row row = {
					.variant = name, .kind = kind_kind[m],
					.unit = pass ? (m == K_SIGNAL ? "deliveries/s"
							: m == K_FA ? "pages/s" : "faults/s")
						     : "cycles",
					.s = *v, .higher_is_better = pass,
					.ratio = v->median / b->median, .params = params,
					.note = counts[k] > ncpu ? "more threads than CPUs" : NULL,
				};
				bench_row(c, &row);
			}

	if (phase == PH_SWAPIN)
		bench_note(c, "each sample: one read of a page that was written and evicted "
			   "(readahead off: every access is a fault and a synchronous 4 KiB read "
			   "from the swap file, in %s); %zu faults per thread per run, budget "
			   "256 pages; %d rounds, kinds alternating within each round",
			   pb_swapdir(c), pages, rounds);
	else
		bench_note(c, "each sample: one first-touch write to a fresh 4 KiB page, timed by "
			   "the faulting thread (rdtscp around the store); %zu faults per thread "
			   "per run, %d rounds, kinds alternating within each round; the budget "
			   "holds every page (no eviction, no I/O); kernel: MAP_PRIVATE|"
			   "MAP_ANONYMOUS with MADV_NOHUGEPAGE", pages, rounds);
	bench_note(c, "rate rows: all threads' faults (or signals) / the time from the start "
		   "until the last thread finished, one sample per round");
	bench_note(c, "handler pool: the adaptive engine forced onto its pool "
		   "(held there; %d handler threads on a user-mode-only "
		   "userfaultfd); userfaultfd handler thread: one thread, privileged "
		   "userfaultfd; bypass adaptive: starts on upcalls, measures its fault "
		   "rate every 10 ms and tries the pool when it has no figure for this many "
		   "faulting threads, so a short run includes its probes", pool_threads());
	if (phase == PH_TOUCH)
		bench_note(c, "fault-around is off in every bypass row but its own (config."
			   "fault_around = 1); there, most accesses do not fault: the latency "
			   "row is per access and the rate row counts pages");
	if (one_cpu)
		bench_note(c, "every thread, the handler threads included, pinned to one CPU: no "
			   "cross-CPU wake-ups");
	else
		bench_note(c, "threads are not pinned; %d CPUs here, so %d threads are "
			   "oversubscribed 2x; a handler-thread fault needs two cross-CPU wake-ups "
			   "(several microseconds each on a VM whose idle CPUs halt)", ncpu,
			   2 * ncpu);
	if (!handler_ok)
		bench_note(c, "handler-thread rows missing: userfaultfd for kernel faults is not "
			   "permitted here (needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)");
	if (!one_cpu && bench_ncpus() < 16)
		bench_note(c, "issue 12's targets are for 16 threads on a 16-core machine; this "
			   "machine has %d CPUs, so the 16-thread scaling target is not measured "
			   "here", bench_ncpus());
	if (bench_quick(c) || bench_smoke(c))
		bench_note(c, "faults per thread scaled down from %d (full) to %zu",
			   phase == PH_SWAPIN ? 10000 : 50000, pages);

	/* The targets, each on a per-round figure (the kinds alternate within
	 * every round), Student's t interval over the rounds. */
	int last = nc - 1;
	double v[MAX_ROUNDS_CI];
	struct bench_est est;
	bench_note(c, "targets: each computed per round from that round's medians (latency) or "
		   "rates, the mean over %d rounds with Student's t 95%% interval", nrm);
	if (phase == PH_TOUCH && !one_cpu) {
		int worst_at = 0;
		for (int q = 0; q < nrm; q++) {
			double worst = INFINITY;
			for (int k = 0; k < nc; k++) {
				double better = rrate[k][K_UPCALL][q];
				if (handler_ok && rrate[k][K_HANDLER][q] > better)
					better = rrate[k][K_HANDLER][q];
				if (rrate[k][K_POOL][q] > better)
					better = rrate[k][K_POOL][q];
				double r = rrate[k][K_ADAPTIVE][q] / better;
				if (r < worst) {
					worst = r;
					worst_at = counts[k];
				}
			}
			v[q] = worst;
		}
		char what[200];
		snprintf(what, sizeof(what), "adaptive first-touch faults/s / the best of upcall, "
			 "handler thread and pool, at the worst thread count of each round (last: "
			 "%d threads; at least 1)", worst_at);
		bench_est_of(v, (size_t)nrm, rounds, BENCH_CI_T, &est);
		bench_target_est(c, what, &est, ">=", 1.0);
		bench_est_ratio(rmed[0][K_ADAPTIVE], rmed[0][K_UPCALL], (size_t)nrm, rounds,
				BENCH_CI_T, &est);
		bench_target_est(c, "adaptive per-fault median, 1 thread / upcall's (no worse: <= 1)",
				 &est, "<=", 1.0);
		if (bench_ncpus() >= 16) {
			int k16 = -1;
			for (int k = 0; k < nc; k++)
				if (counts[k] == 16)
					k16 = k;
			if (k16 >= 0) {
				bench_est_ratio(rrate[k16][K_ADAPTIVE], rrate[0][K_ADAPTIVE],
						(size_t)nrm, rounds, BENCH_CI_T, &est);
				bench_target_est(c, "adaptive first-touch faults/s, 16 threads / 1 "
						 "thread (at least 8)", &est, ">=", 8.0);
			}
		}
		bench_est_ratio(rmed[0][K_UPCALL], rmed[0][K_KERNEL], (size_t)nrm, rounds, BENCH_CI_T,
				&est);
		bench_target_est(c, "first-touch upcall fault / kernel minor fault, 1 thread (within "
				 "3x)", &est, "<=", 3.0);
	}
	if (phase == PH_TOUCH && one_cpu) {
		double up[MAX_ROUNDS_CI];
		for (int q = 0; q < nrm; q++)
			up[q] = rmed[last][K_UPCALL][q] / rmed[0][K_UPCALL][q];
		bench_est_of(up, (size_t)nrm, rounds, BENCH_CI_T, &est);
		bench_target_est(c, "upcall median latency, most threads / 1 thread (flat: <= 1.25)",
				 &est, "<=", 1.25);
		if (handler_ok) {
			for (int q = 0; q < nrm; q++)
				v[q] = rmed[last][K_HANDLER][q] / rmed[0][K_HANDLER][q] / up[q];
			bench_est_of(v, (size_t)nrm, rounds, BENCH_CI_T, &est);
			bench_target_est(c, "handler-thread latency growth / upcall growth (handler "
					 "degrades more)", &est, ">", 1.0);
		}
	}
	bench_end(c);
out:
	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++) {
			free(s[k][m]);
			free(rate[k][m]);
		}
}
