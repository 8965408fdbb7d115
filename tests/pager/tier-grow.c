/* SPDX-License-Identifier: MIT */
/*
 * The compressed pool's share grows when the pool is one step too small
 * (issue 35, tier-share.c): a cyclic write scan a little larger than the
 * resident pages and the pool can hold reads back from the file the very
 * copies the pool forgot just before (ghost reads), and refaults nothing
 * soon after its eviction (no near refaults).  The scan then widens by a
 * few pages a pass, so the pool must go on growing to keep up.  Started at
 * a 10% share, the adaptive pool ends above it by at least four steps;
 * with BYPASS_PAGER_TIER_FIXED it stays at 10% and reads more from the
 * file.  Every page is then read back right.  Upcall mode: the faulting
 * thread evicts, so the windows are the same every run.
 */
#include "tier-util.h"

#define BUDGET (512 * PAGE) /* 10%: 48 pages of memory for the pool */
#define SHARE 10u
#define STEP 8u   /* the share's step: budget / 64 */
#define N0 560ul  /* the first pass's pages */
#define WIDEN 8ul /* more pages each pass */
#define PASSES 40ul
#define NMAX (N0 + WIDEN * (PASSES - 1)) /* the last pass */

/* Page i at version v: a word in 4 differs (some 3 copies a page of the
 * pool under LZ4). */
static void fill(char *pg, uint64_t i, uint64_t v)
{
	uint64_t *w = (uint64_t *)pg;
	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = k % 4 ? (i << 8 | v) : pat(i, v, k);
}

static struct bypass_pager_tier_stats run(unsigned flags, uint64_t *file_reads)
{
	const char *who = flags ? "fixed" : "adaptive";
	bypass_pager *p = tier_on_flags(new_pager(BYPASS_PAGER_UPCALL, BUDGET, NMAX * PAGE), SHARE,
					flags);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NMAX * PAGE, 0, (void **)&m), 0);
	uint64_t *ver = calloc(NMAX, sizeof(*ver));
	CHECK(ver != NULL);
	for (uint64_t pass = 0; pass < PASSES; pass++) {
		uint64_t n = N0 + WIDEN * pass;
		for (uint64_t i = 0; i < n; i++)
			fill(m + i * PAGE, i, ++ver[i]);
	}
	struct bypass_pager_tier_stats t = tier_stats(p);
	for (uint64_t i = 0; i < NMAX; i++) {
		char want[PAGE];
		fill(want, i, ver[i]);
		if (memcmp(m + i * PAGE, want, PAGE))
			TEST_FAIL("%s: page %lu read back wrong", who, (unsigned long)i);
	}
	free(ver);
	CHECK_EQ(stats_of(p).write_errors, 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NMAX * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("%s: pool %lu pages of memory at the end of the scan, share moved %lu times; "
		 "%lu stored, %lu swap-ins from the pool, %lu from the file",
		 who, (unsigned long)(t.pool_bytes / PAGE), (unsigned long)t.share_moves,
		 (unsigned long)t.stored, (unsigned long)t.swapin_pool,
		 (unsigned long)t.swapin_file);
	*file_reads = t.swapin_file;
	return t;
}

int main(void)
{
	test_timeout(120);
	const uint64_t share = BUDGET / PAGE * SHARE / 100 / 4 * 4; /* whole slabs */
	uint64_t ff, fa;
	struct bypass_pager_tier_stats f = run(BYPASS_PAGER_TIER_FIXED, &ff);
	CHECK_EQ(f.share_moves, 0);
	CHECK(f.pool_bytes / PAGE <= share);
	CHECK(ff > 0); /* the scan outgrew the fixed pool */
	struct bypass_pager_tier_stats a = run(0, &fa);
	if (a.pool_bytes / PAGE < share + 4 * STEP)
		TEST_FAIL("the pool holds %lu pages of memory, its share %lu: it read %lu pages "
			  "from the file (fixed: %lu) and did not grow 4 steps (%u pages)",
			  (unsigned long)(a.pool_bytes / PAGE), (unsigned long)share,
			  (unsigned long)fa, (unsigned long)ff, 4 * STEP);
	CHECK(fa < ff);
	tmpdir_cleanup();
	return test_pass("pager/tier-grow");
}
