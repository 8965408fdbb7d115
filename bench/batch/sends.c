/* SPDX-License-Identifier: MIT */
/*
 * batch.sends: what one small socket send costs when it enters the kernel
 * by itself, and when it is batched in segments of 8, 32 and 256: through a
 * raw liburing loop (the floor for io_uring), through bypass's explicit API,
 * and through the preload's path (arguments copied, per-descriptor
 * bookkeeping).  The null system call is the limit batching removes.
 *
 * As in an event-driven server, the sends of a segment go to different
 * connections (256 socket pairs, in turn).  Two more rows send a whole
 * segment of 32 on one socket: bypass keeps their order by linking them
 * (io_uring runs each linked request from task work), a raw loop that does
 * not link them is faster and may reorder them when the socket fills.
 */
#include "bench.h"
#include "batch_bench.h"

#include <bypass/batch.h>
#include <liburing.h>
#include <pthread.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "batch/defer.h"

#define MSG 64
#define BLOCK 1024 /* sends per sample */
#define NSOCK 256  /* connections the sends go to, in turn */

static const unsigned segs[] = { 8, 32, 256 };
#define NSEG 3

enum { V_NULL, V_SEND, V_URING, V_API = V_URING + NSEG, V_PRELOAD = V_API + NSEG,
       V_ONE_URING = V_PRELOAD + NSEG, V_ONE_LINKED, V_ONE_API, V_ONE_FIXED, V_SQPOLL,
       V_LOOP_SPLIT, V_LOOP_MERGED, V_LOOP_PL_SPLIT, V_LOOP_PL_MERGED, V_DEFER, NV };
#define LOOP_SEG 32 /* sends per event-loop iteration in the V_LOOP_* rows */

struct sender {
	int tx[NSOCK], rx[NSOCK];
	struct io_uring dring; /* SINGLE_ISSUER | DEFER_TASKRUN (V_DEFER) */
	bool defer_ok;
	int ep;       /* an epoll set with an always-ready eventfd (V_LOOP_*) */
	bool merged_ok; /* the kernel has IORING_OP_EPOLL_WAIT */
	struct io_uring ring;
	char msg[MSG];
	char *sink;
	int api_len; /* MSG; MSG - 1 when planted (a short send) */
	char err[200]; /* the first wrong result of a sample ("" if none) */
};

/* A wrong result: kept (the first one) and reported by the experiment as a
 * failure after the sample; the sample goes on, as before at the same cost. */
#define fault(s, ...) bench_first_error((s)->err, sizeof((s)->err), __VA_ARGS__)

/*
 * Empty every receiver (not timed), checking that each got exactly what was
 * sent to it, byte for byte: a send reported done whose bytes never arrive
 * (or arrive short or wrong) is lost data.  The sends are complete when the
 * sample ends, so a receiver that stays empty for 2 s lacks bytes.
 */
static void drain(struct sender *s, bool one)
{
	for (int k = 0; k < (one ? 1 : NSOCK) && !s->err[0]; k++) {
		size_t want = one ? (size_t)BLOCK * MSG : (size_t)BLOCK / NSOCK * MSG, bytes = want;
		while (bytes) {
			ssize_t n = recv(s->rx[k], s->sink, bytes < (1u << 20) ? bytes : (1u << 20),
					 MSG_DONTWAIT);
			if (n < 0 && errno == EAGAIN) {
				struct pollfd p = { s->rx[k], POLLIN, 0 };
				if (poll(&p, 1, 2000) == 1)
					continue;
			}
			if (n <= 0) {
				fault(s, "connection %d received %zu of the %zu bytes sent to it", k,
				      want - bytes, want);
				return;
			}
			for (ssize_t i = 0; i < n; i++)
				if (s->sink[i] != 'x') {
					fault(s, "connection %d received a wrong byte (0x%02x)", k,
					      (unsigned char)s->sink[i]);
					return;
				}
			bytes -= (size_t)n;
		}
	}
}

static void uring_segment(struct sender *s, int first, unsigned b, bool one, bool link)
{
	for (unsigned j = 0; j < b; j++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		int fd = one ? s->tx[0] : s->tx[(first + (int)j) % NSOCK];
		io_uring_prep_send(sqe, fd, s->msg, MSG, 0);
		if (link && j + 1 < b)
			sqe->flags |= IOSQE_IO_LINK;
	}
	if (link)
		io_uring_submit_and_wait(&s->ring, b);
	else
		io_uring_submit(&s->ring);
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&s->ring, head, cqe)
	{
		if (cqe->res != MSG)
			fault(s, "a raw liburing send completed with %d", cqe->res);
		n++;
	}
	io_uring_cq_advance(&s->ring, n);
}

