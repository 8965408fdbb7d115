/* SPDX-License-Identifier: MIT */
/*
 * preload-malloc: under libbypass-pager.so, large malloc, calloc, realloc
 * (growing, shrinking, across the threshold both ways), posix_memalign,
 * aligned_alloc, memalign, valloc, reallocarray and malloc_usable_size; large
 * anonymous mmaps with munmap of a part, mremap (grow with and without
 * MREMAP_MAYMOVE, shrink), madvise (DONTNEED reads zeros, FREE, WILLNEED) and
 * mprotect; all with a footprint four times the budget, and every byte
 * checked.  The statistics line proves the data went through the swap file.
 */
#include "pager/preload-util.h"

#include <malloc.h>

#define MB (1ul << 20)

static void malloc_part(void)
{
	size_t n = 4 * PP_BUDGET;
	unsigned char *a = malloc(n);
	CHECK(a);
	CHECK(((uintptr_t)a & 4095) == 0); /* a region, not glibc's chunk */
	CHECK(malloc_usable_size(a) >= n);
	pp_fill(a, n, 1);
	CHECK_EQ(pp_check(a, n, 1), n);

	unsigned char *z = calloc(2 * PP_BUDGET / 16, 16);
	CHECK(z && ((uintptr_t)z & 4095) == 0);
	for (size_t i = 0; i < 2 * PP_BUDGET; i++)
		if (z[i])
			TEST_FAIL("calloc byte %zu is %d", i, z[i]);
	volatile size_t huge = SIZE_MAX / 2;
	void *volatile none = calloc(huge, 4); /* volatile: clang folds the test */
	CHECK(none == NULL);

	/* grow (moves), shrink in place, shrink below the threshold */
	a = realloc(a, n + 2 * MB);
	CHECK(a);
	CHECK_EQ(pp_check(a, n, 1), n);
	unsigned char *b = realloc(a, n / 2);
	CHECK(b == a);
	CHECK_EQ(pp_check(b, n / 2, 1), n / 2);
	b = realloc(b, 100000);
	CHECK(b && ((uintptr_t)b & 4095) != 0); /* glibc's now */
	CHECK_EQ(pp_check(b, 100000, 1), 100000);
	/* a small block grows into a region */
	b = realloc(b, 3 * MB);
	CHECK(b && ((uintptr_t)b & 4095) == 0);
	CHECK_EQ(pp_check(b, 100000, 1), 100000);
	b = reallocarray(b, 2, 3 * MB);
	CHECK(b);
	CHECK_EQ(pp_check(b, 100000, 1), 100000);
	CHECK(reallocarray(b, huge, 4) == NULL && errno == ENOMEM);
	free(b);

	void *p = NULL;
	CHECK_EQ(posix_memalign(&p, MB, 2 * MB), 0);
	CHECK(((uintptr_t)p & (MB - 1)) == 0);
	pp_fill(p, 2 * MB, 2);
	void *p2 = p;
	CHECK_EQ(posix_memalign(&p2, 3, MB), EINVAL); /* not a power of two */
	CHECK_EQ(pp_check(p, 2 * MB, 2), 2 * MB);
	free(p);
	void *q = aligned_alloc(65536, MB);
	CHECK(q && ((uintptr_t)q & 65535) == 0);
	void *r = memalign(8192, MB);
	CHECK(r && ((uintptr_t)r & 8191) == 0);
	void *v = valloc(MB);
	CHECK(v && ((uintptr_t)v & 4095) == 0);
	pp_fill(q, MB, 3);
	pp_fill(r, MB, 4);
	pp_fill(v, MB, 5);
	CHECK_EQ(pp_check(q, MB, 3), MB);
	CHECK_EQ(pp_check(r, MB, 4), MB);
	CHECK_EQ(pp_check(v, MB, 5), MB);
	free(q);
	free(r);
	free(v);
	free(z);
	/* small requests still come from the next allocator (not a region:
	 * those are whole pages, at least the threshold; a page-aligned
	 * address alone says nothing, glibc hands one out now and then) */
	char *s = malloc(100);
	CHECK(s && malloc_usable_size(s) < PP_THRESHOLD);
	free(s);
	free(NULL);
}

