/* SPDX-License-Identifier: MIT */
/*
 * bench/ipc: library mode (issue 21), RPAL's call itself.
 *
 *   ipc.lib.call  RPAL's microbenchmark: 32-byte calls (1,000,000 per row
 *                 in the full run), the server process never spinning
 *                 (asleep in its event loop), each call's round trip on the
 *                 client's clock (rdtscp before the call, after it
 *                 returns): library mode behind the protection-key gate,
 *                 library mode unguarded, a plain function call into the
 *                 same handler in this process (the limit), message mode
 *                 with the server's thread spinning (adaptive, calls back to
 *                 back) and asleep (its connection in sleeping mode: every
 *                 call wakes it), and a Unix socket + epoll server (RPAL's
 *                 baseline).  The handler is the key-value example's PING
 *                 (examples/ipc-kv), 32 bytes in and out.  CPU time of both
 *                 processes per call on every row.
 *   ipc.lib.kv    the key-value service, 2 client processes x 4 threads,
 *                 90% GET / 10% SET of 32-byte values on 1,000 preloaded
 *                 keys: calls/s and CPU time per call of every process,
 *                 library mode against message mode (the server runs a
 *                 thread per message-mode connection).
 *
 * (ipc.lib.kv is in libkv.c.)  In ipc.lib.call the client and the server are pinned to the two CPUs of
 * bench_cpus(); the rows run in a rotating order in every round.
 */
#include "bench.h"
#include "ipc_bench.h"
#include "ipc/lib.h"

#include <bypass/ipc.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


/* --------------------------------------------------------------- plumbing */

uint64_t ipcb_clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ipcb_proc_cpu_ns(pid_t pid)
{
	clockid_t id;
	if (clock_getcpuclockid(pid, &id))
		return 0;
	return ipcb_clock_ns(id);
}

/* The object, copied where its owner and mode pass library mode's checks
 * (the build tree's umask may have made it group-writable). */
static char obj_path[128];

static const char *kv_object(void)
{
	char src[512];
	snprintf(src, sizeof(src), "%s/examples/ipc-kv.so", bench_build_dir());
	snprintf(obj_path, sizeof(obj_path), "/tmp/bypass-bench-kv-%d.so", (int)getpid());
	FILE *in = fopen(src, "rb"), *o = in ? fopen(obj_path, "wb") : NULL;
	if (!o) {
		if (in)
			fclose(in);
		return NULL;
	}
	char buf[65536];
	size_t k;
	bool ok = true;
	while ((k = fread(buf, 1, sizeof(buf), in)) > 0)
		ok = ok && fwrite(buf, 1, k, o) == k;
	fclose(in);
	ok = fclose(o) == 0 && ok;
	chmod(obj_path, 0755);
	return ok ? obj_path : NULL;
}

/* ------------------------------------------------------------- the server */

/*
 * The server process: two services over the same object, one whose
 * message-mode connections wait adaptively (spin, then sleep), one whose
 * connections sleep at once.  A thread per message-mode connection runs
 * bypass_ipc_lib_serve; the main thread sleeps in epoll_wait until an
 * opener comes.
 */
struct srv_conn {
	bypass_ipc_lib_service *svc;
	bypass_ipc_conn *conn;
};

static void *srv_conn_thread(void *p)
{
	struct srv_conn *sc = p;
	while (bypass_ipc_lib_serve(sc->svc, sc->conn, BYPASS_FOREVER) == 1)
		;
	bypass_ipc_close(sc->conn);
	free(sc);
	return NULL;
}

