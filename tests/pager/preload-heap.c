/* SPDX-License-Identifier: MIT */
/*
 * preload-heap: small allocations under the budget (the preload's heap,
 * jemalloc over pager regions; BYPASS_PAGER_HEAP_AFTER=0 engages it from
 * the start).  Every byte right under each path: many small mallocs of
 * varied sizes, calloc reads zeros, realloc growing and shrinking and across
 * the threshold both ways, posix_memalign / aligned_alloc / memalign /
 * valloc alignments, malloc_usable_size, blocks freed by another thread,
 * threads allocating at once, small anonymous mmaps (an interpreter's
 * arenas) as regions; a footprint eight times the budget.  The resident
 * set stays near the budget (VmHWM grows by less than the budget plus
 * 16 MiB of slack for the process's own bookkeeping), and the statistics
 * line shows the heap engaged and pages evicted and read back (a fork,
 * which reads every evicted page back, is tests/pager/preload-fork's).  With BYPASS_PAGER_HEAP=0 small requests stay the next
 * allocator's.  Skips where the preload was built without jemalloc.
 * TEST_LABELS: threads
 */
#include "pager/heap-util.h"

#include <malloc.h>
#include <pthread.h>

#define NSMALL 60000u
#define FOOT (8 * PP_BUDGET)

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	size_t k = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, k))
			v = atol(line + k);
	fclose(f);
	return v;
}

/* A block of n bytes for index i: pattern k, checked by check_block. */
static void fill_block(unsigned char *b, size_t n, size_t i)
{
	for (size_t j = 0; j < n; j++)
		b[j] = (unsigned char)(i * 31 + j * 7 + 3);
}

static bool check_block(const unsigned char *b, size_t n, size_t i)
{
	for (size_t j = 0; j < n; j++)
		if (b[j] != (unsigned char)(i * 31 + j * 7 + 3))
			return false;
	return true;
}

static size_t size_of(size_t i)
{
	return 16 + (i * 2654435761u) % 1000; /* 16 .. 1015 bytes */
}

struct share {
	unsigned char **blk;
	size_t from, to;
	int ok;
};

/* Frees (after checking) blocks another thread allocated. */
static void *free_others(void *arg)
{
	struct share *s = arg;
	s->ok = 1;
	for (size_t i = s->from; i < s->to; i++) {
		if (!check_block(s->blk[i], size_of(i), i))
			s->ok = 0;
		free(s->blk[i]);
		s->blk[i] = NULL;
	}
	return NULL;
}

/* Allocates, fills, checks and frees on its own. */
static void *churn(void *arg)
{
	size_t seed = (size_t)(uintptr_t)arg;
	unsigned char *keep[512];
	for (size_t i = 0; i < 512; i++) {
		keep[i] = malloc(size_of(seed + i) * 4);
		if (!keep[i])
			return (void *)1;
		fill_block(keep[i], size_of(seed + i) * 4, seed + i);
	}
	for (size_t i = 0; i < 512; i++) {
		if (!check_block(keep[i], size_of(seed + i) * 4, seed + i))
			return (void *)1;
		free(keep[i]);
	}
	return NULL;
}

