/* SPDX-License-Identifier: MIT */
/*
 * Prefetches racing unmaps: two threads write and check versioned pages of
 * region A (4x the budget) under the "prefetch" policy, while the main
 * thread maps region B again and again, writes it, evicts it (by reading
 * A), asks for it back (WILLNEED, SEQUENTIAL: the prefetcher reads it with
 * reads in flight), faults on some of it, and unmaps it in pieces (a hole
 * in the middle first, then the rest) while those reads may be under way;
 * the page ids of B are handed out again at the next map.  Access heat
 * samples every 10 ms meanwhile, and the policy is switched every round.
 * Every page of A keeps its data, B's pages read what was written in this
 * round (never an earlier round's data), and the budget holds.  Upcall
 * mode and the adaptive engine switching every interval (flip).
 * TEST_LABELS: threads
 */
#include "policy-util.h"
#include "pager/pager_internal.h" /* bp_engine_force */

#include <pthread.h>

#define BUDGET 64ul
#define NA (4 * BUDGET)
#define NB (2 * BUDGET)
#define NC BUDGET /* the main thread's scratch pages */
#define ROUNDS 60

static char *a;
static unsigned char ver[NA];
static _Atomic int running;

static void run(int mode, const char *what)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(),
		.swap_size = (NA + NC + 2 * NB) * PAGE, .mode = mode, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	bypass_pager *p = NULL;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	if (mode == BYPASS_PAGER_ADAPTIVE) /* switching every interval */
		CHECK_EQ(bp_engine_force(p, BP_ENGINE_FLIP), 0);
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	struct bypass_pager_heat_config hc = { .flags = BYPASS_PAGER_HEAT_OPTIONAL,
					       .interval_ms = 10 };
	CHECK_EQ(bypass_pager_heat_enable(p, &hc), 0);
	CHECK_EQ(bypass_pager_map(p, NA * PAGE, 0, (void **)&a), 0);
	char *scratch;
	CHECK_EQ(bypass_pager_map(p, NC * PAGE, 0, (void **)&scratch), 0);
	for (size_t i = 0; i < NA; i++) {
		ver[i] = 1;
		fill_page(a + i * PAGE, i, 1);
	}
	struct pol_worker w[2] = { { a, ver, 0, NA / 2, 3, 6000, &running },
				   { a, ver, NA / 2, NA / 2, 5, 6000, &running } };
	pthread_t t[2];
	atomic_store(&running, 2);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, pol_worker_main, &w[i]), 0);
	static const char *const pols[] = { "prefetch", "window", "clock", "2q" };
	for (int round = 0; round < ROUNDS; round++) {
		char *b;
		CHECK_EQ(bypass_pager_map(p, NB * PAGE, 0, (void **)&b), 0);
		unsigned char v = (unsigned char)(round + 10);
		for (size_t i = 0; i < NB; i++)
			fill_page(b + i * PAGE, 5000 + i, v);
		/* evict most of B: write through the scratch region */
		for (size_t i = 0; i < NC; i++)
			scratch[i * PAGE] = (char)round;
		for (size_t i = 0; i < NB; i += 7)
			if (!page_ok(b + i * PAGE, 5000 + i, v))
				TEST_FAIL("%s round %d: B page %zu wrong before unmap", what, round, i);
		/* back in, by the prefetcher */
		CHECK_EQ(bypass_pager_advise(p, b, NB * PAGE,
					     round % 2 ? BYPASS_PAGER_ADV_WILLNEED
						       : BYPASS_PAGER_ADV_SEQUENTIAL),
			 0);
		for (size_t i = 0; i < 4; i++)
			if (!page_ok(b + i * PAGE, 5000 + i, v))
				TEST_FAIL("%s round %d: B page %zu wrong", what, round, i);
		/* a hole in the middle, then the rest, reads possibly in flight */
		CHECK_EQ(bypass_pager_unmap(p, b + NB / 4 * PAGE, NB / 2 * PAGE), 0);
		for (size_t i = 0; i < NB / 4; i++)
			if (!page_ok(b + i * PAGE, 5000 + i, v))
				TEST_FAIL("%s round %d: B page %zu wrong after a hole", what, round,
					  i);
		CHECK_EQ(bypass_pager_unmap(p, b, NB / 4 * PAGE), 0);
		CHECK_EQ(bypass_pager_unmap(p, b + 3 * NB / 4 * PAGE, NB / 4 * PAGE), 0);
		CHECK_EQ(bypass_pager_set_policy(p, pols[round % 4]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pol_verify(what, a, ver, NA);
	struct bypass_pager_stats st = stats_of(p);
	TEST_LOG("%s: %d rounds, evictions %llu, prefetched %llu (%llu used), peak %llu",
		 what, ROUNDS, (unsigned long long)st.evictions,
		 (unsigned long long)st.prefetch_pages, (unsigned long long)st.prefetch_used,
		 (unsigned long long)st.resident_peak);
	CHECK(st.resident_peak <= BUDGET);
	CHECK_EQ(st.mapped_pages, NA + NC);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(240);
	unsetenv("BYPASS_PAGER_HEAT");
	run(BYPASS_PAGER_UPCALL, "upcall");
	run(BYPASS_PAGER_ADAPTIVE, "adaptive (flip)");
	tmpdir_cleanup();
	return test_pass("pager/policy-unmap");
}
