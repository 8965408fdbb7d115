/* SPDX-License-Identifier: MIT */
/* Helpers shared by the ipc tests. */
#ifndef BYPASS_TEST_IPC_UTIL_H
#define BYPASS_TEST_IPC_UTIL_H

#include <bypass/ipc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "core/testutil.h"

/* A service name no other test (or run) uses. */
static inline void test_svc_name(char *buf, size_t n, const char *tag)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(buf, n, "test-%s-%d-%lx", tag, (int)getpid(),
		 (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
}

/* Lines of /proc/self/maps that mention needle. */
static inline int test_count_maps(const char *needle)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

/* Resident kB of the mapping of /proc/self/smaps that holds p, or -1. */
static inline long test_rss_kb(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long rss = -1;
	bool in = false;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ' ') &&
		    line[strcspn(line, " ")] == ' ' && strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && sscanf(line, "Rss: %ld kB", &rss) == 1)
			break;
	}
	fclose(f);
	return rss;
}

/* A deterministic byte pattern for message i, byte j. */
static inline unsigned char test_pat(uint64_t i, size_t j)
{
	return (unsigned char)(i * 131 + j * 7 + (j >> 8));
}

static inline void test_fill(void *p, size_t len, uint64_t i)
{
	unsigned char *b = p;
	for (size_t j = 0; j < len; j++)
		b[j] = test_pat(i, j);
}

static inline int test_check(const void *p, size_t len, uint64_t i)
{
	const unsigned char *b = p;
	for (size_t j = 0; j < len; j++)
		if (b[j] != test_pat(i, j))
			return 0;
	return 1;
}

/* A small xorshift generator (deterministic per seed). */
static inline uint64_t test_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Accept one client within 10 s or fail. */
static inline bypass_ipc_conn *test_accept(bypass_ipc_service *svc)
{
	bypass_ipc_conn *c = NULL;
	int r = bypass_ipc_accept(svc, &c, 10000000000ll);
	if (r)
		TEST_FAIL("accept: %s", strerror(-r));
	return c;
}

/* Connect within the default handshake timeout, retrying while the
 * service is not there yet (a child racing its parent's listen). */
static inline bypass_ipc_conn *test_connect(const char *name,
					    const struct bypass_ipc_opts *o)
{
	bypass_ipc_conn *c = NULL;
	int r;
	for (int i = 0; i < 500; i++) {
		r = bypass_ipc_connect(name, o, &c);
		if (r != -ECONNREFUSED && r != -ENOENT)
			break;
		usleep(10000);
	}
	if (r)
		TEST_FAIL("connect %s: %s", name, strerror(-r));
	return c;
}

/* A test made of parts: each runs in turn, or only the one named by the
 * first argument (to run, or show failing, one part alone). */
struct test_part {
	const char *name;
	void (*fn)(void);
};

static inline void test_parts(int argc, char **argv, const struct test_part *p, size_t n)
{
	bool any = false;
	for (size_t i = 0; i < n; i++)
		if (argc < 2 || !strcmp(argv[1], p[i].name)) {
			p[i].fn();
			any = true;
		}
	if (!any)
		TEST_FAIL("no part named %s", argv[1]);
}

#endif
