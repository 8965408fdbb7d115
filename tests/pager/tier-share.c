/* SPDX-License-Identifier: MIT */
/*
 * The compressed pool's share adapts (issue 35, tier-share.c): the rule
 * bp_tier_share_next() on made-up windows, no timing.  One window: too few
 * events keep the share; ghosts (a ghost weighs 7 near refaults) over
 * near refaults grow it one step; near refaults over ghosts, or more
 * writes than hits, shrink it one step; the bounds hold.  A step down
 * that writes: the near refaults pay its cost first, summed over windows
 * (rent), a window whose ghosts win clearing the sum; a pool with slack (a
 * step or more below its cap) is not lowered by near refaults.  Sequences: a
 * pool whose copies are written before they are read goes to its floor
 * and stays there; a pool
 * that holds every page it is given (ghosts only when it is too small)
 * settles within one step of the size it needs and moves no further.
 */
#include "util.h"
#include "pager/pager_internal.h"
#include "pager/tier.h"

#define LO 204u
#define HI 3684u
#define STEP 64u

static uint32_t next(uint32_t cap, uint64_t hits, uint64_t writes, uint64_t ghosts,
		     uint64_t near)
{
	struct bp_tier_window w = { hits, writes, ghosts, near, 0, false };
	uint64_t rent = 0;
	return bp_tier_share_next(cap, STEP, LO, HI, &w, &rent);
}

/* One window of 100 hits, no writes, with a step down's cost and slack;
 * *rent carried from window to window. */
static uint32_t next_rent(uint32_t cap, uint64_t ghosts, uint64_t near, uint64_t cost, bool slack,
			  uint64_t *rent)
{
	struct bp_tier_window w = { 100, 0, ghosts, near, cost, slack };
	return bp_tier_share_next(cap, STEP, LO, HI, &w, rent);
}

int main(void)
{
	/* one window */
	CHECK_EQ(next(2048, 3, 2, 1, 1), 2048);          /* 7 events: too few */
	/* a ghost weighs BP_TIER_GHOST_WEIGHT (7) near refaults */
	CHECK_EQ(next(2048, 100, 0, 2, 13), 2048 + STEP); /* ghosts win */
	CHECK_EQ(next(2048, 100, 0, 1, 8), 2048 - STEP);  /* near wins */
	CHECK_EQ(next(2048, 10, 11, 1, 7), 2048 - STEP);  /* writes over hits */
	CHECK_EQ(next(2048, 11, 11, 1, 7), 2048);         /* balanced: stays */
	CHECK_EQ(next(2048, 0, 500, 2, 13), 2048 + STEP); /* ghosts ask first */
	CHECK_EQ(next(HI - 10, 0, 0, 9, 0), HI);         /* bounds */
	CHECK_EQ(next(HI, 0, 0, 9, 0), HI);
	CHECK_EQ(next(LO + 10, 0, 0, 0, 9), LO);
	CHECK_EQ(next(LO, 0, 0, 0, 9), LO);
	CHECK_EQ(next(LO, 0, 90, 0, 0), LO);

	/* a step down that writes: its cost paid by near refaults first */
	uint64_t rent = 0;
	CHECK_EQ(next_rent(2048, 0, 40, 100, false, &rent), 2048); /* 40 of 100 */
	CHECK_EQ(rent, 40);
	CHECK_EQ(next_rent(2048, 2, 54, 100, false, &rent), 2048); /* + 54 - 14 */
	CHECK_EQ(rent, 80);
	CHECK_EQ(next_rent(2048, 0, 40, 100, false, &rent), 2048 - STEP); /* 120 */
	CHECK_EQ(rent, 0);
	CHECK_EQ(next_rent(2048, 0, 90, 100, false, &rent), 2048);
	CHECK_EQ(next_rent(2048, 2, 10, 100, false, &rent), 2048 + STEP); /* ghosts: */
	CHECK_EQ(rent, 0);                                                /* cleared */
	CHECK_EQ(next_rent(2048, 0, 90, 100, false, &rent), 2048);
	/* slack: a lower cap would give the pages nothing; the writes rule
	 * and the ghosts still move it */
	rent = 0;
	for (unsigned k = 0; k < 10; k++)
		CHECK_EQ(next_rent(2048, 0, 500, 0, true, &rent), 2048);
	CHECK_EQ(rent, 0);
	CHECK_EQ(next_rent(2048, 9, 10, 0, true, &rent), 2048 + STEP);
	struct bp_tier_window wr = { 10, 11, 0, 50, 0, true };
	CHECK_EQ(bp_tier_share_next(2048, STEP, LO, HI, &wr, &rent), 2048 - STEP);
	/* without a cost (nothing pool-only to write) a step down is at once */
	rent = 0;
	CHECK_EQ(next_rent(2048, 0, 9, 0, false, &rent), 2048 - STEP);

	/* copies written before they are read, none read back soon after
	 * the pool forgot them, a few near refaults */
	uint32_t cap = 2048;
	unsigned w;
	for (w = 0; w < 100 && cap > LO; w++)
		cap = next(cap, 10, 480, 0, 3);
	CHECK_EQ(cap, LO);
	CHECK(w <= (2048 - LO) / STEP + 1);
	for (unsigned k = 0; k < 100; k++)
		CHECK_EQ((cap = next(cap, 10, 480, 0, 3)), LO);

	/* a pool that holds all it is given if its cap is at least NEED:
	 * below it, copies forgotten and read back soon (ghosts); the near
	 * refaults are few either way */
	const uint32_t need = 1000;
	for (uint32_t start = LO; start <= HI; start += 500) {
		cap = start;
		uint32_t lo_seen = UINT32_MAX, hi_seen = 0;
		for (unsigned k = 0; k < 200; k++) {
			bool small = cap < need;
			cap = next(cap, 400, small ? 40 : 0, small ? 40 : 0, 3);
			if (k >= 100) { /* settled: where it stays */
				lo_seen = cap < lo_seen ? cap : lo_seen;
				hi_seen = cap > hi_seen ? cap : hi_seen;
			}
		}
		TEST_LOG("start %u: settled in [%u, %u] (need %u)", start, lo_seen, hi_seen, need);
		CHECK(lo_seen + STEP >= need && lo_seen < need + STEP);
		CHECK(hi_seen - lo_seen <= STEP);
	}
	return test_pass("pager/tier-share");
}
