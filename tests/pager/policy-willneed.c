/* SPDX-License-Identifier: MIT */
/*
 * WILLNEED on a full pager reads long runs back.  With the default
 * watermarks (budget 1024 pages: high 960, low 928) the resident pages sit
 * at the high watermark once the region is bigger than the budget, so the
 * prefetcher must evict to make room; it refuses to evict for more than
 * high - low pages at once, and it used to build reads of up to 128
 * consecutive slots: every such run was refused and the rest of the
 * request dropped, so a WILLNEED of pages evicted in order (consecutive
 * slots) read nothing, and a sequential scan under the prefetch policy
 * kept faulting once its window passed high - low.  Here 256 evicted
 * pages are asked for and must all come back without a fault; their data
 * is checked.  Upcall mode.
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "util.h"

#include <time.h>

#define BUDGET 1024ul
#define NPAGES (4 * BUDGET)
#define NW 256ul

int main(void)
{
	test_timeout(120);
	unsetenv("BYPASS_PAGER_HEAT");
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, NPAGES * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	/* read through: every page has its copy in swap and the resident
	 * ones are clean, so the prefetcher's evictions are drops, not
	 * write-backs it would have to wait for */
	for (size_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu has wrong data", i);
	CHECK_EQ(present_pages(m, NW * PAGE), 0); /* the first pages went first */
	struct bypass_pager_stats s0 = stats_of(p);
	CHECK(s0.resident_pages > BUDGET / 2);
	CHECK_EQ(bypass_pager_advise(p, m, NW * PAGE, BYPASS_PAGER_ADV_WILLNEED), 0);
	/* wait (up to 60 s: a hang, not a timing) for all of them; the
	 * prefetcher may drop a request it finds no room for at that moment
	 * (advice, not a promise): ask again every 100 ms.  Wait for the
	 * prefetch counter too: the prefetcher installs a run's pages
	 * (UFFDIO_COPY) before it counts them, so a slow machine (QEMU TCG)
	 * saw every page present and read the counter before it moved. */
	struct bypass_pager_stats s1;
	for (int n = 0;; n++) {
		size_t present = present_pages(m, NW * PAGE);
		s1 = stats_of(p);
		CHECK_EQ(s1.faults_swapin, s0.faults_swapin); /* no fault read them */
		if (present >= NW && s1.prefetch_pages - s0.prefetch_pages >= NW)
			break;
		if (n % 100 == 99 && present < NW)
			CHECK_EQ(bypass_pager_advise(p, m, NW * PAGE, BYPASS_PAGER_ADV_WILLNEED),
				 0);
		if (n > 60000)
			TEST_FAIL("WILLNEED: %zu of %lu pages read back in 60 s (%llu prefetched)",
				  present, NW,
				  (unsigned long long)(s1.prefetch_pages - s0.prefetch_pages));
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	/* here every page is present, the prefetcher counted at least NW,
	 * and no fault read one */
	for (size_t i = 0; i < NW; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu has wrong data", i);
	CHECK_EQ(stats_of(p).faults_swapin, s0.faults_swapin); /* no fault to read them */
	CHECK(s1.resident_peak <= BUDGET);
	for (size_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu has wrong data", i);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/policy-willneed");
}
