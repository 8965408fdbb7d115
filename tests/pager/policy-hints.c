/* SPDX-License-Identifier: MIT */
/*
 * Every hint of bypass_pager_advise() honoured, seen through the counters
 * and mincore():
 *  - SEQUENTIAL: a fault in the range starts the asynchronous prefetcher
 *    (prefetch_pages grows with no further access), under the default 2Q;
 *  - WILLNEED: the pages come back without a fault;
 *  - RANDOM: under the "prefetch" policy, a sequential scan of the range
 *    reads no page ahead (readahead_pages and prefetch_pages stay 0);
 *  - DONTNEED: the first eviction takes exactly those pages;
 *  - PRIORITY: a scan of 8x the budget evicts none of them; a pager whose
 *    pages are all PRIORITY still evicts (nothing else is left);
 *  - NORMAL clears a hint;
 * and the "prefetch" policy's stream detector: an ascending, a descending
 * and a stride-10 sequence of faults each get the next pages in their
 * direction read in without further faults.
 * Data is checked page by page throughout.  Upcall mode.
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_evict_settle */
#include "pager/policy.h"         /* bp_pf_idle */

#include <time.h>

#define BUDGET 64ul

static bypass_pager *pager(size_t pages)
{
	return new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, pages * PAGE);
}

/*
 * Wait until the prefetcher has done everything it was asked (asleep,
 * nothing queued, no read in flight) and no write-back is in flight.  No
 * deadline: a hang is the test's timeout, never a timing.  Before a fault
 * or a hint that starts a prefetch: the prefetcher drops the rest of a
 * request that finds no room below the high watermark (prefetch.c), and
 * the room is what the test's own faults and the prefetcher's earlier
 * reads still hold, so a request made while those are under way can be
 * dropped, and a wait for its pages never ended (the old 60 s limit, hit
 * on a loaded machine).  After it: what the prefetcher was going to
 * install is in, and nothing it was asked for earlier lands in a later
 * check (a request still queued made one of pages 0..15 present again
 * after a scan had evicted them: "present_pages(m, 16 * PAGE) == 0: 1 !=
 * 0").
 */
