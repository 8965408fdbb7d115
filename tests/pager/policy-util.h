/* SPDX-License-Identifier: MIT */
/* What the policy tests share: the test policy's path, and a worker thread
 * that writes and checks versioned pages of its part of a region. */
#ifndef BYPASS_TEST_PAGER_POLICY_UTIL_H
#define BYPASS_TEST_PAGER_POLICY_UTIL_H

#include "util.h"

#include <limits.h>
#include <stdatomic.h>

/* $BYPASS_BUILD/tests/pager/testpolicy.so (tests/pager/lib/testpolicy.c) */
static inline const char *test_policy_so(void)
{
	static char so[PATH_MAX];
	const char *b = getenv("BYPASS_BUILD");
	if (!b)
		SKIP("BYPASS_BUILD is not set (run through ctest)");
	snprintf(so, sizeof(so), "%s/tests/pager/testpolicy.so", b);
	return so;
}

/*
 * A worker: ops random accesses to pages [first, first + n) of m, a third
 * of them writes of a new version (ver[i] counts them), the rest checked
 * reads; every 400 operations a run of 48 pages is checked, ascending and
 * descending in turn.  Decrements *running (if set) when done.
 */
struct pol_worker {
	char *m;
	unsigned char *ver;
	size_t first, n;
	uint64_t seed;
	int ops;
	_Atomic int *running;
};

static inline void *pol_worker_main(void *arg)
{
	struct pol_worker *w = arg;
	uint64_t s = w->seed;
	for (int op = 0; op < w->ops; op++) {
		size_t i = w->first + xorshift(&s) % w->n;
		if (xorshift(&s) % 3 == 0) {
			w->ver[i]++;
			fill_page(w->m + i * PAGE, i, w->ver[i]);
		} else if (!page_ok(w->m + i * PAGE, i, w->ver[i])) {
			TEST_FAIL("page %zu: wrong data (version %u)", i, w->ver[i]);
		}
		if (op % 400 == 0)
			for (size_t k = 0; k < 48 && k < w->n; k++) {
				size_t j = op % 800 ? w->first + k : w->first + w->n - 1 - k;
				if (!page_ok(w->m + j * PAGE, j, w->ver[j]))
					TEST_FAIL("page %zu: wrong data", j);
			}
	}
	if (w->running)
		atomic_fetch_sub(w->running, 1);
	return NULL;
}

/* Every page of m[0, n) holds its version. */
static inline void pol_verify(const char *what, char *m, const unsigned char *ver, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!page_ok(m + i * PAGE, i, ver[i]))
			TEST_FAIL("%s: page %zu lost its data", what, i);
}

#endif
