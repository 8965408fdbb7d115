/* SPDX-License-Identifier: MIT */
/*
 * ipc.call: round trips of a 32-byte request and a 32-byte response,
 * bypass_ipc_call against write+read over a Unix socket (blocking, and
 * busy-polling).  ipc.tput.<size>: a stream of messages from client to
 * server, bypass_ipc_send (one copy; read in place) against write/read on a
 * Unix stream socket (two copies), and the memory-bandwidth limit: memcpy
 * of the message size through a buffer the size of bypass's ring, in the
 * same rounds.  Rows run in a rotating order in every round.
 */
#include "ipc_bench.h"

#include <bypass/ipc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* ------------------------------------------------------------------ calls */

enum { CALL_UNIX, CALL_UNIX_BUSY, CALL_ADAPTIVE, CALL_SLEEP, CALL_SPIN, CALL_KINDS };
static const char *call_label[CALL_KINDS] = {
	"unix socket request/response", "unix socket, busy-poll",
	"bypass_ipc_call adaptive", "bypass_ipc_call sleeping", "bypass_ipc_call polling",
};

/*
 * Every call's request is distinct (its number in the first 8 bytes) and
 * the server's handler answers it with the request itself, 32 bytes: the
 * client checks each reply's length and content after the timed span, so a
 * reply lost, duplicated, reordered, cut short or garbled by the transport
 * is a failure (call_err says which), not a figure.
 */
static char call_err[160];

static bool call_wrong(size_t i, const void *a, size_t alen, const char *q)
{
	if (alen == 32 && !memcmp(a, q, 32))
		return false;
	uint64_t got = 0;
	if (alen >= 8)
		memcpy(&got, a, 8);
	snprintf(call_err, sizeof(call_err),
		 "call %zu: the reply is %zu bytes%s (it carries the number %llu), want its 32-byte request",
		 i, alen, alen == 32 ? ", wrong content" : "", (unsigned long long)got);
	return true;
}

static int call_unix(struct bench_ctx *c, bool busy, uint64_t *out, size_t n)
{
	int ca, cb, sv[2];
	bench_cpus(c, &ca, &cb);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		bench_pin(cb);
		close(sv[0]);
		char b[32];
		for (size_t i = 0; i < n; i++)
			if (ipcb_read(sv[1], b, 32, busy) || ipcb_write(sv[1], b, 32))
				_exit(1);
		_exit(0);
	}
	close(sv[1]);
	bench_pin(ca);
	int r = 0;
	char q[32] = "........request", a[32];
	for (size_t i = 0; i < n && !r; i++) {
		uint64_t k = i;
		memcpy(q, &k, 8);
		uint64_t t0 = bypass_rdtscp(NULL);
		r = ipcb_write(sv[0], q, 32) || ipcb_read(sv[0], a, 32, busy) ? -1 : 0;
		out[i] = bypass_rdtscp(NULL) - t0;
		if (!r && call_wrong(i, a, 32, q))
			r = -2;
	}
	close(sv[0]);
	return ipcb_wait(pid) ? -1 : r;
}

/* plant (--param plant=ipc.call): the server's handler garbles the last
 * reply's first byte, which the client's check of the content must catch
 * (tests/ipc/bench-plant.sh). */
