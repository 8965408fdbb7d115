/* SPDX-License-Identifier: MIT */
/*
 * bypass_pager_discard(), the public discard (pager.c, over evict.c's
 * bp_pager_discard), in both engines:
 *  - bad arguments are refused with -EINVAL and change nothing (a null
 *    pager, an unaligned address or length, a zero length, memory that is
 *    no region, a range running past its region, one that wraps): every
 *    page of the region, evicted ones included, still holds its data;
 *  - over a range of two adjacent regions, partly evicted, with two pages
 *    pinned in it (one writable, one read-only: zeroing that one takes a
 *    write-protect fault inside the call): 0, the whole range reads as
 *    zeros (the pinned pages, which the pager cannot discard, zeroed by
 *    writing: they stay pinned), the pages around keep their data; nothing
 *    is read or written for it; the budget's count drops by the range's
 *    resident pages but the pinned ones (only those were written to), the
 *    swap file's by the range's slots (no page of it keeps one);
 *  - in a fork child that keeps the pager (shared slots, share.c) a
 *    discard is the child's own: zeros there, the parent's pages keep
 *    their data; where the child read the pages back, -ECHILD.
 */
#include "util.h"
#include "pager/pager_internal.h"

#include <sys/wait.h>

#define BUDGET 64ul  /* pages */
#define NPAGES 256ul /* pages in each of the two regions */
#define LO 128ul     /* the discarded range: [LO, HI) of the two */
#define HI 384ul
#define PIN 200ul    /* a page of it pinned writable */
#define PIN_RO 150ul /* and one pinned read-only (clean: zeroing it faults) */

/* Pages of [a, b) of the two regions (from m) resident, swapped, and
 * holding a swap slot (swapped ones, and resident ones clean since read). */
static void census(bypass_pager *p, char *m, uint64_t a, uint64_t b, uint32_t *res,
		  uint32_t *swp, uint32_t *slots)
{
	*res = *swp = *slots = 0;
	unsigned ti = bp_tab_enter();
	for (uint64_t i = a; i < b; i++) {
		uintptr_t addr = (uintptr_t)m + i * PAGE;
		struct region *r = bp_tab_find(bp_tab_get(), addr);
		CHECK(r != NULL);
		struct pg *pg = pg_of(p, region_id(r, addr));
		bp_pg_lock(pg);
		unsigned st = pg_state(atomic_load(&pg->w));
		*res += st == PS_RESIDENT || st == PS_WRITEBACK;
		*swp += st == PS_SWAPPED;
		*slots += pg->slot != 0;
		bp_pg_unlock(pg);
	}
	bp_tab_leave(ti);
}

static void all_hold(char *m, uint64_t n, uint64_t v, const char *when)
{
	for (uint64_t i = 0; i < n; i++)
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("page %lu lost its data %s", (unsigned long)i, when);
}

