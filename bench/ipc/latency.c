/* SPDX-License-Identifier: MIT */
/*
 * bench/ipc: RPAL's experiment and its companions.
 *
 *   ipc.oneway      1,000,000 messages of 32 bytes (40,000 with --quick:
 *                   100,000 until the quick suite outgrew its 300 s; the
 *                   blocking rows' per-round medians of 8,000 messages are
 *                   as narrow),
 *                   one-way latency from the client's rdtsc before sending
 *                   (carried in the message) to the server's rdtsc when its
 *                   handler starts, minus the two CPUs' TSC offset, which
 *                   is estimated in every round (tsc_offset below); the
 *                   client waits for a 1-byte ack before the next message,
 *                   so each message finds the server waiting.  Unix socket
 *                   + blocking epoll_wait (RPAL's baseline), Unix socket
 *                   busy-polling, pipe, bypass in adaptive / sleeping /
 *                   polling modes, adaptive with messages spaced beyond the
 *                   spin budget (the receiver sleeps every time), through
 *                   bypass_ipc_epoll_wait, iceoryx2 (when cargo can build
 *                   it), and the cache-line limit (half its round trip).
 *                   Every row also reports the CPU time both sides spent
 *                   per message.
 *   ipc.oneway.rtt  the same runs timed on one clock: the client's round
 *                   trip (message and ack), halved; the polling target
 *                   compares it with half the cache line's round trip.
 *   ipc.call        round trips: bypass_ipc_call vs request/response over a
 *                   Unix socket.
 *   ipc.tput.<size> throughput of a stream of messages, 32 B to 1 MiB.
 *
 * Server and client are separate processes pinned to the two CPUs of
 * bench_cpus(); the rows run in a rotating order in every round.
 */
#include "bench.h"
#include "ipc_bench.h"

#include <bypass/ipc.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct msg32 {
	uint64_t tsc;
	uint64_t seq;
	uint64_t pad[2];
};

/* ------------------------------------------------------------- plumbing */

int ipcb_read(int fd, void *buf, size_t len, bool busy)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = busy ? recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT)
				 : read(fd, (char *)buf + got, len - got);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			return -1;
		else if (errno == EAGAIN || errno == EINTR)
			__builtin_ia32_pause();
		else
			return -1;
	}
	return 0;
}

int ipcb_write(int fd, const void *buf, size_t len)
{
	size_t put = 0;
	while (put < len) {
		ssize_t n = write(fd, (const char *)buf + put, len - put);
		if (n > 0)
			put += (size_t)n;
		else if (n < 0 && (errno == EAGAIN || errno == EINTR))
			__builtin_ia32_pause();
		else
			return -1;
	}
	return 0;
}

void ipcb_name(char *buf, size_t n, const char *tag)
{
	static unsigned seq;
	snprintf(buf, n, "bench-%s-%d-%u", tag, (int)getpid(), seq++);
}

int ipcb_wait(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

pid_t ipcb_pair(struct bench_ctx *c, const char *tag, const struct bypass_ipc_opts *o,
		bypass_ipc_conn **conn, int *err)
{
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	char name[64];
	ipcb_name(name, sizeof(name), tag);
	bypass_ipc_service *svc;
	if (bypass_ipc_listen(name, o, &svc))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		bench_pin(cb);
		if (bypass_ipc_accept(svc, conn, 10000000000ll))
			_exit(1);
		return 0;
	}
	bypass_ipc_service_close(svc);
	if (pid < 0)
		return -1;
	bench_pin(ca);
	*conn = NULL; /* connect leaves it alone when it fails */
	*err = bypass_ipc_connect(name, o, conn);
	return pid;
}

/* ----------------------------------------------------- one-way variants */

enum ow_kind { OW_UNIX_EPOLL, OW_UNIX_BUSY, OW_PIPE, OW_BYPASS_ADAPTIVE, OW_BYPASS_SPACED,
	       OW_BYPASS_SLEEP, OW_BYPASS_SPIN, OW_BYPASS_EPOLL, OW_ICEORYX2, OW_LIMIT,
	       OW_ROWS };

