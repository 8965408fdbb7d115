/* SPDX-License-Identifier: MIT */
/*
 * The pager's discard (bp_pager_discard, evict.c; the preload's heap calls
 * it from jemalloc's forced purge): over a range partly evicted, with the
 * compressed tier off and on,
 *  - every page of the range reads as zeros afterwards, the pages around
 *    it keep their data;
 *  - nothing is written or read for it: the bytes written do not move, the
 *    range's pages are ZERO with no slot;
 *  - the budget's count drops by the range's resident pages, the swap
 *    file's by its swapped pages, the pool's by its copies there;
 *  - bad ranges are refused (-EINVAL);
 * and, racing a thread that keeps evicting (write-backs of the same pages
 * in flight), a discard that says it discarded everything leaves zeros, one
 * that kept some pages leaves each either zeros or its data, and at the end
 * the budget's count is the number of pages resident.
 * TEST_LABELS: threads
 */
#include "util.h"
#include "tier-util.h"
#include "pager/pager_internal.h"
#include "pager/tier.h"

#include <pthread.h>

#define BUDGET 64ul  /* pages */
#define NPAGES 256ul /* pages in the region: 4x the budget */
#define LO 64ul      /* the discarded range: [LO, HI) */
#define HI 192ul

static uint32_t id_of(void *m, uint64_t i)
{
	unsigned ti = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), (uintptr_t)m);
	CHECK(r != NULL);
	uint32_t id = region_id(r, (uintptr_t)m) + (uint32_t)i;
	bp_tab_leave(ti);
	return id;
}

/* Page i's data at version v: compressible with the tier (its pool takes
 * it), random words without. */
static void fill(bool tier, char *pg, uint64_t i, uint64_t v)
{
	if (tier)
		tier_fill(pg, i, v);
	else
		fill_page(pg, i, v);
}

static bool holds(bool tier, const char *pg, uint64_t i, uint64_t v)
{
	char want[PAGE];
	fill(tier, want, i, v);
	return memcmp(pg, want, PAGE) == 0;
}

static bool is_zero(const char *pg)
{
	for (size_t k = 0; k < PAGE; k++)
		if (pg[k])
			return false;
	return true;
}

/* Pages of [a, b) resident (or under write-back) and swapped, by state. */
static void census(bypass_pager *p, uint32_t id0, uint64_t a, uint64_t b, uint32_t *res,
		   uint32_t *swp)
{
	*res = *swp = 0;
	for (uint64_t i = a; i < b; i++) {
		unsigned st = pg_state(atomic_load(&pg_of(p, id0 + (uint32_t)i)->w));
		*res += st == PS_RESIDENT || st == PS_WRITEBACK;
		*swp += st == PS_SWAPPED;
	}
}

