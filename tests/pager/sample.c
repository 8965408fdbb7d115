/* SPDX-License-Identifier: MIT */
/*
 * Access samples (BYPASS_PAGER_SAMPLE): the mechanism, page by page, with
 * the internal bp_sample_park_now() choosing the pages: a parked page is
 * out of the page table, an access (read or write) brings its data back
 * and counts a hit, a clean page stays clean after a read and becomes
 * dirty after a write, a pin brings it back first, the evictor never takes
 * it, an untouched one is put back as it was.  Then what the sampler is
 * for: a page that is read in a loop (reads alone never fault) is not
 * chosen as a victim while cold pages exist, once a sample has seen it;
 * without samples it is chosen like the rest.  Last, the sampler thread
 * on its own while a reader and a scan run: it parks pages, sees hits, and
 * every byte stays right.  Bad input: an unknown flag is still -EINVAL.
 * TEST_LABELS: threads
 */
#include "util.h"
#include "pager/pager_internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define BUDGET 64ul
#define NPAGES 256ul

/* sample: the sampler's state, thread: and its thread (else only the
 * test parks pages, so that nothing else faults or counts meanwhile) */
static bypass_pager *make(bool sample, bool thread)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(), .swap_size = 2 * NPAGES * PAGE,
		.mode = BYPASS_PAGER_UPCALL,
		.flags = BYPASS_PAGER_SWAP_TEMP | (thread ? BYPASS_PAGER_SAMPLE : 0),
		.readahead = 1, .fault_around = 1,
	};
	bypass_pager *p = NULL;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	if (sample && !thread)
		CHECK_EQ(bp_sample_start(p, false), 0);
	return p;
}

static uint32_t flags_of(bypass_pager *p, char *m, size_t i)
{
	unsigned idx = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), (uintptr_t)(m + i * PAGE));
	uint32_t w = r ? atomic_load(&pg_of(p, region_id(r, (uintptr_t)(m + i * PAGE)))->w) : 0;
	bp_tab_leave(idx);
	return w;
}

static void unref(bypass_pager *p, char *m, size_t i)
{
	unsigned idx = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), (uintptr_t)(m + i * PAGE));
	CHECK(r);
	pg_clear(pg_of(p, region_id(r, (uintptr_t)(m + i * PAGE))), PW_REF);
	bp_tab_leave(idx);
}

static bool resident(bypass_pager *p, char *m, size_t i)
{
	return pg_state(flags_of(p, m, i)) == PS_RESIDENT;
}

/* a resident, mapped, unreferenced page below page `from` */
static size_t resident_page(bypass_pager *p, char *m, size_t from)
{
	for (size_t i = from; i-- > 0;)
		if (resident(p, m, i) && !(flags_of(p, m, i) & (PW_PARK | PW_REF)) &&
		    present_pages(m + i * PAGE, PAGE))
			return i;
	TEST_FAIL("no resident page below %zu", from);
}