static const struct {
	const char *label, *kind, *note;
} ow_info[OW_ROWS] = {
	{ "unix socket + epoll_wait", BENCH_BASELINE, "RPAL's baseline: the server sleeps in epoll_wait" },
	{ "unix socket, busy-poll", BENCH_BASELINE, "non-blocking recv in a loop (fair to a spinning receiver)" },
	{ "pipe, blocking read", BENCH_BASELINE, NULL },
	{ "bypass adaptive", BENCH_BYPASS, "spin 20 us, then futex" },
	{ "bypass adaptive, spaced", BENCH_BYPASS, NULL /* composed: the gap */ },
	{ "bypass sleeping", BENCH_BYPASS, "futex at once" },
	{ "bypass polling", BENCH_BYPASS, "spins, never sleeps" },
	{ "bypass_ipc_epoll_wait adaptive", BENCH_BYPASS, "RPAL's usage: the server's epoll loop" },
	{ "iceoryx2 pub-sub, polling", BENCH_PEER, "the practical peer: both sides spin" },
	{ "cache-line limit", BENCH_LIMIT, "half a cache line's round trip between the two CPUs" },
};

/* What the server of a run leaves for the client (shared memory). */
struct ow_srv {
	uint64_t cpu_ns;   /* the server's CPU time over its loop */
	uint64_t ow[];     /* server's TSC at the handler - the client's stamp */
};

/* One run's results on the client's side. */
struct ow_res {
	struct ow_srv *sh;
	uint64_t *rtt;     /* the client's round trips (message and ack) */
	uint64_t cpu_cli;  /* the client's CPU time over its loop */
	uint64_t gap_ns;   /* spaced runs: sleep this long before each message */
};

static uint64_t cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void gap(uint64_t ns)
{
	if (!ns)
		return;
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int ow_mode(enum ow_kind k)
{
	return k == OW_BYPASS_SLEEP ? BYPASS_WAIT_SLEEP
	       : k == OW_BYPASS_SPIN ? BYPASS_WAIT_SPIN : BYPASS_WAIT_ADAPTIVE;
}

/* Server side of the socket and pipe variants. */
static void ow_fd_server(enum ow_kind k, int rfd, int wfd, struct ow_srv *sh, size_t n)
{
	int ep = -1;
	if (k == OW_UNIX_EPOLL) {
		ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = rfd };
		epoll_ctl(ep, EPOLL_CTL_ADD, rfd, &ev);
	}
	uint64_t c0 = cpu_now();
	for (size_t i = 0; i < n; i++) {
		struct msg32 m;
		if (ep >= 0) {
			struct epoll_event ev;
			while (epoll_wait(ep, &ev, 1, -1) != 1)
				;
		}
		if (ipcb_read(rfd, &m, sizeof(m), k == OW_UNIX_BUSY))
			_exit(1);
		sh->ow[i] = bypass_rdtscp(NULL) - m.tsc;
		if (ipcb_write(wfd, "a", 1))
			_exit(1);
	}
	sh->cpu_ns = cpu_now() - c0;
	_exit(0);
}

