/* SPDX-License-Identifier: MIT */
/*
 * A misbehaving policy cannot lose data or exceed the budget.  The test
 * policy (tests/pager/lib/testpolicy.c) is loaded in each of its bad modes:
 * victims at random addresses, outside every region or unaligned, the same
 * page over and over, more victims than asked for, prefetch ranges that
 * are random, outside the regions, across their ends or the whole region
 * (far beyond the limit), and callbacks that all fail.  Two threads write
 * and read checksummed pages of a region 8x the budget at random, every
 * page is checked at the end, and the counters must show the refusals.
 * Also "good" mode (its own FIFO victims and prefetch), which must work.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <limits.h>
#include <pthread.h>

#define BUDGET 64ul
#define NPAGES (8 * BUDGET)
#define OPS 6000

static char *m;
static unsigned char ver[NPAGES];

struct half {
	size_t first, n;
	uint64_t seed;
};

static void *worker(void *arg)
{
	struct half *h = arg;
	uint64_t s = h->seed;
	for (int op = 0; op < OPS; op++) {
		size_t i = h->first + xorshift(&s) % h->n;
		char *pg = m + i * PAGE;
		if (xorshift(&s) % 3 == 0) {
			ver[i]++;
			fill_page(pg, i, ver[i]);
		} else if (!page_ok(pg, i, ver[i])) {
			TEST_FAIL("page %zu: wrong data (version %u)", i, ver[i]);
		}
		if (op % 500 == 0) /* a sequential run now and then */
			for (size_t k = h->first; k < h->first + 64 && k < h->first + h->n; k++)
				if (!page_ok(m + k * PAGE, k, ver[k]))
					TEST_FAIL("page %zu: wrong data", k);
	}
	return NULL;
}

static void run(const char *so, const char *mode)
{
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, NPAGES * PAGE);
	char spec[PATH_MAX + 32];
	snprintf(spec, sizeof(spec), "%s,%s", so, mode);
	CHECK_EQ(bypass_pager_set_policy(p, spec), 0);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	/* hints reach the policy too (it fails them in "fail" mode) */
	CHECK_EQ(bypass_pager_advise(p, m, 32 * PAGE, BYPASS_PAGER_ADV_SEQUENTIAL), 0);
	for (size_t i = 0; i < NPAGES; i++) {
		ver[i] = 1;
		fill_page(m + i * PAGE, i, 1);
	}
	struct half h[2] = { { 0, NPAGES / 2, 11 }, { NPAGES / 2, NPAGES / 2, 29 } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, &h[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (size_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, ver[i]))
			TEST_FAIL("%s: page %zu lost its data", mode, i);
	struct bypass_pager_stats st = stats_of(p);
	TEST_LOG("%-8s rejects %llu, evictions %llu, prefetched %llu, peak %llu/%llu", mode,
		 (unsigned long long)st.policy_rejects, (unsigned long long)st.evictions,
		 (unsigned long long)st.prefetch_pages, (unsigned long long)st.resident_peak,
		 (unsigned long long)st.budget_pages);
	CHECK(st.resident_peak <= BUDGET);
	CHECK(st.evictions > 0);
	if (strcmp(mode, "good"))
		CHECK(st.policy_rejects > 0);
	CHECK_EQ(st.write_errors, 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	const char *b = getenv("BYPASS_BUILD");
	if (!b)
		SKIP("BYPASS_BUILD is not set (run through ctest)");
	char so[PATH_MAX];
	snprintf(so, sizeof(so), "%s/tests/pager/testpolicy.so", b);
	const char *modes[] = { "good", "garbage", "outside", "fail", "greedy", "dup" };
	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		run(so, modes[i]);
	tmpdir_cleanup();
	printf("ok\n");
	return 0;
}
