/* SPDX-License-Identifier: MIT */
/*
 * core/fdhigh.c: the library's descriptors moved above a base.  The base
 * follows the soft RLIMIT_NOFILE (960 at 1024 and above, the limit less 64
 * from 128, half of it below); bp_fd_lift moves a low descriptor to the
 * lowest free number from the base (the same file, the old number closed,
 * close-on-exec as asked), leaves one already there, passes a negative one
 * through, and keeps a descriptor where it is when nothing is free above
 * the base; the floor (the lowest number kept) only falls; the list holds
 * what bp_fd_list added until bp_fd_unlist.
 */
#include "harness.h"
#include "core/testutil.h"
#include "core/fdhigh.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>

static void set_soft(rlim_t v)
{
	struct rlimit rl;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (v > rl.rlim_max)
		SKIP("hard descriptor limit %llu below %llu", (unsigned long long)rl.rlim_max,
		     (unsigned long long)v);
	rl.rlim_cur = v;
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int main(void)
{
	test_timeout(60);
	struct rlimit saved;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
	if (saved.rlim_max < 1024)
		SKIP("hard descriptor limit %llu below 1024", (unsigned long long)saved.rlim_max);

	/* the base */
	set_soft(1024);
	CHECK_EQ(bp_fd_base(), 960);
	if (saved.rlim_max >= 4096) {
		set_soft(4096);
		CHECK_EQ(bp_fd_base(), 960); /* capped: select()'s 1024 */
	}
	set_soft(200);
	CHECK_EQ(bp_fd_base(), 136);
	set_soft(100);
	CHECK_EQ(bp_fd_base(), 50);

	/* no descriptor of the library yet: every number is below the floor */
	CHECK_EQ(bp_fd_floor(), INT_MAX);
	CHECK_EQ(bp_fd_lift(-EINVAL, true), -EINVAL);

	/* moved: the same file, the old number free, close-on-exec as asked */
	set_soft(1024);
	int fd = open("/dev/null", O_RDONLY);
	CHECK(fd >= 0 && fd < 960);
	int keep = dup(fd);
	int hi = bp_fd_lift(fd, true);
	CHECK(hi >= 960 && hi < 1024);
	CHECK(same_file(hi, keep));
	CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
	CHECK(fcntl(hi, F_GETFD) & FD_CLOEXEC);
	CHECK_EQ(bp_fd_floor(), hi);
	int hi2 = bp_fd_lift(dup(keep), false); /* exec keeps it */
	CHECK(hi2 > hi && hi2 < 1024);
	CHECK(!(fcntl(hi2, F_GETFD) & FD_CLOEXEC));
	CHECK_EQ(bp_fd_lift(hi2, true), hi2); /* already there: left */
	CHECK_EQ(bp_fd_floor(), hi);

	/* nothing free from the base up: stays where it is, still counted */
	set_soft(64); /* base 32 */
	int held[64], nheld = 0;
	for (int f; (f = dup(keep)) >= 0;)
		held[nheld++] = f;
	CHECK(nheld > 0 && held[nheld - 1] == 63);
	int low = held[0] < 32 ? held[0] : -1;
	CHECK(low >= 0);
	CHECK_EQ(bp_fd_lift(low, true), low);
	CHECK(same_file(low, keep));
	CHECK_EQ(bp_fd_floor(), low);
	for (int i = 0; i < nheld; i++)
		close(held[i]);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);

	/* the list */
	int out[8];
	CHECK_EQ(bp_fd_listed(out, 8), 0);
	bp_fd_list(hi);
	bp_fd_list(hi2);
	bp_fd_list(-1);
	CHECK_EQ(bp_fd_listed(out, 8), 2);
	CHECK((out[0] == hi && out[1] == hi2) || (out[0] == hi2 && out[1] == hi));
	bp_fd_unlist(hi);
	CHECK_EQ(bp_fd_listed(out, 1), 1);
	CHECK_EQ(out[0], hi2);
	bp_fd_unlist(hi2);
	CHECK_EQ(bp_fd_listed(out, 8), 0);
	/* the floor only falls: it is `low` now (the lift above counted it),
	 * whatever descriptors the test inherited; one below lowers it, one
	 * above leaves it */
	int fl = bp_fd_floor();
	CHECK_EQ(fl, low);
	if (fl > 0) {
		bp_fd_mark(fl - 1);
		CHECK_EQ(bp_fd_floor(), fl - 1);
		bp_fd_mark(fl + 1); /* never rises */
		CHECK_EQ(bp_fd_floor(), fl - 1);
	}
	close(hi);
	close(hi2);
	close(keep);
	return test_pass("core/fdhigh");
}
