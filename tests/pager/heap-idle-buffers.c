/* SPDX-License-Identifier: MIT */
/*
 * The pager's own buffers outside the budget, given back when idle (issue
 * 32's peak resident set: SQLite's program under the preload held 0.8 MiB
 * of the prefetcher's read buffers and 0.2 MiB of the sampler's park at its
 * peak, window 7, none of it counted in the budget).
 *
 * The prefetcher: under the "prefetch" policy at a budget of BUDGET pages,
 * a region of 4x the budget is written, then read in order: the prefetch
 * thread reads runs of 32 pages into its buffers (one mapping of 4 MiB,
 * found in /proc/self/smaps as the one that appears with the thread).  Once
 * the thread is idle, at most 1/64 of the budget of them may stay resident
 * (BUDGET / 64 pages); before, every buffer a burst had used stayed (one
 * run alone is 32 pages).  The sampler (without its thread: the test parks
 * and puts back pages itself): 64 pages parked fill 64 of the park's slots
 * (its 2 MiB mapping, MADV_DONTFORK); once they are put back, none of the
 * park stays resident.  Every byte of the region is checked after each.
 *
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "util.h"
#include "pager/pager_internal.h"
#include "pager/policy.h" /* bp_pf_idle */
#include "pager/sample.h" /* bp_sample_start, _park_now, _unpark_now */

#include <sched.h>
#include <stdio.h>
#include <string.h>

#define BUDGET 1024ul
#define NPAGES (4 * BUDGET)
#define MAXMAPS 4096

struct map {
	uintptr_t lo;
	unsigned long kb, rss;
	bool anon, dc;
};

/* /proc/self/smaps: every mapping's start, size, Rss, whether anonymous
 * and MADV_DONTFORK ("dc"); how many. */
static int maps(struct map *m)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	CHECK(f);
	char line[512];
	int n = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perm[8];
		unsigned long ino;
		int name = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perm, &ino, &name) >= 4 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if (++n == MAXMAPS)
				TEST_FAIL("more than %d mappings", MAXMAPS);
			m[n] = (struct map){ .lo = lo, .kb = (hi - lo) >> 10,
					     .anon = ino == 0 && (!name || line[name] == 0 ||
								  line[name] == '\n') };
		} else if (n >= 0 && !strncmp(line, "Rss:", 4)) {
			m[n].rss = strtoul(line + 4, NULL, 10);
		} else if (n >= 0 && !strncmp(line, "VmFlags:", 8)) {
			m[n].dc = strstr(line, " dc") != NULL;
		}
	}
	fclose(f);
	return n + 1;
}

static struct map before[MAXMAPS], after[MAXMAPS];
static int nbefore;

static void snapshot(void)
{
	nbefore = maps(before);
}

/* The one anonymous mapping of kb KiB (and MADV_DONTFORK if dc) that was
 * not there at snapshot(): its Rss in KiB; skips if there is not exactly
 * one. */
static unsigned long new_rss(unsigned long kb, bool dc, const char *what)
{
	int n = maps(after), found = -1;
	for (int i = 0; i < n; i++) {
		if (!after[i].anon || after[i].kb != kb || (dc && !after[i].dc))
			continue;
		bool old = false;
		for (int j = 0; j < nbefore && !old; j++)
			old = before[j].lo == after[i].lo && before[j].kb == after[i].kb;
		if (old)
			continue;
		if (found >= 0)
			SKIP("two new anonymous mappings of %lu KiB: which is %s is not known", kb,
			     what);
		found = i;
	}
	if (found < 0)
		SKIP("no new anonymous mapping of %lu KiB: %s not found", kb, what);
	return after[found].rss;
}

static void settle(bypass_pager *p)
{
	while (!bp_pf_idle(p))
		sched_yield();
	bp_evict_settle(p);
}

static void check_all(char *m, uint64_t v)
{
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("page %lu does not hold version %lu", (unsigned long)i,
				  (unsigned long)v);
}

/* A pager of BUDGET pages (synchronous readahead off: only the prefetcher
 * reads ahead) and a region of n pages of it, each page filled. */
static bypass_pager *make(uint64_t n, char **m)
{
	bypass_pager *p = NULL;
	CHECK_EQ(bypass_pager_create(&(struct bypass_pager_config){ .budget = BUDGET * PAGE,
								    .swap_size = NPAGES * PAGE,
								    .swap_path = tmpdir(),
								    .flags = BYPASS_PAGER_SWAP_TEMP,
								    .mode = BYPASS_PAGER_UPCALL,
								    .readahead = 1 },
				     &p),
		 0);
	CHECK_EQ(bypass_pager_map(p, n * PAGE, 0, (void **)m), 0);
	for (uint64_t i = 0; i < n; i++)
		fill_page(*m + i * PAGE, i, 1);
	return p;
}

static void prefetcher(void)
{
	char *m;
	bypass_pager *p = make(NPAGES, &m);
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	snapshot();
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	CHECK_EQ(bp_pf_start(p), 0);
	struct bypass_pager_stats s0 = stats_of(p);
	check_all(m, 1); /* in order: the prefetcher's stream */
	settle(p);
	struct bypass_pager_stats s1 = stats_of(p);
	unsigned long rss = new_rss(4096, false, "the prefetcher's buffers");
	uint64_t pf = s1.prefetch_pages - s0.prefetch_pages;
	TEST_LOG("prefetcher: %lu pages prefetched; idle, its buffers hold %lu KiB (at most %lu)",
		 (unsigned long)pf, rss, BUDGET / 64 * PAGE / 1024);
	if (pf < 64)
		SKIP("the prefetcher read %lu pages: nothing to give back", (unsigned long)pf);
	if (rss > BUDGET / 64 * PAGE / 1024)
		TEST_FAIL("idle, the prefetcher's buffers hold %lu KiB, more than 1/64 of the "
			  "budget (%lu KiB)", rss, BUDGET / 64 * PAGE / 1024);
	check_all(m, 1);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

static void sampler(void)
{
	char *m;
	bypass_pager *p = make(128, &m);
	snapshot();
	CHECK_EQ(bp_sample_start(p, false), 0);
	uint32_t parked = bp_sample_park_now(p, (uintptr_t)m, 64);
	unsigned long rss_parked = new_rss(2048, true, "the sampler's park");
	bp_sample_unpark_now(p);
	unsigned long rss = new_rss(2048, true, "the sampler's park");
	TEST_LOG("sampler: %u pages parked, the park holds %lu KiB; put back, %lu KiB", parked,
		 rss_parked, rss);
	if (parked < 32)
		SKIP("only %u pages parked", parked);
	CHECK(rss_parked >= parked * PAGE / 1024);
	if (rss)
		TEST_FAIL("every page put back, the park still holds %lu KiB", rss);
	for (uint64_t i = 0; i < 128; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %lu lost its data", (unsigned long)i);
	CHECK_EQ(bypass_pager_unmap(p, m, 128 * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	sampler();
	prefetcher();
	return test_pass("pager/heap-idle-buffers");
}