static int call_bypass(struct bench_ctx *c, int mode, uint64_t *out, size_t n, bool plant)
{
	struct bypass_ipc_opts o = { .mode = mode, .ring_size = 65536 };
	bypass_ipc_conn *conn;
	int r;
	pid_t pid = ipcb_pair(c, "call", &o, &conn, &r);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		for (size_t i = 0; i < n; i++) {
			struct bypass_ipc_msg m;
			char b[32];
			const void *ans;
			if (bypass_ipc_recv(conn, &m, BYPASS_FOREVER) || m.len != 32)
				_exit(1);
			ans = m.data; /* in place, as before */
			if (plant && i + 1 == n) {
				memcpy(b, m.data, 32);
				b[0] ^= 1;
				ans = b;
			}
			if (bypass_ipc_reply(conn, &m, ans, 32, BYPASS_FOREVER))
				_exit(1);
			bypass_ipc_release(conn, &m);
		}
		bypass_ipc_close(conn);
		_exit(0);
	}
	char q[32] = "........request";
	for (size_t i = 0; i < n && !r; i++) {
		struct bypass_ipc_msg a;
		uint64_t k = i;
		memcpy(q, &k, 8);
		uint64_t t0 = bypass_rdtscp(NULL);
		r = bypass_ipc_call(conn, q, 32, &a, BYPASS_FOREVER);
		out[i] = bypass_rdtscp(NULL) - t0;
		if (!r) {
			bool wrong = call_wrong(i, a.data, a.len, q);
			r = bypass_ipc_release(conn, &a);
			if (wrong)
				r = -2;
		}
	}
	if (conn)
		bypass_ipc_close(conn);
	/* a wrong reply first: the server may then have exited on its own */
	int w = ipcb_wait(pid);
	return r == -2 ? -2 : w ? -1 : r;
}

int ipcb_calls(struct bench_ctx *c)
{
	uint64_t total = bench_count(c, "calls", 200000, 20000);
	int rounds = bench_rounds(c);
	size_t per = (size_t)(total / (uint64_t)rounds), warm = per / 50;
	if (per < 10)
		per = 10;
	uint64_t *buf = malloc(per * sizeof(uint64_t));
	uint64_t *all[CALL_KINDS];
	size_t have[CALL_KINDS] = { 0 };
	for (int k = 0; k < CALL_KINDS; k++)
		all[k] = malloc(per * (size_t)rounds * sizeof(uint64_t));
	bench_begin(c, "ipc.call", "round trip of a 32-byte request and response",
		    call_label[CALL_UNIX]);
	bool failed[CALL_KINDS] = { false };
	struct bench_rounds rr;
	int round;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &round)) {
		size_t order[CALL_KINDS];
		bench_order(round, CALL_KINDS, order);
		for (size_t oi = 0; oi < CALL_KINDS; oi++) {
			int k = (int)order[oi];
			if (failed[k])
				continue;
			int r = k == CALL_UNIX ? call_unix(c, false, buf, per)
				: k == CALL_UNIX_BUSY ? call_unix(c, true, buf, per)
				: call_bypass(c, k == CALL_SLEEP ? BYPASS_WAIT_SLEEP
					      : k == CALL_SPIN ? BYPASS_WAIT_SPIN
					      : BYPASS_WAIT_ADAPTIVE, buf, per,
					      bench_planted(c, "ipc.call"));
			if (r) {
				failed[k] = true;
				if (r == -2)
					bench_fail(c, "%s: %s", call_label[k], call_err);
				else
					bench_fail(c, "%s failed to run", call_label[k]);
				continue;
			}
			/* at round's place: a rerun overwrites it */
			memcpy(all[k] + (size_t)round * (per - warm), buf + warm,
			       (per - warm) * sizeof(uint64_t));
			have[k] = ((size_t)round + 1) * (per - warm);
		}
	}
	for (int k = 0; k < CALL_KINDS; k++) {
		if (!have[k])
			continue;
		struct bench_summary s;
		bench_summarize(all[k], have[k], &s);
		struct bench_row row = { .variant = call_label[k],
					 .kind = k <= CALL_UNIX_BUSY ? BENCH_BASELINE : BENCH_BYPASS,
					 .unit = "cycles", .s = s, .is_base = k == CALL_UNIX };
		bench_row(c, &row);
	}
	bench_note(c, "%zu calls per variant in %d rounds, rows in a rotating order; the server "
		   "answers in its own thread (bypass_ipc_recv + bypass_ipc_reply)",
		   per * (size_t)rounds, rounds);
	bench_end(c);
	for (int k = 0; k < CALL_KINDS; k++)
		free(all[k]);
	free(buf);
	return 0;
}

