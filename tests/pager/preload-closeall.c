/* SPDX-License-Identifier: MIT */
/*
 * A program that closes every descriptor keeps its data under the pager
 * preload (preload/pager/fds.c): a region four budgets long, written (most
 * of it evicted), then every descriptor from 3 up closed, by
 * close_range(3, ~0U, 0), by closefrom(3), by a loop of close() up to the
 * descriptor limit, or overwritten by dup2() onto each number below 1024;
 * every word is read back and checked, written again (evictions after the
 * closes) and checked again.  The program's own descriptor opened before
 * is closed all the same; dup2 onto the pager's own is refused (EBADF).
 * Before fds.c the userfaultfd went with the rest and every evicted page
 * read as zeros (the tier engineer's finding, requests.md 19:20).  The
 * compressed tier is off.  Once more with the handler pool (BYPASS_PAGER_ENGINE
 * =pool) for close_range: its threads' epoll descriptors must survive too.
 */
#include "preload-util.h"

#define PAGE 4096ul
#define NPAGES (4 * PP_BUDGET / PAGE)

#define NWORDS (NPAGES * PAGE / 8)

static void run(const char *how)
{
	uint64_t *m = pp_region(NPAGES * PAGE);
	pp_fill_words(m, NWORDS, 1);
	int mine = open("/dev/null", O_RDONLY);
	CHECK(mine >= 3);
	int refused = 0;
	if (!strcmp(how, "close_range")) {
		CHECK_EQ(close_range(3, ~0U, 0), 0);
	} else if (!strcmp(how, "closefrom")) {
		closefrom(3);
	} else if (!strcmp(how, "loop")) {
		long max = sysconf(_SC_OPEN_MAX);
		if (max < 0 || max > 65536)
			max = 65536;
		for (int fd = 3; fd < max; fd++)
			close(fd);
	} else {
		int null = open("/dev/null", O_RDONLY);
		CHECK(null >= 3);
		for (int fd = 3; fd < 1024; fd++) {
			if (fd == null)
				continue;
			if (dup2(null, fd) < 0) {
				CHECK_EQ(errno, EBADF);
				refused++;
			} else if (fd != mine) {
				CHECK_EQ(close(fd), 0);
			}
		}
		CHECK(refused > 0); /* the userfaultfd at least */
		CHECK_EQ(close(null), 0);
		CHECK_EQ(close(mine), 0);
	}
	CHECK(fcntl(mine, F_GETFD) < 0 && errno == EBADF);
	pp_check_words(m, NWORDS, 1, "after the closes");
	pp_fill_words(m, NWORDS, 2);
	pp_check_words(m, NWORDS, 2, "written again after the closes");
	TEST_LOG("%s: %zu pages kept their data (%d dup2 refused)", how, NPAGES, refused);
}

int main(int argc, char **argv)
{
	pp_start(120);
	if (pp_preloaded()) {
		run(argv[1]);
		return 0;
	}
	(void)argc;
	static const char *const env[] = { "BYPASS_PAGER_TIER=0", NULL };
	/* the last with the handler pool serving the faults: its threads'
	 * epoll instances are the library's too (before they were listed,
	 * the closes took them and the threads stopped: a hang) */
	static const char *const pool_env[] = { "BYPASS_PAGER_TIER=0", "BYPASS_PAGER_ENGINE=pool",
						NULL };
	const char *hows[] = { "close_range", "closefrom", "loop", "dup2", "close_range" };
	for (size_t k = 0; k < sizeof(hows) / sizeof(hows[0]); k++) {
		pp_stats_reset();
		pp_run_ok(argv, hows[k], k == 4 ? pool_env : env);
		int lines;
		long long ev = pp_stat("evictions", &lines);
		TEST_LOG("%s: stats lines %d, evictions %lld", hows[k], lines, ev);
		CHECK_EQ(lines, 1);
		CHECK(ev > (long long)NPAGES);
	}
	return test_pass("pager/preload-closeall");
}