/*
 * One event-loop iteration: LOOP_SEG sends, then the wait for the next
 * events (one is always ready).  Split: submit, then epoll_wait (two kernel
 * crossings); merged: the sends and an IORING_OP_EPOLL_WAIT in one enter.
 */
static void loop_raw(struct sender *s, int first, bool merged)
{
	struct epoll_event ev[8];
	for (unsigned j = 0; j < LOOP_SEG; j++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		io_uring_prep_send(sqe, s->tx[(first + (int)j) % NSOCK], s->msg, MSG, 0);
		sqe->user_data = 0;
	}
	if (merged) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		io_uring_prep_rw(59 /* IORING_OP_EPOLL_WAIT */, sqe, s->ep, ev, 8, 0);
		sqe->user_data = 1;
		io_uring_submit_and_wait(&s->ring, LOOP_SEG + 1);
	} else {
		io_uring_submit(&s->ring);
	}
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&s->ring, head, cqe)
	{
		if (cqe->res != (cqe->user_data == 1 ? 1 : MSG))
			fault(s, "a raw loop's %s completed with %d",
			      cqe->user_data == 1 ? "epoll wait" : "send", cqe->res);
		n++;
	}
	io_uring_cq_advance(&s->ring, n);
	if (!merged && epoll_wait(s->ep, ev, 8, -1) != 1)
		fault(s, "epoll_wait: not the one ready event: %s", strerror(errno));
}

/* The same through the preload's path (copies, per-descriptor streams). */
static void loop_preload(struct sender *s, int first, bool merged)
{
	struct epoll_event ev[8];
	struct iovec iov = { s->msg, MSG };
	bp_bt_segment_begin();
	for (unsigned j = 0; j < LOOP_SEG; j++)
		if (bp_bt_tx_data(s->tx[(first + (int)j) % NSOCK], &iov, 1, 0, NULL) != MSG)
			fault(s, "the preload path's send did not take %d bytes", MSG);
	bp_bt_cfg.merged_wait = merged;
	long r = bp_bt_epoll_wait(s->ep, ev, 8, -1, NULL);
	if (r == BT_PASS) {
		bp_bt_segment_end();
		r = epoll_wait(s->ep, ev, 8, -1);
	}
	if (r != 1)
		fault(s, "the preload path's epoll wait returned %ld, want 1", r);
}

/* One sample: BLOCK sends of variant v; cycles per send. */
static uint64_t sample(struct sender *s, int v)
{
	bool one = v >= V_ONE_URING && v <= V_ONE_FIXED;
	uint64_t t0 = bypass_rdtscp(NULL);
	if (v == V_NULL) {
		for (int i = 0; i < BLOCK; i++)
			syscall(SYS_getppid);
	} else if (v == V_SEND) {
		for (int i = 0; i < BLOCK; i++)
			if (send(s->tx[i % NSOCK], s->msg, MSG, 0) != MSG)
				fault(s, "send(): %s", strerror(errno));
	} else if (v == V_DEFER) {
		/* The raw loop, segments of 32, on a SINGLE_ISSUER|DEFER_TASKRUN
		 * ring: completions wait for the next enter (submit_and_get_events). */
		for (int i = 0; i < BLOCK; i += 32) {
			for (unsigned j = 0; j < 32; j++) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&s->dring);
				io_uring_prep_send(sqe, s->tx[(i + (int)j) % NSOCK], s->msg, MSG, 0);
			}
			io_uring_submit_and_get_events(&s->dring);
			struct io_uring_cqe *cqe;
			unsigned head, n = 0;
			io_uring_for_each_cqe(&s->dring, head, cqe)
			{
				if (cqe->res != MSG)
					fault(s, "a DEFER_TASKRUN send completed with %d",
					      cqe->res);
				n++;
			}
			io_uring_cq_advance(&s->dring, n);
		}
	} else if (v >= V_LOOP_SPLIT) {
		for (int i = 0; i < BLOCK; i += LOOP_SEG) {
			if (v <= V_LOOP_MERGED)
				loop_raw(s, i, v == V_LOOP_MERGED);
			else
				loop_preload(s, i, v == V_LOOP_PL_MERGED);
		}
	} else if ((v >= V_URING && v < V_URING + NSEG) || v == V_ONE_URING ||
		   v == V_ONE_LINKED) {
		unsigned b = one ? 32 : segs[v - V_URING];
		for (int i = 0; i < BLOCK; i += (int)b)
			uring_segment(s, i, b, one, v == V_ONE_LINKED);
	} else if ((v >= V_API && v < V_API + NSEG) || v == V_ONE_API || v == V_ONE_FIXED ||
		   v == V_SQPOLL) {
		unsigned b = one || v == V_SQPOLL ? 32 : segs[v - V_API];
		one = v == V_ONE_API || v == V_ONE_FIXED;
		static ssize_t res[256];
		for (int i = 0; i < BLOCK; i += (int)b) {
			bypass_batch_start();
			for (unsigned j = 0; j < b; j++)
				bypass_batch_send(one ? s->tx[0] : s->tx[(i + (int)j) % NSOCK],
						  s->msg, (size_t)s->api_len, 0, &res[j]);
			if (bypass_batch_flush() != (int)b)
				fault(s, "bypass_batch_flush did not complete the %u sends", b);
		}
	} else {
		/* The preload's path without the dlsym'd wrapper around it. */
		unsigned b = segs[v - V_PRELOAD];
		struct iovec iov = { s->msg, MSG };
		for (int i = 0; i < BLOCK; i += (int)b) {
			bp_bt_segment_begin();
			for (unsigned j = 0; j < b; j++)
				if (bp_bt_tx_data(s->tx[(i + (int)j) % NSOCK], &iov, 1, 0, NULL) != MSG)
					fault(s, "the preload path's send did not take %d bytes",
					      MSG);
			bp_bt_segment_end();
		}
	}
	uint64_t dt = bypass_rdtscp(NULL) - t0;
	if (v != V_NULL)
		drain(s, one);
	return (dt + BLOCK / 2) / BLOCK;
}

