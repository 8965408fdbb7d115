/* SPDX-License-Identifier: MIT */
/*
 * Partial unmaps racing faults: three threads write, read and pin their
 * pages in the first 128 pages of a region while the main thread unmaps the
 * rest of it piece by piece and maps, fills, checks and unmaps other regions
 * (some served by the handler thread) that reuse the freed page ids and swap
 * slots, all through a 24-page budget.  No page of the kept part loses a
 * byte; every new region reads its own data; at the end the counters give
 * everything back.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>

#define THREADS 3
#define BUDGET_PAGES 24ul
#define KEPT 128ul
#define NPAGES 384ul

static char *m;
static uint32_t version[KEPT]; /* owner-only */
static _Atomic int stop;
static bypass_pager *p;

static void *worker(void *arg)
{
	uint64_t tid = (uint64_t)(uintptr_t)arg, seed = 5 + tid * 77;
	while (!atomic_load(&stop)) {
		uint64_t x = xorshift(&seed);
		uint64_t i = ((x >> 8) % (KEPT / THREADS)) * THREADS + tid;
		char *pg = m + i * PAGE;
		if (version[i] == 0 ? !page_zero(pg) : !page_ok(pg, i, version[i]))
			TEST_FAIL("page %lu lost version %u", (unsigned long)i, version[i]);
		if (x & 0x100)
			fill_page(pg, i, ++version[i]);
		if ((x >> 30) % 16 == 0) {
			CHECK_EQ(bypass_pager_pin(p, pg, PAGE, BYPASS_PAGER_PIN_WRITE), 0);
			fill_page(pg, i, ++version[i]);
			CHECK_EQ(bypass_pager_unpin(p, pg, PAGE), 0);
		}
	}
	return NULL;
}

static void run(int mode)
{
	p = new_pager(mode, BUDGET_PAGES * PAGE, 4 * NPAGES * PAGE);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	memset(version, 0, sizeof(version));
	atomic_store(&stop, 0);
	bool handler_ok = true;
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	uint64_t seed = 1;
	for (uint64_t off = KEPT; off < NPAGES; off += 8) {
		for (uint64_t i = off; i < off + 8; i++)
			fill_page(m + i * PAGE, i, 1);
		unsigned fl = mode == BYPASS_PAGER_UPCALL && handler_ok && (xorshift(&seed) & 1)
				      ? BYPASS_PAGER_MAP_HANDLER : 0;
		char *n;
		int r = bypass_pager_map(p, 32 * PAGE, fl, (void **)&n);
		if (r == -EPERM && fl) {
			handler_ok = false; /* no privilege: upcall regions only */
			r = bypass_pager_map(p, 32 * PAGE, 0, (void **)&n);
		}
		CHECK_EQ(r, 0);
		for (uint64_t i = 0; i < 32; i++)
			fill_page(n + i * PAGE, 5000 + i, off);
		for (uint64_t i = off; i < off + 8; i++)
			CHECK(page_ok(m + i * PAGE, i, 1));
		CHECK_EQ(bypass_pager_unmap(p, m + off * PAGE, 4 * PAGE), 0);
		for (uint64_t i = 0; i < 32; i++)
			CHECK(page_ok(n + i * PAGE, 5000 + i, off));
		CHECK_EQ(bypass_pager_unmap(p, n + 8 * PAGE, 8 * PAGE), 0);
		CHECK_EQ(bypass_pager_unmap(p, m + (off + 4) * PAGE, 4 * PAGE), 0);
		CHECK_EQ(bypass_pager_unmap(p, n, 8 * PAGE), 0);
		CHECK_EQ(bypass_pager_unmap(p, n + 16 * PAGE, 16 * PAGE), 0);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (uint64_t i = 0; i < KEPT; i++)
		CHECK(version[i] == 0 ? page_zero(m + i * PAGE) : page_ok(m + i * PAGE, i, version[i]));
	struct bypass_pager_stats st = stats_of(p);
	CHECK_EQ(st.mapped_pages, KEPT);
	CHECK(st.resident_peak <= BUDGET_PAGES);
	CHECK_EQ(st.pinned_pages, 0);
	CHECK_EQ(bypass_pager_unmap(p, m, KEPT * PAGE), 0);
	st = stats_of(p);
	CHECK_EQ(st.resident_pages, 0);
	CHECK_EQ(st.swap_used, 0);
	CHECK_EQ(st.mapped_pages, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(150);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/unmap-race");
}
