/* SPDX-License-Identifier: MIT */
/*
 * A daemon's start under the pager preload: the program closes 0, 1 and 2
 * before its first allocation that engages the pager, then (the pager's
 * descriptors made) opens /dev/null, which must be 0, and dup2()s it onto
 * 1 and 2, as daemon(3) and many servers do; each of 0-2 must then be
 * /dev/null.  Then a raw close_range system call over 3 up to just below
 * the library's base (core/fdhigh.h: 960 at a soft limit of 1024), which
 * no preload can see, must miss the pager's descriptors.  A region four
 * budgets long (most of it evicted) keeps every word, checked twice.
 * Before the library moved its descriptors high, the userfaultfd took 0,
 * open() gave another number and the dup2s onto ours were refused (EBADF,
 * fds.c), and the raw close_range closed the pager's descriptors: the
 * evicted pages read as zeros.
 */
#include "preload-util.h"
#include "core/fdhigh.h"

#include <sys/syscall.h>

#define PAGE 4096ul
#define NPAGES (4 * PP_BUDGET / PAGE)

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define NWORDS (NPAGES * PAGE / 8)

static void run(void)
{
	/* The test's own report goes to a copy of stderr from the base up
	 * (0-2 are closed below, then /dev/null). */
	int base = bp_fd_base();
	int err = fcntl(2, F_DUPFD_CLOEXEC, base);
	CHECK(err >= 0);
	FILE *e = fdopen(err, "w");
	CHECK(e != NULL);
	setvbuf(e, NULL, _IONBF, 0);
	fflush(stdout);
	CHECK(close(0) == 0 && close(1) == 0 && close(2) == 0);
	stderr = e;

	uint64_t *m = pp_region(NPAGES * PAGE); /* the pager's first region */
	pp_fill_words(m, NWORDS, 1);

	int null = open("/dev/null", O_RDWR);
	if (null != 0) {
		char what[256];
		ssize_t n = readlink("/proc/self/fd/0", what, sizeof(what) - 1);
		what[n > 0 ? n : 0] = 0;
		TEST_FAIL("open(\"/dev/null\") gave %d, not 0: the library holds 0 (%s)", null,
			  what);
	}
	for (int fd = 1; fd <= 2; fd++)
		if (dup2(null, fd) != fd)
			TEST_FAIL("dup2(0, %d): %s", fd, strerror(errno));
	struct stat dn, st;
	CHECK(stat("/dev/null", &dn) == 0);
	for (int fd = 0; fd <= 2; fd++) {
		CHECK(fstat(fd, &st) == 0);
		if (!S_ISCHR(st.st_mode) || st.st_rdev != dn.st_rdev)
			TEST_FAIL("descriptor %d is not /dev/null", fd);
	}
	pp_check_words(m, NWORDS, 1, "after 0-2 were reopened");

	/* below the base: the library's descriptors are not there */
	CHECK(base > 3);
	CHECK_EQ(syscall(SYS_close_range, 3, base - 1, 0), 0);
	pp_check_words(m, NWORDS, 1, "after a raw close_range(3, base - 1)");
	pp_fill_words(m, NWORDS, 2);
	pp_check_words(m, NWORDS, 2, "written again after the closes");
	fprintf(stderr, "  %zu pages kept their data; 0-2 are /dev/null; base %d\n", NPAGES,
		base);
}

int main(int argc, char **argv)
{
	pp_start(120);
	if (pp_preloaded()) {
		run();
		return 0;
	}
	(void)argc;
	static const char *const env[] = { NULL };
	pp_run_ok(argv, "run", env);
	int lines;
	long long ev = pp_stat("evictions", &lines);
	TEST_LOG("stats lines %d, evictions %lld", lines, ev);
	CHECK_EQ(lines, 1);
	CHECK(ev > (long long)NPAGES);
	return test_pass("pager/preload-stdio");
}
