/* SPDX-License-Identifier: MIT */
/*
 * The clock policy and access samples.  A small set of pages is written,
 * then read scans of 8x the budget go by; access samples
 * (bp_policy_access, what the access-heat sampler calls) mark the small set
 * referenced after every page of the scan.  Under "clock" the hand finds
 * them referenced every time it comes round, so none is evicted; without
 * the samples they are evicted like the rest.  The samples reach the
 * policy's on_access (the test policy counts them) and count prefetched
 * pages as used; a WILLNEED after a prefetching scan is not blocked by the
 * scan's prefetched pages that nobody used.  Data is checked throughout.
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "policy-util.h"
#include "pager/evict.h"
#include "pager/policy.h"

#include <dlfcn.h>
#include <time.h>

#define BUDGET 64ul
#define NHOT 8ul
#define NSCAN (8 * BUDGET)

static size_t run(bool samples)
{
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, (NHOT + NSCAN) * PAGE);
	CHECK_EQ(bypass_pager_set_policy(p, "clock"), 0);
	char *hot, *scan;
	CHECK_EQ(bypass_pager_map(p, NHOT * PAGE, 0, (void **)&hot), 0);
	CHECK_EQ(bypass_pager_map(p, NSCAN * PAGE, 0, (void **)&scan), 0);
	for (size_t i = 0; i < NHOT; i++)
		fill_page(hot + i * PAGE, i, 1);
	for (size_t i = 0; i < NSCAN; i++) {
		fill_page(scan + i * PAGE, 100 + i, 1);
		if (samples)
			bp_policy_access(p, (uintptr_t)hot, NHOT, BYPASS_PAGER_ACCESSED);
	}
	if (samples && present_pages(hot, NHOT * PAGE) < NHOT)
		TEST_LOG("(some hot pages were evicted while the scan was written)");
	for (size_t i = 0; samples && i < NHOT; i++) /* fault back the evicted ones */
		if (!page_ok(hot + i * PAGE, i, 1))
			TEST_FAIL("hot page %zu lost its data", i);
	/*
	 * Write-backs settled first (bp_evict_settle: every write in flight
	 * done, its pages dropped).  Why: a page under write-back is off the
	 * lists, and a fault that finds the budget (64 pages) full waits for
	 * completions; when they free too few pages for it (a readahead
	 * window wants 9), it makes a forced round, which takes referenced
	 * pages too: the hot ones.  Left in flight from the write pass, up
	 * to 48 pages (budget - low) can be under write-back, so slow writes
	 * (seen under ASan with another test running) filled the budget and
	 * the first read pass took the hot pages on a timing.  Settled, what
	 * is written back later is the scan's dirty pages still resident (at
	 * most high + 1 - 8 hot = 25), and every fault that takes the
	 * resident count past high (32) first evicts the pages not under
	 * write-back down to low (16), so the count stays at most 25 + 16 + 9
	 * = 50: the budget is never full, no forced round happens, and in
	 * both read passes the hand finds a scan page to take in one turn
	 * however slow the writes.  Both passes are judged, as before 3e8db20.
	 */
	bp_evict_settle(p);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < NSCAN; i++) {
			if (!page_ok(scan + i * PAGE, 100 + i, 1))
				TEST_FAIL("page %zu lost its data", i);
			if (samples)
				bp_policy_access(p, (uintptr_t)hot, NHOT, BYPASS_PAGER_ACCESSED);
		}
	size_t present = present_pages(hot, NHOT * PAGE);
	for (size_t i = 0; i < NHOT; i++)
		if (!page_ok(hot + i * PAGE, i, 1))
			TEST_FAIL("hot page %zu lost its data", i);
	for (size_t i = 0; i < NSCAN; i++)
		if (!page_ok(scan + i * PAGE, 100 + i, 1))
			TEST_FAIL("page %zu lost its data", i);
	CHECK(stats_of(p).resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	return present;
}

int main(void)
{
	test_timeout(120);
	size_t with = run(true), without = run(false);
	TEST_LOG("clock: %zu of %zu sampled pages stayed resident, %zu without samples", with,
		 NHOT, without);
	CHECK_EQ(with, NHOT);
	CHECK(without < NHOT);

	/* samples reach the policy and count prefetched pages as used */
	const char *so = test_policy_so();
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, 512 * PAGE);
	CHECK_EQ(bypass_pager_set_policy(p, so), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, 512 * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < 512; i++)
		fill_page(m + i * PAGE, i, 1);
	for (size_t i = 0; i < 512; i++)
		CHECK(page_ok(m + i * PAGE, i, 1)); /* clean copies; 0.. evicted */
	/* 16 pages the scan evicted (the first run of 16 not resident once
	 * the prefetcher has nothing left to do: requests the scan's faults
	 * queued may still bring some back until then); WILLNEED brings them
	 * in through the prefetcher.  Wait for the prefetcher to be idle again
	 * with the 16 resident; if its work evicted some of them, ask again.
	 * No timing: the harness's time limit ends a run that never gets
	 * there. */
	while (!bp_pf_idle(p)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	char *w = NULL;
	for (size_t i = 0; i + 16 <= 512 && !w; i++)
		if (!present_pages(m + i * PAGE, 16 * PAGE))
			w = m + i * PAGE;
	if (!w)
		TEST_FAIL("no 16 evicted pages in a row after a scan of 512 at a budget of 64");
	CHECK_EQ(bypass_pager_advise(p, w, 16 * PAGE, BYPASS_PAGER_ADV_WILLNEED), 0);
	for (;;) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		if (!bp_pf_idle(p))
			continue;
		if (present_pages(w, 16 * PAGE) == 16 && bp_pf_idle(p))
			break;
		if (present_pages(w, 16 * PAGE) < 16) /* idle, and some are out */
			CHECK_EQ(bypass_pager_advise(p, w, 16 * PAGE,
						     BYPASS_PAGER_ADV_WILLNEED), 0);
	}
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.prefetch_pages >= 16);
	void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
	CHECK(h);
	_Atomic unsigned long *acc = dlsym(h, "testpol_access");
	CHECK(acc);
	unsigned long a0 = *acc;
	bp_policy_access(p, (uintptr_t)w, 16, BYPASS_PAGER_ACCESSED | BYPASS_PAGER_WRITTEN);
	CHECK_EQ(*acc, a0 + 1);
	/* the 16 sampled pages were prefetched and not used yet: each now
	 * counts, and nothing else does (the prefetcher is idle) */
	CHECK_EQ(stats_of(p).prefetch_used, st.prefetch_used + 16);
	/* a sample outside the pager's regions is ignored */
	static char elsewhere[PAGE];
	bp_policy_access(p, (uintptr_t)elsewhere, 1, BYPASS_PAGER_ACCESSED);
	bp_policy_access(p, (uintptr_t)m, 0, BYPASS_PAGER_ACCESSED);
	bp_policy_access(NULL, (uintptr_t)m, 1, BYPASS_PAGER_ACCESSED);
	CHECK_EQ(*acc, a0 + 2);
	dlclose(h);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	printf("ok\n");
	return 0;
}
