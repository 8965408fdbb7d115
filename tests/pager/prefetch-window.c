/* SPDX-License-Identifier: MIT */
/*
 * The prefetch window grows only while its pages survive (prefetch.c,
 * bp_pf_window; issue 32, item 4).  Made-up sequences, no timing:
 *  - the rule alone: from the first window (8 pages) a stream with no loss
 *    doubles up to maxw and stays there (a sequential scan keeps its full
 *    window); a loss halves the window and the ceiling; without losses the
 *    window doubles back to the ceiling, then the ceiling grows by 8 pages
 *    a window; it never goes below 8 pages nor above maxw;
 *  - the same through the stream detector (bp_pf_stream) on a mapped
 *    region: consecutive faults grow r->pf_win to bp_pf_max(); pages lost
 *    in the region halve it at the next fault; a new stream in the region
 *    starts small and grows only to the lowered ceiling; a write to a
 *    prefetched page inside the window keeps it, a read fault inside it
 *    or any fault at its front grows it;
 *  - the eviction's count (bp_pf_note_victims): victims still marked
 *    prefetched-unused (PW_PF) count into their region, others do not.
 * With main's rule (the window doubled at every fault of the stream) the
 * lost-page and write checks fail.
 */
#include "util.h"
#include "pager/pager_internal.h"
#include "pager/policy.h"

#define BUDGET 256ul /* pages: bp_pf_max() = 64 */
#define NPAGES 512ul

static void rule_alone(void)
{
	const uint32_t maxw = 1024;
	uint32_t c = 0, w = 8;
	/* no loss: 16, 32, ... 1024, then 1024 */
	for (uint32_t want = 16; want <= maxw; want *= 2) {
		w = bp_pf_window(w, &c, 0, maxw);
		CHECK_EQ(w, want);
	}
	for (int i = 0; i < 10; i++) {
		w = bp_pf_window(w, &c, 0, maxw);
		CHECK_EQ(w, maxw);
		CHECK_EQ(c, maxw);
	}
	/* a loss at 1024: window and ceiling 512 */
	w = bp_pf_window(w, &c, 3, maxw);
	CHECK_EQ(w, 512);
	CHECK_EQ(c, 512);
	/* at the ceiling without loss: +8 a window */
	w = bp_pf_window(w, &c, 0, maxw);
	CHECK_EQ(w, 520);
	CHECK_EQ(c, 520);
	/* a new stream (8 pages) doubles up to the ceiling, not beyond */
	w = 8;
	uint32_t seq[] = { 16, 32, 64, 128, 256, 512, 520, 528 };
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		w = bp_pf_window(w, &c, 0, maxw);
		CHECK_EQ(w, seq[i]);
	}
	/* losses in a row: halved down to 8 pages, not below */
	uint32_t down[] = { 264, 132, 66, 33, 16, 8, 8 };
	for (unsigned i = 0; i < sizeof(down) / sizeof(down[0]); i++) {
		w = bp_pf_window(w, &c, 1, maxw);
		CHECK_EQ(w, down[i]);
		CHECK_EQ(c, down[i]);
	}
	/* a loss on a small window lowers a larger ceiling to half the window */
	c = 0;
	w = bp_pf_window(32, &c, 5, maxw);
	CHECK_EQ(w, 16);
	CHECK_EQ(c, 16);
	/* a small budget: never above maxw, even at the floor */
	c = 0;
	w = 2;
	for (int i = 0; i < 5; i++) {
		w = bp_pf_window(w, &c, 0, 4);
		CHECK(w <= 4);
	}
	CHECK_EQ(w, 4);
	w = bp_pf_window(w, &c, 1, 4);
	CHECK(w <= 4 && c <= 4);
}

int main(void)
{
	test_timeout(60);
	rule_alone();

	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, 4 * BUDGET * PAGE);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	unsigned ti = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), (uintptr_t)m);
	CHECK(r != NULL);
	uint32_t id0 = region_id(r, (uintptr_t)m);
	uint32_t maxw = bp_pf_max(p);
	CHECK_EQ(maxw, BUDGET / 4);

	/* a sequential stream (no prefetch thread: nothing is read, the
	 * detector's window is what is checked) grows to maxw and keeps it */
	uint32_t id = id0;
	bp_pf_stream(p, r, id++, 1, true, false);
	CHECK_EQ(atomic_load(&r->pf_win), 8);
	for (uint32_t want = 16; want <= maxw; want *= 2) {
		bp_pf_stream(p, r, id++, 1, true, false);
		CHECK_EQ(atomic_load(&r->pf_win), want);
	}
	for (int i = 0; i < 20; i++) {
		bp_pf_stream(p, r, id++, 1, true, false);
		CHECK_EQ(atomic_load(&r->pf_win), maxw);
	}

	/* the eviction counts victims still marked prefetched-unused */
	uint32_t v[3] = { id0 + 200, id0 + 201, id0 + 202 };
	pg_set(pg_of(p, v[0]), PW_PF);
	pg_set(pg_of(p, v[2]), PW_PF);
	bp_pf_note_victims(p, v, 3);
	CHECK_EQ(atomic_load(&r->pf_lost), 2);
	pg_clear(pg_of(p, v[0]), PW_PF);
	pg_clear(pg_of(p, v[2]), PW_PF);

	/* the next fault of the stream takes them: window halved */
	bp_pf_stream(p, r, id++, 1, true, false);
	CHECK_EQ(atomic_load(&r->pf_lost), 0);
	CHECK_EQ(atomic_load(&r->pf_win), maxw / 2);
	CHECK_EQ(atomic_load(&r->pf_ceil), maxw / 2);
	/* no loss: at the ceiling, + 8 pages a fault */
	bp_pf_stream(p, r, id++, 1, true, false);
	CHECK_EQ(atomic_load(&r->pf_win), maxw / 2 + 8);

	/* a new stream elsewhere in the region, after a loss: the ceiling
	 * (half the last window) bounds its growth */
	atomic_store(&r->pf_lost, 1);
	id = id0 + 400;
	bp_pf_stream(p, r, id++, 1, true, false);
	CHECK_EQ(atomic_load(&r->pf_win), 8);
	uint32_t ceil = atomic_load(&r->pf_ceil);
	CHECK_EQ(ceil, (maxw / 2 + 8) / 2);
	for (int i = 0; i < 2; i++) /* 16, then the ceiling */
		bp_pf_stream(p, r, id++, 1, true, false);
	CHECK_EQ(atomic_load(&r->pf_win), ceil);

	/* a write to a prefetched page inside the window keeps it; a fault
	 * inside it that read its page, or one at its front, grows it */
	id = id0 + 300;
	bp_pf_stream(p, r, id, 6, true, false); /* new stream; asks [id+6, ...) */
	CHECK_EQ(atomic_load(&r->pf_win), 8);
	uint32_t next = atomic_load(&r->pf_next);
	CHECK_EQ(next, id + 6); /* no prefetch thread: nothing queued */
	bp_pf_stream(p, r, id + 2, 1, true, true); /* inside, a write */
	CHECK_EQ(atomic_load(&r->pf_win), 8);
	bp_pf_stream(p, r, id + 3, 1, true, false); /* inside, a read */
	CHECK_EQ(atomic_load(&r->pf_win), 16);
	next = atomic_load(&r->pf_next);
	bp_pf_stream(p, r, next, 1, true, true); /* a write at the front */
	CHECK_EQ(atomic_load(&r->pf_win), ceil);
	bp_tab_leave(ti);

	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	bypass_pager_destroy(p);
	printf("ok\n");
	return 0;
}
