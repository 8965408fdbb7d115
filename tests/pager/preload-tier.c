/* SPDX-License-Identifier: MIT */
/*
 * preload-tier: BYPASS_PAGER_TIER turns the compressed tier on for an
 * unmodified program (issue 35).  With 1, and with share=,accept=, a
 * program whose data compresses is paged through the pool: its bytes come
 * back intact, pages went into the pool and came back from it (the stats
 * line's tier_* counters).  A value the library refuses (share=95) runs
 * the program unpaged, one that is not a setting at all (bogus) too, each
 * with a message naming the variable.  BYPASS_PAGER_TIER_ADAPT=0 keeps the
 * pool's share (tier_share_moves 0); a value neither 0 nor 1 runs the
 * program unpaged.  A build without liblz4 says so and pages without the
 * tier: the test skips.
 */
#include "pager/preload-util.h"

#define N (4 * PP_BUDGET)

/* Page i, version v: one word in 64 differs, the rest repeat (LZ4 makes
 * about a sixth of a page of it). */
static void fill(unsigned char *m, uint64_t v)
{
	uint64_t *w = (uint64_t *)m;
	for (size_t k = 0; k < N / 8; k++) {
		uint64_t pg = k / 512;
		w[k] = k % 64 ? (pg << 8 | v) : pg * 0x9e3779b97f4a7c15ull + k + v;
	}
}

static size_t check(const unsigned char *m, uint64_t v)
{
	const uint64_t *w = (const uint64_t *)m;
	for (size_t k = 0; k < N / 8; k++) {
		uint64_t pg = k / 512;
		uint64_t want = k % 64 ? (pg << 8 | v) : pg * 0x9e3779b97f4a7c15ull + k + v;
		if (w[k] != want)
			return k * 8;
	}
	return N;
}

static void work(void)
{
	unsigned char *m = malloc(N); /* a region: above the threshold */
	CHECK(m);
	fill(m, 1);
	CHECK_EQ(check(m, 1), N);
	fill(m, 2);
	CHECK_EQ(check(m, 2), N);
	CHECK_EQ(check(m, 2), N);
	free(m);
}

static bool file_has(const char *path, const char *s)
{
	char buf[8192];
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, s) != NULL;
}

/* A run with BYPASS_PAGER_TIER=v (and the variable e2, if any) that must
 * page through the pool. */
static void paged(char **argv, const char *v, const char *e2)
{
	char err[300], e1[128];
	snprintf(err, sizeof(err), "%s/err", pp_tmpdir());
	snprintf(e1, sizeof(e1), "BYPASS_PAGER_TIER=%s", v);
	const char *env[] = { e1, e2, NULL };
	pp_stats_reset();
	int st = pp_run(argv, "run", env, err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (pp_stat("tier_stored", NULL) < 0) {
		if (file_has(err, "no LZ4"))
			SKIP("the preload was built without liblz4 (tools/deps.sh installs "
			     "liblz4-dev)");
		TEST_FAIL("BYPASS_PAGER_TIER=%s: no tier counters in the stats line", v);
	}
	long long ev = pp_stat("evictions", NULL), stored = pp_stat("tier_stored", NULL);
	long long pool = pp_stat("tier_swapin_pool", NULL);
	TEST_LOG("BYPASS_PAGER_TIER=%s: evictions %lld, into the pool %lld, swap-ins from it "
		 "%lld, from the file %lld", v, ev, stored, pool, pp_stat("tier_swapin_file", NULL));
	CHECK(ev > (long long)(N - PP_BUDGET) / 4096);
	CHECK(stored > 0);
	CHECK(pool > 0);
	long long moves = pp_stat("tier_share_moves", NULL);
	CHECK(moves >= 0);
	if (e2 && !strcmp(e2, "BYPASS_PAGER_TIER_ADAPT=0") && moves)
		TEST_FAIL("%s: the pool's share moved %lld times", e2, moves);
}

/* A run with BYPASS_PAGER_TIER=v (and e2) that must run unpaged, saying
 * why. */
static void refused(char **argv, const char *v, const char *e2, const char *msg)
{
	char err[300], e1[128];
	snprintf(err, sizeof(err), "%s/err", pp_tmpdir());
	snprintf(e1, sizeof(e1), "BYPASS_PAGER_TIER=%s", v);
	const char *env[] = { e1, e2, NULL };
	pp_stats_reset();
	int st = pp_run(argv, "run", env, err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!file_has(err, msg))
		TEST_FAIL("BYPASS_PAGER_TIER=%s: no message \"%s\" on stderr", v, msg);
	long long ev = pp_stat("evictions", NULL);
	CHECK(ev <= 0); /* no line (not configured) or a pager that never was */
	CHECK(pp_stat("tier_stored", NULL) < 0);
}

int main(int argc, char **argv)
{
	pp_start(240);
	(void)argc;
	if (pp_preloaded()) {
		if (!pp_malloc_reaches_preload())
			SKIP("the sanitizer's malloc does not reach the preload");
		work();
		return 0;
	}
	if (!pp_malloc_reaches_preload())
		SKIP("the sanitizer's malloc does not reach the preload");
	paged(argv, "1", NULL);
	paged(argv, "share=20,accept=80", NULL);
	paged(argv, "1", "BYPASS_PAGER_TIER_ADAPT=0");
	refused(argv, "share=95", NULL, "BYPASS_PAGER_TIER=share=95: Invalid argument");
	refused(argv, "share=200", NULL, "BYPASS_PAGER_TIER=share=200 is not 0, 1");
	refused(argv, "bogus", NULL, "BYPASS_PAGER_TIER=bogus is not 0, 1, or share=PCT,accept=PCT");
	refused(argv, "share=", NULL, "BYPASS_PAGER_TIER=share= is not 0, 1");
	refused(argv, "1", "BYPASS_PAGER_TIER_ADAPT=maybe",
		"BYPASS_PAGER_TIER_ADAPT=maybe is neither 0/off nor 1/on");
	return test_pass("pager/preload-tier");
}
