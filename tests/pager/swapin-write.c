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
 * Then the same passes in ascending order over a region 4x the budget
 * (bench pager.prefetch's scans with read-ahead off), where the first
 * read-only pass must also write back at most half of its evictions: with
 * the probes chosen by page id, the probes written in the read-and-write
 * passes took a write-protect fault each, were marked referenced and
 * stayed resident, so the read-only pass faulted on no probe, the mode
 * never ended and every page it read was written back (upcalls: 1927 of
 * 1927 evictions wrote; 6 write-protect faults in the last read-and-write
 * pass).
 */
#include "util.h"

#define NMAX 2048u

/* The pages visited, their count, the budget (pages), and the order. */
struct shape {
	const char *name;
	bool shuffled;
	uint32_t npages, budget;
};

static uint32_t order[NMAX];

static void make_order(const struct shape *sh, uint64_t *seed)
{
	uint32_t n = sh->npages;
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	if (!sh->shuffled)
		return;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(xorshift(seed) % (i + 1));
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

/* One pass over every page in a new order: each checked at version v,
 * then (write) rewritten at v + 1; the counters it moved. */
static struct bypass_pager_stats pass(bypass_pager *p, char *m, const struct shape *sh,
				      uint64_t *seed, uint64_t v, bool write, int mode)
{
	make_order(sh, seed);
	struct bypass_pager_stats a = stats_of(p), b;
	for (uint32_t k = 0; k < sh->npages; k++) {
		uint64_t i = order[k];
		if (!page_ok(m + i * PAGE, i, v))
			TEST_FAIL("%s, %s: page %lu not version %lu (%s)", mode_name(mode), sh->name,
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

/* At most 1/frac of a read-only pass's evictions wrote. */
static void check_clean(int mode, const struct shape *sh, const char *which,
			const struct bypass_pager_stats *d, unsigned frac)
{
	uint64_t ev = d->evictions, ev_clean = d->evictions_clean;
	CHECK(ev > sh->npages / 2);
	if (frac * (ev - ev_clean) > ev)
		TEST_FAIL("%s, %s: %lu of %lu evictions of the %s read-only pass wrote pages "
			  "only read (at most 1/%u)", mode_name(mode), sh->name,
			  (unsigned long)(ev - ev_clean), (unsigned long)ev, which, frac);
	TEST_LOG("%s, %s: %s read-only pass: %lu evictions, %lu clean", mode_name(mode),
		 sh->name, which, (unsigned long)ev, (unsigned long)ev_clean);
}

static void run(int mode, const struct shape *sh)
{
	size_t len = (size_t)sh->npages * PAGE;
	struct bypass_pager_config c = { .budget = (size_t)sh->budget * PAGE,
					 .swap_size = 2 * len, .mode = mode, .readahead = 1 };
	bypass_pager *p = try_pager(&c);
	if (!p) {
		TEST_LOG("%s: not allowed here, skipped", mode_name(mode));
		return;
	}
	char *m;
	CHECK_EQ(bypass_pager_map(p, len, 0, (void **)&m), 0);
	uint64_t seed = 12345, v = 0;
	for (uint64_t i = 0; i < sh->npages; i++)
		fill_page(m + i * PAGE, i, v);
	struct bypass_pager_stats d = { 0 };
	for (int n = 0; n < 3; n++, v++) /* read, then write */
		d = pass(p, m, sh, &seed, v, true, mode);
	uint64_t swapins = d.faults_swapin, wp = d.faults_wp;
	CHECK(swapins > sh->npages / 2);
	if (4 * wp > swapins)
		TEST_FAIL("%s, %s: %lu write-protect faults for %lu swap-ins of pages then "
			  "written", mode_name(mode), sh->name, (unsigned long)wp,
			  (unsigned long)swapins);
	TEST_LOG("%s, %s: read and written: %lu swap-ins, %lu write-protect faults",
		 mode_name(mode), sh->name, (unsigned long)swapins, (unsigned long)wp);
	for (int n = 0; n < 3; n++) { /* read only */
		d = pass(p, m, sh, &seed, v, false, mode);
		if (n == 0 && !sh->shuffled)
			check_clean(mode, sh, "first", &d, 2);
	}
	check_clean(mode, sh, "last", &d, 8);
	CHECK(d.resident_peak <= sh->budget);
	CHECK_EQ(bypass_pager_unmap(p, m, len), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	static const struct shape shapes[] = {
		{ "shuffled", true, 512, 64 },
		/* the region 4x the budget, as pager.prefetch's: the probes
		 * (an eighth of the budget) fit in it */
		{ "ascending", false, NMAX, 512 },
	};
	for (unsigned i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		run(BYPASS_PAGER_UPCALL, &shapes[i]);
		run(BYPASS_PAGER_HANDLER, &shapes[i]);
	}
	tmpdir_cleanup();
	return test_pass("pager/swapin-write");
}