static int ow_fd_run(struct bench_ctx *c, enum ow_kind k, struct ow_res *res, size_t n)
{
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	int cli_r, cli_w, srv_r, srv_w;
	if (k == OW_PIPE) {
		int p1[2], p2[2];
		if (pipe(p1) || pipe(p2))
			return -1;
		srv_r = p1[0], cli_w = p1[1], cli_r = p2[0], srv_w = p2[1];
	} else {
		int sv[2];
		int type = SOCK_STREAM | (k == OW_UNIX_BUSY ? SOCK_NONBLOCK : 0);
		if (socketpair(AF_UNIX, type, 0, sv))
			return -1;
		cli_r = cli_w = sv[0];
		srv_r = srv_w = sv[1];
	}
	pid_t pid = fork();
	if (pid == 0) {
		bench_pin(cb);
		if (cli_r != srv_r)
			close(cli_r);
		if (cli_w != srv_w && cli_w != cli_r)
			close(cli_w);
		ow_fd_server(k, srv_r, srv_w, res->sh, n);
	}
	bench_pin(ca);
	close(srv_r);
	if (srv_w != srv_r)
		close(srv_w);
	int r = 0;
	uint64_t c0 = cpu_now();
	for (size_t i = 0; i < n && !r; i++) {
		struct msg32 m = { .seq = i };
		uint64_t t0 = bypass_rdtscp(NULL);
		m.tsc = t0;
		char a;
		if (ipcb_write(cli_w, &m, sizeof(m)) ||
		    ipcb_read(cli_r, &a, 1, k == OW_UNIX_BUSY))
			r = -1;
		res->rtt[i] = bypass_rdtscp(NULL) - t0;
	}
	res->cpu_cli = cpu_now() - c0;
	close(cli_r);
	if (cli_w != cli_r)
		close(cli_w);
	if (ipcb_wait(pid))
		r = -1;
	return r;
}

static void ow_bypass_server(bypass_ipc_conn *conn, enum ow_kind k, struct ow_srv *sh,
			     size_t n)
{
	int ep = -1;
	if (k == OW_BYPASS_EPOLL) {
		ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = conn };
		if (bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, conn, &ev))
			_exit(1);
	}
	uint64_t c0 = cpu_now();
	for (size_t i = 0; i < n; i++) {
		struct bypass_ipc_msg m;
		if (ep >= 0) {
			struct epoll_event ev;
			while (bypass_ipc_epoll_wait(ep, &ev, 1, BYPASS_FOREVER) != 1)
				;
			if (bypass_ipc_recv(conn, &m, 0))
				_exit(1);
		} else if (bypass_ipc_recv(conn, &m, BYPASS_FOREVER)) {
			_exit(1);
		}
		uint64_t t1 = bypass_rdtscp(NULL);
		const struct msg32 *p = m.data;
		sh->ow[i] = t1 - p->tsc;
		bypass_ipc_release(conn, &m);
		if (bypass_ipc_send(conn, "a", 1, BYPASS_FOREVER))
			_exit(1);
	}
	sh->cpu_ns = cpu_now() - c0;
	bypass_ipc_close(conn);
	_exit(0);
}

static int ow_bypass_run(struct bench_ctx *c, enum ow_kind k, struct ow_res *res, size_t n)
{
	struct bypass_ipc_opts o = { .mode = ow_mode(k), .ring_size = 65536 };
	bypass_ipc_conn *conn;
	int r;
	pid_t pid = ipcb_pair(c, "ow", &o, &conn, &r);
	if (pid < 0)
		return -1;
	if (pid == 0)
		ow_bypass_server(conn, k, res->sh, n);
	uint64_t c0 = cpu_now();
	for (size_t i = 0; i < n && !r; i++) {
		gap(res->gap_ns);
		struct msg32 m = { .seq = i };
		uint64_t t0 = bypass_rdtscp(NULL);
		m.tsc = t0;
		r = bypass_ipc_send(conn, &m, sizeof(m), BYPASS_FOREVER);
		struct bypass_ipc_msg a;
		if (!r)
			r = bypass_ipc_recv(conn, &a, BYPASS_FOREVER);
		res->rtt[i] = bypass_rdtscp(NULL) - t0;
		if (!r)
			r = bypass_ipc_release(conn, &a);
	}
	res->cpu_cli = cpu_now() - c0;
	if (conn)
		bypass_ipc_close(conn);
	if (ipcb_wait(pid))
		r = -1;
	return r;
}

/* ------------------------------------------------------------ TSC offset */

/*
 * The one-way figures subtract the client CPU's TSC from the server CPU's.
 * Their offset is estimated in every round, NTP-style, between the same two
 * pinned CPUs: the client side writes a request line, the responder (a
 * thread on the server's CPU) stamps its TSC into its own line, the client
 * takes its TSC when it sees it; offset = stamp - (t0 + t1) / 2 assumes the
 * two directions take equally long (the same mechanism both ways).  The
 * median of the offsets of the tenth of exchanges with the shortest round
 * trips is kept (preempted or disturbed exchanges are the long ones).
 */
