/* SPDX-License-Identifier: MIT */
/*
 * The heap engages outside the allocator: the memory a program takes
 * outside the pager passes BYPASS_PAGER_HEAP_AFTER (1 MiB here) inside an
 * mmap call (a 2 MiB mapping, as jemalloc makes when it grows its arena,
 * holding its own locks), with the pager not made yet.  The heap must not
 * engage inside that call:
 * engaging makes the pager, whose threads' creation callocs (glibc's TLS
 * vector) back into jemalloc, which deadlocked on its held lock about once
 * in 1,000 starts of Debian's redis-server (tools/realworld).  A spy
 * loaded before the preload (tests/pager/lib/threadspy.c) wraps mmap and
 * pthread_create: no thread may be created while an mmap is under way on
 * the same thread, and at least one (the pager's) must be seen, with the
 * heap engaged and every block's bytes intact.  Before the fix, the
 * pager's threads were started from inside jemalloc's mmap.
 */
#include "preload-util.h"

#define NBLOCKS 100000
#define BLOCK 100 /* 10 MB of small blocks: the heap engages after 1 MiB */

static void run(void)
{
	/* 2 MiB mapped (below the region threshold: counted outside the
	 * pager), as jemalloc maps when it grows: the count passes 1 MiB
	 * inside this mmap call */
	unsigned char *map = mmap(NULL, 2ul << 20, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	pp_fill(map, 2ul << 20, 5);
	/* 8 MiB at once, more than jemalloc holds */
	unsigned char *big = malloc(8ul << 20);
	CHECK(big != NULL);
	pp_fill(big, 8ul << 20, 7);
	static unsigned char *b[NBLOCKS];
	for (size_t i = 0; i < NBLOCKS; i++) {
		b[i] = malloc(BLOCK);
		CHECK(b[i] != NULL);
		pp_fill(b[i], BLOCK, i);
	}
	for (size_t i = 0; i < NBLOCKS; i++)
		if (pp_check(b[i], BLOCK, i) != BLOCK)
			TEST_FAIL("block %zu changed", i);
	for (size_t i = 0; i < NBLOCKS; i++)
		free(b[i]);
	if (pp_check(big, 8ul << 20, 7) != 8ul << 20)
		TEST_FAIL("the 8 MiB block changed");
	free(big);
	if (pp_check(map, 2ul << 20, 5) != 2ul << 20)
		TEST_FAIL("the 2 MiB mapping changed");
	CHECK_EQ(munmap(map, 2ul << 20), 0);
}

int main(int argc, char **argv)
{
	pp_start(120);
	if (pp_preloaded()) {
		run();
		return 0;
	}
	(void)argc;
	if (!pp_malloc_reaches_preload())
		SKIP("a sanitizer's malloc comes first: the heap is not reached");
	char spy[1100], pre[2300], spyfile[256], spyenv[300];
	const char *b = getenv("BYPASS_BUILD");
	snprintf(spy, sizeof(spy), "%s/tests/pager/threadspy.so", b && *b ? b : ".");
	if (access(spy, R_OK))
		TEST_FAIL("no %s (tests/pager/extra.cmake builds it)", spy);
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s:%s", spy, pp_lib());
	snprintf(spyfile, sizeof(spyfile), "%s/spy", pp_tmpdir());
	snprintf(spyenv, sizeof(spyenv), "BYPASS_TEST_SPY_FILE=%s", spyfile);
	/* regions only from 64 MiB: jemalloc's own mappings are counted
	 * outside (the harness's 256 KiB would make them pager regions) */
	const char *env[] = { pre, spyenv, "BYPASS_PAGER_HEAP_AFTER=1M",
			      "BYPASS_PAGER_THRESHOLD=64M", NULL };
	pp_run_ok(argv, "run", env);

	int lines;
	long long heap = pp_stat("heap", &lines);
	CHECK_EQ(lines, 1);
	if (heap == 0)
		SKIP("the preload was built without jemalloc (libjemalloc-dev): no heap");
	FILE *f = fopen(spyfile, "r");
	CHECK(f != NULL);
	unsigned long threads = 0, inside = 0;
	CHECK_EQ(fscanf(f, "threads %lu inside-mmap %lu", &threads, &inside), 2);
	fclose(f);
	TEST_LOG("heap %lld; threads created %lu, inside an mmap %lu", heap, threads, inside);
	CHECK(threads >= 1);
	if (inside)
		TEST_FAIL("%lu thread(s) created inside an mmap call (the allocator's locks held)",
			  inside);
	return test_pass("pager/preload-heap-engage");
}
