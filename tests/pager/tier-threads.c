/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier under threads (issue 35), both fault modes: four
 * threads rewrite their own pages, version after version, while the
 * budget makes every round evict into the pool and the pool write its
 * oldest pages to the file, so that pages are written while being
 * compressed or dropped; every page ends at its last version.
 *
 * How many copies the pool drops while the threads run depends on the
 * schedule: a drop needs the pool at its cap, and a commit that finds no
 * room in the budget for a slab goes to the file without filling the
 * pool.  So the threads' counts are logged, not asserted; what is
 * asserted afterwards is what the code guarantees with nothing else
 * running: one thread rewrites pages and reads them back, newest first,
 * until the pool holds some and has served some (bounded passes), then
 * the pool is cut to nothing, which drops the copies it held, and every
 * page reads back from the file at its last version.
 * TEST_LABELS: threads
 */
#include "tier-util.h"

#include <pthread.h>

#define BUDGET (48 * PAGE)
#define NPAGES 384ul
#define NTHR 4
#define ROUNDS 6

static char *m;

static void *worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg;
	for (uint64_t v = 1; v <= ROUNDS; v++) {
		for (uint64_t i = t; i < NPAGES; i += NTHR) {
			if (!tier_ok(m + i * PAGE, i, v - 1) && !(v == 1))
				TEST_FAIL("page %lu not version %lu", (unsigned long)i,
					  (unsigned long)(v - 1));
			tier_fill(m + i * PAGE, i, v);
		}
	}
	return NULL;
}

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 25);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	pthread_t th[NTHR];
	for (uintptr_t t = 0; t < NTHR; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, worker, (void *)t), 0);
	for (int t = 0; t < NTHR; t++)
		pthread_join(th[t], NULL);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!tier_ok(m + i * PAGE, i, ROUNDS))
			TEST_FAIL("%s: page %lu not at its last version", mode_name(mode),
				  (unsigned long)i);
	struct bypass_pager_tier_stats t = tier_stats(p);
	TEST_LOG("%s, threads: %lu stored, %lu dropped, %lu swap-ins from the pool",
		 mode_name(mode), (unsigned long)t.stored, (unsigned long)t.dropped,
		 (unsigned long)t.swapin_pool);

	/* One thread: rewrite every page in order, then read them back in
	 * reverse, the most recently evicted (the pool's newest copies)
	 * first, until the pool has served some back (the first pass does,
	 * unless the tier is broken; reading in the order written, a cycle
	 * longer than the pool, may never hit it); then rewrite until the
	 * pool holds pages (reading pages back may have emptied it: a page
	 * mapped dirty forgets its copy). */
	uint64_t v = ROUNDS;
	for (int pass = 0; pass < 40 && (!t.swapin_pool || !t.pool_pages); pass++) {
		v++;
		for (uint64_t i = 0; i < NPAGES; i++) {
			if (!tier_ok(m + i * PAGE, i, v - 1))
				TEST_FAIL("%s: page %lu not version %lu", mode_name(mode),
					  (unsigned long)i, (unsigned long)(v - 1));
			tier_fill(m + i * PAGE, i, v);
		}
		t = tier_stats(p);
		if (t.swapin_pool && t.pool_pages)
			break;
		for (uint64_t i = NPAGES; i-- > 0;)
			if (!tier_ok(m + i * PAGE, i, v))
				TEST_FAIL("%s: page %lu not version %lu (read back)", mode_name(mode),
					  (unsigned long)i, (unsigned long)v);
		t = tier_stats(p);
	}
	CHECK(t.stored > 0);
	CHECK(t.swapin_pool > 0);
	CHECK(t.pool_pages > 0);

	/* Nothing else runs: cutting the pool to nothing (the smallest share
	 * leaves no room for a slab) drops the copies it holds (all of them:
	 * no page lock is taken; fewer than counted above only where a late
	 * write-back completion freed one first). */
	CHECK_EQ(bypass_pager_tier(p, &(struct bypass_pager_tier_config){ .share_pct = 5 }), 0);
	struct bypass_pager_tier_stats u = tier_stats(p);
	CHECK(u.dropped > t.dropped);
	CHECK(u.dropped - t.dropped <= t.pool_pages);
	CHECK_EQ(u.pool_pages, 0);
	CHECK_EQ(u.pool_bytes, 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!tier_ok(m + i * PAGE, i, v))
			TEST_FAIL("%s: page %lu not at version %lu after the pool dropped its copies",
				  mode_name(mode), (unsigned long)i, (unsigned long)v);
	CHECK(stats_of(p).resident_peak <= BUDGET / PAGE);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: %lu passes alone, %lu copies dropped at the cut", mode_name(mode),
		 (unsigned long)(v - ROUNDS), (unsigned long)(u.dropped - t.dropped));
}

int main(void)
{
	test_timeout(120);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tier-threads");
}
