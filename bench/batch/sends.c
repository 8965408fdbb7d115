/* SPDX-License-Identifier: MIT */
/*
 * batch.sends: what one small socket send costs when it enters the kernel
 * by itself, and when it is batched in segments of 8, 32 and 256: through a
 * raw liburing loop (the floor for io_uring), through bypass's explicit API,
 * and through the preload's path (arguments copied, per-descriptor
 * bookkeeping).  The null system call is the limit batching removes.
 */
#include "bench.h"
#include "batch_bench.h"

#include <bypass/batch.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "batch/defer.h"

#define MSG 64
#define BLOCK 1024 /* sends per sample */

static const unsigned segs[] = { 8, 32, 256 };
#define NSEG 3

enum { V_NULL, V_SEND, V_URING, V_API = V_URING + NSEG, V_PRELOAD = V_API + NSEG,
       V_FIXED = V_PRELOAD + NSEG, NV };

struct sender {
	int sv[2];
	struct io_uring ring;
	char msg[MSG];
	char *sink;
};

static void drain(struct sender *s, size_t bytes)
{
	while (bytes) {
		ssize_t n = read(s->sv[1], s->sink, bytes < (1u << 20) ? bytes : (1u << 20));
		if (n <= 0)
			abort();
		bytes -= (size_t)n;
	}
}

/* One sample: BLOCK sends of variant v; cycles per send. */
static uint64_t sample(struct sender *s, int v)
{
	int fd = s->sv[0];
	uint64_t t0 = bypass_rdtscp(NULL);
	if (v == V_NULL) {
		for (int i = 0; i < BLOCK; i++)
			syscall(SYS_getppid);
	} else if (v == V_SEND) {
		for (int i = 0; i < BLOCK; i++)
			if (send(fd, s->msg, MSG, 0) != MSG)
				abort();
	} else if (v >= V_URING && v < V_URING + NSEG) {
		unsigned b = segs[v - V_URING];
		for (int i = 0; i < BLOCK; i += (int)b) {
			for (unsigned j = 0; j < b; j++) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
				io_uring_prep_send(sqe, fd, s->msg, MSG, 0);
			}
			io_uring_submit(&s->ring);
			struct io_uring_cqe *cqe;
			unsigned head, n = 0;
			io_uring_for_each_cqe(&s->ring, head, cqe)
			{
				if (cqe->res != MSG)
					abort();
				n++;
			}
			io_uring_cq_advance(&s->ring, n);
		}
	} else if ((v >= V_API && v < V_API + NSEG) || v == V_FIXED) {
		unsigned b = v == V_FIXED ? 32 : segs[v - V_API];
		static ssize_t res[256];
		for (int i = 0; i < BLOCK; i += (int)b) {
			bypass_batch_start();
			for (unsigned j = 0; j < b; j++)
				bypass_batch_send(fd, s->msg, MSG, 0, &res[j]);
			if (bypass_batch_flush() != (int)b)
				abort();
		}
	} else {
		/* The preload's path without the dlsym'd wrapper around it. */
		unsigned b = segs[v - V_PRELOAD];
		struct iovec iov = { s->msg, MSG };
		for (int i = 0; i < BLOCK; i += (int)b) {
			bt_segment_begin();
			for (unsigned j = 0; j < b; j++)
				if (bt_tx_data(fd, &iov, 1, 0, NULL) != MSG)
					abort();
			bt_segment_end();
		}
	}
	uint64_t dt = bypass_rdtscp(NULL) - t0;
	if (v != V_NULL)
		drain(s, (size_t)BLOCK * MSG);
	return (dt + BLOCK / 2) / BLOCK;
}

static const char *vname(int v, char *buf, size_t len)
{
	if (v == V_NULL)
		return "null system call (getppid)";
	if (v == V_SEND)
		return "send(), one system call each";
	if (v == V_FIXED) {
		snprintf(buf, len, "bypass API, segments of 32, registered fd");
		return buf;
	}
	const char *what = v < V_API ? "raw liburing loop" : v < V_PRELOAD ? "bypass API"
									  : "bypass preload path";
	int k = v < V_API ? v - V_URING : v < V_PRELOAD ? v - V_API : v - V_PRELOAD;
	snprintf(buf, len, "%s, segments of %u", what, segs[k]);
	return buf;
}

