/* SPDX-License-Identifier: MIT */
/*
 * Fault-around for first touch: an ascending stream of first touches
 * installs several pages per fault; it never maps a page outside the
 * region, never one the program has already (touched, evicted or resident),
 * never beyond the budget, and config.fault_around = 1 turns it off.
 * Every engine that serves faults.
 */
#include "util.h"

#define BUDGET 64u /* pages */

static bypass_pager *pager_fa(int mode, unsigned fa, size_t budget_pages, size_t swap_pages)
{
	struct bypass_pager_config c = {
		.budget = budget_pages * PAGE, .swap_size = swap_pages * PAGE, .mode = mode,
		.fault_around = fa,
	};
	return try_pager(&c);
}

static void run(int mode)
{
	/* 1. an ascending stream in a region that ends inside the window:
	 * fewer faults than pages, nothing past the end, every page zero. */
	bypass_pager *p = pager_fa(mode, 16, 4096, 4096);
	if (!p) {
		printf("%s: skipped (userfaultfd for kernel faults not permitted)\n",
		       mode_name(mode));
		return;
	}
	const size_t n = 37; /* not a multiple of any window */
	char *guard;
	/* a region right after the first one: fault-around must not touch it */
	char *m;
	CHECK_EQ(bypass_pager_map(p, n * PAGE, 0, (void **)&m), 0);
	CHECK_EQ(bypass_pager_map(p, 8 * PAGE, 0, (void **)&guard), 0);
	for (size_t i = 0; i < n; i++) {
		CHECK(((volatile char *)m)[i * PAGE + 1] == 0);
		m[i * PAGE + 1] = (char)(i + 1);
	}
	struct bypass_pager_stats st = stats_of(p);
	CHECK_EQ(st.faults_zero + st.faultaround_pages, n);
	CHECK(st.faults_zero < n / 2);
	CHECK(st.faultaround_pages > 0);
	CHECK_EQ(st.resident_pages, n);
	CHECK_EQ(present_pages(guard, 8 * PAGE), 0);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(m[i * PAGE + 1], (char)(i + 1));

	/* 2. never over a page the program has: pages touched out of order,
	 * then a stream running into them keeps their data */
	char *q;
	CHECK_EQ(bypass_pager_map(p, 64 * PAGE, 0, (void **)&q), 0);
	for (size_t i = 10; i < 64; i += 7)
		memset(q + i * PAGE, 0x5a, PAGE);
	for (size_t i = 0; i < 64; i++)
		q[i * PAGE] = 1;
	for (size_t i = 0; i < 64; i++) {
		CHECK_EQ(q[i * PAGE], 1);
		unsigned char want = (i >= 10 && (i - 10) % 7 == 0) ? 0x5a : 0;
		for (size_t j = 1; j < PAGE; j += 511)
			if ((unsigned char)q[i * PAGE + j] != want)
				TEST_FAIL("%s: page %zu byte %zu: %#x, want %#x", mode_name(mode),
					  i, j, (unsigned char)q[i * PAGE + j], want);
	}
	/* a read stream maps clean pages: the writes after it are faults */
	char *r;
	CHECK_EQ(bypass_pager_map(p, 32 * PAGE, 0, (void **)&r), 0);
	for (size_t i = 0; i < 32; i++)
		CHECK_EQ(((volatile char *)r)[i * PAGE], 0);
	uint64_t wp0 = stats_of(p).faults_wp;
	for (size_t i = 0; i < 32; i++)
		r[i * PAGE] = 2;
	CHECK_EQ(stats_of(p).faults_wp - wp0, 32);
	CHECK_EQ(bypass_pager_destroy(p), 0);

	/* 3. the budget: a stream far beyond it never exceeds it, and the
	 * data of every page survives eviction (fault-around pages too) */
	p = pager_fa(mode, 64, BUDGET, 1024);
	CHECK_EQ(bypass_pager_map(p, 1024 * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < 1024; i += 2) /* every other page: */
		fill_page(m + i * PAGE, i, 0); /* the rest come by fault-around or not at all */
	for (size_t i = 0; i < 1024; i++) {
		if (i % 2 == 0 ? !page_ok(m + i * PAGE, i, 0) : !page_zero(m + i * PAGE))
			TEST_FAIL("%s: page %zu lost its data", mode_name(mode), i);
	}
	st = stats_of(p);
	CHECK(st.resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);

	/* 4. fault_around = 1: one page per fault */
	p = pager_fa(mode, 1, 4096, 4096);
	CHECK_EQ(bypass_pager_map(p, 100 * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < 100; i++)
		m[i * PAGE] = 1;
	st = stats_of(p);
	CHECK_EQ(st.faults_zero, 100);
	CHECK_EQ(st.faultaround_pages, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	printf("%s: fault-around ok\n", mode_name(mode));
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/faultaround");
}
