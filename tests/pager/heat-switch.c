/* SPDX-License-Identifier: MIT */
/*
 * The written source of access heat while the adaptive engine switches a
 * region between its userfaultfds: a switch unprotects the whole region
 * for a moment (PROT_NONE, re-registered, then write-protected again from
 * the pages' flags), and PAGE_IS_WRITTEN reads "present and not
 * write-protected".  A sampler scan inside that window saw every clean
 * page as written.  Here nothing is ever written after the first read, the
 * engine flips every 10 ms (bp_engine_force: flip) and the sampler scans
 * every 10 ms: no page may be counted written, and the data stays.  No
 * timing decides anything: the test waits for the switches it needs (the
 * harness's time limit ends a test that never gets them), and skips only
 * where this kernel has no PAGEMAP_SCAN (the written source).
 * TEST_LABELS: threads
 */
#include "heat-util.h"
#include "pager/pager_internal.h" /* bp_engine_force */

#define NPAGES 8192ul /* 32 MiB: a switch's window takes a while */
#define SWITCHES 60u

int main(void)
{
	test_timeout(240);
	struct bypass_pager_config c = {
		.budget = 2 * NPAGES * PAGE, .swap_path = tmpdir(), .swap_size = 2 * NPAGES * PAGE,
		.mode = BYPASS_PAGER_ADAPTIVE, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	bypass_pager *p;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	CHECK_EQ(bp_engine_force(p, BP_ENGINE_FLIP), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	unsigned sum = 0;
	for (size_t i = 0; i < NPAGES; i++) /* read: clean, write-protected */
		sum += (unsigned char)((volatile char *)m)[i * PAGE];
	CHECK_EQ(sum, 0);
	struct bypass_pager_heat_config hc = { .sources = BYPASS_PAGER_HEAT_WRITTEN,
					       .interval_ms = 10 };
	int e = bypass_pager_heat_enable(p, &hc);
	if (e == -EOPNOTSUPP) { /* the one reason to skip: no PAGEMAP_SCAN */
		struct bypass_pager_heat_stats st = hstats(p);
		CHECK_EQ(bypass_pager_destroy(p), 0);
		tmpdir_cleanup();
		SKIP("no written source: %s (%s)", strerror(-e), st.written_why);
	}
	CHECK_EQ(e, 0);
	/* an adaptive pager always has its pool (create fails otherwise) and
	 * flips every interval: wait for the switches, however long they take */
	uint64_t sw0 = stats_of(p).engine_switches;
	/* reads keep faulting nothing; wait for switches and samples */
	while (stats_of(p).engine_switches < sw0 + SWITCHES)
		usleep(5000);
	struct bypass_pager_heat_stats st = hstats(p);
	TEST_LOG("%llu samples over %llu engine switches: %llu pages counted written",
		 (unsigned long long)st.samples,
		 (unsigned long long)(stats_of(p).engine_switches - sw0),
		 (unsigned long long)st.written_pages);
	CHECK(st.samples > 0);
	CHECK_EQ(st.written_pages, 0);
	for (size_t i = 0; i < NPAGES; i++)
		CHECK_EQ(m[i * PAGE], 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/heat-switch");
}
