/* SPDX-License-Identifier: MIT */
/*
 * pager.latency: the time of one page fault, seen by the faulting thread,
 * with 1, 2, ... threads faulting at once (up to the CPUs, then twice as
 * many): the kernel's own minor fault on plain anonymous memory, the classic
 * userfaultfd handler thread, and bypass's upcall (the faulting thread
 * serves its own fault in its SIGBUS handler).  Each fault is a first
 * touch (a write) of a fresh page, so no I/O is involved: this is the cost
 * of the mechanism.  The budget holds every page: nothing is evicted.
 */
#include "pager_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { K_KERNEL, K_HANDLER, K_UPCALL, K_N };
static const char *kind_name[K_N] = { "kernel minor fault", "userfaultfd handler thread",
				      "bypass upcall" };
static const char *kind_kind[K_N] = { BENCH_LIMIT, BENCH_BASELINE, BENCH_BYPASS };

struct lat_thread {
	char *base;
	size_t pages;
	uint64_t *out;
	_Atomic int *go;
	_Atomic int *ready;
};

static void *lat_main(void *arg)
{
	struct lat_thread *t = arg;
	atomic_fetch_add(t->ready, 1);
	while (!atomic_load_explicit(t->go, memory_order_acquire))
		__builtin_ia32_pause();
	for (size_t i = 0; i < t->pages; i++) {
		volatile char *p = t->base + i * PB_PAGE;
		uint64_t t0 = bypass_rdtscp(NULL);
		*p = 1;
		t->out[i] = bypass_rdtscp(NULL) - t0;
	}
	return NULL;
}

/* One run: nthreads threads each first-touch `pages` pages; samples out. */
static int lat_run(struct bench_ctx *c, int kind, int nthreads, size_t pages, uint64_t *out)
{
	size_t len = (size_t)nthreads * pages * PB_PAGE;
	bypass_pager *p = NULL;
	char *base;
	if (kind == K_KERNEL) {
		base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base == MAP_FAILED)
			return -errno;
		madvise(base, len, MADV_NOHUGEPAGE); /* 4 KiB faults, as the pager's */
	} else {
		struct bypass_pager_config cfg = {
			.budget = len + 64 * PB_PAGE, .swap_path = pb_swapdir(c),
			.swap_size = len, .flags = BYPASS_PAGER_SWAP_TEMP,
			.mode = kind == K_UPCALL ? BYPASS_PAGER_UPCALL : BYPASS_PAGER_HANDLER,
		};
		int e = bypass_pager_create(&cfg, &p);
		if (!e)
			e = bypass_pager_map(p, len, 0, (void **)&base);
		if (e) {
			if (p)
				bypass_pager_destroy(p);
			return e;
		}
	}
	_Atomic int go = 0, ready = 0;
	pthread_t th[64];
	struct lat_thread lt[64];
	for (int i = 0; i < nthreads; i++) {
		lt[i] = (struct lat_thread){ base + (size_t)i * pages * PB_PAGE, pages,
					     out + (size_t)i * pages, &go, &ready };
		pthread_create(&th[i], NULL, lat_main, &lt[i]);
	}
	while (atomic_load(&ready) < nthreads)
		__builtin_ia32_pause();
	atomic_store_explicit(&go, 1, memory_order_release);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (p)
		bypass_pager_destroy(p);
	else
		munmap(base, len);
	return 0;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* The floor under any upcall: a signal delivered and returned from. */
static void signal_floor(size_t n, uint64_t *out)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, &old);
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = bypass_rdtscp(NULL);
		raise(SIGUSR1);
		out[i] = bypass_rdtscp(NULL) - t0;
	}
	sigaction(SIGUSR1, &old, NULL);
}

/* The other part of the floor: UFFDIO_COPY of a zero page into a
 * registered, missing page (the system call alone, no fault).  Returns the
 * number of samples, 0 if userfaultfd is unavailable. */
