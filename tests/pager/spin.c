/* SPDX-License-Identifier: MIT */
/*
 * Swap-in reads that poll their completion (read.c), and
 * BYPASS_PAGER_NO_SPIN: in both fault modes, with and without the flag,
 * more threads than there are polling rings read random pages of a region
 * 8x the budget and check every byte (so some reads poll and the rest
 * find every ring taken and sleep in pread); one thread rewrites its share
 * as it goes.  With the flag no read is counted as polled; without it, on
 * a machine with at least two CPUs the process may use, every swap-in of a
 * single thread polls (the ring is free every time).  The unknown flag bit
 * next to it is refused.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>
#include <sched.h>

#define THREADS 6
#define BUDGET (64 * PAGE)
#define NPAGES 512ul
#define OPS 600

static char *m;
static int mode;
static uint32_t version[NPAGES]; /* thread 0 rewrites pages i % THREADS == 0 */

static void *reader(void *arg)
{
	uint64_t tid = (uint64_t)(uintptr_t)arg;
	uint64_t seed = 0xabcdef + tid * 104729;
	for (int op = 0; op < OPS; op++) {
		uint64_t i = xorshift(&seed) % NPAGES;
		if (i % THREADS == 0 && tid != 0)
			continue; /* thread 0's pages change under it */
		if (!page_ok(m + i * PAGE, i, version[i]))
			TEST_FAIL("%s: page %lu wrong (thread %lu)", mode_name(mode),
				  (unsigned long)i, (unsigned long)tid);
		if (tid == 0 && i % THREADS == 0) {
			version[i]++;
			fill_page(m + i * PAGE, i, version[i]);
		}
	}
	return NULL;
}

static uint32_t cpus_allowed(void)
{
	cpu_set_t s;
	return sched_getaffinity(0, sizeof(s), &s) == 0 ? (uint32_t)CPU_COUNT(&s) : 1;
}

static void run(int md, unsigned flags)
{
	mode = md;
	struct bypass_pager_config c = { .budget = BUDGET, .swap_size = NPAGES * PAGE,
					 .mode = md, .flags = flags, .readahead = 1 };
	bypass_pager *p = try_pager(&c);
	if (!p) {
		TEST_LOG("%s: not allowed here, skipped", mode_name(md));
		return;
	}
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	memset(version, 0, sizeof(version));
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 0);

	/* one thread alone: it always finds a ring free */
	struct bypass_pager_stats s0 = stats_of(p);
	uint64_t seed = 99;
	for (int op = 0; op < 200; op++) {
		uint64_t i = xorshift(&seed) % NPAGES;
		if (!page_ok(m + i * PAGE, i, 0))
			TEST_FAIL("%s: page %lu wrong (one thread)", mode_name(md), (unsigned long)i);
	}
	struct bypass_pager_stats s1 = stats_of(p);
	uint64_t swapins = s1.faults_swapin - s0.faults_swapin;
	uint64_t polled = s1.reads_polled - s0.reads_polled;
	CHECK(swapins > 0);
	CHECK(polled <= swapins);
	if (flags & BYPASS_PAGER_NO_SPIN)
		CHECK_EQ(polled, 0);
	else if (cpus_allowed() >= 2)
		CHECK_EQ(polled, swapins);

	pthread_t th[THREADS];
	for (uintptr_t t = 0; t < THREADS; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, reader, (void *)t), 0);
	for (int t = 0; t < THREADS; t++)
		CHECK_EQ(pthread_join(th[t], NULL), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, version[i]))
			TEST_FAIL("%s: page %lu wrong at the end", mode_name(md), (unsigned long)i);
	struct bypass_pager_stats s2 = stats_of(p);
	CHECK(s2.reads_polled <= s2.faults_swapin + s2.readahead_pages);
	if (flags & BYPASS_PAGER_NO_SPIN)
		CHECK_EQ(s2.reads_polled, 0);
	CHECK(s2.resident_peak <= BUDGET / PAGE);
	TEST_LOG("%s%s: %lu swap-ins, %lu reads polled (one thread: %lu of %lu)", mode_name(md),
		 flags ? ", NO_SPIN" : "", (unsigned long)s2.faults_swapin,
		 (unsigned long)s2.reads_polled, (unsigned long)polled, (unsigned long)swapins);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	/* the flag bit after NO_SPIN is not one */
	struct bypass_pager_config bad = { .budget = BUDGET, .swap_size = NPAGES * PAGE,
					   .mode = BYPASS_PAGER_UPCALL,
					   .flags = BYPASS_PAGER_NO_SPIN << 1,
					   .swap_path = tmpdir() };
	bypass_pager *p = NULL;
	CHECK_EQ(bypass_pager_create(&bad, &p), -EINVAL);
	CHECK(p == NULL);
	for (int md = 0; md < 2; md++)
		for (int f = 0; f < 2; f++)
			run(md ? BYPASS_PAGER_HANDLER : BYPASS_PAGER_UPCALL,
			    f ? BYPASS_PAGER_NO_SPIN : 0);
	tmpdir_cleanup();
	return test_pass("pager/spin");
}
