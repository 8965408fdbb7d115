/* SPDX-License-Identifier: MIT */
/* The preload heap's tests (preload-heap, heap-pack): their common start. */
#ifndef BYPASS_TEST_PAGER_HEAP_UTIL_H
#define BYPASS_TEST_PAGER_HEAP_UTIL_H

#include "pager/preload-util.h"

/*
 * Under the preload: body() (where malloc reaches the preload), then exit 0.
 * Otherwise (the test itself): skip under the sanitizers (their malloc
 * comes first), and run this program again under the preload with the
 * heap engaged from the start; the caller then reads the statistics.
 */
static inline void heap_run(char **argv, unsigned timeout_sec, void (*body)(void))
{
	pp_start(timeout_sec);
	if (pp_preloaded()) {
		if (pp_malloc_reaches_preload())
			body();
		exit(0);
	}
	if (!pp_malloc_reaches_preload())
		SKIP("the sanitizer's malloc comes first: the heap is never reached");
	const char *env[] = { "BYPASS_PAGER_HEAP_AFTER=0", NULL };
	pp_run_ok(argv, "run", env);
}

#endif
