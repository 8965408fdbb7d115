/* SPDX-License-Identifier: MIT */
/*
 * Readahead of a write stream (issue 20): a sequential pass that writes
 * every page it swaps in has its readahead pages mapped writable and dirty
 * (all but the last page of each window, the probe, which stays clean), so
 * that it takes about two faults a window instead of one a page; a read
 * stream's readahead pages stay clean and are never written back.
 *
 * NPAGES pages at a budget of BUDGET are written (version 1), then written
 * again in order (version 2: a write stream over swapped pages), then read
 * in order twice (a read stream).  Checked: the write pass took few
 * write-protect faults and mapped readahead pages dirty; the read passes
 * mapped none dirty and wrote back only pages the write pass left dirty; every byte holds
 * its last version after eviction and read-back.  Upcall mode, and handler
 * mode where allowed.
 *
 * Before every access the test waits for the write-backs in flight
 * (bp_evict_settle), as readahead-clean.c does: readahead takes only pages
 * that fit without eviction, so the counts would otherwise depend on how
 * fast the disk writes.
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_evict_settle */

#define BUDGET 32ul
#define NPAGES 512ul

static bypass_pager *make_pager(int mode)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_size = NPAGES * PAGE, .mode = mode,
	};
	bypass_pager *p = try_pager(&c);
	if (!p)
		return NULL;
	/* the counts below follow 2Q's order of eviction (see
	 * readahead-clean.c) */
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	return p;
}

static void read_pass(bypass_pager *p, char *m, uint64_t v)
{
	for (uint64_t i = 0; i < NPAGES; i++) {
		bp_evict_settle(p);
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("page %lu does not hold version %lu", (unsigned long)i,
				  (unsigned long)v);
	}
}

static void run(int mode)
{
	bypass_pager *p = make_pager(mode);
	if (!p) {
		TEST_LOG("%s: not allowed here (needs CAP_SYS_PTRACE or "
			 "vm.unprivileged_userfaultfd), skipped", mode_name(mode));
		return;
	}
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++) {
		bp_evict_settle(p);
		fill_page(m + i * PAGE, i, 1);
	}

	/* the write stream: every page swapped in by a write */
	struct bypass_pager_stats s0 = stats_of(p);
	for (uint64_t i = 0; i < NPAGES; i++) {
		bp_evict_settle(p);
		fill_page(m + i * PAGE, i, 2);
	}
	struct bypass_pager_stats s1 = stats_of(p);
	/* what the read passes may write back: the pages dirty now */
	uint64_t ndirty = 0;
	for (size_t id = 0; id < p->pages_len / sizeof(struct pg); id++) {
		uint32_t w = atomic_load(&pg_of(p, (uint32_t)id)->w);
		if ((w & PW_DIRTY) || pg_state(w) == PS_WRITEBACK)
			ndirty++;
	}
	/* the read stream, twice: the first pass writes back what the write
	 * pass left dirty, the second finds every page clean */
	read_pass(p, m, 2);
	struct bypass_pager_stats s2 = stats_of(p);
	read_pass(p, m, 2);
	struct bypass_pager_stats s3 = stats_of(p);

	uint64_t swapin = s1.faults_swapin - s0.faults_swapin;
	uint64_t ra = s1.readahead_pages - s0.readahead_pages;
	uint64_t dirty = s1.readahead_dirty - s0.readahead_dirty;
	uint64_t wp = s1.faults_wp - s0.faults_wp;
	TEST_LOG("%s: write pass: %lu swap-in faults, %lu pages read ahead (%lu mapped "
		 "dirty), %lu write-protect faults; read passes: %lu and %lu pages read "
		 "ahead, %lu and %lu mapped dirty, %lu and %lu pages written back (%lu were dirty)",
		 mode_name(mode), (unsigned long)swapin, (unsigned long)ra,
		 (unsigned long)dirty, (unsigned long)wp,
		 (unsigned long)(s2.readahead_pages - s1.readahead_pages),
		 (unsigned long)(s3.readahead_pages - s2.readahead_pages),
		 (unsigned long)(s2.readahead_dirty - s1.readahead_dirty),
		 (unsigned long)(s3.readahead_dirty - s2.readahead_dirty),
		 (unsigned long)((s2.bytes_written - s1.bytes_written) / PAGE),
		 (unsigned long)((s3.bytes_written - s2.bytes_written) / PAGE),
		 (unsigned long)ndirty);
	/* the write pass read ahead, and most of it was mapped dirty: before
	 * this, every readahead page took a write-protect fault (wp == ra) */
	CHECK(ra >= NPAGES / 2);
	CHECK(dirty >= ra / 2);
	CHECK(wp + dirty <= ra);
	CHECK(wp <= ra / 2);
	/* a read stream maps nothing dirty ... */
	CHECK(s2.readahead_pages - s1.readahead_pages >= NPAGES / 2);
	CHECK_EQ(s2.readahead_dirty, s1.readahead_dirty);
	CHECK_EQ(s3.readahead_dirty, s2.readahead_dirty);
	/* ... and writes back nothing but what the write pass left dirty */
	CHECK(ndirty <= BUDGET);
	CHECK(s3.bytes_written - s1.bytes_written <= ndirty * PAGE);
	CHECK_EQ(s3.faults_wp, s1.faults_wp);

	/* every byte, after the pages were evicted and read back */
	read_pass(p, m, 2);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(30);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/readahead-write");
}
