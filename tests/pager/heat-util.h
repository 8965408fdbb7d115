/* SPDX-License-Identifier: MIT */
/* Helpers shared by the access-heat tests (tests/pager/heat*.c). */
#ifndef BYPASS_TEST_PAGER_HEAT_UTIL_H
#define BYPASS_TEST_PAGER_HEAT_UTIL_H

#include "util.h"

/* An upcall pager of budget pages with swap for swap pages; one_page:
 * no readahead, no fault-around, small eviction batches (one fault is one
 * page, for counting). */
static inline bypass_pager *heat_pager(size_t budget, size_t swap, bool one_page)
{
	struct bypass_pager_config c = {
		.budget = budget * PAGE, .swap_path = tmpdir(), .swap_size = swap * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	if (one_page) {
		c.readahead = 1;
		c.fault_around = 1;
		c.batch = 4;
	}
	bypass_pager *p;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	return p;
}

static inline struct bypass_pager_heat_stats hstats(bypass_pager *p)
{
	struct bypass_pager_heat_stats st;
	CHECK_EQ(bypass_pager_heat_stats(p, &st), 0);
	return st;
}

#endif