/* ------------------------------------------------------------- throughput */

/*
 * A message buffer of len bytes at page offset 16 (a malloc'd buffer's
 * offset when malloc maps it: the memcpy limit's source), mapped here, not
 * malloc'd: a heap buffer's address is whatever the bench's earlier tables
 * left (it is the same in every round of a run and differs between runs),
 * and where a source sits relative to its destination changes a copy's
 * speed on this CPU (see tput_memcpy).  Its contents 0x5a; NULL if it
 * cannot be mapped.  tput_buf_free(p, len) unmaps it.
 */
static char *tput_buf(size_t len)
{
	char *m = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	memset(m + 16, 0x5a, len);
	return m + 16;
}

static void tput_buf_free(char *p, size_t len)
{
	if (p)
		munmap(p - 16, len + 4096);
}

/* Send n messages of len bytes; returns the seconds from the first send to
 * the server's last receive (measured by the client after a final ack). */
static double tput_unix(struct bench_ctx *c, size_t len, size_t n)
{
	int ca, cb, sv[2];
	bench_cpus(c, &ca, &cb);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		bench_pin(cb);
		close(sv[0]);
		char *b = tput_buf(len);
		for (size_t i = 0; i < n; i++)
			if (!b || ipcb_read(sv[1], b, len, false))
				_exit(1);
		_exit(ipcb_write(sv[1], "k", 1) ? 1 : 0);
	}
	close(sv[1]);
	bench_pin(ca);
	char *b = tput_buf(len);
	uint64_t t0 = bypass_now_ns();
	int r = b ? 0 : -1;
	for (size_t i = 0; i < n && !r; i++)
		r = ipcb_write(sv[0], b, len);
	char k;
	if (!r)
		r = ipcb_read(sv[0], &k, 1, false);
	uint64_t t1 = bypass_now_ns();
	close(sv[0]);
	tput_buf_free(b, len);
	if (ipcb_wait(pid) || r)
		return -1;
	return (double)(t1 - t0) / 1e9;
}

static size_t tput_ring(size_t len);

/* plant (--param plant=ipc.tput.<size>): the last message is one byte short,
 * which the server's check of each message's length must catch
 * (tests/ipc/bench-plant.sh). */
static double tput_bypass(struct bench_ctx *c, size_t len, size_t n, bool touch, bool plant)
{
	size_t ring = tput_ring(len);
	struct bypass_ipc_opts o = { .ring_size = ring, .max_msg = len };
	bypass_ipc_conn *conn;
	int r;
	pid_t pid = ipcb_pair(c, "tput", &o, &conn, &r);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		for (size_t i = 0; i < n; i++) {
			struct bypass_ipc_msg m;
			if (bypass_ipc_recv(conn, &m, BYPASS_FOREVER) || m.len != len)
				_exit(1);
			if (touch) { /* consume the payload: read every byte */
				const uint64_t *w = m.data;
				uint64_t sum = 0;
				for (size_t k = 0; k < len / 8; k++)
					sum += w[k];
				__asm__ __volatile__("" : : "r"(sum));
			}
			bypass_ipc_release(conn, &m);
		}
		int e = bypass_ipc_send(conn, "k", 1, BYPASS_FOREVER);
		struct bypass_ipc_msg m;
		bypass_ipc_recv(conn, &m, BYPASS_FOREVER); /* until the client closes */
		bypass_ipc_close(conn);
		_exit(e ? 1 : 0);
	}
	char *b = tput_buf(len);
	if (!b && !r)
		r = -1;
	uint64_t t0 = bypass_now_ns();
	for (size_t i = 0; i < n && !r; i++)
		r = bypass_ipc_send(conn, b, plant && i + 1 == n ? len - 1 : len, BYPASS_FOREVER);
	struct bypass_ipc_msg a;
	if (!r)
		r = bypass_ipc_recv(conn, &a, BYPASS_FOREVER);
	uint64_t t1 = bypass_now_ns();
	if (!r)
		bypass_ipc_release(conn, &a);
	if (conn)
		bypass_ipc_close(conn);
	tput_buf_free(b, len);
	if (ipcb_wait(pid) || r)
		return -1;
	return (double)(t1 - t0) / 1e9;
}

