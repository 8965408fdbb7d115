/* SPDX-License-Identifier: MIT */
/*
 * bench/ipc: RPAL's experiment and its companions.
 *
 *   ipc.oneway      1,000,000 messages of 32 bytes (100,000 with --quick),
 *                   one-way latency from the client's rdtsc before sending
 *                   (carried in the message) to the server's rdtsc when its
 *                   handler starts; the client waits for a 1-byte ack before
 *                   the next message, so each message finds the server
 *                   waiting.  Unix socket + blocking epoll_wait (RPAL's
 *                   baseline), Unix socket busy-polling, pipe, bypass in
 *                   adaptive / sleeping / polling modes and through
 *                   bypass_ipc_epoll_wait, iceoryx2 (when cargo can build it), and
 *                   the cache-line one-way limit (half the round trip).
 *   ipc.call        round trips: bypass_ipc_call vs request/response over a
 *                   Unix socket.
 *   ipc.tput.<size> throughput of a stream of messages, 32 B to 1 MiB.
 *
 * Server and client are separate processes pinned to the two CPUs of
 * bench_cpus(); variants alternate round by round.
 */
#include "bench.h"
#include "ipc_bench.h"

#include <bypass/ipc.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

enum ow_kind { OW_UNIX_EPOLL, OW_UNIX_BUSY, OW_PIPE, OW_BYPASS_ADAPTIVE,
	       OW_BYPASS_SLEEP, OW_BYPASS_SPIN, OW_BYPASS_EPOLL, OW_KINDS };

static const struct {
	const char *label, *kind, *note;
} ow_info[OW_KINDS] = {
	{ "unix socket + epoll_wait", BENCH_BASELINE, "RPAL's baseline: the server sleeps in epoll_wait" },
	{ "unix socket, busy-poll", BENCH_BASELINE, "non-blocking recv in a loop (fair to a spinning receiver)" },
	{ "pipe, blocking read", BENCH_BASELINE, NULL },
	{ "bypass adaptive", BENCH_BYPASS, "spin 20 us, then futex" },
	{ "bypass sleeping", BENCH_BYPASS, "futex at once" },
	{ "bypass polling", BENCH_BYPASS, "spins, never sleeps" },
	{ "bypass_ipc_epoll_wait adaptive", BENCH_BYPASS, "RPAL's usage: the server's epoll loop" },
};

static int ow_mode(enum ow_kind k)
{
	return k == OW_BYPASS_SLEEP ? BYPASS_WAIT_SLEEP
	       : k == OW_BYPASS_SPIN ? BYPASS_WAIT_SPIN : BYPASS_WAIT_ADAPTIVE;
}

/* Server side of the socket and pipe variants. */
static void ow_fd_server(enum ow_kind k, int rfd, int wfd, uint64_t *out, size_t n)
{
	int ep = -1;
	if (k == OW_UNIX_EPOLL) {
		ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = rfd };
		epoll_ctl(ep, EPOLL_CTL_ADD, rfd, &ev);
	}
	for (size_t i = 0; i < n; i++) {
		struct msg32 m;
		if (ep >= 0) {
			struct epoll_event ev;
			while (epoll_wait(ep, &ev, 1, -1) != 1)
				;
		}
		if (ipcb_read(rfd, &m, sizeof(m), k == OW_UNIX_BUSY))
			_exit(1);
		out[i] = bypass_rdtscp(NULL) - m.tsc;
		if (ipcb_write(wfd, "a", 1))
			_exit(1);
	}
	_exit(0);
}

static int ow_fd_run(struct bench_ctx *c, enum ow_kind k, uint64_t *out, size_t n)
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
		ow_fd_server(k, srv_r, srv_w, out, n);
	}
	bench_pin(ca);
	close(srv_r);
	if (srv_w != srv_r)
		close(srv_w);
	int r = 0;
	for (size_t i = 0; i < n && !r; i++) {
		struct msg32 m = { .seq = i };
		m.tsc = bypass_rdtscp(NULL);
		char a;
		if (ipcb_write(cli_w, &m, sizeof(m)) ||
		    ipcb_read(cli_r, &a, 1, k == OW_UNIX_BUSY))
			r = -1;
	}
	close(cli_r);
	if (cli_w != cli_r)
		close(cli_w);
	if (ipcb_wait(pid))
		r = -1;
	return r;
}

