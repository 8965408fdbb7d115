/* SPDX-License-Identifier: MIT */
/*
 * heap-pack: the preload heap's packer (preload/pager/pack.c; issue 32,
 * item 4): requests in (4 KiB, 16 KiB] come in slots of 16-byte multiples,
 * not in jemalloc's size classes 25% apart.  Under the preload with the
 * heap engaged from the start: malloc_usable_size of every size in the
 * range is less than 16 bytes over the request (jemalloc: 5120 for 4380);
 * blocks of one size lie end to end; alignments (16 packed, 64 and a page
 * from jemalloc); calloc reads zeros in fresh and reused slots; realloc
 * across the packer's bounds both ways keeps the data; a fork child reads
 * its parent's packed blocks, allocates and frees its own; then 4 threads
 * allocate, check, reallocate and free blocks of 1 byte .. 64 KiB, a third
 * of them freed by another thread, at a footprint above the budget
 * (heap-pack-soak: millions of operations).  Skips where the preload was
 * built without jemalloc, and under the sanitizers (their malloc comes
 * first).
 * TEST_LABELS: threads
 */
#ifndef PACK_OPS
#define PACK_OPS 15000 /* per thread */
#endif

#include "pager/heap-util.h"
#include "pager/heap-stress.h"

#include <malloc.h>
#include <pthread.h>

static void functional(void)
{
	/* usable sizes: the request rounded up to 16 */
	for (size_t n = 4097; n <= 16384; n += 13) {
		void *p = malloc(n);
		CHECK(p);
		size_t u = malloc_usable_size(p);
		if (u < n || u >= n + 16)
			TEST_FAIL("malloc(%zu): usable size %zu (not packed)", n, u);
		CHECK(((uintptr_t)p & 15) == 0);
		free(p);
	}
	/* SQLite's page slots: end to end */
	enum { NSQ = 200 };
	unsigned char *sq[NSQ];
	size_t adjacent = 0;
	for (unsigned i = 0; i < NSQ; i++) {
		sq[i] = malloc(4380);
		CHECK(sq[i]);
		mark(sq[i], 4380, i);
		if (i && (sq[i] - sq[i - 1] == 4384 || sq[i - 1] - sq[i] == 4384))
			adjacent++;
	}
	TEST_LOG("%zu of %d blocks of 4380 bytes right after the previous one", adjacent, NSQ - 1);
	CHECK(adjacent >= NSQ / 2);

	/* alignments: 16 packed, more from jemalloc */
	void *a = memalign(16, 5000), *b = NULL, *c = aligned_alloc(4096, 8192);
	CHECK(a && ((uintptr_t)a & 15) == 0);
	CHECK_EQ(posix_memalign(&b, 64, 5000), 0);
	CHECK(((uintptr_t)b & 63) == 0);
	CHECK(c && ((uintptr_t)c & 4095) == 0);
	CHECK(malloc_usable_size(b) >= 5000 && malloc_usable_size(c) >= 8192);
	mark(a, 5000, 1);
	mark(b, 5000, 2);
	mark(c, 8192, 3);
	CHECK(marked(a, 5000, 1) && marked(b, 5000, 2) && marked(c, 8192, 3));
	free(a);
	free(b);
	free(c);

	/* calloc: zeros in reused slots too */
	enum { NZ = 300 };
	unsigned char *z[NZ];
	for (int i = 0; i < NZ; i++) {
		z[i] = malloc(6000);
		CHECK(z[i]);
		memset(z[i], 0xa5, 6000);
	}
	for (int i = 0; i < NZ; i += 2)
		free(z[i]);
	for (int i = 0; i < NZ; i += 2) {
		z[i] = calloc(3, 2000);
		CHECK(z[i]);
		for (int j = 0; j < 6000; j++)
			if (z[i][j])
				TEST_FAIL("calloc(3, 2000) #%d: byte %d is %#x", i, j, z[i][j]);
	}
	for (int i = 0; i < NZ; i++)
		free(z[i]);

	/* realloc across the packer's bounds, both ways */
	unsigned char *r = malloc(1000);
	CHECK(r);
	mark(r, 1000, 4);
	static const size_t steps[] = { 5000, 5008, 4200, 20000, 9000, 3000, 12000, 16384, 16385 };
	size_t have = 1000;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t n = steps[i];
		r = realloc(r, n);
		CHECK(r);
		if (!marked(r, n < have ? n : have, 4) && n >= have)
			TEST_FAIL("realloc %zu -> %zu lost the data", have, n);
		CHECK(malloc_usable_size(r) >= n);
		mark(r, n, 4);
		have = n;
	}
	free(r);

	/* fork: the child reads its parent's packed blocks, allocates and
	 * frees its own (new slabs, emptied ones) */
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		int bad = 0;
		for (unsigned i = 0; i < NSQ; i++)
			if (!marked(sq[i], 4380, i))
				bad = 1;
		for (unsigned i = 0; i < NSQ; i += 2)
			free(sq[i]);
		unsigned char *mine[1000];
		for (unsigned i = 0; i < 1000; i++) {
			size_t n = 4097 + (i * 2654435761u) % 12288;
			mine[i] = malloc(n);
			if (!mine[i])
				_exit(3);
			mark(mine[i], n, i);
		}
		for (unsigned i = 0; i < 1000; i++) {
			if (!marked(mine[i], 4097 + (i * 2654435761u) % 12288, i))
				bad = 1;
			free(mine[i]);
		}
		_exit(bad ? 2 : 0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("fork child: status %#x", st);
	for (unsigned i = 0; i < NSQ; i++) {
		if (!marked(sq[i], 4380, i))
			TEST_FAIL("block %u of 4380 bytes lost its data (after the fork)", i);
		free(sq[i]);
	}
}

static void body(void)
{
	functional();
	pthread_t t[NTHREADS];
	stress_start(t);
	stress_finish(t);
}

int main(int argc, char **argv)
{
	(void)argc;
	heap_run(argv, PACK_OPS > 100000 ? 7000 : 280, body);
	long long heap = pp_stat("heap", NULL), ev = pp_stat("evictions", NULL);
	TEST_LOG("heap %lld, evictions %lld, swap-ins %lld", heap, ev,
		 pp_stat("faults_swapin", NULL));
	if (heap == 0)
		SKIP("the preload was built without jemalloc (libjemalloc-dev): no heap");
	CHECK(ev > 0);
	/* the packer's statistics in the line: SQLite's 200 slots of 4384
	 * bytes at least, 736 bytes each under jemalloc's 5120 */
	long long slots = pp_stat("pack_slots_peak", NULL), saved = pp_stat("pack_saved_peak", NULL);
	TEST_LOG("the packer's peak: %lld slots, %lld bytes saved against jemalloc's classes", slots,
		 saved);
	CHECK(slots >= 200 && saved >= 200 * (5120 - 4384));
	return test_pass("pager/heap-pack");
}
