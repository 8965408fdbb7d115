/* SPDX-License-Identifier: MIT */
/*
 * The physical limit of every cross-core experiment: a cache line's round
 * trip between two CPUs, measured by one routine for every module (notify's
 * ping-pong and ipc's one-way latency both call it), so that "x the limit"
 * means the same thing in every table.
 *
 * Layout and protocol, chosen to be what a doorbell or a ring index is:
 * each side owns one line of shared memory (MAP_SHARED, as a doorbell or an
 * arena is), the two lines in different pages (no adjacent-line prefetch,
 * no false sharing), and writes a sequence number only into its own line;
 * the other side spins reading it with `pause` (as bypass's spin loops do).
 * A round trip therefore moves each line once from writer to reader, the
 * least any notification can cost.  A flag that the receiver resets would
 * move it twice more: that is not the limit.
 *
 * The responder is a thread pinned to cpu_b (the caller's thread is pinned
 * to cpu_a for the duration and its affinity restored afterwards).  The
 * first round trips of every call warm the lines, the TLB and both CPUs'
 * frequency up and are not recorded.
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#define CL_PAGE 4096

struct cl_arg {
	_Atomic uint64_t *ping, *pong;
	uint64_t iters; /* warm-up included */
	int cpu;
};

static void cl_spin(_Atomic uint64_t *w, uint64_t v)
{
	while (atomic_load_explicit(w, memory_order_acquire) != v)
		__builtin_ia32_pause();
}

static void *cl_responder(void *p)
{
	struct cl_arg *a = p;
	bench_pin(a->cpu);
	for (uint64_t i = 1; i <= a->iters; i++) {
		cl_spin(a->ping, i);
		atomic_store_explicit(a->pong, i, memory_order_release);
	}
	return NULL;
}

size_t bench_cacheline_warmup(size_t iters)
{
	size_t w = iters / 10;
	return w < 100 ? 100 : w > 10000 ? 10000 : w;
}

int bench_cacheline_rtt(int cpu_a, int cpu_b, uint64_t *out, size_t iters)
{
	if (!out || !iters)
		return -EINVAL;
	char *mem = mmap(NULL, 2 * CL_PAGE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	_Atomic uint64_t *ping = (_Atomic uint64_t *)mem;
	_Atomic uint64_t *pong = (_Atomic uint64_t *)(mem + CL_PAGE);
	atomic_store(ping, 0);
	atomic_store(pong, 0);
	uint64_t warm = bench_cacheline_warmup(iters);
	struct cl_arg a = { ping, pong, warm + iters, cpu_b };
	cpu_set_t old;
	bool restore = pthread_getaffinity_np(pthread_self(), sizeof(old), &old) == 0;
	bench_pin(cpu_a);
	pthread_t t;
	int e = pthread_create(&t, NULL, cl_responder, &a);
	if (e) {
		if (restore)
			pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
		munmap(mem, 2 * CL_PAGE);
		return -e;
	}
	uint64_t seq = 0;
	for (uint64_t i = 0; i < warm; i++) {
		atomic_store_explicit(ping, ++seq, memory_order_release);
		cl_spin(pong, seq);
	}
	for (size_t i = 0; i < iters; i++) {
		uint64_t t0 = bypass_rdtscp(NULL);
		atomic_store_explicit(ping, ++seq, memory_order_release);
		cl_spin(pong, seq);
		out[i] = bypass_rdtscp(NULL) - t0;
	}
	pthread_join(t, NULL);
	if (restore)
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	munmap(mem, 2 * CL_PAGE);
	return 0;
}