static void settle(bypass_pager *p)
{
	while (!bp_pf_idle(p)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	bp_evict_settle(p);
}

/* After the prefetcher is done, cond holds (what it was asked for is in). */
#define AFTER_PREFETCH(p, cond)                                                 \
	do {                                                                    \
		settle(p);                                                      \
		if (!(cond))                                                    \
			TEST_FAIL("the prefetcher is done, and not %s", #cond); \
	} while (0)

static void fill(char *m, size_t from, size_t n)
{
	for (size_t i = from; i < from + n; i++)
		fill_page(m + i * PAGE, i, 1);
}

static void verify(char *m, size_t from, size_t n)
{
	for (size_t i = from; i < from + n; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu has wrong data", i);
}

static void sequential_and_willneed(void)
{
	const size_t N = 512;
	bypass_pager *p = pager(N);
	char *m;
	CHECK_EQ(bypass_pager_map(p, N * PAGE, 0, (void **)&m), 0);
	fill(m, 0, N);
	/* read through: every page has its copy in swap, the resident ones
	 * are clean (the prefetcher's evictions are then immediate drops),
	 * and the first pages are evicted */
	verify(m, 0, N);
	CHECK_EQ(bypass_pager_advise(p, m, 256 * PAGE, BYPASS_PAGER_ADV_SEQUENTIAL), 0);
	settle(p);
	volatile char c = m[0]; /* one swap-in fault in the range */
	(void)c;
	AFTER_PREFETCH(p, stats_of(p).prefetch_pages > 0);
	verify(m, 0, N);
	struct bypass_pager_stats st = stats_of(p);
	TEST_LOG("sequential: %llu pages prefetched, %llu seen used, %llu swap-in faults",
		 (unsigned long long)st.prefetch_pages, (unsigned long long)st.prefetch_used,
		 (unsigned long long)st.faults_swapin);
	CHECK(st.resident_peak <= BUDGET);

	/* WILLNEED on 16 evicted pages: they come back without a fault */
	CHECK_EQ(bypass_pager_advise(p, m, N * PAGE, BYPASS_PAGER_ADV_NORMAL), 0);
	/* what verify()'s faults in the SEQUENTIAL range asked for is in
	 * before the scan below evicts pages 0..15: a request still queued
	 * would bring some of them back */
	settle(p);
	verify(m, 256, 256); /* pages 0..15 are evicted again */
	CHECK_EQ(present_pages(m, 16 * PAGE), 0);
	settle(p);
	uint64_t pf0 = stats_of(p).prefetch_pages;
	CHECK_EQ(bypass_pager_advise(p, m, 16 * PAGE, BYPASS_PAGER_ADV_WILLNEED), 0);
	AFTER_PREFETCH(p, present_pages(m, 16 * PAGE) == 16 &&
				  stats_of(p).prefetch_pages >= pf0 + 16);
	st = stats_of(p);
	uint64_t sw = st.faults_swapin;
	verify(m, 0, 16);
	CHECK_EQ(stats_of(p).faults_swapin, sw);
	CHECK(stats_of(p).resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

static void random_hint(void)
{
	const size_t N = 512;
	bypass_pager *p = pager(N);
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, N * PAGE, 0, (void **)&m), 0);
	CHECK_EQ(bypass_pager_advise(p, m, N * PAGE, BYPASS_PAGER_ADV_RANDOM), 0);
	fill(m, 0, N);
	verify(m, 0, N);
	verify(m, 0, N);
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.faults_swapin > 0);
	CHECK_EQ(st.readahead_pages, 0);
	CHECK_EQ(st.prefetch_pages, 0);
	CHECK_EQ(st.faultaround_pages, 0);
	/* NORMAL: read-ahead is back */
	CHECK_EQ(bypass_pager_advise(p, m, N * PAGE, BYPASS_PAGER_ADV_NORMAL), 0);
	verify(m, 0, N);
	verify(m, 0, N);
	st = stats_of(p);
	CHECK(st.readahead_pages + st.prefetch_pages > 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

static void dontneed(void)
{
	const size_t ND = 16, NO = 256;
	bypass_pager *p = pager(ND + NO);
	char *d, *o;
	CHECK_EQ(bypass_pager_map(p, ND * PAGE, 0, (void **)&d), 0);
	CHECK_EQ(bypass_pager_map(p, NO * PAGE, 0, (void **)&o), 0);
	volatile char c;
	for (size_t i = 0; i < ND; i++)
		c = d[i * PAGE]; /* clean zero pages */
	CHECK_EQ(present_pages(d, ND * PAGE), ND);
	CHECK_EQ(bypass_pager_advise(p, d, ND * PAGE, BYPASS_PAGER_ADV_DONTNEED), 0);
	size_t i = 0;
	while (stats_of(p).evictions == 0) {
		CHECK(i < NO);
		c = o[i++ * PAGE];
	}
	(void)c;
	/* the first round took the DONTNEED pages, all of them */
	CHECK_EQ(present_pages(d, ND * PAGE), 0);
	CHECK_EQ(present_pages(o, i * PAGE), i);
	/* contents are kept: write, evict, read */
	for (size_t k = 0; k < ND; k++)
		fill_page(d + k * PAGE, k, 1);
	for (size_t k = 0; k < NO; k++)
		c = o[k * PAGE];
	for (size_t k = 0; k < ND; k++)
		if (!page_ok(d + k * PAGE, k, 1))
			TEST_FAIL("DONTNEED page %zu lost its data", k);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

static void priority(void)
{
	const size_t NP = 24, NO = 8 * BUDGET;
	bypass_pager *p = pager(NP + NO + 128);
	char *pr, *o;
	CHECK_EQ(bypass_pager_map(p, NP * PAGE, 0, (void **)&pr), 0);
	CHECK_EQ(bypass_pager_map(p, NO * PAGE, 0, (void **)&o), 0);
	CHECK_EQ(bypass_pager_advise(p, pr, NP * PAGE, BYPASS_PAGER_ADV_PRIORITY), 0);
	fill(pr, 0, NP);
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < NO; k++) {
			fill_page(o + k * PAGE, 1000 + k, pass);
			CHECK_EQ(present_pages(pr, NP * PAGE), NP);
		}
	CHECK(stats_of(p).evictions > 0);
	verify(pr, 0, NP);
	for (size_t k = 0; k < NO; k++)
		if (!page_ok(o + k * PAGE, 1000 + k, 1))
			TEST_FAIL("page %zu has wrong data", k);
	/* nothing but PRIORITY pages: they are evicted after all */
	char *all;
	CHECK_EQ(bypass_pager_unmap(p, o, NO * PAGE), 0);
	CHECK_EQ(bypass_pager_map(p, 128 * PAGE, 0, (void **)&all), 0);
	CHECK_EQ(bypass_pager_advise(p, all, 128 * PAGE, BYPASS_PAGER_ADV_PRIORITY), 0);
	for (size_t k = 0; k < 128; k++)
		fill_page(all + k * PAGE, 5000 + k, 2);
	for (size_t k = 0; k < 128; k++)
		if (!page_ok(all + k * PAGE, 5000 + k, 2))
			TEST_FAIL("priority page %zu has wrong data", k);
	verify(pr, 0, NP);
	CHECK(stats_of(p).resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

/* The "prefetch" policy's streams: ascending, descending, constant stride. */
static void streams(void)
{
	const size_t N = 512;
	bypass_pager *p = pager(N);
	/* which pages the scans below leave resident is 2Q's order: access
	 * heat (BYPASS_PAGER_HEAT in the environment) would mark some of
	 * them referenced and keep them */
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, N * PAGE, 0, (void **)&m), 0);
	fill(m, 0, N);
	verify(m, 0, N); /* clean copies; pages below ~470 are evicted */
	/* only now: the scans above queue no prefetch that could still be
	 * under way below */
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	volatile char c;
	/* descending: 300, 299 -> 291..298 are read in */
	settle(p);
	CHECK_EQ(present_pages(m + 280 * PAGE, 21 * PAGE), 0);
	c = m[300 * PAGE];
	c = m[299 * PAGE];
	AFTER_PREFETCH(p, present_pages(m + 291 * PAGE, 8 * PAGE) == 8);
	/* ascending: 400, 401 (which maps 401-402, or only 401 if 402's slot
	 * does not follow) -> the 8 pages after them: 403..409 either way */
	CHECK_EQ(present_pages(m + 400 * PAGE, 11 * PAGE), 0);
	c = m[400 * PAGE];
	c = m[401 * PAGE];
	AFTER_PREFETCH(p, present_pages(m + 403 * PAGE, 7 * PAGE) == 7);
	/* stride 10: 100, 110, 120 -> 130, 140, ..., 200 */
	CHECK_EQ(present_pages(m + 100 * PAGE, 101 * PAGE), 0);
	c = m[100 * PAGE];
	c = m[110 * PAGE];
	c = m[120 * PAGE];
	(void)c;
	settle(p);
	for (size_t k = 130; k <= 200; k += 10)
		if (present_pages(m + k * PAGE, PAGE) != 1)
			TEST_FAIL("the prefetcher is done, and page %zu of the stride is "
				  "not in", k);
	CHECK_EQ(present_pages(m + 121 * PAGE, 9 * PAGE), 0); /* between strides */
	verify(m, 0, N);
	CHECK(stats_of(p).resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	streams();
	sequential_and_willneed();
	random_hint();
	dontneed();
	priority();
	tmpdir_cleanup();
	printf("ok\n");
	return 0;
}