static size_t copy_floor(size_t n, uint64_t *out)
{
	static char zero[PB_PAGE] __attribute__((aligned(4096)));
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return 0;
	struct uffdio_api api = { .api = UFFD_API };
	size_t len = n * PB_PAGE, got = 0;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED && ioctl(fd, UFFDIO_API, &api) == 0) {
		madvise(m, len, MADV_NOHUGEPAGE);
		struct uffdio_register reg = { .range = { (uintptr_t)m, len },
					       .mode = UFFDIO_REGISTER_MODE_MISSING };
		if (ioctl(fd, UFFDIO_REGISTER, &reg) == 0)
			for (; got < n; got++) {
				struct uffdio_copy cp = { .dst = (uintptr_t)m + got * PB_PAGE,
							  .src = (uintptr_t)zero, .len = PB_PAGE };
				uint64_t t0 = bypass_rdtscp(NULL);
				if (ioctl(fd, UFFDIO_COPY, &cp) < 0)
					break;
				out[got] = bypass_rdtscp(NULL) - t0;
			}
	}
	if (m != MAP_FAILED)
		munmap(m, len);
	close(fd);
	return got;
}

static void latency_table(struct bench_ctx *c, bool one_cpu);

void bench_pager_latency(struct bench_ctx *c)
{
	latency_table(c, false);
	/* Again with every thread (the handler thread too) on one CPU: no
	 * cross-CPU wake-ups, which on this kind of machine (a VM whose idle
	 * CPUs halt) dominate a handler-thread fault. */
	cpu_set_t old, one;
	if (sched_getaffinity(0, sizeof(old), &old) == 0) {
		int cpu = -1;
		for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
			if (CPU_ISSET(i, &old))
				cpu = i;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) == 0) {
			latency_table(c, true);
			sched_setaffinity(0, sizeof(old), &old);
		}
	}
}

