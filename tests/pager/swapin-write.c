/* SPDX-License-Identifier: MIT */
/*
 * Write re-faults (issue 32, item 4): in a region whose pages are read and
 * then written (GNU sort's pattern), a read fault maps the page it reads
 * back dirty at once, so the write that follows takes no write-protect
 * fault (fault.c, sw_write_mode); when the program stops writing, pages
 * read back are mapped clean again and evicted without a write.  Both
 * fault modes, readahead off (single pages), pages visited in a shuffled
 * order (no stream for the prefetcher): a first pass writes every page,
 * three passes read each page and then write it, three passes only read.
 * Counted, not timed: in the last read-and-write pass at most a quarter of
 * the swap-ins take a write-protect fault (every one did before: a page
 * read back was always mapped clean); in the last read-only pass at most an
 * eighth of the evictions write.  Every page is checked at every pass.
 */
#include "util.h"

#define BUDGET (64 * PAGE)
#define NPAGES 512ul

static uint32_t order[NPAGES];

static void shuffle(uint64_t *seed)
{
	for (uint32_t i = 0; i < NPAGES; i++)
		order[i] = i;
	for (uint32_t i = NPAGES - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(xorshift(seed) % (i + 1));
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

/* One pass over every page in a new shuffled order: each checked at
 * version v, then (write) rewritten at v + 1; the counters it moved. */
static struct bypass_pager_stats pass(bypass_pager *p, char *m, uint64_t *seed, uint64_t v,
				      bool write, int mode)
{
	shuffle(seed);
	struct bypass_pager_stats a = stats_of(p), b;
	for (uint32_t k = 0; k < NPAGES; k++) {
		uint64_t i = order[k];
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("%s: page %lu not version %lu (%s)", mode_name(mode),
				  (unsigned long)i, (unsigned long)v, write ? "read, written" : "read");
		if (write)
			fill_page(m + i * PAGE, i, v + 1);
	}
	b = stats_of(p);
	b.faults_swapin -= a.faults_swapin;
	b.faults_wp -= a.faults_wp;
	b.evictions -= a.evictions;
	b.evictions_clean -= a.evictions_clean;
	return b;
}

static void run(int mode)
{
	struct bypass_pager_config c = { .budget = BUDGET, .swap_size = 2 * NPAGES * PAGE,
					 .mode = mode, .readahead = 1 };
	bypass_pager *p = try_pager(&c);
	if (!p) {
		TEST_LOG("%s: not allowed here, skipped", mode_name(mode));
		return;
	}
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	uint64_t seed = 12345, v = 0;
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, v);
	struct bypass_pager_stats d = { 0 };
	for (int n = 0; n < 3; n++, v++) /* read, then write */
		d = pass(p, m, &seed, v, true, mode);
	uint64_t swapins = d.faults_swapin, wp = d.faults_wp;
	CHECK(swapins > NPAGES / 2);
	if (4 * wp > swapins)
		TEST_FAIL("%s: %lu write-protect faults for %lu swap-ins of pages then written",
			  mode_name(mode), (unsigned long)wp, (unsigned long)swapins);
	for (int n = 0; n < 3; n++) /* read only */
		d = pass(p, m, &seed, v, false, mode);
	uint64_t ev = d.evictions, ev_clean = d.evictions_clean;
	CHECK(ev > NPAGES / 2);
	if (8 * (ev - ev_clean) > ev)
		TEST_FAIL("%s: %lu of %lu evictions wrote pages only read", mode_name(mode),
			  (unsigned long)(ev - ev_clean), (unsigned long)ev);
	CHECK(d.resident_peak <= BUDGET / PAGE);
	TEST_LOG("%s: read and written: %lu swap-ins, %lu write-protect faults; read only: %lu "
		 "evictions, %lu clean", mode_name(mode), (unsigned long)swapins,
		 (unsigned long)wp, (unsigned long)ev, (unsigned long)ev_clean);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/swapin-write");
}
