/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the tests of every module. */
#ifndef BYPASS_TEST_CORE_TESTUTIL_H
#define BYPASS_TEST_CORE_TESTUTIL_H

#include "core/internal.h" /* BP_TSAN */

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Under ThreadSanitizer everything is ~10x slower: scale iteration counts. */
#define TEST_TSAN BP_TSAN

static inline uint64_t test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void test_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* Number of descriptors open in this process (to spot leaks). */
static inline int test_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/*
 * The path of a helper program built into build/tests/<module>/: found
 * through BYPASS_BUILD (set by CTest), else beside argv[0].
 */
static inline void test_helper_path(char *buf, size_t len, const char *argv0,
				    const char *module, const char *name)
{
	const char *b = getenv("BYPASS_BUILD");
	if (b && *b) {
		snprintf(buf, len, "%s/tests/%s/%s", b, module, name);
		if (access(buf, X_OK) == 0)
			return;
	}
	const char *slash = strrchr(argv0, '/');
	if (slash)
		snprintf(buf, len, "%.*s/%s", (int)(slash - argv0), argv0, name);
	else
		snprintf(buf, len, "./%s", name);
}

#endif