static void heap_part(void)
{
	long rss0 = status_kb("VmRSS:");
	unsigned char **blk = malloc(NSMALL * sizeof(*blk));
	CHECK(blk);
	size_t total = 0;
	for (size_t i = 0; i < NSMALL; i++) {
		blk[i] = malloc(size_of(i));
		CHECK(blk[i]);
		CHECK(malloc_usable_size(blk[i]) >= size_of(i));
		fill_block(blk[i], size_of(i), i);
		total += size_of(i);
	}
	/* bigger small blocks too: the footprint well above the budget */
	size_t nbig = (FOOT - total) / 65536 + 1;
	unsigned char **big = malloc(nbig * sizeof(*big));
	CHECK(big);
	for (size_t i = 0; i < nbig; i++) {
		big[i] = malloc(65536);
		CHECK(big[i]);
		fill_block(big[i], 65536, 7 * i);
	}
	for (size_t i = 0; i < NSMALL; i++)
		if (!check_block(blk[i], size_of(i), i))
			TEST_FAIL("small block %zu lost its data", i);
	for (size_t i = 0; i < nbig; i++)
		if (!check_block(big[i], 65536, 7 * i))
			TEST_FAIL("64 KiB block %zu lost its data", i);

	/* calloc reads zeros, also in reused memory */
	size_t nre = nbig < 64 ? nbig : 64;
	for (size_t i = 0; i < nre; i++)
		free(big[i]);
	for (size_t i = 0; i < nre; i++) {
		unsigned char *z = calloc(65536 / 8, 8);
		CHECK(z);
		for (size_t j = 0; j < 65536; j++)
			if (z[j])
				TEST_FAIL("calloc byte %zu is %d", j, z[j]);
		big[i] = z;
		fill_block(big[i], 65536, 7 * i);
	}

	/* realloc: grow, shrink, across the threshold and back */
	unsigned char *r = malloc(100);
	fill_block(r, 100, 5);
	r = realloc(r, 5000);
	CHECK(r && check_block(r, 100, 5));
	fill_block(r, 5000, 5);
	r = realloc(r, 2 * PP_THRESHOLD); /* a region now */
	CHECK(r && ((uintptr_t)r & 4095) == 0 && check_block(r, 5000, 5));
	fill_block(r, 2 * PP_THRESHOLD, 5);
	r = realloc(r, 3000); /* small again: from the heap */
	CHECK(r && check_block(r, 3000, 5));
	r = realloc(r, 10);
	CHECK(r && check_block(r, 10, 5));
	CHECK(realloc(r, 0) == NULL);

	/* alignments */
	void *a = NULL;
	CHECK_EQ(posix_memalign(&a, 64, 1000), 0);
	CHECK(((uintptr_t)a & 63) == 0);
	fill_block(a, 1000, 9);
	void *a2 = aligned_alloc(4096, 8192);
	CHECK(a2 && ((uintptr_t)a2 & 4095) == 0);
	fill_block(a2, 8192, 10);
	void *a3 = memalign(256, 300);
	CHECK(a3 && ((uintptr_t)a3 & 255) == 0);
	fill_block(a3, 300, 11);
	void *a4 = valloc(100);
	CHECK(a4 && ((uintptr_t)a4 & 4095) == 0);
	fill_block(a4, 100, 12);
	CHECK(check_block(a, 1000, 9) && check_block(a2, 8192, 10) && check_block(a3, 300, 11) &&
	      check_block(a4, 100, 12));
	free(a);
	free(a2);
	free(a3);
	free(a4);

	/* half the small blocks freed by another thread, threads at once */
	struct share s = { blk, 0, NSMALL / 2, 0 };
	pthread_t t[5];
	CHECK_EQ(pthread_create(&t[0], NULL, free_others, &s), 0);
	for (int i = 1; i < 5; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i * 100000)), 0);
	void *ret;
	CHECK_EQ(pthread_join(t[0], NULL), 0);
	CHECK(s.ok);
	for (int i = 1; i < 5; i++) {
		CHECK_EQ(pthread_join(t[i], &ret), 0);
		CHECK(ret == NULL);
	}
	for (size_t i = NSMALL / 2; i < NSMALL; i++) {
		if (!check_block(blk[i], size_of(i), i))
			TEST_FAIL("small block %zu lost its data (after the threads)", i);
		free(blk[i]);
	}
	for (size_t i = 0; i < nbig; i++) {
		if (!check_block(big[i], 65536, 7 * i))
			TEST_FAIL("64 KiB block %zu lost its data (at the end)", i);
		free(big[i]);
	}
	free(big);
	free(blk);

	/* small anonymous mmaps: regions of their own */
	unsigned char *mm[32];
	for (int i = 0; i < 32; i++) {
		mm[i] = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			     0);
		CHECK(mm[i] != MAP_FAILED);
		fill_block(mm[i], 65536, 100 + (size_t)i);
	}
	for (int i = 0; i < 32; i++) {
		CHECK(check_block(mm[i], 65536, 100 + (size_t)i));
		CHECK_EQ(munmap(mm[i], 65536), 0);
	}

	/* the parent checks the peak once it knows the heap was engaged */
	long hwm = status_kb("VmHWM:");
	char path[256];
	snprintf(path, sizeof(path), "%s/rss", pp_tmpdir());
	FILE *f = fopen(path, "w");
	CHECK(f);
	fprintf(f, "%ld %ld %zu\n", rss0, hwm, total + nbig * 65536);
	fclose(f);
}

int main(int argc, char **argv)
{
	(void)argc;
	heap_run(argv, 120, heap_part);
	int lines;
	long long heap = pp_stat("heap", &lines), ev = pp_stat("evictions", NULL);
	long long in = pp_stat("faults_swapin", NULL), peak = pp_stat("resident_peak", NULL);
	TEST_LOG("heap %lld, stats lines %d, evictions %lld, swap-ins %lld, resident peak %lld "
		 "pages", heap, lines, ev, in, peak);
	CHECK(lines >= 1);
	if (heap == 0)
		SKIP("the preload was built without jemalloc (libjemalloc-dev): no heap");
	CHECK(ev > 0 && in > 0);
	CHECK(peak <= (long long)(PP_BUDGET / 4096));
	char path[256];
	snprintf(path, sizeof(path), "%s/rss", pp_tmpdir());
	FILE *f = fopen(path, "r");
	CHECK(f);
	long rss0 = 0, hwm = 0;
	size_t foot = 0;
	CHECK_EQ(fscanf(f, "%ld %ld %zu", &rss0, &hwm, &foot), 3);
	fclose(f);
	TEST_LOG("resident before %ld KiB, peak %ld KiB: +%ld KiB for a footprint of %zu KiB at "
		 "a budget of %lu KiB", rss0, hwm, hwm - rss0, foot >> 10, PP_BUDGET >> 10);
	CHECK(foot > 4 * PP_BUDGET);
	CHECK(hwm - rss0 <= (long)((PP_BUDGET + (16ul << 20)) >> 10));
	/* BYPASS_PAGER_HEAP=0: small requests stay outside, the run still right */
	pp_stats_reset();
	const char *off[] = { "BYPASS_PAGER_HEAP=0", "BYPASS_PAGER_HEAP_AFTER=0", NULL };
	pp_run_ok(argv, "run-off", off);
	CHECK_EQ(pp_stat("heap", NULL), 0);
	return test_pass("pager/preload-heap");
}
