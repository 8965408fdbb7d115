/* SPDX-License-Identifier: MIT */
/*
 * A context whose io_uring the application closed behind the library's
 * back ("lost": run, submit and wait say -EBADFD) gives the number back to
 * the library's list of kept descriptors when it is destroyed
 * (core/fdhigh.h; the pager preload refuses a program's close() of a
 * listed number).  The number was left listed for the rest of the process:
 *   - the program reuses the number (dup2 of /dev/null onto it): after the
 *     lost context is destroyed the number is not listed, and the
 *     program's close() of it would pass;
 *   - another context's ring takes the number: the lost context's destroy
 *     leaves that context's entry (listed once), whose own destroy then
 *     unlists it.
 */
#include "util.h"
#include "core/fdhigh.h"

#define MAXL 512

/* How many times fd is in l[0..n). */
static int count(const int *l, int n, int fd)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		k += l[i] == fd;
	return k;
}

/* How many times fd is on the list. */
static int listed(int fd)
{
	int l[MAXL];
	int n = bp_fd_listed(l, MAXL);
	CHECK(n <= MAXL);
	return count(l, n, fd);
}

/* A uring context and its ring's number: the one listed once more than
 * before (the same number may be listed twice: a lost ring's and a new
 * one's). */
static bypass_syslet *ctx_listed(int *fd)
{
	int before[MAXL], after[MAXL];
	int nb = bp_fd_listed(before, MAXL);
	bypass_syslet *s = ctx_for(BYPASS_SYSLET_ENGINE_URING, 0);
	if (!s)
		return NULL;
	int na = bp_fd_listed(after, MAXL);
	CHECK(nb <= MAXL && na <= MAXL);
	CHECK_EQ(na, nb + 1);
	*fd = -1;
	for (int i = 0; i < na; i++)
		if (count(after, na, after[i]) > count(before, nb, after[i]))
			*fd = after[i];
	CHECK(*fd >= 0);
	return s;
}

/* The application closes the ring; the context finds out (lost). */
static void lose(bypass_syslet *s, int fd)
{
	CHECK_EQ(close(fd), 0);
	int pp[2];
	CHECK_EQ(pipe(pp), 0);
	CHECK_EQ(write(pp[1], "k", 1), 1);
	char buf[8];
	/* a read: a chain io_uring expresses, so submit enters the ring */
	atom_t rd[1] = { { .nr = SYS_read, .arg = { C(pp[0]), P(buf), C(sizeof(buf)) } } };
	prog_t p = prog_of(rd, 1, 1);
	CHECK_ERR(bypass_syslet_submit(s, &p, 1), -EBADFD);
	close(pp[0]);
	close(pp[1]);
}

int main(void)
{
	/* the program's number now */
	int fd;
	bypass_syslet *s = ctx_listed(&fd);
	if (!s)
		SKIP("io_uring refused here");
	lose(s, fd);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(null >= 0);
	CHECK_EQ(dup2(null, fd), fd);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
	if (listed(fd))
		TEST_FAIL("the lost ring's number %d is still listed after destroy: the pager "
			  "preload would refuse the program's close() of it", fd);
	CHECK(fcntl(fd, F_GETFD) >= 0); /* destroy did not close the program's */
	CHECK_EQ(close(fd), 0);
	close(null);

	/* another context's number now */
	int fd2, fd3;
	s = ctx_listed(&fd2);
	CHECK(s);
	lose(s, fd2);
	bypass_syslet *s3 = ctx_listed(&fd3); /* the lowest free from the base */
	CHECK(s3);
	TEST_LOG("lost ring %d, the next context's %d", fd2, fd3);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
	CHECK_EQ(listed(fd3), 1); /* the other context's entry stays */
	if (fd3 != fd2)
		CHECK_EQ(listed(fd2), 0);
	atom_t g[1] = { { .nr = SYS_getppid } };
	prog_t p = prog_of(g, 1, 2);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s3, &p, &c), 1); /* and it works */
	CHECK_EQ(bypass_syslet_destroy(s3), 0);
	CHECK_EQ(listed(fd3), 0);
	printf("lost-unlist: a lost ring's number leaves the list at destroy (%d; %d reused)\n", fd,
	       fd3);
	return 0;
}
