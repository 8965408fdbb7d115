/* SPDX-License-Identifier: MIT */
/*
 * pager.drop: the cost of dropping evicted pages, per page, for the ways
 * the issue allowed: MADV_DONTNEED one page at a time, MADV_DONTNEED on a
 * whole batch in one process_madvise() (what the pager does), and
 * UFFDIO_MOVE of each page out to a scratch area freed by one MADV_DONTNEED.
 * Batches of 32 pages (the pager's default round) chosen at random from a
 * registered, populated region, as an eviction round's victims are.
 *
 * Checked outside the timed spans: every page is populated with its data
 * (UFFDIO_COPY's count, the bytes read back), every drop call returns what
 * it must (madvise 0, process_madvise the batch's bytes, UFFDIO_MOVE the
 * page), and after each row's round no page of the region nor of the
 * scratch area is still in memory (mincore): a dropped page of a
 * registered region holds nothing; its next access faults to the pager.
 * A wrong result is a failure of the row, not a figure.
 */
#include "pager_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef UFFDIO_MOVE /* Linux 6.8; the headers here may be older */
struct uffdio_move {
	__u64 dst, src, len, mode;
	__s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct uffdio_move)
#endif
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif

#define BATCH 32
enum { D_MADVISE, D_PMADVISE, D_MOVE, D_N };
static const char *dname[D_N] = {
	"MADV_DONTNEED, one call per page",
	"MADV_DONTNEED, one process_madvise per batch (bypass)",
	"UFFDIO_MOVE per page + one MADV_DONTNEED per batch",
};

static char drop_err[200]; /* the first wrong result ("" if none) */

#define drop_fault(...) bench_first_error(drop_err, sizeof(drop_err), __VA_ARGS__)

