/* SPDX-License-Identifier: MIT */
/*
 * Fork with pages in the compressed pool (issue 35), both fault modes: the
 * child reads the parent's evicted pages from the parent's slots in the
 * parent's file (the pool's pool-only pages are written there before the
 * fork: without that, the child read wrong pages), sees every byte; the
 * parent rewrites everything while the child lives, and the child still
 * sees the fork's data, then rewrites everything within its own budget
 * and pool (which starts empty); the parent's data stays its own and its
 * pool works on.
 */
#include "tier-util.h"

#include <sys/wait.h>

#define BUDGET (32 * PAGE)
#define NPAGES 256ul

static char *m;

/* compressible: a few distinct words per page */

static void check(const char *who, uint64_t v)
{
	static char want[PAGE];
	for (uint64_t i = 0; i < NPAGES; i++) {
		tier_fill(want, i, v);
		if (memcmp(m + i * PAGE, want, PAGE))
			TEST_FAIL("%s: page %lu is not version %lu", who, (unsigned long)i,
				  (unsigned long)v);
	}
}

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 0);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		tier_fill(m + i * PAGE, i, 1);
	struct bypass_pager_tier_stats t;
	CHECK_EQ(bypass_pager_tier_stats(p, &t), 0);
	CHECK(t.pool_pages > 0); /* the fork finds pages in the pool */

	int up[2], down[2]; /* child -> parent, parent -> child */
	CHECK(pipe(up) == 0 && pipe(down) == 0);
	char c = 0;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		check("child", 1);
		CHECK(write(up[1], "r", 1) == 1);
		CHECK(read(down[0], &c, 1) == 1); /* the parent has rewritten */
		check("child, after the parent's rewrite", 1);
		for (uint64_t i = 0; i < NPAGES; i++)
			tier_fill(m + i * PAGE, i, 2);
		check("child", 2);
		/* kept (the usual way): the pager is the child's, within its
		 * budget; read back (handler threads under ThreadSanitizer):
		 * the parent's, -ECHILD, and the memory is ordinary memory */
		struct bypass_pager_tier_stats ts;
		if (bypass_pager_tier(p, &(struct bypass_pager_tier_config){ 0 }) == -ECHILD)
			_exit(3);
		struct bypass_pager_stats s = stats_of(p);
		if (s.resident_peak > BUDGET / PAGE)
			TEST_FAIL("child: %lu pages resident, budget %lu",
				  (unsigned long)s.resident_peak, BUDGET / PAGE);
		CHECK_EQ(bypass_pager_tier_stats(p, &ts), 0);
		CHECK(ts.pool_pages > 0); /* its own evictions, in its own pool */
		_exit(0);
	}
	CHECK(read(up[0], &c, 1) == 1); /* the child has read everything */
	for (uint64_t i = 0; i < NPAGES; i++)
		tier_fill(m + i * PAGE, i, 4);
	check("parent, while the child lives", 4);
	CHECK(write(down[1], "g", 1) == 1);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3));
	bool kept = WEXITSTATUS(st) == 0;
	TEST_LOG("%s: the fork %s", mode_name(mode), kept ? "kept the pager" : "read back");
	check("parent", 4);
	for (uint64_t i = 0; i < NPAGES; i++)
		tier_fill(m + i * PAGE, i, 3);
	check("parent", 3);
	CHECK_EQ(bypass_pager_tier_stats(p, &t), 0);
	CHECK(t.pool_pages > 0);
	if (kept) /* a read-back fork takes room above the budget */
		CHECK(stats_of(p).resident_peak <= BUDGET / PAGE);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	tmpdir(); /* the children's pagers use the parent's */
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tier-fork");
}
