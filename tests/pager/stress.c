/* SPDX-License-Identifier: MIT */
/*
 * Several threads write and read checksummed pages far beyond the budget,
 * in both fault modes: each thread owns a share of the pages and checks
 * every page it reads against the version it last wrote; all threads also
 * read a shared set of pages at once (faults on the same page in several
 * threads).  Between phases, with the threads parked, the pages present in
 * the page table (mincore) must equal the pager's resident count and never
 * exceed the budget; the recorded peak must never exceed it either.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>

#define THREADS 4
#define BUDGET_PAGES 96ul
#define NPAGES 2048ul /* 21x the budget */
#define SHARED 256ul  /* pages [0, SHARED) are read by everyone */
#define PHASES 4
#define OPS 1500

static char *m;
static uint32_t version[NPAGES]; /* owner-only, except SHARED (read-only) */
static pthread_barrier_t bar;
static int mode;

static void *worker(void *arg)
{
	uint64_t tid = (uint64_t)(uintptr_t)arg;
	uint64_t seed = 0x1234567 + tid * 7919;
	for (int phase = 0; phase < PHASES; phase++) {
		for (int op = 0; op < OPS; op++) {
			uint64_t x = xorshift(&seed);
			if (x % 4 == 0) {
				uint64_t i = (x >> 8) % SHARED;
				if (!page_ok(m + i * PAGE, i, 0))
					TEST_FAIL("%s: shared page %lu wrong", mode_name(mode),
						  (unsigned long)i);
				continue;
			}
			/* an owned page: i % THREADS == tid, outside the shared set */
			uint64_t i = SHARED + ((x >> 8) % ((NPAGES - SHARED) / THREADS)) * THREADS + tid;
			char *pg = m + i * PAGE;
			if (version[i] == 0 ? !page_zero(pg) : !page_ok(pg, i, version[i]))
				TEST_FAIL("%s: page %lu lost version %u", mode_name(mode),
					  (unsigned long)i, version[i]);
			if (x & 0x100) {
				version[i]++;
				fill_page(pg, i, version[i]);
			}
		}
		pthread_barrier_wait(&bar); /* phase done */
		pthread_barrier_wait(&bar); /* main checked */
	}
	return NULL;
}

static void run(int md)
{
	mode = md;
	memset(version, 0, sizeof(version));
	bypass_pager *p = new_pager(mode, BUDGET_PAGES * PAGE, NPAGES * PAGE);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < SHARED; i++)
		fill_page(m + i * PAGE, i, 0);

	pthread_t t[THREADS];
	pthread_barrier_init(&bar, NULL, THREADS + 1);
	for (uintptr_t i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
	for (int phase = 0; phase < PHASES; phase++) {
		pthread_barrier_wait(&bar);
		struct bypass_pager_stats st = stats_of(p);
		size_t present = present_pages(m, NPAGES * PAGE);
		if (present != st.resident_pages || present > BUDGET_PAGES ||
		    st.resident_peak > BUDGET_PAGES)
			TEST_FAIL("%s: %zu pages present, %lu resident, peak %lu, budget %lu",
				  mode_name(mode), present, (unsigned long)st.resident_pages,
				  (unsigned long)st.resident_peak, BUDGET_PAGES);
		pthread_barrier_wait(&bar);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);

	for (uint64_t i = 0; i < NPAGES; i++) {
		uint32_t v = i < SHARED ? 0 : version[i];
		char *pg = m + i * PAGE;
		if (i >= SHARED && v == 0 ? !page_zero(pg) : !page_ok(pg, i, v))
			TEST_FAIL("%s: page %lu wrong at the end", mode_name(mode),
				  (unsigned long)i);
	}
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.resident_peak <= BUDGET_PAGES);
	CHECK(st.faults_swapin > 0 && st.evictions > 0);
	TEST_LOG("%s: %lu zero, %lu swap-in, %lu wp, %lu other, %lu evicted (%lu clean), "
		 "peak %lu/%lu", mode_name(mode), (unsigned long)st.faults_zero,
		 (unsigned long)st.faults_swapin, (unsigned long)st.faults_wp,
		 (unsigned long)st.faults_other, (unsigned long)st.evictions,
		 (unsigned long)st.evictions_clean, (unsigned long)st.resident_peak,
		 BUDGET_PAGES);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/stress");
}
