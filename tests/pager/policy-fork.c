/* SPDX-License-Identifier: MIT */
/*
 * A forked child that destroys its copy of a pager whose prefetch thread
 * runs (the "prefetch" policy, prefetches in flight at the fork) releases
 * every descriptor it inherited from the pager: after the destroy it has
 * the descriptors the process had before the pager was made, none of them
 * an io_uring (the prefetcher's ring and its 4 MiB of read buffers were
 * left behind in the child before); the child has every byte of the
 * parent's region.  The parent's pager goes on, its data intact.  The heat API refuses the inherited pager (-ECHILD).  Upcall mode.
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "util.h"

#include <dirent.h>

#define BUDGET 64ul
#define NPAGES (8 * BUDGET)

/* Open descriptors, and how many of them are io_uring instances. */
static int count_fds(int *rings)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		TEST_FAIL("opendir /proc/self/fd: %s", strerror(errno));
	int n = 0;
	*rings = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		char path[300], target[256];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t k = readlink(path, target, sizeof(target) - 1);
		if (k < 0)
			continue;
		target[k] = 0;
		n++;
		*rings += strstr(target, "io_uring") != NULL;
	}
	closedir(d);
	return n;
}

int main(void)
{
	test_timeout(120);
	unsetenv("BYPASS_PAGER_HEAT");
	(void)tmpdir();
	int rings0, fds0 = count_fds(&rings0);
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET * PAGE, NPAGES * PAGE);
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	/* access heat too: its sampler, eventfd and pagemap descriptor */
	struct bypass_pager_heat_config hc = { .flags = BYPASS_PAGER_HEAT_OPTIONAL,
					       .interval_ms = 10 };
	CHECK_EQ(bypass_pager_heat_enable(p, &hc), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	int rings1;
	count_fds(&rings1);
	CHECK(rings1 >= rings0 + 2); /* the evictor's ring and the prefetcher's */
	for (int k = 0; k < 4; k++) {
		/* a sequential read: the stream's prefetches are under way */
		for (size_t i = 0; i < NPAGES; i += 2)
			if (!page_ok(m + i * PAGE, i, 1))
				TEST_FAIL("page %zu has wrong data", i);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			/* every byte of the parent's region */
			for (size_t i = 0; i < NPAGES; i++)
				if (!page_ok(m + i * PAGE, i, 1))
					TEST_FAIL("child: page %zu has wrong data", i);
			/* the parent's pager: its heat API answers -ECHILD (the
			 * stats took the parent's p->lock, which a thread of
			 * the parent may have held at the fork: a hang) */
			struct bypass_pager_heat_stats hst;
			CHECK_ERR(bypass_pager_heat_stats(p, &hst), -ECHILD);
			CHECK_ERR(bypass_pager_heat_disable(p), -ECHILD);
			CHECK_EQ(bypass_pager_destroy(p), 0);
			int rings, fds = count_fds(&rings);
			if (fds != fds0 || rings != rings0)
				TEST_FAIL("child: %d descriptors (%d io_uring) after destroying "
					  "the pager, %d (%d) before it was made", fds, rings,
					  fds0, rings0);
			_exit(0);
		}
		wait_child(pid);
	}
	for (size_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("page %zu has wrong data", i);
	/* a fork reads every evicted page back (above the budget until the
	 * fork returns): back within the budget after it */
	CHECK(stats_of(p).resident_pages <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	int rings2, fds2 = count_fds(&rings2);
	CHECK_EQ(fds2, fds0);
	CHECK_EQ(rings2, rings0);
	tmpdir_cleanup();
	return test_pass("pager/policy-fork");
}