static void partly_evicted(bool tier)
{
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, 4 * NPAGES * PAGE);
	if (tier)
		tier_on(p, 50);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	uint32_t id0 = id_of(m, 0);
	/* the pages around the range first, then the range's: its last pages
	 * stay resident, the others are evicted (the newest into the pool) */
	for (uint64_t i = 0; i < NPAGES; i++)
		if (i < LO || i >= HI)
			fill(tier, m + i * PAGE, i, 1);
	for (uint64_t i = LO; i < HI; i++)
		fill(tier, m + i * PAGE, i, 1);
	bp_evict_settle(p);
	uint32_t res, swp;
	census(p, id0, LO, HI, &res, &swp);
	if (res == 0 || swp == 0)
		TEST_FAIL("the range is not partly evicted: %u resident, %u swapped", res, swp);
	uint32_t resident = atomic_load(&p->bud.resident), used = atomic_load(&p->swap.used);
	uint64_t written = ST_SUM(p, wr), read = ST_SUM(p, rd);
	uint64_t pool0 = tier ? tier_stats(p).pool_pages : 0;
	uint32_t inpool = 0;
	char buf[PAGE];
	for (uint64_t i = LO; tier && i < HI; i++) {
		struct pg *pg = pg_of(p, id0 + (uint32_t)i);
		bp_pg_lock(pg);
		if (pg->slot && pg_state(atomic_load(&pg->w)) == PS_SWAPPED)
			inpool += bp_tier_load(atomic_load(&p->tier), slot_index(pg->slot), buf) == 1;
		bp_pg_unlock(pg);
	}
	if (tier)
		printf("tier: %lu pages in the pool, %u of them the range's\n", (unsigned long)pool0, inpool);

	CHECK_EQ(bp_pager_discard(p, (uintptr_t)m + LO * PAGE, (HI - LO) * PAGE), 0);

	if (!tier)
		CHECK_EQ(atomic_load(&p->bud.resident), resident - res);
	else /* the pool's memory counts in the budget too: it shrank */
		CHECK(atomic_load(&p->bud.resident) <= resident - res);
	CHECK_EQ(atomic_load(&p->swap.used), used - swp);
	CHECK_EQ(ST_SUM(p, wr), written);
	CHECK_EQ(ST_SUM(p, rd), read);
	if (tier) /* the range's newest evicted pages were in the pool */
		CHECK(tier_stats(p).pool_pages < pool0);
	for (uint64_t i = LO; i < HI; i++) {
		struct pg *pg = pg_of(p, id0 + (uint32_t)i);
		uint32_t w = atomic_load(&pg->w);
		if (pg_state(w) != PS_ZERO || pg->slot || (w & (PW_LRU | PW_DIRTY)))
			TEST_FAIL("page %lu: state %u, slot %u, flags %#x after the discard",
				  (unsigned long)i, pg_state(w), pg->slot, w);
	}
	/* zeros inside, the data around; reading zeros reads nothing */
	for (uint64_t i = 0; i < NPAGES; i++) {
		bool ok = i >= LO && i < HI ? is_zero(m + i * PAGE) : holds(tier, m + i * PAGE, i, 1);
		if (!ok)
			TEST_FAIL("page %lu: %s after the discard", (unsigned long)i,
				  i >= LO && i < HI ? "not zeros" : "lost its data");
	}

	/* bad ranges */
	CHECK_EQ(bp_pager_discard(p, (uintptr_t)m + 1, PAGE), -EINVAL);
	CHECK_EQ(bp_pager_discard(p, (uintptr_t)m, PAGE + 1), -EINVAL);
	CHECK_EQ(bp_pager_discard(p, (uintptr_t)m + (NPAGES - 1) * PAGE, 2 * PAGE), -EINVAL);
	CHECK_EQ(bp_pager_discard(p, (uintptr_t)m, 0), 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	bypass_pager_destroy(p);
}

/* ------------------------------------------------------------ the race */

#define RACE_LO 0ul
#define RACE_N 32ul
#define ROUNDS 300

struct race {
	char *m;
	_Atomic bool stop;
};

/* Keeps the pager evicting: writes the pages beyond the discarded range. */
static void *evictor(void *arg)
{
	struct race *rc = arg;
	for (uint64_t v = 2; !atomic_load(&rc->stop); v++)
		for (uint64_t i = RACE_N; i < NPAGES && !atomic_load(&rc->stop); i++)
			*(uint64_t *)(rc->m + i * PAGE) = pat(i, v, 0);
	return NULL;
}

static void race(bool tier)
{
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, 4 * NPAGES * PAGE);
	if (tier)
		tier_on(p, 50);
	struct race rc = { 0 };
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&rc.m), 0);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, evictor, &rc), 0);
	unsigned all = 0, some = 0;
	for (uint64_t v = 1; v <= ROUNDS; v++) {
		for (uint64_t i = RACE_LO; i < RACE_N; i++)
			fill(tier, rc.m + i * PAGE, i, v);
		int left = bp_pager_discard(p, (uintptr_t)rc.m, RACE_N * PAGE);
		CHECK(left >= 0 && left <= (int)RACE_N);
		all += left == 0;
		some += left > 0;
		for (uint64_t i = RACE_LO; i < RACE_N; i++) {
			const char *pg = rc.m + i * PAGE;
			if (is_zero(pg))
				continue;
			if (left == 0 || !holds(tier, pg, i, v))
				TEST_FAIL("round %lu, page %lu: neither zeros nor its data (the "
					  "discard kept %d pages)", (unsigned long)v, (unsigned long)i, left);
		}
	}
	atomic_store(&rc.stop, true);
	CHECK_EQ(pthread_join(th, NULL), 0);
	bp_evict_settle(p);
	uint32_t res, swp;
	census(p, id_of(rc.m, 0), 0, NPAGES, &res, &swp);
	if (!tier) /* (the pool's memory counts in the budget too) */
		CHECK_EQ(atomic_load(&p->bud.resident), res);
	else
		CHECK(atomic_load(&p->bud.resident) >= res);
	printf("race (tier %s): %u rounds discarded all, %u kept some\n", tier ? "on" : "off", all,
	       some);
	CHECK(all > 0);
	CHECK_EQ(bypass_pager_unmap(p, rc.m, NPAGES * PAGE), 0);
	bypass_pager_destroy(p);
}

int main(void)
{
	test_timeout(120);
	partly_evicted(false);
	race(false);
	partly_evicted(true);
	race(true);
	return 0;
}