static void ow_bypass_server(bypass_ipc_conn *conn, enum ow_kind k, uint64_t *out,
			     size_t n)
{
	int ep = -1;
	if (k == OW_BYPASS_EPOLL) {
		ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = conn };
		if (bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, conn, &ev))
			_exit(1);
	}
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
		out[i] = t1 - p->tsc;
		bypass_ipc_release(conn, &m);
		if (bypass_ipc_send(conn, "a", 1, BYPASS_FOREVER))
			_exit(1);
	}
	bypass_ipc_close(conn);
	_exit(0);
}

static int ow_bypass_run(struct bench_ctx *c, enum ow_kind k, uint64_t *out, size_t n)
{
	struct bypass_ipc_opts o = { .mode = ow_mode(k), .ring_size = 65536 };
	bypass_ipc_conn *conn;
	int r;
	pid_t pid = ipcb_pair(c, "ow", &o, &conn, &r);
	if (pid < 0)
		return -1;
	if (pid == 0)
		ow_bypass_server(conn, k, out, n);
	for (size_t i = 0; i < n && !r; i++) {
		struct msg32 m = { .seq = i };
		m.tsc = bypass_rdtscp(NULL);
		r = bypass_ipc_send(conn, &m, sizeof(m), BYPASS_FOREVER);
		struct bypass_ipc_msg a;
		if (!r)
			r = bypass_ipc_recv(conn, &a, BYPASS_FOREVER);
		if (!r)
			r = bypass_ipc_release(conn, &a);
	}
	if (conn)
		bypass_ipc_close(conn);
	if (ipcb_wait(pid))
		r = -1;
	return r;
}

static int ow_run(struct bench_ctx *c, enum ow_kind k, uint64_t *out, size_t n)
{
	if (k <= OW_PIPE)
		return ow_fd_run(c, k, out, n);
	return ow_bypass_run(c, k, out, n);
}

static void row_cycles(struct bench_ctx *c, const char *label, const char *kind,
		       uint64_t *s, size_t n, double base_mean, const char *src,
		       const char *note, struct bench_summary *sum)
{
	bench_summarize(s, n, sum);
	struct bench_row r = { .variant = label, .kind = kind, .unit = "cycles",
			       .s = *sum, .ratio = base_mean > 0 ? base_mean / sum->mean : NAN,
			       .source = src, .note = note };
	bench_row(c, &r);
}