static void srv_main(struct ipcb_srv *s, const char *obj, int cpu, int ready_fd)
{
	if (cpu >= 0)
		bench_pin(cpu);
	bypass_ipc_lib_service *svc[2];
	int ep = epoll_create1(EPOLL_CLOEXEC), r = 0;
	for (int i = 0; i < 2 && !r; i++) {
		struct bypass_ipc_opts mo = { .mode = i ? BYPASS_WAIT_SLEEP : BYPASS_WAIT_ADAPTIVE,
					      .ring_size = 65536 };
		struct bypass_ipc_lib_opts o = { .msg = &mo, .arena_size = 16 << 20 };
		r = bypass_ipc_lib_listen(s->name[i], obj, &o, &svc[i]);
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (!r)
			epoll_ctl(ep, EPOLL_CTL_ADD, bypass_ipc_lib_service_fd(svc[i]), &ev);
	}
	if (write(ready_fd, &r, sizeof(r)) != sizeof(r) || r)
		_exit(1);
	close(ready_fd);
	for (;;) {
		struct epoll_event e;
		if (epoll_wait(ep, &e, 1, -1) != 1)
			continue;
		bypass_ipc_lib_service *v = svc[e.data.u32];
		bypass_ipc_conn *c;
		while (bypass_ipc_lib_accept(v, &c, 0) >= 0) {
			if (!c)
				continue;
			struct srv_conn *sc = malloc(sizeof(*sc));
			pthread_t t;
			sc->svc = v;
			sc->conn = c;
			if (!sc || pthread_create(&t, NULL, srv_conn_thread, sc))
				_exit(1);
			pthread_detach(t);
		}
		do {
			struct bypass_ipc_event ev;
			while (bypass_ipc_lib_event(v, &ev) == 0)
				;
		} while (bypass_ipc_lib_arm(v) == 1);
	}
}

static int srv_start(struct bench_ctx *c, struct ipcb_srv *s, const char *obj, int cpu)
{
	ipcb_name(s->name[0], sizeof(s->name[0]), "lib-a");
	ipcb_name(s->name[1], sizeof(s->name[1]), "lib-s");
	int p[2];
	if (pipe(p))
		return -1;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		close(p[0]);
		srv_main(s, obj, cpu, p[1]);
	}
	close(p[1]);
	int r = -EIO;
	if (read(p[0], &r, sizeof(r)) != sizeof(r))
		r = -EIO;
	close(p[0]);
	if (r) {
		bench_fail(c, "the library-mode server did not start: %s", strerror(-r));
		kill(s->pid, SIGKILL);
		ipcb_wait(s->pid);
		s->pid = 0;
	}
	return r;
}

static void srv_stop(struct ipcb_srv *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		ipcb_wait(s->pid);
	}
	s->pid = 0;
}

/* ---------------------------------------------------- ipc.lib.call rows */

enum { L_UNIX, L_MSG_SLEEP, L_MSG_ADAPT, L_UNGUARDED, L_GATED, L_DIRECT, L_ROWS };

static const struct {
	const char *label, *kind, *note;
} lrow[L_ROWS] = {
	{ "unix socket + epoll_wait", BENCH_BASELINE,
	  "RPAL's baseline: the server sleeps in epoll_wait" },
	{ "message mode, server asleep", BENCH_BYPASS,
	  "bypass_ipc_lib_call over a connection in sleeping mode: each call wakes the server" },
	{ "message mode, adaptive", BENCH_BYPASS,
	  "the server's thread spins 20 us after each call: back to back, it is awake" },
	{ "library mode, unguarded", BENCH_BYPASS,
	  "the handler runs in the caller's thread; the server sleeps" },
	{ "library mode, pkey gate", BENCH_BYPASS,
	  "the same, behind WRPKRU on entry and exit, each checked" },
	{ "plain function call (the limit)", BENCH_LIMIT,
	  "the same handler through a function pointer, in this process" },
};

struct lacc {
	double *rtt;               /* each round's samples at the round's place */
	size_t per_round;          /* samples a round keeps (n - warm-up) */
	int rounds;                /* rounds recorded */
	double mean[64];           /* each round's mean, for the intervals */
	uint64_t calls[64], cpu_cli[64], cpu_srv[64];
	bool failed, skipped;
};