/* The first page of [p, p + n pages) still in memory, or -1. */
static long resident(unsigned char *vec, char *p, size_t n)
{
	if (mincore(p, n * PB_PAGE, vec)) {
		drop_fault("mincore: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (vec[i] & 1)
			return (long)i;
	return -1;
}

void bench_pager_drop(struct bench_ctx *c)
{
	const char *id = "pager.drop";
	size_t npages = bench_count(c, "drop_pages", 65536, 16384);
	npages -= npages % BATCH;
	size_t len = npages * PB_PAGE;
	int rounds = bench_rounds(c);
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_SIGBUS | UFFD_FEATURE_MOVE };
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0) {
		bench_skip(c, id, "userfaultfd with UFFD_FEATURE_MOVE: %s", strerror(errno));
		if (uffd >= 0)
			close(uffd);
		return;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *scratch = mmap(NULL, BATCH * PB_PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char src[PB_PAGE] __attribute__((aligned(4096)));
	memset(src, 7, sizeof(src));
	madvise(m, len, MADV_NOHUGEPAGE);
	madvise(scratch, BATCH * PB_PAGE, MADV_NOHUGEPAGE);
	struct uffdio_register r1 = { .range = { (uintptr_t)m, len },
				      .mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP };
	struct uffdio_register r2 = { .range = { (uintptr_t)scratch, BATCH * PB_PAGE },
				      .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (ioctl(uffd, UFFDIO_REGISTER, &r1) < 0 || ioctl(uffd, UFFDIO_REGISTER, &r2) < 0) {
		bench_skip(c, id, "UFFDIO_REGISTER: %s", strerror(errno));
		goto out;
	}
	uint32_t *perm = malloc(npages * sizeof(uint32_t));
	for (size_t i = 0; i < npages; i++)
		perm[i] = (uint32_t)i;
	uint64_t x = 12345;
	for (size_t i = npages - 1; i > 0; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t j = x % (i + 1);
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	size_t nb = npages / BATCH;
	uint64_t *s[D_N];
	for (int d = 0; d < D_N; d++)
		s[d] = calloc(nb * (size_t)rounds, sizeof(uint64_t));
	bool pm_ok = pidfd >= 0, move_ok = true;
	/* The plant: the bypass row's first batch names its second page twice
	 * and misses its first, which the check that no page is left in memory
	 * catches (process_madvise still returns the batch's bytes). */
	bool plant = bench_planted(c, id);
	int failed = -1; /* the row that gave a wrong result */
	drop_err[0] = 0;
	unsigned char *vec = malloc(npages);
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds, 0);
	while (failed < 0 && bench_round(c, &rr, &r))
		for (int d = 0; d < D_N && failed < 0; d++) {
			for (size_t i = 0; i < npages; i++) { /* populate, as pages are */
				struct uffdio_copy cp = { .dst = (uintptr_t)m + i * PB_PAGE,
							  .src = (uintptr_t)src, .len = PB_PAGE };
				if (ioctl(uffd, UFFDIO_COPY, &cp) || cp.copy != PB_PAGE)
					drop_fault("UFFDIO_COPY of page %zu: %s (copied %lld)", i,
						   strerror(errno), (long long)cp.copy);
				else if (m[i * PB_PAGE] != 7 || m[(i + 1) * PB_PAGE - 1] != 7)
					drop_fault("page %zu does not read back its data", i);
			}
			for (size_t b = 0; b < nb; b++) {
				uint32_t *v = perm + b * BATCH;
				uint64_t t0 = bypass_rdtscp(NULL);
				if (d == D_MADVISE) {
					for (int k = 0; k < BATCH; k++)
						if (madvise(m + (size_t)v[k] * PB_PAGE, PB_PAGE,
							    MADV_DONTNEED))
							drop_fault("madvise: %s", strerror(errno));
				} else if (d == D_PMADVISE) {
					struct iovec iov[BATCH];
					for (int k = 0; k < BATCH; k++)
						iov[k] = (struct iovec){ m + (size_t)v[k] * PB_PAGE, PB_PAGE };
					if (plant && b == 0)
						iov[0] = iov[1];
					long got = syscall(SYS_process_madvise, pidfd, iov, BATCH,
							   MADV_DONTNEED, 0u);
					if (got < 0)
						pm_ok = false; /* before Linux 6.13: a note */
					else if (got != BATCH * PB_PAGE)
						drop_fault("process_madvise advised %ld bytes of %d", got,
							   (int)(BATCH * PB_PAGE));
				} else {
					for (int k = 0; k < BATCH; k++) {
						struct uffdio_move mv = {
							.dst = (uintptr_t)scratch + (size_t)k * PB_PAGE,
							.src = (uintptr_t)m + (size_t)v[k] * PB_PAGE,
							.len = PB_PAGE };
						if (ioctl(uffd, UFFDIO_MOVE, &mv) < 0)
							move_ok = false;
						else if (mv.move != PB_PAGE)
							drop_fault("UFFDIO_MOVE moved %lld bytes of %d",
								   (long long)mv.move, (int)PB_PAGE);
					}
					if (madvise(scratch, BATCH * PB_PAGE, MADV_DONTNEED))
						drop_fault("madvise: %s", strerror(errno));
				}
				s[d][(size_t)r * nb + b] = (bypass_rdtscp(NULL) - t0 + BATCH / 2) / BATCH;
			}
			/* Every page was a victim once: none may be left in memory
			 * (unless the row could not run here at all). */
			if ((d != D_PMADVISE || pm_ok) && (d != D_MOVE || move_ok) && !drop_err[0]) {
				long p = resident(vec, m, npages);
				if (p >= 0)
					drop_fault("page %ld of the region is still in memory after "
						   "its drop", p);
				else if ((p = resident(vec, scratch, BATCH)) >= 0)
					drop_fault("page %ld of the scratch area is still in memory "
						   "after its drop", p);
			}
			if (drop_err[0])
				failed = d;
		}
	free(vec);
	bench_begin(c, id, "dropping evicted pages: cost per page in batches of 32 random pages",
		    "MADV_DONTNEED, one call per page");
	if (failed >= 0)
		bench_fail(c, "%s: %s", dname[failed], drop_err);
	struct bench_summary sum[D_N];
	for (int d = 0; d < D_N; d++)
		bench_summarize(s[d], nb * (size_t)rounds, &sum[d]);
	for (int d = 0; d < D_N; d++) {
		if ((d == D_PMADVISE && !pm_ok) || (d == D_MOVE && !move_ok))
			continue;
		struct bench_row row = {
			.variant = dname[d], .kind = d == D_PMADVISE ? BENCH_BYPASS : BENCH_BASELINE,
			.unit = "cycles", .s = sum[d], .ratio = sum[d].median / sum[D_MADVISE].median,
		};
		bench_row(c, &row);
	}
	bench_note(c, "each sample: one batch of %d pages, divided by %d; %zu batches per round, "
		   "%d rounds; single thread (with more threads each call's TLB shootdown costs more, "
		   "which favours the batched call further)", BATCH, BATCH, nb, rounds);
	if (!pm_ok)
		bench_note(c, "process_madvise(MADV_DONTNEED) on itself refused here (before Linux "
			      "6.13): the pager falls back to one madvise per range");
	if (!move_ok)
		bench_note(c, "UFFDIO_MOVE failed here");
	bench_end(c);
	for (int d = 0; d < D_N; d++)
		free(s[d]);
	free(perm);
out:
	munmap(m, len);
	munmap(scratch, BATCH * PB_PAGE);
	if (pidfd >= 0)
		close(pidfd);
	close(uffd);
}
