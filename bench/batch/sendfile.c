/* SPDX-License-Identifier: MIT */
/*
 * batch.sendfile: what one 20 KB sendfile (ESCA's page size, a cached file,
 * a non-blocking TCP socket on loopback) costs when it enters the kernel by
 * itself, deferred by copy (read into the queue by the flush, then sent),
 * and deferred by splice (file -> pipe -> socket, linked, no copy).  As in
 * an event loop: 16 calls to 16 connections, then the loop's epoll wait
 * (merged with the flush where deferred).  A sample is 8 such iterations
 * and waits until every byte has left (the deferred work is done), so the
 * wall time includes the kernel's work on io_uring's workers; the process
 * CPU time (every thread of it, io-wq workers included) is the second
 * table.  A child process reads and discards what arrives.
 */
#include "bench.h"
#include "batch_bench.h"

#include <arpa/inet.h>
#include <bypass/batch.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch/defer.h"

#define FILE_SIZE fsize
static size_t fsize = 20480; /* --param sendfile_size=N */
#define NCONN 16
#define ITERS 8 /* loop iterations per sample */
#define CALLS (NCONN * ITERS)

enum { SF_DIRECT, SF_COPY, SF_SPLICE, SF_N };

struct sf {
	int tx[NCONN];
	int file, ep;
	pid_t reader;
	int count;         /* the reader's byte count comes back on this pipe */
	size_t len;        /* what the deferred rows ask for: FILE_SIZE, less one
			    * when planted */
	uint64_t sent;     /* bytes reported sent, all samples */
	char err[200];     /* the first wrong result ("" if none) */
};

/* A wrong result: the first is kept, the experiment reports it as a failure. */
#define fault(s, ...) bench_first_error((s)->err, sizeof((s)->err), __VA_ARGS__)

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Read and discard until every connection is closed (the child), then
 * write the number of bytes received on fd `count`. */
static void reader(int *rx, int count)
{
	uint64_t total = 0;
	int ep = epoll_create1(0);
	static char buf[1 << 16];
	for (int k = 0; k < NCONN; k++) {
		struct epoll_event e = { .events = EPOLLIN, .data.fd = rx[k] };
		epoll_ctl(ep, EPOLL_CTL_ADD, rx[k], &e);
	}
	int open_ = NCONN;
	while (open_ > 0) {
		struct epoll_event ev[NCONN];
		int n = epoll_wait(ep, ev, NCONN, -1);
		for (int i = 0; i < n; i++) {
			ssize_t r = read(ev[i].data.fd, buf, sizeof(buf));
			if (r <= 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, ev[i].data.fd, NULL);
				open_--;
			} else {
				total += (uint64_t)r;
			}
		}
	}
	_exit(write(count, &total, sizeof(total)) == sizeof(total) ? 0 : 1);
}

static bool setup(struct sf *s)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, NCONN) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		return false;
	int rx[NCONN];
	for (int k = 0; k < NCONN; k++) {
		s->tx[k] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s->tx[k] < 0 || connect(s->tx[k], (struct sockaddr *)&a, sizeof(a)))
			return false;
		rx[k] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (rx[k] < 0 || fcntl(s->tx[k], F_SETFL, O_NONBLOCK))
			return false;
		bp_bt_fd_created(s->tx[k], 0); /* the library learns what it is */
	}
	close(l);
	int pp[2];
	if (pipe2(pp, O_CLOEXEC))
		return false;
	s->reader = fork();
	if (s->reader < 0)
		return false;
	if (s->reader == 0) {
		for (int k = 0; k < NCONN; k++)
			close(s->tx[k]);
		close(pp[0]);
		reader(rx, pp[1]);
	}
	close(pp[1]);
	s->count = pp[0];
	for (int k = 0; k < NCONN; k++)
		close(rx[k]);
	char path[] = "/tmp/bypass-bench-sendfile-XXXXXX";
	s->file = mkstemp(path);
	if (s->file < 0)
		return false;
	unlink(path);
	char *data = malloc(FILE_SIZE);
	if (!data)
		return false;
	memset(data, 'f', FILE_SIZE);
	bool ok = write(s->file, data, FILE_SIZE) == (ssize_t)FILE_SIZE;
	free(data);
	if (!ok)
		return false;
	struct stat st;
	if (fstat(s->file, &st))
		return false;
	bp_bt_fd_created(s->file, 0);
	bp_bt_fd_size(s->file, &st); /* as the preload learns it from fstat */
	/* The loop's wait: an epoll set with an always-ready eventfd. */
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	int efd = eventfd(1, EFD_CLOEXEC);
	struct epoll_event ee = { .events = EPOLLIN };
	return s->ep >= 0 && efd >= 0 && epoll_ctl(s->ep, EPOLL_CTL_ADD, efd, &ee) == 0;
}

/* sendfile(2) of the whole file, as a server does on a full socket. */
static void direct_one(struct sf *s, int fd, int file)
{
	off_t off = 0;
	while ((size_t)off < FILE_SIZE) {
		ssize_t n = sendfile(fd, file, &off, FILE_SIZE - (size_t)off);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { fd, POLLOUT, 0 };
			poll(&p, 1, -1);
		} else if (n <= 0) {
			fault(s, "sendfile(): %s", n ? strerror(errno) : "0 bytes sent");
			return;
		}
	}
}

