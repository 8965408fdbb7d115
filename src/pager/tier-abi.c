/* SPDX-License-Identifier: MIT */
/*
 * bypass_pager_tier_stats@BYPASS_0.1: the getter as programs built against
 * 0.1's header call it.  Their struct bypass_pager_tier_stats was 12 words
 * (pool_bytes .. share_moves, no reserved tail) and the getter takes no
 * size, so the 32-word struct of BYPASS_0.2 would overrun their copy: this
 * version fills the first 12 words only.  Programs built from now on link
 * to the default, bypass_pager_tier_stats@@BYPASS_0.2 (tier.c).
 *
 * Its own file, so that a static link never pulls it in (nothing calls
 * bp_tier_stats_v01 by name): a shared object linking libbypass.a without
 * libbypass.map (the preloads) has no BYPASS_0.1 node for the versioned
 * name.  libbypass.map keeps "local: *" in its last node, since a name
 * bound to an old node here is matched against that node's patterns only.
 */
#include <bypass/pager.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pager/tier.h"

/* The 0.1 struct: every counter up to share_moves. */
#define TIER_STATS_V01_WORDS 12
_Static_assert(offsetof(struct bypass_pager_tier_stats, share_moves) ==
		       (TIER_STATS_V01_WORDS - 1) * sizeof(uint64_t),
	       "the 0.1 counters moved: bypass_pager_tier_stats@BYPASS_0.1 would fill the wrong words");

__asm__(".symver bp_tier_stats_v01, bypass_pager_tier_stats@BYPASS_0.1");

int bp_tier_stats_v01(struct bypass_pager *p, void *st)
{
	struct bypass_pager_tier_stats all;
	if (!st)
		return -EINVAL;
	int e = bypass_pager_tier_stats(p, &all);
	if (e)
		return e;
	memcpy(st, &all, TIER_STATS_V01_WORDS * sizeof(uint64_t));
	return 0;
}
