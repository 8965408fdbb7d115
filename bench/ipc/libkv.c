/* SPDX-License-Identifier: MIT */
/*
 * bench/ipc: ipc.lib.kv (issue 21), the key-value example service
 * (examples/ipc-kv) called by 2 client processes x 4 threads, 90% GET / 10%
 * SET of 32-byte values on 1,000 preloaded keys: calls/s and the CPU time
 * of every process per call, library mode (one handle per process, the
 * handlers in the callers' threads) against message mode (a handle, a
 * connection and a server thread per client thread), twice: on the
 * adaptive service (each side spins up to 20 us before it sleeps: 8 client
 * and 8 server threads spinning on this machine's CPUs) and on the
 * sleeping service with sleeping connections (no thread spins).  The
 * server process is lib.c's (its two services).
 */
#include "bench.h"
#include "ipc_bench.h"

#include <bypass/ipc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NKEYS 1000
#define VLEN 32
#define KV_PROCS 2
#define KV_THREADS 4

struct kv_shared {
	_Atomic uint32_t ready, go, fails;
	_Atomic uint64_t t_start, t_end; /* first start, last end (CLOCK_MONOTONIC) */
	_Atomic uint64_t cpu_ns;         /* the client threads' CPU time over their calls */
	_Atomic uint64_t calls;
};