/* The Unix socket + epoll server: 32 bytes in, 32 bytes out. */
static int run_unix(struct bench_ctx *c, uint64_t *out, size_t n, uint64_t *cpu_cli,
		    uint64_t *cpu_srv)
{
	int ca, cb, sv[2];
	bench_cpus(c, &ca, &cb);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	uint64_t *srv_cpu = bench_shared_alloc(sizeof(uint64_t));
	pid_t pid = fork();
	if (pid == 0) {
		bench_pin(cb);
		close(sv[0]);
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = sv[1] };
		epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
		uint64_t c0 = ipcb_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		char b[32];
		for (size_t i = 0; i < n; i++) {
			while (epoll_wait(ep, &ev, 1, -1) != 1)
				;
			if (ipcb_read(sv[1], b, 32, false) || ipcb_write(sv[1], b, 32))
				_exit(1);
		}
		*srv_cpu = ipcb_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
		_exit(0);
	}
	close(sv[1]);
	bench_pin(ca);
	int r = 0;
	char q[32] = "ping", a[32];
	uint64_t c0 = ipcb_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (size_t i = 0; i < n && !r; i++) {
		uint64_t t0 = bypass_rdtscp(NULL);
		r = ipcb_write(sv[0], q, 32) || ipcb_read(sv[0], a, 32, false) ? -1 : 0;
		out[i] = bypass_rdtscp(NULL) - t0;
	}
	*cpu_cli = ipcb_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	close(sv[0]);
	if (ipcb_wait(pid))
		r = -1;
	*cpu_srv = *srv_cpu;
	bench_shared_free(srv_cpu, sizeof(uint64_t));
	return r;
}

typedef int (*call_fn)(void *h, unsigned op, const void *req, size_t len, void *resp,
		       size_t cap);

/* The direct row: the handler through its pointer, no library. */
static const bypass_ipc_handler *direct_ops;

static int call_direct(void *h, unsigned op, const void *req, size_t len, void *resp, size_t cap)
{
	(void)h;
	return direct_ops[op](NULL, NULL, req, len, resp, cap);
}

static int call_lib(void *h, unsigned op, const void *req, size_t len, void *resp, size_t cap)
{
	return bypass_ipc_lib_call(h, op, req, len, resp, cap);
}

static int run_calls(struct bench_ctx *c, call_fn fn, void *h, pid_t srv, uint64_t *out,
		     size_t n, uint64_t *cpu_cli, uint64_t *cpu_srv)
{
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	bench_pin(ca);
	unsigned char q[32], a[32];
	memset(q, 0x5a, sizeof(q));
	uint64_t s0 = srv > 0 ? ipcb_proc_cpu_ns(srv) : 0;
	uint64_t c0 = ipcb_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = bypass_rdtscp(NULL);
		r = fn(h, KV_PING, q, sizeof(q), a, sizeof(a));
		out[i] = bypass_rdtscp(NULL) - t0;
		if (r != (int)sizeof(q))
			return -1;
	}
	*cpu_cli = ipcb_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	*cpu_srv = srv > 0 ? ipcb_proc_cpu_ns(srv) - s0 : 0;
	return memcmp(q, a, sizeof(q)) ? -1 : 0;
}

static void lrows(struct bench_ctx *c, struct lacc *acc, struct bench_summary *s)
{
	for (int k = 0; k < L_ROWS; k++) {
		struct lacc *a = &acc[k];
		if (a->skipped || a->failed || !a->rounds)
			continue;
		bench_summarize_d(a->rtt, a->per_round * (size_t)a->rounds, &s[k]);
		uint64_t calls = 0, cl_ns = 0, sv_ns = 0;
		for (int r = 0; r < a->rounds; r++) {
			calls += a->calls[r];
			cl_ns += a->cpu_cli[r];
			sv_ns += a->cpu_srv[r];
		}
		double cl = calls ? (double)cl_ns / (double)calls : 0;
		double sv = calls ? (double)sv_ns / (double)calls : 0;
		char params[256];
		snprintf(params, sizeof(params),
			 "{\"cpu_ns_per_call\": %.1f, \"client_cpu_ns_per_call\": %.1f, "
			 "\"server_cpu_ns_per_call\": %.1f, \"calls\": %llu}", cl + sv, cl, sv,
			 (unsigned long long)calls);
		char note[256];
		snprintf(note, sizeof(note), "%s; CPU %.0f ns/call (client %.0f, server %.0f)",
			 lrow[k].note, cl + sv, cl, sv);
		struct bench_row r = { .variant = lrow[k].label, .kind = lrow[k].kind,
				       .unit = "cycles", .s = s[k], .is_base = k == L_UNIX,
				       .source = k == L_UNIX ? "19,616 (one-way)"
						 : k == L_GATED ? "1,703 (RPAL, one-way)" : NULL,
				       .note = note, .params = params };
		bench_row(c, &r);
	}
}