static void latency_table(struct bench_ctx *c, bool one_cpu)
{
	const char *id = one_cpu ? "pager.latency-1cpu" : "pager.latency";
	int ncpu = one_cpu ? 1 : bench_ncpus();
	int counts[8], nc = 0;
	for (int t = 1; t <= ncpu && nc < 6; t *= 2)
		counts[nc++] = t;
	if (counts[nc - 1] != ncpu)
		counts[nc++] = ncpu;
	counts[nc++] = 2 * ncpu; /* oversubscribed */
	if (counts[nc - 1] > 64)
		counts[nc - 1] = 64;
	size_t pages = bench_count(c, "faults", 50000, 10000); /* per thread per run */
	int rounds = bench_rounds(c);

	bench_begin(c, id, one_cpu ? "per-fault latency against concurrency, all threads on one CPU"
				   : "per-fault latency against concurrency (first-touch write faults)",
		    "the kernel's minor fault with the same number of threads");
	uint64_t *s[8][K_N];
	size_t ns[8] = { 0 };
	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++)
			s[k][m] = malloc(sizeof(uint64_t) * (size_t)counts[k] * pages * (size_t)rounds);
	bool handler_ok = true;
	/* A B C A B C ...: every kind at every thread count, each round. */
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < nc; k++) {
			size_t at = ns[k];
			for (int m = 0; m < K_N; m++) {
				if (m == K_HANDLER && !handler_ok)
					continue;
				int e = lat_run(c, m, counts[k], pages, s[k][m] + at);
				if (e == -EPERM && m == K_HANDLER) {
					handler_ok = false;
					continue;
				}
				if (e) {
					bench_skip(c, id, "%s: %s", kind_name[m], strerror(-e));
					goto out;
				}
			}
			ns[k] += (size_t)counts[k] * pages;
		}

	struct bench_summary sum[8][K_N];
	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++)
			if (m != K_HANDLER || handler_ok)
				bench_summarize(s[k][m], ns[k], &sum[k][m]);
	uint64_t *floor = malloc(sizeof(uint64_t) * pages);
	signal_floor(pages, floor);
	struct bench_summary fs, cs = { 0 };
	bench_summarize(floor, pages, &fs);
	size_t ncopy = copy_floor(pages, floor);
	bench_summarize(floor, ncopy, &cs);
	free(floor);

	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++) {
			if (m == K_HANDLER && !handler_ok)
				continue;
			char name[96], params[256];
			snprintf(name, sizeof(name), "%s, %d thread%s", kind_name[m], counts[k],
				 counts[k] > 1 ? "s" : "");
			/* series/x: tools/report.py draws these rows as curves */
			snprintf(params, sizeof(params),
				 "{\"series\": \"%s\", \"x\": %d, \"x_label\": \"threads faulting "
				 "at once\", \"threads\": %d, \"mode\": \"%s\"}",
				 kind_name[m], counts[k], counts[k],
				 m == K_KERNEL ? "kernel" : m == K_HANDLER ? "handler" : "upcall");
			struct bench_row row = {
				.variant = name, .kind = kind_kind[m], .unit = "cycles",
				.s = sum[k][m], .ratio = sum[k][m].median / sum[k][K_KERNEL].median,
				.params = params,
				.note = counts[k] > ncpu ? "more threads than CPUs" : NULL,
			};
			bench_row(c, &row);
		}
	struct bench_row frow = {
		.variant = "signal delivery + return (raise, empty handler)", .kind = BENCH_LIMIT,
		.unit = "cycles", .s = fs, .ratio = fs.median / sum[0][K_KERNEL].median,
		.note = "the floor of any upcall", .params = "{\"threads\": 1}",
	};
	bench_row(c, &frow);
	if (ncopy) {
		struct bench_row crow = {
			.variant = "UFFDIO_COPY of a zero page (the ioctl alone)", .kind = BENCH_LIMIT,
			.unit = "cycles", .s = cs, .ratio = cs.median / sum[0][K_KERNEL].median,
			.note = "the other part of a zero-fill upcall", .params = "{\"threads\": 1}",
		};
		bench_row(c, &crow);
	}

	bench_note(c, "each sample: one first-touch write to a fresh 4 KiB page, timed by the "
		      "faulting thread (rdtscp around the store); %zu faults per thread per run, "
		      "%d rounds, kinds alternating within each round", pages, rounds);
	bench_note(c, "the budget holds every page (no eviction, no I/O): the fault mechanism only; "
		      "kernel side: MAP_PRIVATE|MAP_ANONYMOUS with MADV_NOHUGEPAGE");
	if (one_cpu)
		bench_note(c, "every thread, the handler thread included, pinned to one CPU: no "
			      "cross-CPU wake-ups; 2 threads share it");
	else
		bench_note(c, "threads are not pinned; %d CPUs here, so %d threads are "
			      "oversubscribed 2x; a handler-thread fault needs two cross-CPU wake-ups "
			      "(several microseconds each on a VM whose idle CPUs halt), which busier "
			      "CPUs make cheaper: see pager.latency-1cpu", ncpu, 2 * ncpu);
	if (!handler_ok)
		bench_note(c, "handler-thread rows missing: userfaultfd for kernel faults is not "
			      "permitted here (needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)");
	if (!bench_quick(c) && !bench_smoke(c))
		bench_note(c, "ExtMem measured up to 32 threads on 16 cores; this machine has %d",
			   bench_ncpus());
	else
		bench_note(c, "faults per thread scaled down from 50000 (full) to %zu", pages);

	int last = nc - 1;
	double up_growth = sum[last][K_UPCALL].median / sum[0][K_UPCALL].median;
	bench_target(c, "upcall median latency, most threads / 1 thread (flat: <= 1.25)",
		     up_growth, "<=", 1.25);
	if (handler_ok) {
		double h_growth = sum[last][K_HANDLER].median / sum[0][K_HANDLER].median;
		bench_target(c, "handler-thread latency growth / upcall growth (handler degrades more)",
			     h_growth / up_growth, ">", 1.0);
	}
	bench_target(c, "first-touch upcall fault / kernel minor fault, 1 thread (within 3x)",
		     sum[0][K_UPCALL].median / sum[0][K_KERNEL].median, "<=", 3.0);
	bench_end(c);
out:
	for (int k = 0; k < nc; k++)
		for (int m = 0; m < K_N; m++)
			free(s[k][m]);
}