int bench_batch_sends(struct bench_ctx *c)
{
	bench_begin(c, "batch.sends",
		    "cost of one 64-byte send on a Unix stream socket, per call",
		    "send(), one system call each");
	struct sender s;
	memset(&s, 0, sizeof(s));
	memset(s.msg, 'x', MSG);
	s.sink = malloc(1 << 20);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s.sv)) {
		bench_skip(c, "batch.sends", "socketpair failed");
		return BENCH_SKIP;
	}
	int big = 8 << 20;
	if (setsockopt(s.sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)))
		setsockopt(s.sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	int r = io_uring_queue_init(512, &s.ring, 0);
	if (r || (r = bypass_batch_start()) != 0) {
		bench_skip(c, "batch.sends", "io_uring unavailable: %s", strerror(-r));
		return BENCH_SKIP;
	}
	bypass_batch_flush();
	int cpu_a, cpu_b;
	bench_cpus(c, &cpu_a, &cpu_b);
	cpu_set_t old;
	pthread_getaffinity_np(pthread_self(), sizeof(old), &old);
	bench_pin(cpu_a);

	uint64_t per_round = bench_count(c, "send_samples", 2000, 300);
	int rounds = bench_rounds(c);
	size_t n = per_round * (size_t)rounds;
	uint64_t *smp[NV];
	for (int v = 0; v < NV; v++)
		smp[v] = malloc(sizeof(uint64_t) * n);
	/* Warm up every path (rings, thread state, caches). */
	for (int v = 0; v < NV; v++) {
		if (v == V_FIXED)
			bypass_batch_register_fd(s.sv[0]);
		for (int i = 0; i < 20; i++)
			sample(&s, v);
		if (v == V_FIXED)
			bypass_batch_unregister_fd(s.sv[0]);
	}
	for (int rd = 0; rd < rounds; rd++)
		for (int v = 0; v < NV; v++) {
			if (v == V_FIXED)
				bypass_batch_register_fd(s.sv[0]);
			for (uint64_t i = 0; i < per_round; i++)
				smp[v][(size_t)rd * per_round + i] = sample(&s, v);
			if (v == V_FIXED)
				bypass_batch_unregister_fd(s.sv[0]);
		}
	struct bench_summary sum[NV];
	for (int v = 0; v < NV; v++)
		bench_summarize(smp[v], n, &sum[v]);
	double base = sum[V_SEND].median, nul = sum[V_NULL].median;
	for (int v = 0; v < NV; v++) {
		char name[96], note[160] = "";
		const char *kind = v == V_NULL ? BENCH_LIMIT
				   : v == V_SEND || (v >= V_URING && v < V_API) ? BENCH_BASELINE
										: BENCH_BYPASS;
		if (v == V_SEND)
			snprintf(note, sizeof(note), "%.0f cycles above the null call",
				 sum[v].median - nul);
		else if (v >= V_API && v < V_API + NSEG)
			snprintf(note, sizeof(note), "%.2fx the raw liburing loop",
				 sum[v].median / sum[V_URING + (v - V_API)].median);
		else if (v >= V_PRELOAD && v < V_PRELOAD + NSEG)
			snprintf(note, sizeof(note), "copies the 64 bytes; %.2fx raw liburing",
				 sum[v].median / sum[V_URING + (v - V_PRELOAD)].median);
		struct bench_row row = {
			.variant = vname(v, name, sizeof(name)), .kind = kind, .unit = "cycles",
			.s = sum[v], .higher_is_better = false, .ratio = sum[v].median / base,
			.source = v == V_SEND ? "ESCA: -62% per call" : NULL,
			.note = note[0] ? note : NULL,
		};
		bench_row(c, &row);
	}
	double api32 = sum[V_API + 1].median / sum[V_URING + 1].median;
	double best = sum[V_API + 2].median < sum[V_URING + 2].median ? sum[V_API + 2].median
								       : sum[V_URING + 2].median;
	bench_note(c, "per call, sample = mean over %d sends, %zu samples per row, "
		   "rounds alternate every row (A B A B ...)", BLOCK, n);
	bench_note(c, "the kernel's share a batch can remove is at most one null "
		   "system call (%.0f cycles) per send; send() costs %.0f above it",
		   nul, base - nul);
	bench_note(c, "saving over send() at 256 per segment: %.0f%% (ESCA reported -62%% of the "
		   "per-call overhead with its kernel module)",
		   100.0 * (base - best) / base);
	bench_target(c, "bypass API per send in segments of 32 / raw liburing loop", api32,
		     "<=", 1.1);
	bench_end(c);
	for (int v = 0; v < NV; v++)
		free(smp[v]);
	/* Unpin: the servers started next must not inherit it. */
	pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	io_uring_queue_exit(&s.ring);
	close(s.sv[0]);
	close(s.sv[1]);
	free(s.sink);
	return 0;
}