/* A per-round figure of two rows (f(a's round mean, b's): '/' or '-'), its
 * estimate over the rounds both ran. */
static void per_round(const struct lacc *a, const struct lacc *b, int op, int planned,
		      struct bench_est *e)
{
	double v[64];
	int n = a->rounds < b->rounds ? a->rounds : b->rounds;
	for (int r = 0; r < n && r < 64; r++)
		v[r] = op == '/' ? a->mean[r] / b->mean[r] : a->mean[r] - b->mean[r];
	bench_est_of(v, (size_t)(n < 64 ? n : 64), planned, BENCH_CI_T, e);
}

static int bench_lib_call(struct bench_ctx *c, struct ipcb_srv *s, const char *why_no_gate)
{
	/* Calls per row: the library rows and the limit take nanoseconds, the
	 * adaptive message row a microsecond or two, the two sleeping rows a
	 * wake-up each (tens of microseconds): fewer of those in --quick.  The
	 * full run makes RPAL's 1,000,000 of each. */
	/* The library rows and the limit make RPAL's 1,000,000 even in
	 * --quick (a tenth of a second each at 200 cycles): the gated row's
	 * mean is judged against 200 cycles, and its interval over 8 rounds
	 * of 125,000 calls is a cycle or two wide. */
	uint64_t total = bench_count(c, "lib_calls", 1000000, 1000000);
	uint64_t total_msg = bench_count(c, "lib_msg_calls", 1000000, 20000);
	uint64_t total_slow = bench_count(c, "lib_slow_calls", 1000000, 4000);
	int rounds = bench_rounds_or(c, 8, 10);
	if (rounds > 64)
		rounds = 64;
	size_t per_of[L_ROWS];
	for (int k = 0; k < L_ROWS; k++) {
		uint64_t t = k == L_UNIX || k == L_MSG_SLEEP ? total_slow
			     : k == L_MSG_ADAPT ? total_msg : total;
		per_of[k] = (size_t)(t / (uint64_t)rounds);
		if (per_of[k] < 50)
			per_of[k] = 50;
	}
	struct lacc acc[L_ROWS];
	memset(acc, 0, sizeof(acc));
	size_t maxper = 0;
	for (int k = 0; k < L_ROWS; k++) {
		acc[k].per_round = per_of[k] - per_of[k] / 50;
		acc[k].rtt = malloc(acc[k].per_round * (size_t)rounds * sizeof(double));
		if (per_of[k] > maxper)
			maxper = per_of[k];
	}
	uint64_t *out = malloc(maxper * sizeof(uint64_t));

	/* The handles, opened once: the gated and the unguarded rows map
	 * different services (one mapping per service per process, its
	 * protection chosen by its first opener). */
	bypass_ipc_lib *h[L_ROWS] = { 0 };
	struct bypass_ipc_lib_opts mo = { .flags = BYPASS_IPC_LIB_MESSAGE };
	struct bypass_ipc_lib_opts none = { .protect = BYPASS_IPC_PROTECT_NONE };
	struct bypass_ipc_lib_opts req = { .protect = BYPASS_IPC_PROTECT_REQUIRED };
	void *dl = NULL;
	int r;
	bench_begin(c, "ipc.lib.call",
		    "RPAL's call: 32-byte calls with the server asleep in its event loop, "
		    "round trip of each call on the client's clock (cycles)",
		    lrow[L_UNIX].label);
	if ((r = bypass_ipc_lib_open(s->name[1], &mo, &h[L_MSG_SLEEP])) ||
	    (r = bypass_ipc_lib_open(s->name[0], &mo, &h[L_MSG_ADAPT])) ||
	    (r = bypass_ipc_lib_open(s->name[1], &none, &h[L_UNGUARDED]))) {
		bench_fail(c, "ipc.lib.call: open: %s", strerror(-r));
		goto out;
	}
	if (why_no_gate)
		acc[L_GATED].skipped = true;
	else if ((r = bypass_ipc_lib_open(s->name[0], &req, &h[L_GATED]))) {
		bench_fail(c, "ipc.lib.call: open with the gate: %s", strerror(-r));
		acc[L_GATED].failed = true;
	}
	dl = dlopen(obj_path, RTLD_NOW | RTLD_LOCAL);
	const struct bypass_ipc_lib_desc *d = dl ? dlsym(dl, BYPASS_IPC_LIB_ENTRY) : NULL;
	direct_ops = d && d->nops > KV_PING ? d->ops : NULL;
	if (!direct_ops) {
		acc[L_DIRECT].failed = true;
		bench_fail(c, "ipc.lib.call: cannot load the handler directly");
	}
	bench_watchdog(600, "ipc.lib.call", s->pid);
	struct bench_rounds rr;
	int round;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &round)) {
		size_t order[L_ROWS];
		bench_order(round, L_ROWS, order);
		for (size_t oi = 0; oi < L_ROWS; oi++) {
			int k = (int)order[oi];
			struct lacc *a = &acc[k];
			if (a->failed || a->skipped)
				continue;
			size_t n = per_of[k], w = n / 50;
			uint64_t cl = 0, sv = 0;
			if (k == L_UNIX)
				r = run_unix(c, out, n, &cl, &sv);
			else if (k == L_DIRECT)
				r = run_calls(c, call_direct, NULL, 0, out, n, &cl, &sv);
			else
				r = run_calls(c, call_lib, h[k], s->pid, out, n, &cl, &sv);
			if (!r && k == (why_no_gate ? L_UNGUARDED : L_GATED) &&
			    bench_planted(c, "ipc.lib.call"))
				r = -1; /* tests/ipc/bench-plant.sh */
			if (r) {
				a->failed = true;
				bench_fail(c, "%s failed to run (or answered wrong)", lrow[k].label);
				continue;
			}
			double sum = 0;
			double *dst = a->rtt + (size_t)round * a->per_round; /* a rerun overwrites */
			for (size_t i = w; i < n; i++) {
				dst[i - w] = (double)out[i];
				sum += (double)out[i];
			}
			a->mean[round] = sum / (double)(n - w);
			a->calls[round] = n;
			a->cpu_cli[round] = cl;
			a->cpu_srv[round] = sv;
			a->rounds = round + 1;
		}
	}
	bench_watchdog(0, NULL, 0);

	struct bench_summary sm[L_ROWS];
	memset(sm, 0, sizeof(sm));
	lrows(c, acc, sm);
	bench_note(c, "per row per round: %zu calls (library, limit), %zu (adaptive message "
		   "mode), %zu (the two sleeping rows); %d rounds, rows in a rotating order, the "
		   "first 2%% of each run dropped; client and server pinned to two CPUs",
		   per_of[L_UNGUARDED], per_of[L_MSG_ADAPT], per_of[L_UNIX], rounds);
	if (total < 1000000 || total_slow < 1000000)
		bench_note(c, "scaled down from the source's 1,000,000 calls per row (--full "
			   "makes them)");
	bench_note(c, "RPAL's figures are one-way (client stamp to the callee's handler) on a "
		   "2.3 GHz Xeon with a patched kernel; these are whole calls, request and "
		   "answer: compare ratios, not cycles");
	bench_fact(c, "ipc_lib_gate", "%s", why_no_gate ? "absent" : "pkey");
	/* Targets, each on the rounds' means (Student's t over the rounds):
	 * the gated row's where there are protection keys, else "no verdict:
	 * no protection keys"; the unguarded row's under its own name. */
	if (why_no_gate)
		bench_note(c, "the gated row did not run: %s; its targets have no verdict here, "
			   "the unguarded row's are its own", why_no_gate);
	struct bench_est est;
	int nr = rounds < 64 ? rounds : 64;
	static const struct {
		int row;
		const char *name;
	} lt[] = { { L_GATED, "gated" }, { L_UNGUARDED, "unguarded" } };
	for (size_t i = 0; i < sizeof(lt) / sizeof(lt[0]); i++) {
		int k = lt[i].row;
		char what[200], w2[200];
		snprintf(what, sizeof(what), "library mode (%s) mean call (cycles) <= 200",
			 lt[i].name);
		snprintf(w2, sizeof(w2), "library mode (%s) mean / unix+epoll mean <= 1/100",
			 lt[i].name);
		if (k == L_GATED && why_no_gate) {
			bench_target_none(c, what, "no protection keys");
			bench_target_none(c, w2, "no protection keys");
			continue;
		}
		bench_est_of(acc[k].mean, (size_t)(acc[k].rounds < 64 ? acc[k].rounds : 64), nr,
			     BENCH_CI_T, &est);
		bench_target_est(c, what, &est, "<=", 200);
		per_round(&acc[k], &acc[L_UNIX], '/', nr, &est);
		bench_target_est(c, w2, &est, "<=", 0.01);
		if (acc[k].rounds && acc[L_UNIX].rounds)
			bench_note(c, "library mode (%s): median %.4fx unix+epoll's, mean %.4fx",
				   lt[i].name, sm[k].median / sm[L_UNIX].median,
				   sm[k].mean / sm[L_UNIX].mean);
	}
	if (why_no_gate) {
		bench_target_none(c, "the gate adds <= 100 cycles (gated mean - unguarded mean)",
				  "no protection keys");
	} else {
		per_round(&acc[L_GATED], &acc[L_UNGUARDED], '-', nr, &est);
		bench_target_est(c, "the gate adds <= 100 cycles (gated mean - unguarded mean)",
				 &est, "<=", 100);
		if (acc[L_GATED].rounds && acc[L_UNGUARDED].rounds)
			bench_note(c, "the gate adds %.0f cycles to the median call, %.0f to the "
				   "mean", sm[L_GATED].median - sm[L_UNGUARDED].median,
				   sm[L_GATED].mean - sm[L_UNGUARDED].mean);
	}
	int lib = why_no_gate ? L_UNGUARDED : L_GATED;
	if (acc[lib].rounds && acc[L_DIRECT].rounds)
		bench_note(c, "library mode: %.0f cycles (median) above the plain function call",
			   sm[lib].median - sm[L_DIRECT].median);
out:
	bench_end(c);
	for (int k = 0; k < L_ROWS; k++) {
		if (h[k])
			bypass_ipc_lib_close(h[k]);
		free(acc[k].rtt);
	}
	if (dl)
		dlclose(dl);
	free(out);
	return 0;
}

int ipcb_lib(struct bench_ctx *c)
{
	/* The gate is library mode's own key (not message mode's). */
	const char *why = bp_ipc_lib_key() >= 0 ? NULL : bp_ipc_lib_key_reason();
	if (!kv_object()) {
		bench_skip(c, "ipc.lib.call", "the key-value service object is not built "
			   "(%s/examples/ipc-kv.so)", bench_build_dir());
		return BENCH_SKIP;
	}
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	struct ipcb_srv s = { 0 };
	if (srv_start(c, &s, obj_path, cb) == 0) {
		bench_lib_call(c, &s, why);
		srv_stop(&s);
	}
	/* The key-value rows: a fresh server, not pinned (8 client threads). */
	if (srv_start(c, &s, obj_path, -1) == 0) {
		ipcb_lib_kv(c, &s, why);
		srv_stop(&s);
	}
	unlink(obj_path);
	return 0;
}
