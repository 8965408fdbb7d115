/* SPDX-License-Identifier: MIT */
/*
 * syslet.atoms: what a program costs beside the system calls it makes, when
 * nothing blocks.  The source claimed a one-atom syslet costs about 10% of a
 * null system call more than the call, so that two atoms already win.  Per
 * call, the mean over batches of 1000 calls, alternating:
 *
 *   - getppid, and a one-atom program of it (bypass_syslet_run, inline),
 *   - a 64-byte pread64 of a cached file, and a one-atom program of it
 *     (run inline as preadv2 with RWF_NOWAIT),
 *   - two preads, and a two-atom program of them: run inline (two system
 *     calls), and submitted (one io_uring chain, entered with one call,
 *     reaped from the ring).
 */
#include "syslet_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define BATCH 1000
enum { K_PPID, K_PPID_S, K_PREAD, K_PREADV2, K_PREAD_S, K_TWO, K_TWO_RUN, K_TWO_SUB,
       K_TWO_HAND, K_N };
static const char *kname[K_N] = {
	"getppid",
	"one-atom syslet: getppid (run, inline)",
	"pread64, 64 bytes, cached",
	"preadv2 with RWF_NOWAIT, 64 bytes (the inline form, called directly)",
	"one-atom syslet: pread64 (run, inline RWF_NOWAIT)",
	"two pread64 calls",
	"two-atom syslet: 2 x pread64 (run, inline)",
	"two-atom syslet: 2 x pread64 (submit + reap, io_uring chain)",
	"hand-written liburing: 2 linked reads, one submit_and_wait",
};
static const char *kkind[K_N] = { BENCH_LIMIT, BENCH_BYPASS, BENCH_BASELINE,
				  BENCH_BASELINE, BENCH_BYPASS, BENCH_BASELINE, BENCH_BYPASS,
				  BENCH_BYPASS, BENCH_BASELINE };
static const int kbase[K_N] = { K_PPID, K_PPID, K_PREAD, K_PREAD, K_PREAD, K_TWO, K_TWO,
				K_TWO, K_TWO };