static int bench_oneway(struct bench_ctx *c)
{
	uint64_t total = bench_count(c, "messages", 1000000, 100000);
	int rounds = bench_rounds(c);
	size_t per = (size_t)(total / (uint64_t)rounds);
	if (per < 10)
		per = 10;
	size_t warm = per / 50;
	uint64_t *shared = bench_shared_alloc(per * sizeof(uint64_t));
	uint64_t *all[OW_KINDS];
	size_t have[OW_KINDS] = { 0 };
	int failed[OW_KINDS] = { 0 };
	for (int k = 0; k < OW_KINDS; k++)
		all[k] = malloc(per * (size_t)rounds * sizeof(uint64_t));
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	/* The limit alternates with the rest: a cache line's round trips
	 * between the same two CPUs, in each round. */
	size_t lim_per = (bench_smoke(c) ? 1000 : 200000) / (size_t)rounds;
	uint64_t *lim = malloc(lim_per * (size_t)rounds * sizeof(uint64_t));
	bench_begin(c, "ipc.oneway",
		    "RPAL: one-way latency of 32-byte messages, each finding the server waiting",
		    ow_info[OW_UNIX_EPOLL].label);
	for (int round = 0; round < rounds; round++) {
		for (int k = 0; k < OW_KINDS; k++) {
			if (failed[k])
				continue;
			if (ow_run(c, (enum ow_kind)k, shared, per)) {
				failed[k] = 1;
				bench_note(c, "%s failed to run", ow_info[k].label);
				continue;
			}
			memcpy(all[k] + have[k], shared + warm, (per - warm) * sizeof(uint64_t));
			have[k] += per - warm;
		}
		bench_cacheline_rtt(ca, cb, lim + (size_t)round * lim_per, lim_per);
	}
	/* One way is half a round trip. */
	struct bench_summary ls;
	bench_summarize(lim, lim_per * (size_t)rounds, &ls);
	free(lim);
	ls.median /= 2;
	ls.mean /= 2;
	ls.p99 /= 2;
	ls.min /= 2;
	ls.max /= 2;
	double limit = ls.median;
	struct bench_summary s[OW_KINDS];
	double base = NAN;
	for (int k = 0; k < OW_KINDS; k++) {
		if (!have[k])
			continue;
		if (k == OW_UNIX_EPOLL) {
			bench_summarize(all[k], have[k], &s[k]);
			base = s[k].mean;
		}
		row_cycles(c, ow_info[k].label, ow_info[k].kind, all[k], have[k], base,
			   k == OW_UNIX_EPOLL ? "19,616" : k == OW_BYPASS_ADAPTIVE ? "1,703 (RPAL)" : NULL,
			   ow_info[k].note, &s[k]);
	}
	struct bench_row lr = { .variant = "cache-line one-way limit", .kind = BENCH_LIMIT,
				.unit = "cycles", .s = ls, .ratio = base / ls.mean,
				.note = "half a cache line's round trip between the two CPUs, each round" };
	bench_row(c, &lr);
	struct bench_summary is;
	const char *why = ipcb_iceoryx2(c, total, &is);
	if (!why) {
		struct bench_row ir = { .variant = "iceoryx2 pub-sub, polling", .kind = BENCH_PEER,
					.unit = "cycles", .s = is, .ratio = base / is.mean,
					.note = "the practical peer: two services, both sides spin" };
		bench_row(c, &ir);
	} else {
		bench_note(c, "iceoryx2 row skipped: %s", why);
	}
	bench_note(c, "%zu messages per variant in %d alternating rounds (first %zu of each round "
		   "dropped as warm-up); CPUs %d (client) and %d (server)",
		   (size_t)rounds * per, rounds, warm, ca, cb);
	if (total < 1000000)
		bench_note(c, "scaled down from the source's 1,000,000 messages to %llu (%.0fx fewer)",
			   (unsigned long long)total, 1e6 / (double)total);
	bench_note(c, "RPAL's figures come from a 2.3 GHz Xeon 8336C with a patched 5.15 kernel; "
		   "compare ratios, not cycles");
	if (have[OW_BYPASS_ADAPTIVE] && have[OW_UNIX_EPOLL]) {
		bench_target(c, "adaptive mean one-way (cycles) <= RPAL's 1,703",
			     s[OW_BYPASS_ADAPTIVE].mean, "<=", 1703);
		bench_target(c, "adaptive vs unix+epoll (mean ratio) >= 10x",
			     base / s[OW_BYPASS_ADAPTIVE].mean, ">=", 10);
	}
	if (have[OW_BYPASS_SPIN]) {
		/* The limit is a median (of the cache-line round trip): compare
		 * like with like; the mean is in the table. */
		bench_target(c, "polling median / cache-line one-way limit (a median) <= 2",
			     s[OW_BYPASS_SPIN].median / limit, "<=", 2);
		bench_note(c, "polling: median %.2fx, mean %.2fx the cache-line one-way limit",
			   s[OW_BYPASS_SPIN].median / limit, s[OW_BYPASS_SPIN].mean / limit);
	}
	if (have[OW_BYPASS_SLEEP] && have[OW_UNIX_EPOLL])
		bench_target(c, "sleeping vs unix+epoll (mean ratio) >= 1",
			     base / s[OW_BYPASS_SLEEP].mean, ">=", 1);
	bench_end(c);
	for (int k = 0; k < OW_KINDS; k++)
		free(all[k]);
	bench_shared_free(shared, per * sizeof(uint64_t));
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
	const char *only = bench_param(c, "ipc", "all");
	if (!strcmp(only, "all") || !strcmp(only, "oneway"))
		bench_oneway(c);
	if (!strcmp(only, "all") || !strcmp(only, "call"))
		ipcb_calls(c);
	if (!strcmp(only, "all") || !strcmp(only, "tput"))
		ipcb_throughput(c);
	return 0;
}
