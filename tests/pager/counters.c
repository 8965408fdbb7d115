/* SPDX-License-Identifier: MIT */
/*
 * The counters: faults by kind, evictions (and clean ones), bytes read and
 * written, the latency histogram, resident, pinned, swap and mapped pages,
 * checked exactly where the sequence of accesses fixes them; the struct's
 * size (its reserved tail keeps it) and that the tail reads as zeros.
 */
#include "util.h"

#define BUDGET 32ul
#define NPAGES 128ul

int main(void)
{
	test_timeout(60);
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(), .swap_size = 2 * NPAGES * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
		.readahead = 1, /* no readahead: one swap-in per fault */
	};
	bypass_pager *p;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	/* the ABI: 96 words, the unused tail zero */
	CHECK_EQ(sizeof(struct bypass_pager_stats), 96 * sizeof(uint64_t));
	struct bypass_pager_stats st;
	memset(&st, 0xa5, sizeof(st));
	CHECK_EQ(bypass_pager_stats(p, &st), 0);
	for (size_t i = 0; i < sizeof(st.reserved) / sizeof(st.reserved[0]); i++)
		CHECK_EQ(st.reserved[i], 0);
	CHECK_EQ(st.budget_pages, BUDGET);
	CHECK_EQ(st.swap_pages, 2 * NPAGES);
	CHECK_EQ(st.mapped_pages, 0);
	CHECK_EQ(st.lat_count, 0);

	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	CHECK_EQ(stats_of(p).mapped_pages, NPAGES);

	/* first touch by writes: zero faults, dirty evictions */
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 0);
	st = stats_of(p);
	CHECK_EQ(st.faults_zero + st.faultaround_pages, NPAGES);
	CHECK_EQ(st.faults_swapin, 0);
	CHECK_EQ(st.faults_wp, 0);
	CHECK_EQ(st.bytes_read, 0);
	CHECK(st.evictions >= NPAGES - BUDGET - 1);
	CHECK_EQ(st.evictions_clean, 0);
	CHECK_EQ(st.bytes_written % PAGE, 0);
	CHECK_EQ(st.bytes_written, st.evictions * PAGE); /* each written once */
	CHECK(st.resident_pages <= BUDGET && st.resident_peak <= BUDGET);
	CHECK(st.resident_peak >= BUDGET / 2);
	CHECK(st.swap_used >= st.evictions);

	/* read page 0: it was evicted, so one swap-in of one page */
	struct bypass_pager_stats s0 = stats_of(p);
	CHECK(page_ok(m, 0, 0));
	st = stats_of(p);
	CHECK_EQ(st.faults_swapin - s0.faults_swapin, 1);
	CHECK_EQ(st.bytes_read - s0.bytes_read, PAGE);
	CHECK_EQ(st.readahead_pages, 0);

	/* a write to that clean page: one write-protect fault */
	s0 = st;
	m[8] = 1;
	st = stats_of(p);
	CHECK_EQ(st.faults_wp - s0.faults_wp, 1);
	CHECK_EQ(st.faults_swapin, s0.faults_swapin);
	m[9] = 1; /* writable now: no fault */
	CHECK_EQ(stats_of(p).faults_wp, st.faults_wp);

	/* a read-only pass: all evictions during it are clean... except
	 * for the dirty pages resident when it began */
	s0 = stats_of(p);
	for (uint64_t i = 1; i < NPAGES; i++)
		CHECK(page_ok(m + i * PAGE, i, 0));
	st = stats_of(p);
	CHECK(st.evictions_clean > s0.evictions_clean);
	CHECK(st.bytes_written - s0.bytes_written <= (BUDGET + 1) * PAGE);
	CHECK_EQ(st.bytes_read - s0.bytes_read, (st.faults_swapin - s0.faults_swapin) * PAGE);

	/* the latency histogram covers every fault served */
	uint64_t sum = 0;
	for (int i = 0; i < BYPASS_PAGER_HIST; i++)
		sum += st.lat_hist[i];
	CHECK_EQ(sum, st.lat_count);
	CHECK_EQ(st.lat_count, st.faults_zero + st.faults_swapin + st.faults_wp + st.faults_other);
	CHECK(st.lat_sum_ns > 0);
	CHECK_EQ(st.write_errors, 0);

	/* pins */
	CHECK_EQ(bypass_pager_pin(p, m + 5 * PAGE, 3 * PAGE, 0), 0);
	CHECK_EQ(stats_of(p).pinned_pages, 3);
	CHECK_EQ(bypass_pager_pin(p, m + 5 * PAGE, PAGE, 0), 0); /* nested */
	CHECK_EQ(stats_of(p).pinned_pages, 3);
	CHECK_EQ(bypass_pager_unpin(p, m + 5 * PAGE, 3 * PAGE), 0);
	CHECK_EQ(stats_of(p).pinned_pages, 1);
	CHECK_EQ(bypass_pager_unpin(p, m + 5 * PAGE, PAGE), 0);
	CHECK_EQ(stats_of(p).pinned_pages, 0);

	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	st = stats_of(p);
	CHECK_EQ(st.mapped_pages, 0);
	CHECK_EQ(st.resident_pages, 0);
	CHECK_EQ(st.swap_used, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/counters");
}