/* The ring bypass uses for messages of len bytes. */
static size_t tput_ring(size_t len)
{
	size_t ring = 65536;
	while (ring / 2 - 128 < len || ring < 4 * len)
		ring *= 2;
	return ring;
}

/*
 * The memory-bandwidth limit of moving n messages of len bytes: memcpy of
 * the message size into a buffer the size of bypass's ring, at the next
 * record's payload each time (bypass's layout: 64-byte aligned records
 * with a 16-byte header), from a source at the same page offset as a
 * malloc'd buffer's, pinned to the client's CPU.  Both buffers are mapped
 * here, not malloc'd: where the heap puts them relative to each other
 * changes memcpy's speed on this CPU tenfold (some distances between
 * source and destination make `rep movsb` crawl), and a limit must not
 * depend on it.  Seconds, or -1.
 */
static double tput_memcpy(struct bench_ctx *c, size_t len, size_t n)
{
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	bench_pin(ca);
	size_t ring = tput_ring(len), stride = (16 + len + 63) & ~(size_t)63;
	char *src = tput_buf(len);
	char *dm = mmap(NULL, ring, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double r = -1;
	if (src && dm != MAP_FAILED) {
		memset(dm, 0, ring);
		size_t slots = ring / stride;
		uint64_t t0 = bypass_now_ns();
		for (size_t i = 0; i < n; i++) {
			memcpy(dm + (i % slots) * stride + 16, src, len);
			__asm__ __volatile__("" : : "r"(dm) : "memory");
		}
		r = (double)(bypass_now_ns() - t0) / 1e9;
	}
	tput_buf_free(src, len);
	if (dm != MAP_FAILED)
		munmap(dm, ring);
	return r;
}

enum { TP_UNIX, TP_BYPASS, TP_BYPASS_READ, TP_MEMCPY, TP_KINDS };

int ipcb_throughput(struct bench_ctx *c)
{
	static const size_t sizes[] = { 32, 1024, 65536, 1048576 };
	static const struct {
		const char *label, *kind, *note;
	} info[TP_KINDS] = {
		{ "unix socket", BENCH_BASELINE, "write/read: two copies; read() copies every byte out" },
		{ "bypass_ipc_send", BENCH_BYPASS, "one copy in; the server never reads the payload" },
		{ "bypass_ipc_send, reader sums it", BENCH_BYPASS,
		  "one copy in; the server reads every byte in place" },
		{ "memcpy of the message size", BENCH_LIMIT,
		  "memory bandwidth: one copy into a ring-sized buffer, bypass's layout, one CPU" },
	};
	uint64_t bytes = bench_count(c, "tput_bytes", 4ull << 30, 512ull << 20);
	int rounds = bench_rounds(c);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t len = sizes[si];
		/* quick: messages from 1 KiB up move 4x the bytes (2 GiB over
		 * the rounds, half the full suite's 4), so that a table lasts the
		 * 0.4 s its quiet record needs to be judged and the fastest
		 * row's run lasts tens of ms, not 9 (1 KiB at 11.6 GB/s at
		 * 74d9abd): the pair's start (fork, the server's CPU waking,
		 * the ring's first faults) weighs 4x less in it */
		uint64_t b = bench_quick(c) && !bench_smoke(c) && len >= 1024 &&
				     !bench_param(c, "tput_bytes", NULL) ? 4 * bytes : bytes;
		size_t n = (size_t)(b / len / (uint64_t)rounds);
		/* small messages: bounded by count, not bytes (the quick suite's
		 * 32-byte rows: 500000 a round, issue 24's 300 s budget) */
		size_t cap = bench_quick(c) ? 500000 : 2000000;
		if (n > cap)
			n = cap;
		if (n < 4)
			n = 4;
		char id[64], title[96];
		snprintf(id, sizeof(id), "ipc.tput.%zu", len);
		snprintf(title, sizeof(title), "throughput of %zu-byte messages, client to server", len);
		bench_begin(c, id, title, info[TP_UNIX].label);
		double v[TP_KINDS][64];
		int nv[TP_KINDS] = { 0 };
		bool failed[TP_KINDS] = { false };
		struct bench_rounds rounds_tp;
		int round;
		bench_rounds_init(c, &rounds_tp, rounds < 64 ? rounds : 64, 0);
		while (bench_round(c, &rounds_tp, &round)) {
			size_t order[TP_KINDS];
			bench_order(round, TP_KINDS, order);
			for (size_t oi = 0; oi < TP_KINDS; oi++) {
				int k = (int)order[oi];
				if (failed[k])
					continue;
				double t = k == TP_UNIX ? tput_unix(c, len, n)
					   : k == TP_MEMCPY ? tput_memcpy(c, len, n)
					   : tput_bypass(c, len, n, k == TP_BYPASS_READ,
						       bench_planted(c, id));
				if (t <= 0) {
					failed[k] = true;
					bench_fail(c, "%s failed to run", info[k].label);
					continue;
				}
				v[k][round] = (double)len * (double)n / t / 1e6;
				nv[k] = round + 1;
			}
		}
		/* the target: the per-round rate ratio (before the summaries sort
		 * the rounds' figures) */
		struct bench_est est;
		int nr = rounds < 64 ? rounds : 64;
		int both = nv[TP_UNIX] < nv[TP_BYPASS_READ] ? nv[TP_UNIX] : nv[TP_BYPASS_READ];
		bench_est_ratio(v[TP_BYPASS_READ], v[TP_UNIX], (size_t)both, nr, BENCH_CI_T, &est);
		struct bench_summary s[TP_KINDS];
		for (int k = 0; k < TP_KINDS; k++) {
			if (!nv[k])
				continue;
			double tmp[64];
			memcpy(tmp, v[k], (size_t)nv[k] * sizeof(double));
			bench_summarize_d(tmp, (size_t)nv[k], &s[k]);
			struct bench_row r = { .variant = info[k].label, .kind = info[k].kind,
					       .unit = "MB/s", .s = s[k], .higher_is_better = true,
					       .is_base = k == TP_UNIX, .note = info[k].note };
			bench_row(c, &r);
		}
		bench_note(c, "%zu messages per round, %d rounds, rows in a rotating order; each "
			   "round's figure is one run's rate; every message buffer outside the "
			   "ring (the sender's, the socket reader's, the limit's source) mapped "
			   "at page offset 16, not taken from the heap", n, rounds);
		if (nv[TP_UNIX] && nv[TP_BYPASS_READ]) {
			double rr = s[TP_BYPASS_READ].median / s[TP_UNIX].median;
			if (len == 1048576) {
				bench_target_est(c, "1 MiB throughput, the reader reading every byte, "
						 "vs unix socket >= 5x", &est, ">=", 5);
				bench_note(c, "target: the mean over rounds of the per-round rate ratio, "
					   "Student's t 95%% interval (median ratio %.2f)", rr);
			}
			if (nv[TP_MEMCPY])
				bench_note(c, "the reading row moves %.0f%% of the memcpy limit's rate "
					   "(unix socket %.0f%%)",
					   100 * s[TP_BYPASS_READ].median / s[TP_MEMCPY].median,
					   100 * s[TP_UNIX].median / s[TP_MEMCPY].median);
		}
		bench_end(c);
	}
	return 0;
}
