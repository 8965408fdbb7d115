/* SPDX-License-Identifier: MIT */
/*
 * Running out of file descriptors: a map with BYPASS_PAGER_MAP_HANDLER on an
 * upcall pager opens the handler thread's userfaultfd and its stop eventfd.
 * When only the first can be opened, the map fails with -EMFILE and leaves
 * nothing behind; a later map (with descriptors to spare) works, its data
 * is served, and destroy stops the handler thread and closes everything.
 */
#include "util.h"

#include <sys/resource.h>

#define BUDGET_PAGES 16ul
#define NPAGES 64ul

int main(void)
{
	test_timeout(30);
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET_PAGES * PAGE, 2 * NPAGES * PAGE);
	int fds0 = test_count_fds();
	CHECK(fds0 >= 0);

	/* Room for exactly one more descriptor: the lowest free one. */
	int low = dup(0);
	CHECK(low >= 0);
	close(low);
	struct rlimit old, one;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
	one = old;
	one.rlim_cur = (rlim_t)low + 1;
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &one), 0);
	void *x = NULL;
	int r = bypass_pager_map(p, NPAGES * PAGE, BYPASS_PAGER_MAP_HANDLER, &x);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
	if (r == -EPERM)
		SKIP("BYPASS_PAGER_MAP_HANDLER needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd");
	CHECK_ERR(r, -EMFILE);
	CHECK_EQ(test_count_fds(), fds0);
	CHECK_EQ(stats_of(p).mapped_pages, 0);

	/* Now with descriptors to spare. */
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, BYPASS_PAGER_MAP_HANDLER, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	for (uint64_t i = 0; i < NPAGES; i++)
		CHECK(page_ok(m + i * PAGE, i, 1));
	CHECK(stats_of(p).faults_swapin > 0);
	/* A hang here is the handler thread that cannot be told to stop. */
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/fdlimit");
}