static void mechanism(void)
{
	bypass_pager *p = make(true, false);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	/* a dirty resident page: parked, read back */
	size_t d = resident_page(p, m, NPAGES);
	CHECK(!(flags_of(p, m, d) & PW_WP));
	CHECK_EQ(bp_sample_park_now(p, (uintptr_t)(m + d * PAGE), 1), 1);
	CHECK(flags_of(p, m, d) & PW_PARK);
	CHECK(absent(m + d * PAGE) || !present_pages(m + d * PAGE, PAGE));
	CHECK(resident(p, m, d)); /* counted resident: its data is in RAM */
	uint64_t h0 = stats_of(p).access_hits;
	CHECK(page_ok(m + d * PAGE, d, 1));
	CHECK_EQ(stats_of(p).access_hits, h0 + 1);
	CHECK(!(flags_of(p, m, d) & PW_PARK) && (flags_of(p, m, d) & PW_REF));
	CHECK(!(flags_of(p, m, d) & PW_WP)); /* still dirty and writable */
	fill_page(m + d * PAGE, d, 2);

	/* a clean page (read back from swap): a read keeps it clean, a
	 * write after makes it dirty through a write-protect fault */
	CHECK(page_ok(m, 0, 1)); /* page 0 was evicted: now clean */
	CHECK(flags_of(p, m, 0) & PW_WP);
	CHECK_EQ(bp_sample_park_now(p, (uintptr_t)m, 1), 1);
	CHECK(page_ok(m, 0, 1));
	CHECK(flags_of(p, m, 0) & PW_WP);
	uint64_t wp0 = stats_of(p).faults_wp;
	fill_page(m, 0, 2);
	CHECK_EQ(stats_of(p).faults_wp, wp0 + 1);
	CHECK(page_ok(m, 0, 2));

	/* a write to a parked clean page: dirty, data right */
	CHECK(page_ok(m + PAGE, 1, 1));
	CHECK_EQ(bp_sample_park_now(p, (uintptr_t)(m + PAGE), 1), 1);
	volatile char *v = m + PAGE + 8; /* a real write (two that cancel out) */
	*v ^= 0x5a;
	*v ^= 0x5a;
	CHECK(page_ok(m + PAGE, 1, 1));
	CHECK(!(flags_of(p, m, 1) & PW_WP) && (flags_of(p, m, 1) & PW_DIRTY));

	/* a pin of a parked page brings it back first (the kernel may use it) */
	CHECK(page_ok(m + 2 * PAGE, 2, 1));
	CHECK_EQ(bp_sample_park_now(p, (uintptr_t)(m + 2 * PAGE), 1), 1);
	CHECK_EQ(bypass_pager_pin(p, m + 2 * PAGE, PAGE, 0), 0);
	CHECK_EQ(present_pages(m + 2 * PAGE, PAGE), 1);
	CHECK(page_ok(m + 2 * PAGE, 2, 1));
	CHECK_EQ(bypass_pager_unpin(p, m + 2 * PAGE, PAGE), 0);

	/* the evictor passes a parked page; an untouched one is put back */
	size_t k = resident_page(p, m, NPAGES);
	CHECK_EQ(bp_sample_park_now(p, (uintptr_t)(m + k * PAGE), 1), 1);
	for (size_t i = 0; i < NPAGES; i++)
		if (i != k && i != d && !page_ok(m + i * PAGE, i, i < 2 ? 2 - (i == 1) : 1))
			TEST_FAIL("page %zu lost its data", i);
	CHECK(resident(p, m, k) && (flags_of(p, m, k) & PW_PARK));
	uint64_t h1 = stats_of(p).access_hits;
	bp_sample_unpark_now(p);
	CHECK(!(flags_of(p, m, k) & PW_PARK));
	CHECK_EQ(present_pages(m + k * PAGE, PAGE), 1);
	CHECK(page_ok(m + k * PAGE, k, 1));
	CHECK_EQ(stats_of(p).access_hits, h1); /* put back, not a hit */
	CHECK(page_ok(m + d * PAGE, d, 2));
	CHECK(stats_of(p).resident_peak <= BUDGET);

	/* an unmap forgets parked pages: a region given the same page ids
	 * next reads zeros, never the old data from a parking slot */
	size_t u = resident_page(p, m, NPAGES);
	CHECK_EQ(bp_sample_park_now(p, (uintptr_t)(m + u * PAGE), 1), 1);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	char *m2;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m2), 0);
	for (size_t i = 0; i < NPAGES; i++)
		if (!page_zero(m2 + i * PAGE))
			TEST_FAIL("page %zu of a new region is not zeros", i);
	fill_page(m2 + u * PAGE, u, 7); /* the same page id, new data, parked again */
	unref(p, m2, u); /* (the write set its reference bit: the sampler takes
			    unreferenced pages only) */
	CHECK_EQ(bp_sample_park_now(p, (uintptr_t)(m2 + u * PAGE), 1), 1);
	CHECK(page_ok(m2 + u * PAGE, u, 7));
	bp_sample_unpark_now(p);
	CHECK(page_ok(m2 + u * PAGE, u, 7));
	CHECK_EQ(bypass_pager_destroy(p), 0);
	TEST_LOG("mechanism: park, read, write, pin, evictor, put back, unmap: ok");
}

/*
 * "A page read in a loop is not chosen as a victim while a cold one
 * exists": every page written, so the resident ones are cold; h is the
 * page the evictor would take first (the inactive tail of the shard it
 * starts from), and it is read in a loop (reads of a mapped page never
 * fault).  With a sample (h parked first, as the sampler does with the
 * pages at the inactive tails) the read is seen.  Then the evictor's
 * choice of victims, asked for every resident page: with the sample h is
 * taken only after every cold page of its 2Q list (the lists are sharded;
 * when its own list has no cold page left, 2Q's refill demotes it, as
 * Linux's does), or not at all; without it h is the first victim.
 * Returns h's place among the victims (-1: not taken), their number, and
 * how many cold pages of h's list were taken before it.
 */
