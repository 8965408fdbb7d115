/* SPDX-License-Identifier: MIT */
/*
 * One upcall pager with two regions, one served by upcalls and one by the
 * handler thread (BYPASS_PAGER_MAP_HANDLER), a 16-page budget and 64 times
 * as many pages.  Four threads each own a share of the pages of both
 * regions and, at random, check a page against the version they last wrote,
 * write a new version, or move a page through a pipe with read(2) and
 * write(2): pinned first in the upcall region, directly in the handler
 * region (the handler thread serves the kernel's faults).  Every page is
 * checked at the end; the budget is never exceeded and nothing stays
 * pinned.  Evictions run in the faulting threads, in pins and in the
 * handler thread at once.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <stdbool.h>

#define THREADS 4
#define BUDGET_PAGES 16ul
#define NPAGES 512ul /* per region */
#define OPS 5000

static char *up, *hd;                    /* upcall and handler regions */
static uint32_t v_up[NPAGES], v_hd[NPAGES]; /* owner-only */
static bypass_pager *p;

static int page_is(const void *pg, uint64_t i, uint32_t v)
{
	return v == 0 ? page_zero(pg) : page_ok(pg, i, v);
}

static void *worker(void *arg)
{
	uint64_t tid = (uint64_t)(uintptr_t)arg, seed = 99 + tid * 31337;
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	static __thread char tmp[PAGE];
	for (int op = 0; op < OPS; op++) {
		uint64_t x = xorshift(&seed);
		bool handler = x & 1;
		char *m = handler ? hd : up;
		uint32_t *v = handler ? v_hd : v_up;
		uint64_t i = ((x >> 8) % (NPAGES / THREADS)) * THREADS + tid;
		char *pg = m + i * PAGE;
		switch ((x >> 40) % 8) {
		case 0: case 1: case 2: /* check */
			if (!page_is(pg, i, v[i]))
				TEST_FAIL("%s region: page %lu lost version %u",
					  handler ? "handler" : "upcall", (unsigned long)i, v[i]);
			break;
		case 3: case 4: case 5: /* write */
			fill_page(pg, i, ++v[i]);
			break;
		case 6: /* the kernel writes the page: read(2) into it */
			if (!handler)
				CHECK_EQ(bypass_pager_pin(p, pg, PAGE, BYPASS_PAGER_PIN_WRITE), 0);
			fill_page(tmp, i, ++v[i]);
			CHECK_EQ(write(pfd[1], tmp, PAGE), (ssize_t)PAGE);
			CHECK_EQ(read(pfd[0], pg, PAGE), (ssize_t)PAGE);
			if (!handler)
				CHECK_EQ(bypass_pager_unpin(p, pg, PAGE), 0);
			break;
		default: /* the kernel reads the page: write(2) from it */
			if (!handler)
				CHECK_EQ(bypass_pager_pin(p, pg, PAGE, 0), 0);
			CHECK_EQ(write(pfd[1], pg, PAGE), (ssize_t)PAGE);
			if (!handler)
				CHECK_EQ(bypass_pager_unpin(p, pg, PAGE), 0);
			CHECK_EQ(read(pfd[0], tmp, PAGE), (ssize_t)PAGE);
			if (!page_is(tmp, i, v[i]))
				TEST_FAIL("%s region: write(2) of page %lu sent a wrong version",
					  handler ? "handler" : "upcall", (unsigned long)i);
			break;
		}
	}
	close(pfd[0]);
	close(pfd[1]);
	return NULL;
}

int main(void)
{
	test_timeout(150);
	p = new_pager(BYPASS_PAGER_UPCALL, BUDGET_PAGES * PAGE, 2 * NPAGES * PAGE);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&up), 0);
	int r = bypass_pager_map(p, NPAGES * PAGE, BYPASS_PAGER_MAP_HANDLER, (void **)&hd);
	if (r == -EPERM) {
		bypass_pager_destroy(p);
		tmpdir_cleanup();
		SKIP("BYPASS_PAGER_MAP_HANDLER needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd");
	}
	CHECK_EQ(r, 0);
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (uint64_t i = 0; i < NPAGES; i++) {
		if (!page_is(up + i * PAGE, i, v_up[i]))
			TEST_FAIL("upcall region: page %lu wrong at the end", (unsigned long)i);
		if (!page_is(hd + i * PAGE, i, v_hd[i]))
			TEST_FAIL("handler region: page %lu wrong at the end", (unsigned long)i);
	}
	struct bypass_pager_stats st = stats_of(p);
	TEST_LOG("%lu zero, %lu swap-in, %lu wp, %lu evicted (%lu clean), peak %lu/%lu",
		 (unsigned long)st.faults_zero, (unsigned long)st.faults_swapin,
		 (unsigned long)st.faults_wp, (unsigned long)st.evictions,
		 (unsigned long)st.evictions_clean, (unsigned long)st.resident_peak,
		 BUDGET_PAGES);
	CHECK(st.resident_peak <= BUDGET_PAGES);
	CHECK(st.faults_swapin > 0 && st.bytes_written > 0);
	CHECK_EQ(st.pinned_pages, 0);
	CHECK_EQ(st.write_errors, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/stress-mixed");
}
