/* SPDX-License-Identifier: MIT */
/*
 * Readahead with a write fault (issue 11): only the faulting page becomes
 * dirty.  The pages read along with it are mapped clean and write-protected,
 * so evicting them again writes nothing, and one written later becomes dirty
 * through a write-protect fault and is written back with its new data.
 *
 * Area A (pages 0..NA-1) is scanned in order: a page that is not present
 * (evicted) is written, which swaps it in with readahead; a present page
 * (read ahead) is only read, except every 4th, which is written.  Area B
 * is read through to evict A again.  The write-backs of the whole run must
 * be the written pages only (before the fix every page read ahead was
 * rewritten too).  Upcall mode, and handler mode where allowed.
 *
 * Before every access the test waits for the write-backs in flight
 * (bp_evict_settle): readahead takes only pages that fit without eviction,
 * and pages under write-back count as resident until their write ends, so
 * with a slow disk (a loaded machine) the amount read ahead and 2Q's order
 * would depend on how fast the disk wrote.  Settled, each fault starts
 * from the same state whatever the disk's speed.
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_evict_settle */

#define BUDGET 32ul
#define NA 256ul
#define NB 256ul
#define NPAGES (NA + NB)

static unsigned char ver[NPAGES]; /* the version each page should hold */

static bypass_pager *make_pager(int mode)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_size = NPAGES * PAGE, .mode = mode,
	};
	bypass_pager *p = try_pager(&c);
	if (!p)
		return NULL;
	/* the counts below follow 2Q's order of eviction: access heat
	 * (BYPASS_PAGER_HEAT in the environment) keeps pages it marks
	 * referenced, e.g. a written page read back by readahead */
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	return p;
}

static void read_b(bypass_pager *p, char *m)
{
	for (uint64_t i = NA; i < NPAGES; i++) {
		bp_evict_settle(p);
		if (!page_ok(m + i * PAGE, i, ver[i]))
			TEST_FAIL("page %lu wrong (area B)", (unsigned long)i);
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
		ver[i] = 1;
		bp_evict_settle(p);
		fill_page(m + i * PAGE, i, 1);
	}
	/* Twice through B: every dirty page is written back, what stays
	 * resident is clean (read from swap). */
	read_b(p, m);
	read_b(p, m);

	struct bypass_pager_stats s0 = stats_of(p);
	uint64_t nfault = 0, nra = 0, nwp = 0;
	for (uint64_t i = 0; i < NA; i++) {
		char *a = m + i * PAGE;
		bp_evict_settle(p);
		if (!present_pages(a, PAGE)) {
			ver[i] = 2; /* a write fault that swaps the page in */
			fill_page(a, i, 2);
			nfault++;
			continue;
		}
		nra++;
		if (!page_ok(a, i, ver[i]))
			TEST_FAIL("page %lu wrong (read ahead)", (unsigned long)i);
		if (i % 4 == 3) {
			ver[i] = 3; /* written after it was read ahead */
			fill_page(a, i, 3);
			nwp++;
		}
	}
	struct bypass_pager_stats s1 = stats_of(p);
	read_b(p, m); /* evicts A again */
	read_b(p, m);
	struct bypass_pager_stats s2 = stats_of(p);
	/* A few pages of A may stay resident (the 2Q active list): count
	 * the pages of A evicted, written or not. */
	uint64_t gone_written = 0, gone_clean = 0;
	for (uint64_t i = 0; i < NA; i++)
		if (!present_pages(m + i * PAGE, PAGE)) {
			if (ver[i] > 1)
				gone_written++;
			else
				gone_clean++;
		}

	uint64_t ra = s1.readahead_pages - s0.readahead_pages;
	uint64_t wp = s1.faults_wp - s0.faults_wp;
	uint64_t wr = (s2.bytes_written - s0.bytes_written) / PAGE;
	uint64_t clean = s2.evictions_clean - s1.evictions_clean;
	TEST_LOG("%s: %lu write faults, %lu pages read ahead (%lu seen present), "
		 "%lu written after readahead (%lu wp faults); %lu pages written back, "
		 "%lu evicted clean; of area A, %lu written and %lu unwritten pages "
		 "evicted again", mode_name(mode), (unsigned long)nfault,
		 (unsigned long)ra, (unsigned long)nra, (unsigned long)nwp,
		 (unsigned long)wp, (unsigned long)wr, (unsigned long)clean,
		 (unsigned long)gone_written, (unsigned long)gone_clean);
	CHECK(ra >= NA / 2);  /* the scan did read ahead */
	CHECK(nra * 2 >= ra); /* ... and found those pages mapped */
	CHECK(nwp >= NA / 16);
	/* the pages written after readahead were clean until written */
	CHECK_EQ(wp, nwp);
	CHECK(gone_written >= (nfault + nwp) / 2);
	CHECK(gone_clean >= (nra - nwp) / 2);
	/* written back: the written pages that were evicted, once each;
	 * never a page that was only read ahead (before the fix those were
	 * written back too) */
	CHECK_EQ(wr, gone_written);
	/* the pages only read ahead were dropped without a write */
	CHECK(clean >= gone_clean);

	/* the bytes: written pages came back with their new data */
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, ver[i]))
			TEST_FAIL("%s: page %lu does not hold version %u", mode_name(mode),
				  (unsigned long)i, ver[i]);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(30);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/readahead-clean");
}
