/* SPDX-License-Identifier: MIT */
/*
 * A page the compressed pool keeps (pool-only) but that cannot be dropped
 * (the application mlock()ed it: MADV_DONTNEED refuses) stays resident and
 * clean, its data in the pool under its slot, like a page whose write-back
 * finished.  Left dirty, each later round took it again: a new slot and a
 * new pool copy each time, the old ones leaked (after unmap, slots still
 * used and copies still in the pool).  Both fault modes.
 */
#include "tier-util.h"

#include <sys/syscall.h>

#define BUDGET (16 * PAGE)
#define NPAGES 64ul

static void run(int mode)
{
	bypass_pager *p = tier_pager(mode, BUDGET, NPAGES * PAGE, 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < 4; i++)
		tier_fill(m + i * PAGE, i, 1);
	/* the system call: AddressSanitizer's mlock() does nothing */
	if (syscall(SYS_mlock, m + 2 * PAGE, PAGE) < 0) {
		int e = errno;
		bypass_pager_destroy(p);
		tmpdir_cleanup();
		SKIP("mlock: %s (RLIMIT_MEMLOCK?)", strerror(e));
	}
	for (int pass = 0; pass < 4; pass++)
		for (uint64_t i = 0; i < NPAGES; i++)
			if (i != 2 || !pass)
				tier_fill(m + i * PAGE, i, 1);
	tier_check_all(m, NPAGES, mode_name(mode), 1, "while page 2 is locked");
	CHECK(present_pages(m + 2 * PAGE, PAGE) == 1);
	CHECK_EQ(syscall(SYS_munlock, m + 2 * PAGE, PAGE), 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	struct bypass_pager_stats st = stats_of(p);
	struct bypass_pager_tier_stats t = tier_stats(p);
	if (st.swap_used || t.pool_pages)
		TEST_FAIL("%s: after unmap, %lu slots still used and %lu pages still in the pool",
			  mode_name(mode), (unsigned long)st.swap_used, (unsigned long)t.pool_pages);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(60);
	bypass_set_log_level(BYPASS_LOG_NONE); /* the failing madvise is logged */
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/tier-mlock");
}
