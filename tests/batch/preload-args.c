/* SPDX-License-Identifier: MIT */
/*
 * preload-args: bad arguments inside a segment get what the system call
 * gives, and break nothing: iovec lengths whose sum overflows give EINVAL
 * (the library must not size its copy by the wrapped sum), a bad msghdr
 * pointer gives EFAULT (not a crash), more than IOV_MAX iovecs give
 * EINVAL; the data written around them arrives intact.
 */
#include <limits.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/uio.h>

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
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	static char buf[64] = "0123456789abcdef";
	boundary();
	CHECK_EQ(write(sv[0], "<", 1), 1);

	/* 16 + (SIZE_MAX - 7) wraps to 8: writev(2) says EINVAL. */
	struct iovec wrap[2] = { { buf, 16 }, { buf, SIZE_MAX - 7 } };
	errno = 0;
	CHECK_EQ(writev(sv[0], wrap, 2), -1);
	CHECK_EQ(errno, EINVAL);
	/* One length above SSIZE_MAX: EINVAL too. */
	struct iovec huge[1] = { { buf, (size_t)SSIZE_MAX + 1 } };
	errno = 0;
	CHECK_EQ(writev(sv[0], huge, 1), -1);
	CHECK_EQ(errno, EINVAL);
	struct msghdr m;
	memset(&m, 0, sizeof(m));
	m.msg_iov = wrap;
	m.msg_iovlen = 2;
	errno = 0;
	CHECK_EQ(sendmsg(sv[0], &m, 0), -1);
	CHECK_EQ(errno, EINVAL);

	/* More iovecs than IOV_MAX. */
	static struct iovec many[IOV_MAX + 1];
	for (int i = 0; i <= IOV_MAX; i++)
		many[i] = (struct iovec){ buf, 1 };
	errno = 0;
	CHECK_EQ(writev(sv[0], many, IOV_MAX + 1), -1);
	CHECK_EQ(errno, EINVAL);

	/* A msghdr that is not mapped. */
	void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(bad != MAP_FAILED);
	errno = 0;
	CHECK_EQ(sendmsg(sv[0], (struct msghdr *)bad, 0), -1);
	CHECK_EQ(errno, EFAULT);
	munmap(bad, 4096);

	CHECK_EQ(write(sv[0], ">", 1), 1);
	boundary();
	char got[3] = { 0 };
	CHECK_EQ(read_full(sv[1], got, 2), 2);
	CHECK(!memcmp(got, "<>", 2));
	CHECK(recv(sv[1], got, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN);
	close(sv[0]);
	close(sv[1]);
	return test_pass("batch/preload-args");
}