/* SQPOLL is a ring option: its samples run in a thread with such a ring. */
struct sq_arg {
	struct sender *s;
	uint64_t *out;
	uint64_t n;
	int cpu;
	bool ok;
};

static void *sq_thread(void *p)
{
	struct sq_arg *a = p;
	struct bypass_batch_opts o = { .flags = BYPASS_BATCH_SQPOLL, .sqpoll_idle_ms = 100 };
	bench_pin(a->cpu);
	a->ok = bypass_batch_configure(&o) == 0 && bypass_batch_start() == 0;
	struct bypass_batch_opts def = { 0 };
	bypass_batch_configure(&def); /* for threads made later; ours has its ring */
	if (!a->ok)
		return NULL;
	bypass_batch_flush();
	for (uint64_t i = 0; i < a->n; i++) {
		uint64_t x = sample(a->s, V_SQPOLL);
		if (a->out)
			a->out[i] = x;
	}
	return NULL;
}

/* n samples of variant v into out (NULL: warm-up).  false if it cannot run. */
static bool run_variant(struct sender *s, int v, uint64_t *out, uint64_t n, int cpu)
{
	if (v == V_SQPOLL) {
		struct sq_arg a = { s, out, n, cpu, false };
		pthread_t t;
		if (pthread_create(&t, NULL, sq_thread, &a))
			return false;
		pthread_join(t, NULL);
		if (!a.ok && out)
			for (uint64_t i = 0; i < n; i++)
				out[i] = 0;
		return a.ok;
	}
	if ((v == V_LOOP_MERGED || v == V_LOOP_PL_MERGED) && !s->merged_ok)
		return false;
	if (v == V_DEFER && !s->defer_ok)
		return false;
	if (v == V_ONE_FIXED)
		bypass_batch_register_fd(s->tx[0]);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = sample(s, v);
		if (out)
			out[i] = x;
	}
	if (v == V_ONE_FIXED)
		bypass_batch_unregister_fd(s->tx[0]);
	return true;
}

