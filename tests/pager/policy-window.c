/* SPDX-License-Identifier: MIT */
/*
 * The "window" policy as the PageRank benchmark uses it: a CSR graph whose
 * per-vertex arrays (offsets, ranks) are PRIORITY and whose edge array,
 * 4x the budget, is SEQUENTIAL; pull iterations stream the edges from the
 * start each time (the wrap).  Each iteration's result must equal the one
 * computed with the same arrays in ordinary memory, no vertex page may be
 * evicted (mincore after every vertex), the edge stream must be prefetched,
 * and the budget holds.  The same run under "2q" must give the same
 * results (its counters are logged beside).
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "util.h"

#include <time.h>

#define BUDGET 256ul                  /* pages */
#define NV 8192ul                     /* vertices */
#define DEG 128ul                     /* edges per vertex */
#define NE (NV * DEG)                 /* 4 MiB of uint32: 4x the budget */
#define ITERS 3

static uint32_t edge_of(uint64_t e)
{
	uint64_t x = e * 0x9e3779b97f4a7c15ull;
	return (uint32_t)((x >> 29) % NV);
}

/* pull iterations over (off, rank, edges); returns a checksum */
static double iterate(uint64_t *off, double *rank, double *next, uint32_t *edges,
		      void *prio, size_t prio_len)
{
	double sum = 0;
	for (int it = 0; it < ITERS; it++) {
		for (uint64_t v = 0; v < NV; v++) {
			double s = 0;
			for (uint64_t e = off[v]; e < off[v + 1]; e++)
				s += rank[edges[e]];
			next[v] = 0.15 / NV + 0.85 * s / DEG;
			if (prio && v % 1024 == 0 && present_pages(prio, prio_len) != prio_len / PAGE)
				TEST_FAIL("iteration %d, vertex %lu: a PRIORITY page was evicted",
					  it, (unsigned long)v);
		}
		for (uint64_t v = 0; v < NV; v++) {
			rank[v] = next[v];
			sum += next[v] * (double)(v % 7 + 1);
		}
	}
	return sum;
}

static size_t round_pages(size_t b)
{
	return (b + PAGE - 1) / PAGE * PAGE;
}

static double run(const char *policy, double want)
{
	size_t voff = round_pages((NV + 1) * 8), vr = round_pages(NV * 8), ve = NE * 4;
	size_t prio_len = voff + 2 * vr;
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, prio_len + ve + PAGE);
	CHECK_EQ(bypass_pager_set_policy(p, policy), 0);
	char *vert, *ed;
	CHECK_EQ(bypass_pager_map(p, prio_len, 0, (void **)&vert), 0);
	CHECK_EQ(bypass_pager_map(p, ve, 0, (void **)&ed), 0);
	uint64_t *off = (uint64_t *)vert;
	double *rank = (double *)(vert + voff), *next = (double *)(vert + voff + vr);
	uint32_t *edges = (uint32_t *)ed;
	int window = !strcmp(policy, "window");
	if (window) {
		CHECK_EQ(bypass_pager_advise(p, vert, prio_len, BYPASS_PAGER_ADV_PRIORITY), 0);
		CHECK_EQ(bypass_pager_advise(p, ed, ve, BYPASS_PAGER_ADV_SEQUENTIAL), 0);
	}
	for (uint64_t v = 0; v <= NV; v++)
		off[v] = v * DEG;
	for (uint64_t v = 0; v < NV; v++)
		rank[v] = 1.0 / NV, next[v] = 0;
	for (uint64_t e = 0; e < NE; e++)
		edges[e] = edge_of(e);
	double got = iterate(off, rank, next, edges, window ? vert : NULL, prio_len);
	struct bypass_pager_stats st = stats_of(p);
	TEST_LOG("%-6s swap-in faults %llu, prefetched %llu (used %llu), evictions %llu, "
		 "peak %llu", policy, (unsigned long long)st.faults_swapin,
		 (unsigned long long)st.prefetch_pages, (unsigned long long)st.prefetch_used,
		 (unsigned long long)st.evictions, (unsigned long long)st.resident_peak);
	if (got != want)
		TEST_FAIL("%s: checksum %.17g, want %.17g", policy, got, want);
	CHECK(st.resident_peak <= BUDGET);
	if (window) {
		/* the edges are prefetched ahead of a fault, checked without
		 * depending on who won the races during the iterations: a fault
		 * on an edge page with nothing resident after it reads in page
		 * k + 8, beyond any synchronous read-ahead (8 pages at most) */
		size_t k = 0, np = ve / PAGE;
		while (k + 17 < np && present_pages(ed + k * PAGE, 17 * PAGE))
			k++;
		CHECK(k + 17 < np);
		uint64_t before = stats_of(p).prefetch_pages;
		volatile char c = ed[k * PAGE];
		(void)c;
		for (int n = 0; stats_of(p).prefetch_pages == before ||
				present_pages(ed + (k + 8) * PAGE, PAGE) == 0; n++) {
			if (n > 60000)
				TEST_FAIL("edge page %zu + 8 was not prefetched in 60 s", k);
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	CHECK_EQ(bypass_pager_destroy(p), 0);
	return got;
}

int main(void)
{
	/* the reference, in ordinary memory */
	uint64_t *off = malloc((NV + 1) * 8);
	double *rank = malloc(NV * 8), *next = malloc(NV * 8);
	uint32_t *edges = malloc(NE * 4);
	CHECK(off && rank && next && edges);
	for (uint64_t v = 0; v <= NV; v++)
		off[v] = v * DEG;
	for (uint64_t v = 0; v < NV; v++)
		rank[v] = 1.0 / NV;
	for (uint64_t e = 0; e < NE; e++)
		edges[e] = edge_of(e);
	double want = iterate(off, rank, next, edges, NULL, 0);
	free(off), free(rank), free(next), free(edges);
	run("window", want);
	run("2q", want);
	tmpdir_cleanup();
	printf("ok\n");
	return 0;
}