static void mmap_part(void)
{
	size_t n = 4 * PP_BUDGET;
	unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	pp_fill(m, n, 6);
	/* a hole in the middle */
	CHECK_EQ(munmap(m + 4 * MB, MB), 0);
	CHECK_EQ(pp_check(m, 4 * MB, 6), 4 * MB);
	for (size_t i = 5 * MB; i < n; i++)
		if (m[i] != pp_pat(6, i))
			TEST_FAIL("byte %zu after the hole", i);
	CHECK(munmap(m + 1, 4096) < 0 && errno == EINVAL);
	/* the tail part: shrink, then grow without and with MAYMOVE */
	unsigned char *t = m + 5 * MB;
	size_t tl = n - 5 * MB;
	CHECK(mremap(t, tl, tl - MB, 0) == t);
	tl -= MB;
	CHECK(mremap(t, tl, tl + MB, 0) == MAP_FAILED && errno == ENOMEM);
	unsigned char *t2 = mremap(t, tl, tl + 2 * MB, MREMAP_MAYMOVE);
	CHECK(t2 != MAP_FAILED);
	for (size_t i = 0; i < tl; i++)
		if (t2[i] != pp_pat(6, i + 5 * MB))
			TEST_FAIL("byte %zu after mremap", i);
	for (size_t i = tl; i < tl + 2 * MB; i++)
		if (t2[i])
			TEST_FAIL("grown byte %zu is %d", i, t2[i]);
	CHECK_EQ(munmap(t2, tl + 2 * MB), 0);

	/* madvise on the head part */
	CHECK_EQ(madvise(m + MB, MB, MADV_DONTNEED), 0);
	for (size_t i = MB; i < 2 * MB; i++)
		if (m[i])
			TEST_FAIL("byte %zu not zero after MADV_DONTNEED", i);
	CHECK_EQ(pp_check(m, MB, 6), MB);
	for (size_t i = 2 * MB; i < 4 * MB; i++)
		if (m[i] != pp_pat(6, i))
			TEST_FAIL("byte %zu after DONTNEED of its neighbour", i);
	CHECK_EQ(madvise(m + 2 * MB, MB, MADV_FREE), 0);
	for (size_t i = 2 * MB; i < 3 * MB; i += 4096) /* kept or zero */
		CHECK(m[i] == pp_pat(6, i) || m[i] == 0);
	CHECK_EQ(madvise(m + 3 * MB, MB, MADV_WILLNEED), 0);
	CHECK_EQ(madvise(m, MB, MADV_SEQUENTIAL), 0);
	/* read-only and back */
	CHECK_EQ(mprotect(m, 4 * MB, PROT_READ), 0);
	CHECK_EQ(pp_check(m, MB, 6), MB);
	CHECK_EQ(mprotect(m, 4 * MB, PROT_READ | PROT_WRITE), 0);
	m[5] = 1;
	CHECK_EQ(m[5], 1);
	m[5] = pp_pat(6, 5);
	CHECK_EQ(pp_check(m, MB, 6), MB);
	for (size_t i = 3 * MB; i < 4 * MB; i++)
		if (m[i] != pp_pat(6, i))
			TEST_FAIL("byte %zu after WILLNEED", i);
	CHECK_EQ(munmap(m, 4 * MB), 0);

	/* small and shared mappings are the kernel's */
	void *sm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(sm != MAP_FAILED);
	CHECK_EQ(munmap(sm, 8192), 0);
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		if (pp_malloc_reaches_preload())
			malloc_part();
		else
			TEST_LOG("malloc part skipped: the sanitizer's malloc comes first");
		mmap_part();
		return 0;
	}
	(void)argc;
	pp_run_ok(argv, "run", NULL);
	int lines;
	long long ev = pp_stat("evictions", &lines), in = pp_stat("faults_swapin", NULL);
	long long mapped = pp_stat("mapped_pages", NULL);
	TEST_LOG("stats lines %d, evictions %lld, swap-ins %lld, mapped at exit %lld", lines,
		 ev, in, mapped);
	CHECK_EQ(lines, 1);
	CHECK(ev > 0 && in > 0);
	CHECK_EQ(mapped, 0); /* everything was given back */
	return test_pass("pager/preload-malloc");
}