static const char *vname(int v, char *buf, size_t len)
{
	if (v == V_NULL)
		return "null system call (getppid)";
	if (v == V_SEND)
		return "send(), one system call each";
	if (v == V_ONE_URING)
		return "one socket, 32 per segment: raw liburing, unlinked";
	if (v == V_ONE_LINKED)
		return "one socket, 32 per segment: raw liburing, linked";
	if (v == V_ONE_API)
		return "one socket, 32 per segment: bypass API (linked)";
	if (v == V_ONE_FIXED)
		return "one socket, 32 per segment: bypass API, registered fd";
	if (v == V_SQPOLL)
		return "bypass API, segments of 32, SQPOLL";
	if (v == V_DEFER)
		return "raw liburing loop, segments of 32, SINGLE_ISSUER|DEFER_TASKRUN";
	if (v == V_LOOP_SPLIT)
		return "loop: 32 sends + wait, raw liburing, submit then epoll_wait";
	if (v == V_LOOP_MERGED)
		return "loop: 32 sends + wait, raw liburing, merged (one enter)";
	if (v == V_LOOP_PL_SPLIT)
		return "loop: 32 sends + wait, preload path, submit then epoll_wait";
	if (v == V_LOOP_PL_MERGED)
		return "loop: 32 sends + wait, preload path, merged wait";
	const char *what = v < V_API ? "raw liburing loop" : v < V_PRELOAD ? "bypass API"
									  : "bypass preload path";
	int k = v < V_API ? v - V_URING : v < V_PRELOAD ? v - V_API : v - V_PRELOAD;
	snprintf(buf, len, "%s, segments of %u", what, segs[k]);
	return buf;
}