struct kv_worker {
	bypass_ipc_lib *h;
	struct kv_shared *sh;
	uint64_t seed, n;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int kv_set(bypass_ipc_lib *h, unsigned k, uint64_t v)
{
	unsigned char req[sizeof(struct kv_set) + 16 + VLEN];
	char key[16];
	int kl = snprintf(key, sizeof(key), "key%u", k);
	struct kv_set s = { .klen = (uint16_t)kl, .vlen = VLEN };
	memcpy(req, &s, sizeof(s));
	memcpy(req + sizeof(s), key, (size_t)kl);
	memset(req + sizeof(s) + kl, (int)(v & 0xff), VLEN);
	return bypass_ipc_lib_call(h, KV_SET, req, sizeof(s) + (size_t)kl + VLEN, NULL, 0);
}

static void *kv_work(void *p)
{
	struct kv_worker *w = p;
	struct kv_shared *sh = w->sh;
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		usleep(20); /* no spinning: the waiting is not the calls' CPU time */
	uint64_t c0 = ipcb_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t t0 = ipcb_clock_ns(CLOCK_MONOTONIC), expect = 0;
	atomic_compare_exchange_strong(&sh->t_start, &expect, t0);
	for (uint64_t i = 0; i < w->n; i++) {
		uint64_t r = xorshift(&w->seed);
		unsigned k = (unsigned)(r % NKEYS);
		int rc;
		if ((r >> 32) % 10 == 0) {
			rc = kv_set(w->h, k, r);
		} else {
			char key[16], val[VLEN];
			int kl = snprintf(key, sizeof(key), "key%u", k);
			rc = bypass_ipc_lib_call(w->h, KV_GET, key, (size_t)kl, val, sizeof(val));
			rc = rc == VLEN ? 0 : -1;
		}
		if (rc)
			atomic_fetch_add(&sh->fails, 1);
	}
	uint64_t t1 = ipcb_clock_ns(CLOCK_MONOTONIC), e = atomic_load(&sh->t_end);
	while (e < t1 && !atomic_compare_exchange_weak(&sh->t_end, &e, t1))
		;
	atomic_fetch_add(&sh->calls, w->n);
	atomic_fetch_add(&sh->cpu_ns, ipcb_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
	return NULL;
}

/* One client process: 4 threads; library mode shares one handle, message
 * mode opens one per thread (one connection each). */
static void kv_client(const char *name, bool msg, bool sleep, struct kv_shared *sh, uint64_t n,
		      int id)
{
	struct bypass_ipc_opts cm = { .mode = BYPASS_WAIT_SLEEP };
	struct bypass_ipc_lib_opts o = { .flags = msg ? BYPASS_IPC_LIB_MESSAGE : 0,
					 .msg = msg && sleep ? &cm : NULL };
	struct kv_worker w[KV_THREADS];
	pthread_t t[KV_THREADS];
	bypass_ipc_lib *shared = NULL;
	if (!msg && bypass_ipc_lib_open(name, &o, &shared))
		_exit(1);
	for (int i = 0; i < KV_THREADS; i++) {
		w[i] = (struct kv_worker){ .h = shared, .sh = sh, .n = n,
					   .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id * 8 + i + 1) };
		if (msg && bypass_ipc_lib_open(name, &o, &w[i].h))
			_exit(1);
	}
	for (int i = 0; i < KV_THREADS; i++)
		if (pthread_create(&t[i], NULL, kv_work, &w[i]))
			_exit(1);
	for (int i = 0; i < KV_THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < KV_THREADS; i++)
		if (msg)
			bypass_ipc_lib_close(w[i].h);
	if (shared)
		bypass_ipc_lib_close(shared);
	_exit(0);
}

enum { K_MSG, K_MSG_SLEEP, K_LIB, K_ROWS };

static int kv_run(struct ipcb_srv *s, int k, uint64_t n, double *calls_s, double *cpu_per_call)
{
	bool msg = k != K_LIB, sleep = k == K_MSG_SLEEP;
	struct kv_shared *sh = bench_shared_alloc(sizeof(*sh));
	pid_t pid[KV_PROCS];
	int r = 0;
	for (int i = 0; i < KV_PROCS; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			kv_client(s->name[sleep ? 1 : 0], msg, sleep, sh, n, i);
	}
	while (atomic_load(&sh->ready) < KV_PROCS * KV_THREADS) {
		int st;
		for (int i = 0; i < KV_PROCS; i++)
			if (waitpid(pid[i], &st, WNOHANG) == pid[i]) {
				r = -1;
				pid[i] = 0;
			}
		if (r)
			break;
		usleep(200);
	}
	uint64_t s0 = ipcb_proc_cpu_ns(s->pid);
	atomic_store(&sh->go, 1);
	for (int i = 0; i < KV_PROCS; i++)
		if (pid[i] > 0 && ipcb_wait(pid[i]))
			r = -1;
	uint64_t srv_cpu = ipcb_proc_cpu_ns(s->pid) - s0;
	uint64_t calls = atomic_load(&sh->calls);
	if (!r && (atomic_load(&sh->fails) || calls != n * KV_PROCS * KV_THREADS))
		r = -1;

	if (!r) {
		double wall = (double)(atomic_load(&sh->t_end) - atomic_load(&sh->t_start)) / 1e9;
		*calls_s = (double)calls / wall;
		*cpu_per_call = (double)(atomic_load(&sh->cpu_ns) + srv_cpu) / (double)calls;
	}
	bench_shared_free(sh, sizeof(*sh));
	return r;
}

int ipcb_lib_kv(struct bench_ctx *c, struct ipcb_srv *s, const char *why_no_gate)
{
	/* Library-mode calls take a tenth of a microsecond, message-mode ones
	 * tens: more of the first, for a run long enough to time. */
	uint64_t per_msg = bench_count(c, "kv_calls", 100000, 2000);
	uint64_t per_lib = bench_count(c, "kv_lib_calls", 1000000, 50000);
	int rounds = bench_rounds_or(c, 5, 10);
	if (rounds > 64)
		rounds = 64;
	int ncpu = bench_run_cpus(c);
	bench_begin(c, "ipc.lib.kv",
		    "the key-value service: 2 processes x 4 threads, 90% GET: calls/s (CPU time "
		    "of every process per call in the note)", "message mode, adaptive");
	/* Preload the keys in both services (the adaptive one is shared by
	 * the library-mode and the adaptive message-mode rows; the sleeping
	 * one, a service of its own, by the sleeping row). */
	int r = 0;
	for (int sv = 0; sv < 2 && !r; sv++) {
		bypass_ipc_lib *h;
		r = bypass_ipc_lib_open(s->name[sv], NULL, &h);
		for (unsigned k = 0; !r && k < NKEYS; k++)
			r = kv_set(h, k, k);
		if (!r)
			bypass_ipc_lib_close(h);
	}
	if (r) {
		bench_fail(c, "ipc.lib.kv: preloading the keys: %s", strerror(-r));
		bench_end(c);
		return 0;
	}
	double rate[K_ROWS][64], cpu[K_ROWS][64];
	int have[K_ROWS] = { 0 };
	bool failed[K_ROWS] = { false };
	bench_watchdog(600, "ipc.lib.kv", s->pid);
	struct bench_rounds rr;
	int round;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &round)) {
		size_t order[K_ROWS];
		bench_order(round, K_ROWS, order);
		for (size_t oi = 0; oi < K_ROWS; oi++) {
			int k = (int)order[oi];
			if (failed[k])
				continue;
			double cs, cp;
			if (kv_run(s, k, k == K_LIB ? per_lib : per_msg, &cs, &cp)) {
				failed[k] = true;
				bench_fail(c, "ipc.lib.kv: the %s row failed (a call failed or "
					   "answered wrong)", k == K_MSG ? "message mode" :
					   k == K_MSG_SLEEP ? "sleeping message mode" : "library mode");
				continue;
			}
			rate[k][round] = cs; /* a rerun overwrites */
			cpu[k][round] = cp;
			have[k] = round + 1;
		}
	}
	bench_watchdog(0, NULL, 0);
	double cps[K_ROWS] = { 0 };
	for (int k = 0; k < K_ROWS; k++) {
		if (!have[k] || failed[k])
			continue;
		struct bench_summary sr, sc;
		double tmp[64];
		memcpy(tmp, cpu[k], (size_t)have[k] * sizeof(double));
		bench_summarize_d(tmp, (size_t)have[k], &sc);
		memcpy(tmp, rate[k], (size_t)have[k] * sizeof(double));
		bench_summarize_d(tmp, (size_t)have[k], &sr);
		cps[k] = 1e9 / sc.median;
		char note[200], params[200];
		snprintf(note, sizeof(note), "CPU %.0f ns per call (all processes): %.0f calls per "
			 "CPU-second", sc.median, cps[k]);
		snprintf(params, sizeof(params),
			 "{\"cpu_ns_per_call\": %.1f, \"calls_per_cpu_s\": %.0f}", sc.median, cps[k]);
		struct bench_row row = {
			.variant = k == K_MSG ? "message mode, adaptive" :
				   k == K_MSG_SLEEP ? "message mode, both sides sleeping" :
				   why_no_gate ? "library mode, unguarded" : "library mode, pkey gate",
			.kind = BENCH_BYPASS, .unit = "calls/s", .s = sr, .higher_is_better = true,
			.is_base = k == K_MSG, .note = note, .params = params };
		bench_row(c, &row);
	}
	bench_note(c, "calls per thread per round: %llu in library mode, %llu in message mode; "
		   "%d rounds; a SET replaces a 32-byte value of one of %d keys; library mode "
		   "shares one handle per process, message mode opens one per thread (a "
		   "connection and a server thread each); CPU: the client threads' over their "
		   "calls and the server process's over the run", (unsigned long long)per_lib,
		   (unsigned long long)per_msg, rounds, NKEYS);
	bench_note(c, "threads and CPUs: library mode runs %d client threads (%d processes x "
		   "%d) and no server thread; message mode runs the same %d client threads and "
		   "one server thread per connection, %d in all, on %d CPU%s: adaptive, each "
		   "side spins up to 20 us after a call before it sleeps (with more threads than "
		   "CPUs they spin for CPU time the others wait for); both sides sleeping, no "
		   "thread spins", KV_PROCS * KV_THREADS, KV_PROCS, KV_THREADS,
		   KV_PROCS * KV_THREADS, KV_PROCS * KV_THREADS, ncpu, ncpu == 1 ? "" : "s");
	if (why_no_gate)
		bench_note(c, "library mode runs unguarded here: %s", why_no_gate);
	/* calls per CPU-second, library / message, per round (Student's t) */
	static const struct {
		int k;
		const char *what;
	} vs[] = {
		{ K_MSG, "library mode calls per CPU-second / message mode's (adaptive: 8 client "
			 "+ 8 server threads spinning up to 20 us) >= 5" },
		{ K_MSG_SLEEP, "library mode calls per CPU-second / message mode's (both sides "
			       "sleeping: no thread spins) >= 5" },
	};
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		int m = vs[i].k;
		int n = have[m] < have[K_LIB] ? have[m] : have[K_LIB];
		if (failed[m] || failed[K_LIB])
			n = 0;
		struct bench_est est;
		/* cpu per call: message's / library's = library's calls per
		 * CPU-second / message's */
		bench_est_ratio(cpu[m], cpu[K_LIB], (size_t)n, rounds, BENCH_CI_T, &est);
		char what[300];
		snprintf(what, sizeof(what), "%s (%d CPU%s)", vs[i].what, ncpu,
			 ncpu == 1 ? "" : "s");
		bench_target_est(c, what, &est, ">=", 5);
	}
	bench_end(c);
	return 0;
}

