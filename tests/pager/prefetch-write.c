/* SPDX-License-Identifier: MIT */
/*
 * The prefetcher's write mode (issue 20): under the "prefetch" policy, a
 * sequential pass that writes every page it reaches has its prefetched runs
 * installed writable and dirty (all but the last page of each run, which
 * stays clean as a probe) once most prefetched pages were written, instead
 * of one write-protect fault per page; a read pass has its runs installed
 * clean again after a few probes.
 *
 * NPAGES pages at a budget of BUDGET, synchronous readahead off (only the
 * prefetcher reads ahead): written (version 1), written again in order
 * (version 2), read in order (version 2 checked), and read again after the
 * write-backs.  Before each access the test waits until the prefetcher has
 * installed what it was asked for and the write-backs are done, so the
 * counts do not depend on how fast the thread or the disk is.  Checked:
 * the write pass mapped prefetched pages dirty and took write-protect
 * faults on at most half its pages; the read pass mapped few dirty; every
 * byte holds its last version.
 *
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_evict_settle */
#include "pager/policy.h"         /* bp_pf_idle */

#include <sched.h>

#define BUDGET 256ul
#define NPAGES 2048ul

static void settle(bypass_pager *p)
{
	while (!bp_pf_idle(p))
		sched_yield();
	bp_evict_settle(p);
}

static void read_pass(bypass_pager *p, char *m, uint64_t v)
{
	for (uint64_t i = 0; i < NPAGES; i++) {
		settle(p);
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("page %lu does not hold version %lu", (unsigned long)i,
				  (unsigned long)v);
	}
}

int main(void)
{
	test_timeout(120);
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(), .swap_size = NPAGES * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
		.readahead = 1, /* the prefetcher alone reads ahead */
	};
	bypass_pager *p = NULL;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++) {
		settle(p);
		fill_page(m + i * PAGE, i, 1);
	}

	/* the write stream */
	struct bypass_pager_stats s0 = stats_of(p);
	for (uint64_t i = 0; i < NPAGES; i++) {
		settle(p);
		fill_page(m + i * PAGE, i, 2);
	}
	struct bypass_pager_stats s1 = stats_of(p);
	/* the read stream */
	read_pass(p, m, 2);
	struct bypass_pager_stats s2 = stats_of(p);

	uint64_t pf = s1.prefetch_pages - s0.prefetch_pages;
	uint64_t dirty = s1.readahead_dirty - s0.readahead_dirty;
	uint64_t wp = s1.faults_wp - s0.faults_wp;
	uint64_t rpf = s2.prefetch_pages - s1.prefetch_pages;
	uint64_t rdirty = s2.readahead_dirty - s1.readahead_dirty;
	TEST_LOG("write pass: %lu pages prefetched, %lu mapped dirty, %lu write-protect "
		 "faults, %lu swap-in faults; read pass: %lu prefetched, %lu mapped dirty",
		 (unsigned long)pf, (unsigned long)dirty, (unsigned long)wp,
		 (unsigned long)(s1.faults_swapin - s0.faults_swapin), (unsigned long)rpf,
		 (unsigned long)rdirty);
	/* the prefetcher served the stream, and mapped most of it dirty:
	 * before, every prefetched page took a write-protect fault */
	CHECK(pf >= NPAGES / 2);
	CHECK(dirty >= pf / 2);
	CHECK(wp <= NPAGES / 2);
	/* a read stream: a few runs at most before the probes say it reads */
	CHECK(rpf >= NPAGES / 2);
	CHECK(rdirty <= rpf / 4);

	/* every byte, after the pages were evicted and read back */
	read_pass(p, m, 2);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/prefetch-write");
}
