/* SPDX-License-Identifier: MIT */
/*
 * The page tables of evicted memory at a fork (issue 32's fork target: a
 * process with most of its memory evicted forks within 2x of Linux's time
 * at the same resident set).  An evicted page's entry is cleared but its
 * page-table page stayed, and fork() copied all of them into the child.
 * Before a fork that shares slots the pager drops the page-table pages of
 * 2 MiB spans with no page mapped (src/pager/fork.c, sweep_tables): the
 * process's VmPTE must fall by most of what those spans held, and nothing
 * else may change: spans with one page brought back keep theirs, every
 * byte reads the same in the parent and in two children (before and after
 * the parent rewrites part), evicted, resident and never-touched pages
 * alike.  Skips where the kernel keeps empty page tables (no
 * CONFIG_PT_RECLAIM: Linux before 6.14, or configured out).  No timing.
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_evict_settle */

#include <sys/wait.h>

#define SPAN (2ul << 20)
#define BUDGET (4ul << 20)
#define LEN (32ul << 20)             /* the region: 16 spans */
#define NPAGES (LEN / PAGE)
#define NDATA (NPAGES - 2 * SPAN / PAGE) /* the last two spans never touched */
#define BACK 3                       /* spans with one page brought back */

static char *m;

static long vm_pte_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f != NULL);
	char l[256];
	long kb = -1;
	while (fgets(l, sizeof(l), f))
		if (!strncmp(l, "VmPTE:", 6))
			kb = atol(l + 6);
	fclose(f);
	CHECK(kb >= 0);
	return kb;
}

/* Does MADV_DONTNEED of whole spans free their page tables?  (Eight of
 * them: the test's own allocations may add a table meanwhile.) */
static bool kernel_reclaims(void)
{
	enum { SPANS = 8 };
	char *a = mmap(NULL, (SPANS + 1) * SPAN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(a != MAP_FAILED);
	char *s = (char *)(((uintptr_t)a + SPAN - 1) & ~(SPAN - 1));
	CHECK_EQ(madvise(s, SPANS * SPAN, MADV_NOHUGEPAGE), 0);
	for (size_t i = 0; i < SPANS * SPAN; i += PAGE)
		s[i] = 1;
	long before = vm_pte_kb();
	CHECK_EQ(madvise(s, SPANS * SPAN, MADV_DONTNEED), 0);
	long after = vm_pte_kb();
	munmap(a, (SPANS + 1) * SPAN);
	TEST_LOG("VmPTE %ld kB, %ld kB after MADV_DONTNEED of %d spans", before, after, SPANS);
	return after <= before - 4 * SPANS / 2;
}

/* Page i's version: `v` for the data pages, rewritten ones v + 1 from
 * page `from` on (every 9th), zeros past the data. */
static void check(const char *who, unsigned v, size_t from)
{
	for (size_t i = 0; i < NPAGES; i++) {
		unsigned want = i >= from && i % 9 == 0 ? v + 1 : v;
		if (i < NDATA ? !page_ok(m + i * PAGE, i, want) : !page_zero(m + i * PAGE))
			TEST_FAIL("%s: page %zu is not version %u", who, i, i < NDATA ? want : 0);
	}
}

static void fork_and_check(unsigned v, size_t from)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		check("child", v, from);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("the child failed (status %#x)", st);
}

int main(void)
{
	test_timeout(240);
	if (!kernel_reclaims())
		SKIP("this kernel keeps empty page tables after MADV_DONTNEED (no CONFIG_PT_RECLAIM)");
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET, LEN + SPAN);
	CHECK_EQ(bypass_pager_map(p, LEN, 0, (void **)&m), 0);
	CHECK(((uintptr_t)m & (PAGE - 1)) == 0);
	for (size_t i = 0; i < NDATA; i++)
		fill_page(m + i * PAGE, i, 1);
	/* one page of a few evicted spans back: their tables must stay */
	for (size_t k = 0; k < BACK; k++)
		CHECK(page_ok(m + (3 + 4 * k) * SPAN + 17 * PAGE, (3 + 4 * k) * SPAN / PAGE + 17, 1));
	bp_evict_settle(p);
	struct bypass_pager_stats s0 = stats_of(p);
	size_t resident = present_pages(m, LEN);
	long pte0 = vm_pte_kb();
	fork_and_check(1, NPAGES);
	long pte1 = vm_pte_kb();
	/* at most BUDGET of resident pages, spread over the region: spans with
	 * none mapped are at least the data spans, less those the resident
	 * pages touch (the budget's 2 spans' worth, or one page of each) */
	long spans = (long)(NDATA * PAGE / SPAN) - BACK - (long)(resident + SPAN / PAGE - 1) /
									 (SPAN / PAGE);
	TEST_LOG("%zu of %lu pages resident, %llu evicted; VmPTE %ld kB before the fork, %ld "
		 "after; at least %ld spans with nothing mapped (4 kB of table each)",
		 resident, NPAGES, (unsigned long long)s0.evictions, pte0, pte1, spans);
	CHECK(spans >= 6);
	if (pte0 - pte1 < 4 * spans / 2)
		TEST_FAIL("the fork dropped %ld kB of page tables, not the %ld kB or more of the "
			  "spans with nothing mapped", pte0 - pte1, 4 * spans);
	CHECK_EQ(stats_of(p).bytes_read, s0.bytes_read); /* the fork read nothing back */
	check("parent", 1, NPAGES);
	/* rewrite a part (faults, evictions), fork again */
	size_t from = (NDATA / 2 + 8) / 9 * 9;
	for (size_t i = from; i < NDATA; i += 9)
		fill_page(m + i * PAGE, i, 2);
	fork_and_check(1, from);
	check("parent", 1, from);
	CHECK_EQ(bypass_pager_unmap(p, m, LEN), 0);
	bypass_pager_destroy(p);
	return test_pass("pager/tree-fork-tables");
}
