/* SPDX-License-Identifier: MIT */
/*
 * preload-threads: four threads allocate, grow, fill, read into (from a
 * pipe) and free large blocks at the same time under the preload, with a
 * footprint of four budgets each; every byte is checked.
 */
#include "pager/preload-util.h"

#include <pthread.h>

#define T 4
#define N (2 * PP_BUDGET)

static void *worker(void *arg)
{
	size_t k = (size_t)(uintptr_t)arg;
	int p[2];
	CHECK_EQ(pipe(p), 0);
	for (int round = 0; round < 2; round++) {
		unsigned char *m;
		if (pp_malloc_reaches_preload()) {
			m = malloc(N / 2);
			CHECK(m);
			m = realloc(m, N);
		} else {
			m = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		}
		CHECK(m && m != MAP_FAILED);
		pp_fill(m, N, k + round);
		unsigned char small[4096];
		pp_fill(small, sizeof(small), k + 100);
		CHECK_EQ(write(p[1], small, sizeof(small)), (ssize_t)sizeof(small));
		CHECK_EQ(read(p[0], m + N / 2 + 3, sizeof(small)), (ssize_t)sizeof(small));
		pp_fill(small, sizeof(small), k + 100);
		CHECK(!memcmp(m + N / 2 + 3, small, sizeof(small)));
		memcpy(m + N / 2 + 3, small, 0);
		for (size_t i = 0; i < N; i++) {
			if (i == N / 2 + 3) {
				i += sizeof(small) - 1;
				continue;
			}
			if (m[i] != pp_pat(k + round, i))
				TEST_FAIL("thread %zu byte %zu", k, i);
		}
		if (pp_malloc_reaches_preload())
			free(m);
		else
			CHECK_EQ(munmap(m, N), 0);
	}
	close(p[0]);
	close(p[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		/* Settle the sanitizer question before the threads ask it. */
		(void)pp_malloc_reaches_preload();
		pthread_t t[T];
		for (size_t i = 0; i < T; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i), 0);
		for (int i = 0; i < T; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	(void)argc;
	pp_run_ok(argv, "run", NULL);
	long long ev = pp_stat("evictions", NULL), mapped = pp_stat("mapped_pages", NULL);
	TEST_LOG("evictions %lld, mapped at exit %lld", ev, mapped);
	CHECK(ev > 0);
	CHECK_EQ(mapped, 0);
	return test_pass("pager/preload-threads");
}