/* Until the thread's deferred work is done (not a crossing per call: the
 * sample's last wait). */
static void settle_all(void)
{
	struct bt_thread *th = bp_bt_self();
	if (!th)
		return;
	bp_bt_lock(th);
	bp_bt_drain(th, -1);
	bp_bt_unlock(th);
}

/* One loop iteration: NCONN calls, then the wait. */
static void iteration(struct sf *s, int v)
{
	struct epoll_event ev[8];
	if (v == SF_DIRECT) {
		for (int k = 0; k < NCONN; k++)
			direct_one(s, s->tx[k], s->file);
		if (epoll_wait(s->ep, ev, 8, -1) != 1)
			fault(s, "epoll_wait: not the one ready event: %s", strerror(errno));
		return;
	}
	bp_bt_segment_begin();
	for (int k = 0; k < NCONN; k++) {
		off_t off = 0;
		long r = bp_bt_tx_sendfile(s->tx[k], s->file, &off, s->len);
		for (int t = 0; r == -EAGAIN && t < 1000; t++) {
			/* The socket is full behind earlier deferred data: a
			 * server waits for EPOLLOUT; here, for the data to go. */
			settle_all();
			r = bp_bt_tx_sendfile(s->tx[k], s->file, &off, s->len);
		}
		if (r == BT_PASS)
			direct_one(s, s->tx[k], s->file);
		else if (r != (long)FILE_SIZE)
			fault(s, "a deferred sendfile of %zu bytes returned %ld", FILE_SIZE, r);
	}
	long r = bp_bt_epoll_wait(s->ep, ev, 8, -1, NULL);
	if (r == BT_PASS) {
		bp_bt_segment_end();
		r = epoll_wait(s->ep, ev, 8, -1);
	}
	if (r != 1)
		fault(s, "the deferred rows' epoll wait returned %ld, want 1", r);
}

static void mode(int v)
{
	bp_bt_cfg.sendfile_mode = BT_SENDFILE_COPY;
	bp_bt_cfg.splice = v == SF_SPLICE;
	bp_bt_cfg.sendfile_max = v == SF_COPY ? FILE_SIZE : FILE_SIZE - 1;
}

struct sf_sample {
	double cycles, cpu_ns, enters, spliced, direct;
};

/* One sample; false on a wrong result (s->err). */
static bool sample(struct sf *s, int v, struct sf_sample *out)
{
	mode(v);
	struct bt_thread *th = bp_bt_self();
	uint64_t e0 = th ? th->c.enters : 0, s0 = th ? th->c.spliced : 0;
	uint64_t d0 = th ? th->c.direct : 0;
	uint64_t c0 = cpu_ns(), t0 = bypass_rdtscp(NULL);
	for (int i = 0; i < ITERS; i++)
		iteration(s, v);
	if (v != SF_DIRECT)
		settle_all();
	out->cycles = (double)(bypass_rdtscp(NULL) - t0) / CALLS;
	out->cpu_ns = (double)(cpu_ns() - c0) / CALLS;
	th = bp_bt_self();
	out->enters = th ? (double)(th->c.enters - e0) / CALLS : 0;
	out->spliced = th ? (double)(th->c.spliced - s0) / CALLS : 0;
	out->direct = th ? (double)(th->c.direct - d0) / CALLS : 0;
	s->sent += (uint64_t)CALLS * FILE_SIZE;
	return !s->err[0];
}

static const char *const names[SF_N] = {
	"sendfile(), one system call each",
	"deferred by copy (read + send by io_uring)",
	"deferred by splice (file -> pipe -> socket)",
};