static void one(int mode)
{
	struct bypass_pager_config c = { .budget = BUDGET * PAGE,
					 .swap_size = 4 * 2 * NPAGES * PAGE, .mode = mode };
	bypass_pager *p = try_pager(&c);
	if (!p) {
		TEST_LOG("handler mode not allowed here: upcall only");
		return;
	}
	/* two regions side by side, carved out of one reservation */
	char *m = mmap(NULL, 2 * NPAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK_EQ(bp_pager_map_at(p, m, NPAGES * PAGE, 0), 0);
	CHECK_EQ(bp_pager_map_at(p, m + NPAGES * PAGE, NPAGES * PAGE, 0), 0);
	for (uint64_t i = 0; i < 2 * NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	char *plain = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	CHECK(plain != MAP_FAILED);

	/* bad arguments: refused, nothing lost */
	CHECK_EQ(bypass_pager_discard(NULL, m, PAGE), -EINVAL);
	CHECK_EQ(bypass_pager_discard(p, m + 1, PAGE), -EINVAL);
	CHECK_EQ(bypass_pager_discard(p, m, PAGE + 1), -EINVAL);
	CHECK_EQ(bypass_pager_discard(p, m, 100), -EINVAL);
	CHECK_EQ(bypass_pager_discard(p, m, 0), -EINVAL);
	CHECK_EQ(bypass_pager_discard(p, plain, PAGE), -EINVAL);
	CHECK_EQ(bypass_pager_discard(p, m + (2 * NPAGES - 1) * PAGE, 2 * PAGE), -EINVAL);
	CHECK_EQ(bypass_pager_discard(p, (void *)(UINTPTR_MAX & ~(PAGE - 1)), 2 * PAGE),
		 -EINVAL);
	all_hold(m, 2 * NPAGES, 1, "after the refused discards");
	CHECK_EQ(plain[0], 0);

	/* the range: version 2, the range's pages last (its tail resident),
	 * one of them pinned */
	for (uint64_t i = 0; i < 2 * NPAGES; i++)
		if (i < LO || i >= HI)
			fill_page(m + i * PAGE, i, 2);
	for (uint64_t i = LO; i < HI; i++)
		fill_page(m + i * PAGE, i, 2);
	CHECK_EQ(bypass_pager_pin(p, m + PIN * PAGE, PAGE, BYPASS_PAGER_PIN_WRITE), 0);
	CHECK_EQ(bypass_pager_pin(p, m + PIN_RO * PAGE, PAGE, 0), 0);
	bp_evict_settle(p);
	uint32_t res, swp, slots;
	census(p, m, LO, HI, &res, &swp, &slots);
	if (res < 3 || swp == 0)
		TEST_FAIL("the range is not partly evicted: %u resident, %u swapped", res, swp);
	struct bypass_pager_stats a = stats_of(p);
	uint32_t res0 = res, swp0 = swp;

	CHECK_EQ(bypass_pager_discard(p, m + LO * PAGE, (HI - LO) * PAGE), 0);

	struct bypass_pager_stats b = stats_of(p);
	CHECK_EQ(b.bytes_written, a.bytes_written);
	CHECK_EQ(b.bytes_read, a.bytes_read);
	CHECK_EQ(b.faults_swapin, a.faults_swapin);
	CHECK_EQ(b.resident_pages, a.resident_pages - (res - 2));
	/* every slot of the range freed: the discarded pages' by the
	 * discard, the read-only pinned page's by its write fault */
	CHECK_EQ(b.swap_used, a.swap_used - slots);
	census(p, m, LO, HI, &res, &swp, &slots);
	CHECK_EQ(res, 2); /* the pinned ones */
	CHECK_EQ(swp, 0);
	CHECK_EQ(slots, 0);
	CHECK_EQ(b.pinned_pages, 2);
	for (uint64_t i = 0; i < 2 * NPAGES; i++) {
		bool inside = i >= LO && i < HI;
		if (inside ? !page_zero(m + i * PAGE) : !page_ok(m + i * PAGE, i, 2))
			TEST_FAIL("%s: page %lu %s after the discard", mode_name(mode),
				  (unsigned long)i, inside ? "not zeros" : "lost its data");
	}
	CHECK_EQ(bypass_pager_unpin(p, m + PIN * PAGE, PAGE), 0);
	CHECK_EQ(bypass_pager_unpin(p, m + PIN_RO * PAGE, PAGE), 0);
	printf("%s: %u resident (2 pinned) and %u swapped pages discarded, %lu pages read "
	       "back around them\n", mode_name(mode), res0, swp0,
	       (unsigned long)(2 * NPAGES - (HI - LO)));

	/* a fork child: it keeps the pager over slots shared with the parent
	 * (share.c), where its discard is its own: the parent's pages keep
	 * their data; or the regions are its plain memory (-ECHILD) */
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		int e = bypass_pager_discard(p, m, LO * PAGE);
		if (e == -ECHILD)
			_exit(2);
		if (e)
			_exit(10 + (-e & 63));
		for (uint64_t i = 0; i < LO; i++)
			if (!page_zero(m + i * PAGE))
				_exit(1);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 2))
		TEST_FAIL("%s: the child's discard: %s %d", mode_name(mode),
			  WIFEXITED(st) ? "exit" : "signal",
			  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	printf("%s: a fork child's discard: %s\n", mode_name(mode),
	       WEXITSTATUS(st) ? "-ECHILD (it read the pages back)" : "its own, zeros there");
	all_hold(m, LO, 2, "after a child's discard");

	CHECK_EQ(munmap(plain, 2 * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(p, m + NPAGES * PAGE, NPAGES * PAGE), 0);
	bypass_pager_destroy(p);
}

int main(void)
{
	test_timeout(120);
	one(BYPASS_PAGER_UPCALL);
	one(BYPASS_PAGER_HANDLER);
	return test_pass("pager/discard-api");
}
