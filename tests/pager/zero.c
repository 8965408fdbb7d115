/* SPDX-License-Identifier: MIT */
/*
 * Zero fill: untouched memory reads as zeros, in both modes; a page that
 * was only read is dropped without a write and comes back as zeros; a write
 * after a read works (write-protect fault); an access that straddles two
 * pages works; a read-only pass over untouched memory writes nothing.
 */
#include "util.h"

#define BUDGET 16ul
#define NPAGES 64ul

static void run(int mode)
{
	bypass_pager *p = new_pager(mode, BUDGET * PAGE, NPAGES * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (int pass = 0; pass < 3; pass++)
		for (uint64_t i = 0; i < NPAGES; i++)
			if (!page_zero(m + i * PAGE))
				TEST_FAIL("%s: page %lu not zero", mode_name(mode), (unsigned long)i);
	struct bypass_pager_stats st = stats_of(p);
	CHECK_EQ(st.bytes_written, 0);
	CHECK_EQ(st.faults_swapin, 0);
	CHECK(st.faults_zero + st.faultaround_pages >= NPAGES);
	CHECK(st.evictions > 0 && st.evictions == st.evictions_clean);
	CHECK_EQ(st.swap_used, 0);

	/* write after read: a write-protect fault makes the page dirty */
	uint64_t wp0 = stats_of(p).faults_wp;
	CHECK_EQ(((volatile char *)m)[3 * PAGE], 0);
	((volatile char *)m)[3 * PAGE + 5] = 42;
	CHECK_EQ(stats_of(p).faults_wp, wp0 + 1);
	CHECK_EQ(m[3 * PAGE + 5], 42);
	/* a word across a page boundary, in pages never touched since */
	typedef uint64_t u64_unaligned __attribute__((aligned(1)));
	u64_unaligned *w = (u64_unaligned *)(m + 10 * PAGE - 4);
	*w = 0x1122334455667788ull;
	for (uint64_t i = 20; i < NPAGES; i++) /* evict them */
		m[i * PAGE] = 1;
	CHECK_EQ(*w, 0x1122334455667788ull);
	CHECK_EQ(m[3 * PAGE + 5], 42);
	CHECK_EQ(m[3 * PAGE + 4], 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(60);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/zero");
}