static int victim_place(bool sample, uint32_t *nvict, uint32_t *cold_before,
			uint32_t *cold_in_list)
{
	bypass_pager *p = make(sample, false);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	unsigned idx = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), (uintptr_t)m);
	uint32_t id0 = r->id0;
	bp_tab_leave(idx);
	bp_plock_lock(&p->ev.lock);
	struct lru_shard *sh = &p->lists.shard[p->lists.cursor];
	bp_spin_lock(&sh->lock);
	uint32_t hid = sh->lru[0].tail;
	bp_spin_unlock(&sh->lock);
	bp_plock_unlock(&p->ev.lock);
	CHECK(hid != PG_NONE && hid >= id0 && hid < id0 + NPAGES);
	size_t h = hid - id0;
	CHECK(!(flags_of(p, m, h) & PW_REF));
	if (sample)
		CHECK_EQ(bp_sample_park_now(p, (uintptr_t)(m + h * PAGE), 1), 1);
	for (int k = 0; k < 3; k++) /* the loop */
		CHECK(page_ok(m + h * PAGE, h, 1));
	static uint32_t ids[NPAGES];
	bp_plock_lock(&p->ev.lock);
	uint32_t want = atomic_load(&p->bud.resident);
#define SHARD(id) (((id) >> PG_LRU_RUN) % PG_LRU_SHARDS)
	*cold_in_list = 0;
	for (uint32_t id = id0; id < id0 + NPAGES; id++)
		*cold_in_list += id != hid && SHARD(id) == SHARD(hid) &&
				 pg_state(atomic_load(&pg_of(p, id)->w)) == PS_RESIDENT;
	uint32_t n = bp_select_victims(p, want, ids);
	int place = -1;
	*cold_before = 0;
	for (uint32_t i = 0; i < n; i++) { /* all back on the lists, unlocked */
		if (ids[i] == hid)
			place = (int)i;
		else if (place < 0 && SHARD(ids[i]) == SHARD(hid))
			(*cold_before)++;
		bp_lru_add(p, ids[i], false);
		bp_pg_unlock(pg_of(p, ids[i]));
	}
	bp_plock_unlock(&p->ev.lock);
	TEST_LOG("%s: %u victims of %u resident pages, the page read in a loop %s %d, after "
		 "%u of the %u cold pages of its list", sample ? "with a sample" : "without", n,
		 want, place < 0 ? "not taken" : "at", place, *cold_before, *cold_in_list);
	for (size_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu lost its data", i);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	*nvict = n;
	return place;
}

struct reader {
	char *m;
	size_t page;
	_Atomic int stop, bad;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	while (!atomic_load(&r->stop))
		if (!page_ok(r->m + r->page * PAGE, r->page, 1))
			atomic_store(&r->bad, 1);
	return NULL;
}

static void sampler_thread(void)
{
	bypass_pager *p = make(true, true);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	struct reader rd = { .m = m, .page = NPAGES / 2 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, read_loop, &rd), 0);
	/* scan until the sampler has parked pages and seen hits: the harness's
	 * time limit ends a run that never gets there */
	unsigned passes = 0;
	struct bypass_pager_stats st;
	do {
		for (size_t i = 0; i < NPAGES; i++)
			if (!page_ok(m + i * PAGE, i, 1))
				TEST_FAIL("page %zu lost its data (pass %u)", i, passes);
		passes++;
		st = stats_of(p);
	} while (!st.access_samples || !st.access_hits);
	atomic_store(&rd.stop, 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK(!atomic_load(&rd.bad));
	TEST_LOG("sampler: %u scans, %llu pages sampled, %llu hits, %llu ns sampling, %llu ns "
		 "in hit faults (%.0f ns per sampled page), %llu faults in all", passes,
		 (unsigned long long)st.access_samples, (unsigned long long)st.access_hits,
		 (unsigned long long)st.access_sample_ns, (unsigned long long)st.access_hit_ns,
		 (double)(st.access_sample_ns + st.access_hit_ns) / (double)st.access_samples,
		 (unsigned long long)st.lat_count);
	CHECK(st.resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	struct bypass_pager_config c = { .budget = BUDGET * PAGE, .swap_path = tmpdir(),
					 .swap_size = NPAGES * PAGE,
					 .flags = BYPASS_PAGER_SWAP_TEMP | 0x100 };
	bypass_pager *p;
	CHECK_ERR(bypass_pager_create(&c, &p), -EINVAL);
	mechanism();
	uint32_t n, before, cold;
	int place = victim_place(true, &n, &before, &cold);
	CHECK(cold >= 1); /* cold pages were there to take */
	CHECK(place < 0 || before == cold);
	CHECK_EQ(victim_place(false, &n, &before, &cold), 0);
	CHECK(cold >= 1);
	sampler_thread();
	tmpdir_cleanup();
	return test_pass("pager/sample");
}
