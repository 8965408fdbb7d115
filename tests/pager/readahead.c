/* SPDX-License-Identifier: MIT */
/*
 * Readahead: a sequential pass over evicted pages reads clusters (far fewer
 * swap-ins than pages), a random pass does not read ahead (a jump resets
 * the window), and the data is right either way.
 */
#include "util.h"

#define BUDGET 32ul
#define NPAGES 512ul

int main(void)
{
	test_timeout(60);
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, NPAGES * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 4);

	struct bypass_pager_stats s0 = stats_of(p);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 4))
			TEST_FAIL("page %lu wrong (sequential)", (unsigned long)i);
	struct bypass_pager_stats s1 = stats_of(p);
	uint64_t sw = s1.faults_swapin - s0.faults_swapin, ra = s1.readahead_pages - s0.readahead_pages;
	TEST_LOG("sequential: %lu swap-ins, %lu pages read ahead", (unsigned long)sw,
		 (unsigned long)ra);
	CHECK(ra > 0);
	CHECK(sw + ra >= NPAGES - 2 * BUDGET);
	CHECK(sw * 4 <= NPAGES); /* clusters of 8 once the window has grown */

	/* random: pages far apart, each evicted by the time it is read */
	uint64_t seed = 99;
	s0 = stats_of(p);
	for (int k = 0; k < 400; k++) {
		uint64_t i = xorshift(&seed) % NPAGES;
		if (!page_ok(m + i * PAGE, i, 4))
			TEST_FAIL("page %lu wrong (random)", (unsigned long)i);
	}
	s1 = stats_of(p);
	sw = s1.faults_swapin - s0.faults_swapin;
	ra = s1.readahead_pages - s0.readahead_pages;
	TEST_LOG("random: %lu swap-ins, %lu pages read ahead", (unsigned long)sw, (unsigned long)ra);
	CHECK(sw > 0);
	CHECK(ra * 10 <= sw); /* hardly any: only where two random pages happen to follow */
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/readahead");
}