int bench_batch_sends(struct bench_ctx *c)
{
	bench_begin(c, "batch.sends",
		    "cost of one 64-byte send on Unix stream sockets, per call",
		    "send(), one system call each");
	static struct sender s;
	memset(&s, 0, sizeof(s));
	memset(s.msg, 'x', MSG);
	/* The plant: the bypass API rows send one byte short, which no return
	 * value shows here (the flush counts completions) and the receivers'
	 * byte counts catch as lost data. */
	s.api_len = bench_planted(c, "batch.sends") ? MSG - 1 : MSG;
	s.sink = malloc(1 << 20);
	for (int k = 0; k < NSOCK; k++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
			/* Unix socket pairs always exist: this is a failure, not
			 * a reason to skip. */
			bench_fail(c, "socketpair: %s", strerror(errno));
			bench_end(c);
			return 1;
		}
		s.tx[k] = sv[0];
		s.rx[k] = sv[1];
		int big = k ? 1 << 20 : 8 << 20;
		if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)))
			setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	}
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	int efd = eventfd(1, EFD_CLOEXEC);
	struct epoll_event ee = { .events = EPOLLIN };
	if (s.ep < 0 || efd < 0 || epoll_ctl(s.ep, EPOLL_CTL_ADD, efd, &ee)) {
		bench_skip(c, "batch.sends", "epoll/eventfd failed");
		return BENCH_SKIP;
	}
	int r = io_uring_queue_init(512, &s.ring, 0);
	s.defer_ok = io_uring_queue_init(512, &s.dring, IORING_SETUP_SINGLE_ISSUER |
				IORING_SETUP_DEFER_TASKRUN) == 0;
	if (!r) {
		struct io_uring_probe *pr = io_uring_get_probe_ring(&s.ring);
		s.merged_ok = pr && io_uring_opcode_supported(pr, 59);
		if (pr)
			io_uring_free_probe(pr);
	}
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

	/* quick: 5 rounds of 36 samples (as many samples as 3 rounds of 60) */
	uint64_t per_round = bench_count(c, "send_samples", 2000, 36);
	int rounds = bench_rounds(c);
	size_t n = per_round * (size_t)rounds;
	uint64_t *smp[NV];
	for (int v = 0; v < NV; v++)
		smp[v] = calloc(n, sizeof(uint64_t));
	/* Warm up every path (rings, thread state, caches). */
	int failed = -1; /* the row that gave a wrong result */
	for (int v = 0; v < NV && failed < 0; v++)
		if (run_variant(&s, v, NULL, 20, cpu_b), s.err[0])
			failed = v;
	bool sqpoll_ok = true;
	bool merged_cfg = bp_bt_cfg.merged_wait;
	struct bench_rounds rr;
	int rd;
	bench_rounds_init(c, &rr, rounds, 0);
	while (failed < 0 && bench_round(c, &rr, &rd))
		for (int v = 0; v < NV && failed < 0; v++) {
			if (!run_variant(&s, v, &smp[v][(size_t)rd * per_round], per_round, cpu_b) &&
			    v == V_SQPOLL)
				sqpoll_ok = false;
			if (s.err[0])
				failed = v;
		}
	bp_bt_cfg.merged_wait = merged_cfg;
	if (failed >= 0) {
		char name[96];
		bench_fail(c, "%s: %s", vname(failed, name, sizeof(name)), s.err);
	}
	/* the target: the per-round ratio of the two rows' medians (the rows
	 * alternate within every round) */
	double *ra = calloc((size_t)rounds, sizeof(double)), *rb = calloc((size_t)rounds,
									 sizeof(double));
	int done = failed < 0 ? rounds : 0;
	for (int k = 0; ra && rb && k < done; k++) {
		struct bench_summary x, y;
		bench_summarize(&smp[V_API + 1][(size_t)k * per_round], per_round, &x);
		bench_summarize(&smp[V_URING + 1][(size_t)k * per_round], per_round, &y);
		ra[k] = x.median;
		rb[k] = y.median;
	}
	struct bench_est est;
	double none = NAN;
	bench_est_ratio(ra && rb ? ra : &none, ra && rb ? rb : &none, ra && rb ? (size_t)done : 0,
			rounds, BENCH_CI_T, &est);
	free(ra);
	free(rb);
	struct bench_summary sum[NV];
	for (int v = 0; v < NV; v++)
		bench_summarize(smp[v], n, &sum[v]);
	double base = sum[V_SEND].median, nul = sum[V_NULL].median;
	for (int v = 0; v < NV; v++) {
		if (v == V_SQPOLL && !sqpoll_ok) {
			bench_note(c, "SQPOLL: the kernel refused the ring here");
			continue;
		}
		if (v == V_DEFER && !s.defer_ok) {
			bench_note(c, "SINGLE_ISSUER|DEFER_TASKRUN: the kernel refused the ring");
			continue;
		}
		if ((v == V_LOOP_MERGED || v == V_LOOP_PL_MERGED) && !s.merged_ok) {
			bench_note(c, "merged wait: this kernel has no IORING_OP_EPOLL_WAIT "
				   "(Linux 6.15)");
			continue;
		}
		char name[96], note[160] = "";
		const char *kind = v == V_NULL ? BENCH_LIMIT
				   : v == V_SEND || (v >= V_URING && v < V_API) || v == V_ONE_URING ||
					     v == V_ONE_LINKED || v == V_LOOP_SPLIT || v == V_LOOP_MERGED ||
					     v == V_DEFER
					   ? BENCH_BASELINE
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
		else if (v == V_ONE_API)
			snprintf(note, sizeof(note), "%.2fx unlinked, %.2fx linked raw liburing",
				 sum[v].median / sum[V_ONE_URING].median,
				 sum[v].median / sum[V_ONE_LINKED].median);
		else if (v == V_ONE_URING)
			snprintf(note, sizeof(note), "order not kept if the socket fills");
		else if (v == V_ONE_FIXED)
			snprintf(note, sizeof(note), "%.2fx the same without registering",
				 sum[v].median / sum[V_ONE_API].median);
		else if (v == V_DEFER)
			snprintf(note, sizeof(note), "%.2fx the same loop on a plain ring",
				 sum[v].median / sum[V_URING + 1].median);
		else if (v == V_LOOP_MERGED || v == V_LOOP_PL_MERGED)
			snprintf(note, sizeof(note), "%.2fx split: %+.0f cycles per iteration "
				 "of 32 sends (one crossing less; a null call is %.0f)",
				 sum[v].median / sum[v - 1].median,
				 (sum[v].median - sum[v - 1].median) * LOOP_SEG, nul);
		else if (v == V_SQPOLL)
			snprintf(note, sizeof(note), "no system call; the kernel thread polls "
				 "on CPU %d; %.2fx without SQPOLL", cpu_b,
				 sum[v].median / sum[V_API + 1].median);
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
	bench_note(c, "per call, sample = mean over %d sends to %d connections in turn, %zu "
		   "samples per row, rounds alternate every row (A B A B ...)", BLOCK, NSOCK, n);
	bench_note(c, "the kernel's share a batch can remove is at most one null "
		   "system call (%.0f cycles) per send; send() costs %.0f above it",
		   nul, base - nul);
	bench_note(c, "saving over send() at 256 per segment: %.0f%% (ESCA reported -62%% of the "
		   "per-call overhead with its kernel module)",
		   100.0 * (base - best) / base);
	bench_note(c, "target: the mean over rounds of the ratio of the two rows' medians in "
		   "each round (%.3g with every sample pooled)", api32);
	bench_target_est(c, "bypass API per send in segments of 32 / raw liburing loop", &est,
			 "<=", 1.1);
	bench_end(c);
	for (int v = 0; v < NV; v++)
		free(smp[v]);
	/* Unpin: the servers started next must not inherit it. */
	pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	io_uring_queue_exit(&s.ring);
	if (s.defer_ok)
		io_uring_queue_exit(&s.dring);
	close(s.ep);
	close(efd);
	for (int k = 0; k < NSOCK; k++) {
		close(s.tx[k]);
		close(s.rx[k]);
	}
	free(s.sink);
	return 0;
}
