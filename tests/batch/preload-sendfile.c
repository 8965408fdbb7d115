/* SPDX-License-Identifier: MIT */
/*
 * preload-sendfile: a deferred sendfile (copy mode: a regular file the
 * program fstat()ed, an explicit offset) returns what sendfile(2) returns
 * for the file as it is, not as it was when the program looked at it: a
 * file that grew after the fstat (a temporary file written after it was
 * opened, a cached descriptor) is sent whole, and sendfile never answers
 * 0 (end of file) while there is data at the offset.  The bytes arrive
 * in order behind the header written before them.
 */
#include <sys/epoll.h>
#include <sys/sendfile.h>

#include "batch/util.h"

static int ep;

static void boundary(void)
{
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	preload_reexec(argv, 60);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	char dir[256], path[300];
	make_tmpdir(dir, sizeof(dir), "sendfile");
	snprintf(path, sizeof(path), "%s/grow", dir);
	int f = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(f >= 0);
	struct stat st;
	CHECK(fstat(f, &st) == 0); /* size 0: what the library learns */
	CHECK_EQ(st.st_size, 0);
	CHECK_EQ(write(f, "0123456789", 10), 10);

	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	boundary();
	CHECK_EQ(write(sv[0], "H:", 2), 2);
	off_t off = 0;
	CHECK_EQ(sendfile(sv[0], f, &off, 10), 10);
	CHECK_EQ(off, 10);
	boundary();
	char got[32] = { 0 };
	CHECK_EQ(read_full(sv[1], got, 12), 12);
	CHECK(!memcmp(got, "H:0123456789", 12));

	/* The program looks again (size 10), the file grows again: at the
	 * offset the library believes is the end there is data. */
	CHECK(fstat(f, &st) == 0);
	CHECK_EQ(pwrite(f, "abcdef", 6, 10), 6);
	boundary();
	CHECK_EQ(write(sv[0], "|", 1), 1);
	off = 4;
	CHECK_EQ(sendfile(sv[0], f, &off, 12), 12);
	CHECK_EQ(off, 16);
	CHECK_EQ(sendfile(sv[0], f, &off, 100), 0); /* the real end */
	boundary();
	memset(got, 0, sizeof(got));
	CHECK_EQ(read_full(sv[1], got, 13), 13);
	CHECK(!memcmp(got, "|456789abcdef", 13));
	CHECK(recv(sv[1], got, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN);

	close(f);
	close(sv[0]);
	close(sv[1]);
	rm_tree(dir);
	return test_pass("batch/preload-sendfile");
}