struct off_sync {
	_Alignas(64) _Atomic uint64_t req;
	_Alignas(64) _Atomic uint64_t ack;
	_Atomic uint64_t tsc;
	int cpu;
	size_t n;
};

static void *off_responder(void *p)
{
	struct off_sync *o = p;
	bench_pin(o->cpu);
	for (uint64_t i = 1; i <= o->n; i++) {
		while (atomic_load_explicit(&o->req, memory_order_acquire) != i)
			__builtin_ia32_pause();
		atomic_store_explicit(&o->tsc, bypass_rdtscp(NULL), memory_order_relaxed);
		atomic_store_explicit(&o->ack, i, memory_order_release);
	}
	return NULL;
}

static int cmp_pair(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* TSC(cb) - TSC(ca) in cycles, into *off; 0 or -1. */
static int tsc_offset(int ca, int cb, size_t n, double *off)
{
	struct off_sync *o = aligned_alloc(64, sizeof(*o));
	double *v = malloc(2 * n * sizeof(double));
	if (!o || !v) {
		free(o);
		free(v);
		return -1;
	}
	memset(o, 0, sizeof(*o));
	o->cpu = cb;
	o->n = n;
	pthread_t t;
	if (pthread_create(&t, NULL, off_responder, o)) {
		free(o);
		free(v);
		return -1;
	}
	bench_pin(ca);
	for (uint64_t i = 1; i <= n; i++) {
		uint64_t t0 = bypass_rdtscp(NULL);
		atomic_store_explicit(&o->req, i, memory_order_release);
		while (atomic_load_explicit(&o->ack, memory_order_acquire) != i)
			__builtin_ia32_pause();
		uint64_t t1 = bypass_rdtscp(NULL);
		uint64_t tb = atomic_load_explicit(&o->tsc, memory_order_relaxed);
		v[2 * (i - 1)] = (double)(t1 - t0);
		v[2 * (i - 1) + 1] = (double)(int64_t)(tb - t0) - (double)(t1 - t0) / 2;
	}
	pthread_join(t, NULL);
	qsort(v, n, 2 * sizeof(double), cmp_pair);
	size_t k = n / 10 ? n / 10 : 1;
	for (size_t i = 0; i < k; i++)
		v[i] = v[2 * i + 1];
	qsort(v, k, sizeof(double), cmp_d);
	*off = v[k / 2];
	free(v);
	free(o);
	return 0;
}

/* ------------------------------------------------------------ the table */

struct ow_acc {
	double *ow, *rtt;          /* offset-corrected one-way; round trip / 2 */
	size_t have;
	uint64_t msgs;             /* messages whose CPU time was counted */
	uint64_t cpu_cli, cpu_srv; /* ns */
	bool failed;
};

static void ow_rows(struct bench_ctx *c, struct ow_acc *acc, bool rtt, const char *spaced_note,
		    struct bench_summary *out)
{
	for (int k = 0; k < OW_ROWS; k++) {
		if (!acc[k].have)
			continue;
		bench_summarize_d(rtt ? acc[k].rtt : acc[k].ow, acc[k].have, &out[k]);
		char note[320], params[256];
		const char *base = k == OW_BYPASS_SPACED ? spaced_note : ow_info[k].note;
		params[0] = 0;
		if (acc[k].msgs) {
			double cl = (double)acc[k].cpu_cli / (double)acc[k].msgs;
			double sv = (double)acc[k].cpu_srv / (double)acc[k].msgs;
			snprintf(note, sizeof(note), "%s%sCPU %.2f us/msg (client %.2f + server %.2f)%s",
				 base ? base : "", base ? "; " : "", (cl + sv) / 1e3, cl / 1e3,
				 sv / 1e3, k == OW_ICEORYX2 ? ", process start-up included" : "");
			snprintf(params, sizeof(params),
				 "{\"cpu_ns_per_msg\": %.1f, \"client_cpu_ns_per_msg\": %.1f, "
				 "\"server_cpu_ns_per_msg\": %.1f}", cl + sv, cl, sv);
		} else {
			snprintf(note, sizeof(note), "%s", base ? base : "");
		}
		struct bench_row r = { .variant = ow_info[k].label, .kind = ow_info[k].kind,
				       .unit = "cycles", .s = out[k], .is_base = k == OW_UNIX_EPOLL,
				       .source = rtt ? NULL
					       : k == OW_UNIX_EPOLL ? "19,616"
					       : k == OW_BYPASS_ADAPTIVE ? "1,703 (RPAL)" : NULL,
				       .note = note, .params = params[0] ? params : NULL };
		bench_row(c, &r);
	}
}

/* Half the median of n round trips: the one-way figure on one clock. */
static double median_half(const uint64_t *v, size_t n)
{
	uint64_t *tmp = malloc(n * sizeof(uint64_t));
	if (!tmp || !n) {
		free(tmp);
		return NAN;
	}
	memcpy(tmp, v, n * sizeof(uint64_t));
	struct bench_summary s;
	bench_summarize(tmp, n, &s);
	free(tmp);
	return s.median / 2;
}

static int bench_oneway(struct bench_ctx *c)
{
	uint64_t total = bench_count(c, "messages", 1000000, 40000);
	int rounds = bench_rounds(c);
	size_t per = (size_t)(total / (uint64_t)rounds);
	if (per < 10)
		per = 10;
	uint64_t gap_us = strtoull(bench_param(c, "gap_us", "100"), NULL, 10);
	/* Spaced messages take the gap each: fewer of them. */
	size_t per_sp = per / 10 < 10 ? 10 : per / 10;
	size_t lim_per = (bench_smoke(c) ? 1000 : 200000) / (size_t)rounds;
	struct ow_srv *sh = bench_shared_alloc(sizeof(*sh) + per * sizeof(uint64_t));
	struct ow_res res = { .sh = sh, .rtt = malloc(per * sizeof(uint64_t)) };
	uint64_t *lim = malloc(lim_per * sizeof(uint64_t));
	struct ow_acc acc[OW_ROWS];
	memset(acc, 0, sizeof(acc));
	for (int k = 0; k < OW_ROWS; k++) {
		size_t cap = (k == OW_LIMIT ? lim_per : per) * (size_t)rounds;
		acc[k].ow = malloc(cap * sizeof(double));
		acc[k].rtt = malloc(cap * sizeof(double));
	}
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	const char *iox_why = ipcb_iceoryx2_prepare(c);
	double *offs = calloc((size_t)rounds, sizeof(double));
	size_t noff = 0;
	/* The polling target's ratio, per round: the polling row's median
	 * (round trip / 2) over the limit measured right before and right after
	 * it (the limit moves with where the hypervisor puts the two vCPUs). */
	double *poll_r = calloc((size_t)rounds, sizeof(double));
	double *lim_r = calloc((size_t)rounds, sizeof(double));
	size_t lim_block = bench_smoke(c) ? 200 : 2000;
	uint64_t *lb = malloc(lim_block * sizeof(uint64_t));
	struct bench_rounds rr;
	int round;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &round)) {
		double off = 0;
		if (tsc_offset(ca, cb, bench_smoke(c) ? 200 : 20000, &off) == 0)
			offs[round] = off;
		noff = (size_t)round + 1;
		size_t order[OW_ROWS];
		bench_order(round, OW_ROWS, order);
		for (size_t oi = 0; oi < OW_ROWS; oi++) {
			enum ow_kind k = (enum ow_kind)order[oi];
			struct ow_acc *a = &acc[k];
			if (a->failed || (k == OW_ICEORYX2 && iox_why))
				continue;
			size_t n = k == OW_BYPASS_SPACED ? per_sp : per, w = n / 50;
			if (k == OW_LIMIT) {
				n = lim_per;
				w = n / 50;
				if (bench_cacheline_rtt(ca, cb, lim, n)) {
					a->failed = true;
					bench_fail(c, "the cache-line limit failed to run");
					continue;
				}
				a->have = (size_t)round * (n - w); /* a rerun overwrites */
				for (size_t i = w; i < n; i++) {
					a->ow[a->have] = a->rtt[a->have] = (double)lim[i] / 2;
					a->have++;
				}
				continue;
			}
			res.gap_ns = k == OW_BYPASS_SPACED ? gap_us * 1000 : 0;
			res.cpu_cli = 0;
			sh->cpu_ns = 0;
			uint64_t icl = 0, isv = 0;
			double lim_before = NAN;
			if (k == OW_BYPASS_SPIN && !bench_cacheline_rtt(ca, cb, lb, lim_block))
				lim_before = median_half(lb, lim_block);
			int r = k <= OW_PIPE ? ow_fd_run(c, k, &res, n)
				: k == OW_ICEORYX2 ? ipcb_iceoryx2_run(c, n, sh->ow, res.rtt, &icl, &isv)
				: ow_bypass_run(c, k, &res, n);
			if (!r && k == OW_BYPASS_SPIN) {
				double lim_after = NAN;
				if (!bench_cacheline_rtt(ca, cb, lb, lim_block))
					lim_after = median_half(lb, lim_block);
				lim_r[round] = (lim_before + lim_after) / 2;
				poll_r[round] = median_half(res.rtt + w, n - w);
			}
			if (!r && k == OW_BYPASS_ADAPTIVE && bench_planted(c, "ipc.oneway"))
				r = -1; /* tests/ipc/bench-plant.sh */
			if (r) {
				a->failed = true;
				bench_fail(c, "%s failed to run", ow_info[k].label);
				continue;
			}
			a->have = (size_t)round * (n - w); /* a rerun overwrites */
			for (size_t i = w; i < n; i++) {
				a->ow[a->have] = (double)(int64_t)sh->ow[i] - off;
				a->rtt[a->have] = (double)res.rtt[i] / 2;
				a->have++;
			}
			a->msgs += n;
			a->cpu_cli += k == OW_ICEORYX2 ? icl : res.cpu_cli;
			a->cpu_srv += k == OW_ICEORYX2 ? isv : sh->cpu_ns;
		}
	}
	/* Per round: each row's median and mean one-way (offset removed), from
	 * its slice of the accumulated samples (a rerun round overwrote its
	 * own slice); a row that failed has none from then on. */
	double (*rmed)[64] = calloc(OW_ROWS, sizeof(*rmed));
	double (*rmean)[64] = calloc(OW_ROWS, sizeof(*rmean));
	int nr = rounds < 64 ? rounds : 64;
	for (int k = 0; rmed && rmean && k < OW_ROWS; k++) {
		size_t n = k == OW_LIMIT ? lim_per : k == OW_BYPASS_SPACED ? per_sp : per;
		size_t len = n - n / 50;
		for (int r = 0; r < nr; r++) {
			rmed[k][r] = rmean[k][r] = NAN;
			if (!len || acc[k].have < (size_t)(r + 1) * len)
				continue;
			double *x = malloc(len * sizeof(double));
			if (!x)
				continue;
			memcpy(x, acc[k].ow + (size_t)r * len, len * sizeof(double));
			struct bench_summary m;
			bench_summarize_d(x, len, &m);
			rmed[k][r] = m.median;
			rmean[k][r] = m.mean;
			free(x);
		}
	}
	char spaced_note[160];
	snprintf(spaced_note, sizeof(spaced_note),
		 "messages %llu us apart (spin budget 20 us): the receiver is asleep every time",
		 (unsigned long long)gap_us);
	struct bench_summary s[OW_ROWS], t[OW_ROWS];
	memset(s, 0, sizeof(s));
	memset(t, 0, sizeof(t));
	bool have_base = acc[OW_UNIX_EPOLL].have, have_lim = acc[OW_LIMIT].have;

	/* Table 1: one-way, the TSC offset removed. */
	bench_begin(c, "ipc.oneway",
		    "RPAL: one-way latency of 32-byte messages, each finding the server waiting "
		    "(server's TSC - client's stamp - the CPUs' TSC offset)",
		    ow_info[OW_UNIX_EPOLL].label);
	ow_rows(c, acc, false, spaced_note, s);
	qsort(offs, noff, sizeof(double), cmp_d);
	if (noff) {
		bench_note(c, "TSC offset of CPU %d relative to CPU %d, estimated in every round and "
			   "removed: median %.0f cycles (from %.0f to %.0f over %zu rounds)",
			   cb, ca, offs[noff / 2], offs[0], offs[noff - 1], noff);
		bench_fact(c, "ipc_tsc_offset_cycles", "%.0f", offs[noff / 2]);
	}
	bench_note(c, "%zu messages per variant in %d rounds, rows in a rotating order (first 2%% "
		   "of each run dropped as warm-up; the spaced row %zu per round); CPUs %d (client) "
		   "and %d (server)", per * (size_t)rounds, rounds, per_sp, ca, cb);
	if (total < 1000000)
		bench_note(c, "scaled down from the source's 1,000,000 messages to %llu (%.0fx fewer)",
			   (unsigned long long)total, 1e6 / (double)total);
	bench_note(c, "RPAL's figures come from a 2.3 GHz Xeon 8336C with a patched 5.15 kernel; "
		   "compare ratios, not cycles; RPAL's receiver does not spin: the spaced row is "
		   "the one in its setting");
	if (iox_why)
		bench_note(c, "iceoryx2 row skipped: %s", iox_why);
	/* the targets: per round (the rows alternate within every round),
	 * Student's t intervals over the rounds */
	struct bench_est est;
	bool per_round = rmed && rmean;
	if (acc[OW_BYPASS_ADAPTIVE].have && have_base && per_round) {
		bench_est_of(rmean[OW_BYPASS_ADAPTIVE], (size_t)nr, rounds, BENCH_CI_T, &est);
		bench_target_est(c, "adaptive mean one-way (cycles) <= RPAL's 1,703", &est, "<=",
				 1703);
		bench_est_ratio(rmed[OW_BYPASS_ADAPTIVE], rmed[OW_UNIX_EPOLL], (size_t)nr, rounds,
				BENCH_CI_T, &est);
		bench_target_est(c, "adaptive median / unix+epoll median <= 0.1 (10x faster)", &est,
				 "<=", 0.1);
	}
	if (acc[OW_BYPASS_SPACED].have && have_base && per_round) {
		bench_est_of(rmean[OW_BYPASS_SPACED], (size_t)nr, rounds, BENCH_CI_T, &est);
		bench_target_est(c, "spaced (receiver asleep, RPAL's setting) mean one-way <= "
				 "RPAL's 1,703", &est, "<=", 1703);
		bench_note(c, "spaced: median %.2fx unix+epoll's", s[OW_BYPASS_SPACED].median /
			   s[OW_UNIX_EPOLL].median);
	}
	if (acc[OW_BYPASS_SLEEP].have && have_base && per_round) {
		bench_est_ratio(rmed[OW_BYPASS_SLEEP], rmed[OW_UNIX_EPOLL], (size_t)nr, rounds,
				BENCH_CI_T, &est);
		bench_target_est(c, "sleeping median / unix+epoll median <= 1", &est, "<=", 1);
	}
	bench_note(c, "targets: per round (each row's mean, or its median over unix+epoll's "
		   "in the same round), the mean over the rounds with Student's t 95%% "
		   "interval");
	bench_end(c);

	/* Table 2: the same runs on one clock. */
	bench_same_runs(c); /* the same runs as ipc.oneway */
	bench_begin(c, "ipc.oneway.rtt",
		    "the same runs timed on the client's clock alone: round trip (message + "
		    "1-byte ack by the same transport) / 2",
		    ow_info[OW_UNIX_EPOLL].label);
	ow_rows(c, acc, true, spaced_note, t);
	bench_note(c, "no TSC offset enters these figures; the cache-line limit is half its "
		   "round trip, measured and trimmed like the rows; like with like for the "
		   "polling target");
	if (acc[OW_BYPASS_SPIN].have && have_lim) {
		/* per round, against the limit measured beside the polling row */
		double ratio_r[64], rr_r[64];
		int nrr = 0;
		for (int k = 0; k < rounds && k < 64; k++) {
			rr_r[k] = lim_r[k] > 0 && poll_r[k] > 0 ? poll_r[k] / lim_r[k] : NAN;
			if (isfinite(rr_r[k]))
				ratio_r[nrr++] = rr_r[k];
		}
		bench_est_of(rr_r, (size_t)nr, rounds, BENCH_CI_BOOT, &est);
		bench_target_est(c, "polling (round trip / 2) median / cache-line limit median <= 2 "
				 "(per round, the limit beside it)", &est, "<=", 2);
		char each[400] = "";
		for (int k = 0, o = 0; k < nrr && o < (int)sizeof(each) - 16; k++)
			o += snprintf(each + o, sizeof(each) - (size_t)o, "%s%.2f (%.0f)",
				      k ? ", " : "", ratio_r[k], lim_r[k]);
		bench_note(c, "polling per round against the limit measured right before and after "
			   "it (%zu round trips each; half the round trip in cycles in parentheses): "
			   "%s; against the pooled limit row %.2fx, %.2fx in the one-way table "
			   "(offset removed); mean %.2fx", lim_block, each,
			   t[OW_BYPASS_SPIN].median / t[OW_LIMIT].median,
			   s[OW_BYPASS_SPIN].median / s[OW_LIMIT].median,
			   t[OW_BYPASS_SPIN].mean / t[OW_LIMIT].mean);
	}
	if (acc[OW_ICEORYX2].have && acc[OW_BYPASS_SPIN].have)
		bench_note(c, "bypass polling / iceoryx2 (both spin): median %.2fx, p99 %.2fx",
			   t[OW_BYPASS_SPIN].median / t[OW_ICEORYX2].median,
			   t[OW_BYPASS_SPIN].p99 / t[OW_ICEORYX2].p99);
	bench_end(c);

	for (int k = 0; k < OW_ROWS; k++) {
		free(acc[k].ow);
		free(acc[k].rtt);
	}
	free(rmed);
	free(rmean);
	free(offs);
	free(poll_r);
	free(lim_r);
	free(lb);
	free(lim);
	free(res.rtt);
	bench_shared_free(sh, sizeof(*sh) + per * sizeof(uint64_t));
	return 0;
}

int bench_ipc(struct bench_ctx *c)
{
	if (bench_ncpus() < 2) {
		bench_skip(c, "ipc.oneway", "needs two CPUs (found %d)", bench_ncpus());
		return BENCH_SKIP;
	}
	/* A dead peer must not kill the driver. */
	signal(SIGPIPE, SIG_IGN);
	/* Other work on these CPUs moves every figure (the limit too): say how
	 * busy the machine was. */
	FILE *la = fopen("/proc/loadavg", "r");
	char l1[16], l5[16], l15[16];
	if (la && fscanf(la, "%15s %15s %15s", l1, l5, l15) == 3)
		bench_fact(c, "ipc_loadavg_at_start", "%s %s %s", l1, l5, l15);
	if (la)
		fclose(la);
	const char *only = bench_param(c, "ipc", "all");
	if (!strcmp(only, "all") || !strcmp(only, "oneway"))
		bench_oneway(c);
	if (!strcmp(only, "all") || !strcmp(only, "call"))
		ipcb_calls(c);
	if (!strcmp(only, "all") || !strcmp(only, "tput"))
		ipcb_throughput(c);
	if (!strcmp(only, "all") || !strcmp(only, "lib"))
		ipcb_lib(c);
	return 0;
}
