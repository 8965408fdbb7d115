/* SPDX-License-Identifier: MIT */
/* Helpers shared by the compressed tier's tests (tier-*.c). */
#ifndef BYPASS_TEST_PAGER_TIER_UTIL_H
#define BYPASS_TEST_PAGER_TIER_UTIL_H

#include "util.h"

/* Page i at version v, compressible: a few distinct words (one word in 64
 * differs, pat()), about 15% of a page under LZ4. */
static inline void tier_fill(char *pg, uint64_t i, uint64_t v)
{
	uint64_t *w = (uint64_t *)pg;
	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = k % 64 ? (i << 8 | v) : pat(i, v, k);
}

static inline bool tier_ok(const char *pg, uint64_t i, uint64_t v)
{
	char want[PAGE];
	tier_fill(want, i, v);
	return memcmp(pg, want, PAGE) == 0;
}

/* Pages 0 .. n-1 at m hold version v (tier_fill), else the test fails,
 * saying who looked (a fault mode, "child") and when. */
static inline void tier_check_all(const char *m, uint64_t n, const char *who, uint64_t v,
				  const char *when)
{
	for (uint64_t i = 0; i < n; i++)
		if (!tier_ok(m + i * PAGE, i, v))
			TEST_FAIL("%s: page %lu is not version %lu %s", who, (unsigned long)i,
				  (unsigned long)v, when);
}

/* The tier on for p at share_pct (0: the default) with flags
 * (BYPASS_PAGER_TIER_FIXED); the test skips where the library was built
 * without liblz4. */
static inline bypass_pager *tier_on_flags(bypass_pager *p, unsigned share_pct, unsigned flags)
{
	int r = bypass_pager_tier(p, &(struct bypass_pager_tier_config){ .share_pct = share_pct,
									  .flags = flags });
	if (r == -EOPNOTSUPP) {
		bypass_pager_destroy(p);
		SKIP("built without liblz4 (tools/deps.sh installs liblz4-dev)");
	}
	if (r)
		TEST_FAIL("bypass_pager_tier: %s", strerror(-r));
	return p;
}

/* The tier on for p at share_pct, its share adapting. */
static inline bypass_pager *tier_on(bypass_pager *p, unsigned share_pct)
{
	return tier_on_flags(p, share_pct, 0);
}

/* A pager (new_pager) with the tier on at share_pct. */
static inline bypass_pager *tier_pager(int mode, size_t budget, size_t swap, unsigned share_pct)
{
	return tier_on(new_pager(mode, budget, swap), share_pct);
}

static inline struct bypass_pager_tier_stats tier_stats(bypass_pager *p)
{
	struct bypass_pager_tier_stats t;
	CHECK_EQ(bypass_pager_tier_stats(p, &t), 0);
	return t;
}

#endif