int bench_syslet_atoms(struct bench_ctx *c)
{
	const char *id = "syslet.atoms";
	uint64_t batches = bench_count(c, "atom_batches", 2000, 300);
	int rounds = bench_rounds(c);
	uint64_t per = (batches + (uint64_t)rounds - 1) / (uint64_t)rounds;
	char path[] = "/tmp/bypass-syslet-atoms.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		bench_skip(c, id, "mkstemp: %s", strerror(errno));
		return BENCH_SKIP;
	}
	unlink(path);
	char data[4096];
	memset(data, 'a', sizeof(data));
	if (write(fd, data, sizeof(data)) != (ssize_t)sizeof(data)) {
		close(fd);
		bench_skip(c, id, "write: %s", strerror(errno));
		return BENCH_SKIP;
	}
	bypass_syslet *s;
	int r = bypass_syslet_create(NULL, &s);
	if (r) {
		close(fd);
		bench_skip(c, id, "bypass_syslet_create: %s", strerror(-r));
		return BENCH_SKIP;
	}
	struct bypass_syslet_stats st;
	bypass_syslet_stats(s, &st);
	bool uring = st.engine == BYPASS_SYSLET_ENGINE_URING;
	char buf[2][64];
	struct bypass_syslet_atom ppid[1] = { { .nr = SYS_getppid } };
	struct bypass_syslet_atom pr[1] = { { .nr = SYS_pread64,
		.arg = { BYPASS_SYSLET_C(fd), BYPASS_SYSLET_P(buf[0]), BYPASS_SYSLET_C(64),
			 BYPASS_SYSLET_C(0) } } };
	struct bypass_syslet_atom two[2] = {
		{ .nr = SYS_pread64, .arg = { BYPASS_SYSLET_C(fd), BYPASS_SYSLET_P(buf[0]),
					      BYPASS_SYSLET_C(64), BYPASS_SYSLET_C(0) } },
		{ .nr = SYS_pread64, .arg = { BYPASS_SYSLET_C(fd), BYPASS_SYSLET_P(buf[1]),
					      BYPASS_SYSLET_C(64), BYPASS_SYSLET_C(2048) } },
	};
	struct bypass_syslet_prog p_ppid = { .atoms = ppid, .natoms = 1 };
	struct bypass_syslet_prog p_pr = { .atoms = pr, .natoms = 1 };
	struct bypass_syslet_prog p_two = { .atoms = two, .natoms = 2 };
	struct bypass_syslet_completion done;
	struct io_uring hand;
	bool hand_ok = io_uring_queue_init(64, &hand, 0) == 0;

	uint64_t *smp[K_N];
	for (int k = 0; k < K_N; k++)
		smp[k] = calloc(per * (size_t)rounds, sizeof(uint64_t));
	int bad = 0;
	/* warm up */
	for (int i = 0; i < BATCH; i++)
		bad += bypass_syslet_run(s, &p_pr, &done) != 1;
	struct bench_rounds rr;
	int rd;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &rd))
		for (uint64_t b = 0; b < per; b++)
			for (int k = 0; k < K_N; k++) {
				if ((k == K_TWO_SUB && !uring) || (k == K_TWO_HAND && !hand_ok))
					continue;
				uint64_t t0 = bypass_rdtscp(NULL);
				for (int i = 0; i < BATCH; i++) {
					switch (k) {
					case K_PPID:
						syscall(SYS_getppid);
						break;
					case K_PPID_S:
						bad += bypass_syslet_run(s, &p_ppid, &done) != 1;
						break;
					case K_PREAD:
						bad += pread(fd, buf[0], 64, 0) != 64;
						break;
					case K_PREADV2: {
						struct iovec iov = { buf[0], 64 };
						bad += preadv2(fd, &iov, 1, 0, RWF_NOWAIT) != 64;
						break;
					}
					case K_PREAD_S:
						bad += bypass_syslet_run(s, &p_pr, &done) != 1;
						break;
					case K_TWO:
						bad += pread(fd, buf[0], 64, 0) != 64;
						bad += pread(fd, buf[1], 64, 2048) != 64;
						break;
					case K_TWO_RUN:
						bad += bypass_syslet_run(s, &p_two, &done) != 1;
						break;
					case K_TWO_HAND: {
						struct io_uring_sqe *q = io_uring_get_sqe(&hand);
						io_uring_prep_read(q, fd, buf[0], 64, 0);
						q->flags |= IOSQE_IO_HARDLINK;
						q = io_uring_get_sqe(&hand);
						io_uring_prep_read(q, fd, buf[1], 64, 2048);
						io_uring_submit_and_wait(&hand, 2);
						struct io_uring_cqe *cqe;
						unsigned head, nc = 0;
						io_uring_for_each_cqe(&hand, head, cqe) {
							bad += cqe->res != 64;
							nc++;
						}
						io_uring_cq_advance(&hand, nc);
						bad += nc != 2;
						break;
					}
					case K_TWO_SUB:
						bad += bypass_syslet_submit(s, &p_two, 1) != 1;
						while (bypass_syslet_reap(s, &done, 1) != 1)
							bypass_syslet_wait(s, 1, -1);
						bad += done.result != 64;
						break;
					}
				}
				smp[k][(size_t)rd * per + b] =
					(bypass_rdtscp(NULL) - t0 + BATCH / 2) / BATCH;
			}
	int ret = 0;
	if (bench_planted(c, "syslet.atoms"))
		bad++; /* as if one call had returned the wrong count */
	if (bad) {
		/* wrong results are a failure, not a reason to skip */
		bench_begin(c, id, "cost per program when nothing blocks, beside the plain "
			    "system calls", NULL);
		bench_fail(c, "syslet.atoms: %d calls did not return what was expected", bad);
		bench_end(c);
		ret = 1;
		goto out;
	}
	struct bench_summary sum[K_N];
	size_t nsmp = per * (size_t)rounds;
	/* each row's median in every round, and its per-round ratio to its
	 * plain call's median in the same round (the rows alternate batch by
	 * batch within a round) */
	double rmed[K_N][64];
	int nr = rounds < 64 ? rounds : 64;
	for (int k = 0; k < K_N; k++)
		for (int q = 0; q < nr; q++) {
			struct bench_summary x;
			bench_summarize(&smp[k][(size_t)q * per], per, &x);
			rmed[k][q] = x.median;
		}
	struct bench_est est[K_N];
	for (int k = 0; k < K_N; k++)
		bench_est_ratio(rmed[k], rmed[kbase[k]], (size_t)nr, rounds, BENCH_CI_T, &est[k]);
	for (int k = 0; k < K_N; k++)
		bench_summarize(smp[k], nsmp, &sum[k]);
	bench_begin(c, id, "cost per program when nothing blocks, beside the plain system calls",
		    "the plain call(s) of the same row group");
	for (int k = 0; k < K_N; k++) {
		if ((k == K_TWO_SUB && !uring) || (k == K_TWO_HAND && !hand_ok))
			continue;
		char note[96];
		snprintf(note, sizeof(note), "%.0f ns; vs %s", bench_cycles_to_ns(sum[k].median),
			 kname[kbase[k]]);
		struct bench_row row = {
			.variant = kname[k], .kind = kkind[k], .unit = "cycles", .s = sum[k],
			.ratio = sum[k].median / sum[kbase[k]].median,
			.source = k == K_PPID_S ? "null overhead ~10% of a null syscall" :
				  k == K_TWO_RUN ? "two atoms: a win already" : NULL,
			.note = note,
		};
		if (k != kbase[k])
			bench_row_est(&row, &est[k]);
		bench_row(c, &row);
	}
	bench_note(c, "samples: mean cost per call over batches of %d; %llu batches per row; "
		   "io_uring engine %s", BATCH, (unsigned long long)(per * (uint64_t)rounds),
		   uring ? "used" : "refused here (the submit row is absent)");
	sb_note_load(c, "at the end");
	bench_note(c, "the one-atom pread64 program runs as preadv2 with RWF_NOWAIT; that form alone "
		   "costs %.2fx pread64 here, the program %.2fx the form",
		   sum[K_PREADV2].median / sum[K_PREAD].median,
		   sum[K_PREAD_S].median / sum[K_PREADV2].median);
	bench_note(c, "ratios with an interval: the mean over %d rounds of the row's median / "
		   "its plain call's median in the same round, Student's t 95%% interval", nr);
	bench_target_est(c, "one-atom non-blocking syslet within 10% of the plain call (pread64)",
			 &est[K_PREAD_S], "<=", 1.10);
	bench_target_est(c, "one-atom non-blocking syslet within 10% of the plain call (getppid)",
			 &est[K_PPID_S], "<=", 1.10);
	bench_target_est(c, "two-atom program cheaper than two system calls (run, inline)",
			 &est[K_TWO_RUN], "<", 1.0);
	if (uring)
		bench_target_est(c, "two-atom program cheaper than two system calls (submit, "
				 "io_uring)", &est[K_TWO_SUB], "<", 1.0);
	bench_end(c);
out:
	for (int k = 0; k < K_N; k++)
		free(smp[k]);
	bypass_syslet_destroy(s);
	if (hand_ok)
		io_uring_queue_exit(&hand);
	close(fd);
	return ret;
}