int bench_batch_sendfile(struct bench_ctx *c)
{
	static struct sf s;
	memset(&s, 0, sizeof(s));
	const char *sz = bench_param(c, "sendfile_size", NULL);
	if (sz && atol(sz) > 0 && atol(sz) <= (1L << 30))
		fsize = (size_t)atol(sz);
	/* The plant: the deferred rows ask for one byte less than the file,
	 * which the check of each call's count catches (a short send). */
	s.len = bench_planted(c, "batch.sendfile") ? FILE_SIZE - 1 : FILE_SIZE;
	int r = bypass_batch_start();
	if (r) {
		bench_skip(c, "batch.sendfile", "io_uring unavailable: %s", strerror(-r));
		return BENCH_SKIP;
	}
	bypass_batch_flush();
	if (!setup(&s)) {
		bench_skip(c, "batch.sendfile", "sockets/file setup failed: %s", strerror(errno));
		return BENCH_SKIP;
	}
	struct bt_config saved = bp_bt_cfg;
	/* A first merged wait tells the thread its waits resubmit splice
	 * rounds (as an event loop's first epoll_wait does). */
	bool splice_ok = false;
	bp_bt_cfg.splice = true;
	{
		struct epoll_event ev[8];
		bp_bt_epoll_wait(s.ep, ev, 8, 0, NULL);
		struct bt_thread *th = bp_bt_self();
		splice_ok = th && th->merged_ok && bp_bt_splice_available(th);
	}
	uint64_t per_round = bench_count(c, "sendfile_samples", 200, 40);
	int rounds = bench_rounds(c);
	size_t n = per_round * (size_t)rounds;
	struct sf_sample *smp[SF_N];
	for (int v = 0; v < SF_N; v++)
		smp[v] = calloc(n, sizeof(struct sf_sample));
	struct sf_sample warm;
	int failed = -1; /* the row that gave a wrong result */
	for (int v = 0; v < SF_N && failed < 0; v++)
		if (v != SF_SPLICE || splice_ok)
			for (int i = 0; i < 5 && failed < 0; i++)
				if (!sample(&s, v, &warm))
					failed = v;
	struct bench_rounds rr;
	int rd;
	bench_rounds_init(c, &rr, rounds, 0);
	while (failed < 0 && bench_round(c, &rr, &rd))
		for (int v = 0; v < SF_N && failed < 0; v++)
			for (uint64_t i = 0; i < per_round && failed < 0; i++)
				if ((v != SF_SPLICE || splice_ok) &&
				    !sample(&s, v, &smp[v][(size_t)rd * per_round + i]))
					failed = v;
	bp_bt_cfg = saved;
	/* Every byte reported sent must have reached the reader: closing the
	 * connections ends it, and it writes back what it received. */
	for (int k = 0; k < NCONN; k++) {
		close(s.tx[k]);
		s.tx[k] = -1;
	}
	uint64_t got = 0;
	int st = 0;
	bool counted = read(s.count, &got, sizeof(got)) == sizeof(got);
	waitpid(s.reader, &st, 0);
	close(s.count);
	if (failed < 0 && (!counted || got != s.sent)) {
		failed = SF_N;
		if (counted)
			fault(&s, "the reader received %llu bytes of the %llu reported sent",
			      (unsigned long long)got, (unsigned long long)s.sent);
		else
			fault(&s, "the reader did not report what it received (status %d)", st);
	}

	for (int table = 0; table < 2; table++) {
		char title[160];
		snprintf(title, sizeof(title),
			 table ? "CPU time of one %zu-byte sendfile (the whole process, "
				 "io_uring's workers included), per call"
			       : "one %zu-byte sendfile to a TCP socket, per call, until sent",
			 FILE_SIZE);
		if (table)
			bench_same_runs(c); /* the same rounds */
		bench_begin(c, table ? "batch.sendfile_cpu" : "batch.sendfile", title,
			    names[SF_DIRECT]);
		if (failed >= 0)
			bench_fail(c, "%s: %s", failed < SF_N ? names[failed] : "all rows", s.err);
		double med[SF_N] = { 0 };
		for (int v = 0; v < SF_N; v++) {
			if (v == SF_SPLICE && !splice_ok) {
				bench_note(c, "splice: not available here (no IORING_OP_SPLICE "
					   "or no merged wait)");
				continue;
			}
			double *x = malloc(sizeof(double) * n);
			double cr = 0, sp = 0, di = 0;
			for (size_t i = 0; i < n; i++) {
				x[i] = table ? smp[v][i].cpu_ns : smp[v][i].cycles;
				cr += smp[v][i].enters;
				sp += smp[v][i].spliced;
				di += smp[v][i].direct;
			}
			struct bench_summary sum;
			bench_summarize_d(x, n, &sum);
			free(x);
			med[v] = sum.median;
			char note[200];
			/* Crossings per call: direct = the call + 1/NCONN of the
			 * loop's wait; deferred = the io_uring_enter calls. */
			double cross = v == SF_DIRECT ? 1.0 + 1.0 / NCONN : cr / (double)n;
			snprintf(note, sizeof(note),
				 "%.3f kernel crossings per call%s%s", cross,
				 v == SF_SPLICE && sp / (double)n < 0.99 ? " (not all spliced!)"
									 : "",
				 v != SF_DIRECT && di / (double)n > 0.01 ? " (some ran direct)"
									 : "");
			struct bench_row row = {
				.variant = names[v],
				.kind = v == SF_DIRECT ? BENCH_BASELINE : BENCH_BYPASS,
				.unit = table ? "ns" : "cycles",
				.s = sum,
				.higher_is_better = false,
				.is_base = v == SF_DIRECT,
				.note = note,
			};
			bench_row(c, &row);
		}
		if (med[SF_COPY] > 0 && med[SF_SPLICE] > 0)
			bench_note(c, "splice / copy: %.2fx; copy is kept up to "
				   "BYPASS_BATCH_SENDFILE_MAX (4096 by default)",
				   med[SF_SPLICE] / med[SF_COPY]);
		bench_note(c, "%d calls per sample (%d connections x %d loop iterations, "
			   "each ending in an epoll wait), %zu samples per row, variants in "
			   "turn per round; a sample ends when the deferred work is done",
			   CALLS, NCONN, ITERS, n);
		bench_end(c);
	}
	for (int v = 0; v < SF_N; v++)
		free(smp[v]);
	close(s.file);
	close(s.ep);
	return 0;
}
