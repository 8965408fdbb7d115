/* SPDX-License-Identifier: MIT */
/*
 * fdpass: bypass_send_fds / bypass_recv_fds.  Proves several descriptors
 * (up to the 16 allowed) arrive with the data, refer to the same open
 * files, and are close-on-exec; a message with no descriptors works; when
 * more descriptors arrive than the caller has room for (including more than
 * 16 sent by a raw sendmsg) the result is -EMSGSIZE and no descriptor is
 * leaked; end of file is 0; bad arguments are -EINVAL (-EBADF for a
 * negative descriptor to send).
 */
#include <bypass/core.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "harness.h"
#include "core/testutil.h"

static void several(int s0, int s1)
{
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	int m = memfd_create("fdpass", MFD_CLOEXEC);
	CHECK(m >= 0);
	CHECK_EQ(write(m, "memfd!", 6), 6);
	int send[3] = { p[0], p[1], m };
	CHECK_EQ(bypass_send_fds(s0, send, 3, "abc", 3), 3);
	int got[16];
	unsigned n = 16;
	char buf[16] = { 0 };
	CHECK_EQ(bypass_recv_fds(s1, got, &n, buf, sizeof(buf)), 3);
	CHECK_EQ(n, 3);
	CHECK(!memcmp(buf, "abc", 3));
	for (int i = 0; i < 3; i++) {
		CHECK(got[i] >= 0 && got[i] != send[i]);
		CHECK(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
	}
	/* The same pipe: write through the copy, read from the original. */
	CHECK_EQ(write(got[1], "x", 1), 1);
	char c;
	CHECK_EQ(read(p[0], &c, 1), 1);
	CHECK_EQ(c, 'x');
	/* The same memfd. */
	char mb[6];
	CHECK_EQ(pread(got[2], mb, 6, 0), 6);
	CHECK(!memcmp(mb, "memfd!", 6));
	for (int i = 0; i < 3; i++)
		close(got[i]);
	close(p[0]);
	close(p[1]);
	close(m);
}

static void limits(int s0, int s1)
{
	int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(dn >= 0);
	int many[20];
	for (int i = 0; i < 20; i++)
		many[i] = dn;
	int base = test_count_fds();

	/* 16 is the most. */
	CHECK_EQ(bypass_send_fds(s0, many, 16, "m", 1), 1);
	int got[16];
	unsigned n = 16;
	char b;
	CHECK_EQ(bypass_recv_fds(s1, got, &n, &b, 1), 1);
	CHECK_EQ(n, 16);
	for (int i = 0; i < 16; i++)
		close(got[i]);
	CHECK_EQ(test_count_fds(), base);
	CHECK_ERR(bypass_send_fds(s0, many, 17, "m", 1), -EINVAL);

	/* More arrive than fit: -EMSGSIZE, all closed. */
	CHECK_EQ(bypass_send_fds(s0, many, 5, "m", 1), 1);
	n = 2;
	got[0] = got[1] = -1;
	CHECK_ERR(bypass_recv_fds(s1, got, &n, &b, 1), -EMSGSIZE);
	CHECK_EQ(n, 0);
	CHECK_EQ(test_count_fds(), base);
	/* Room for none. */
	CHECK_EQ(bypass_send_fds(s0, many, 1, "m", 1), 1);
	n = 0;
	CHECK_ERR(bypass_recv_fds(s1, NULL, &n, &b, 1), -EMSGSIZE);
	CHECK_EQ(test_count_fds(), base);

	/* 20 sent with a raw sendmsg: the control buffer overflows. */
	union {
		char buf[CMSG_SPACE(sizeof(int) * 20)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = { .iov_base = "r", .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * 20);
	memcpy(CMSG_DATA(cm), many, sizeof(int) * 20);
	CHECK_EQ(sendmsg(s0, &msg, 0), 1);
	n = 16;
	CHECK_ERR(bypass_recv_fds(s1, got, &n, &b, 1), -EMSGSIZE);
	CHECK_EQ(n, 0);
	CHECK_EQ(test_count_fds(), base);

	/* No descriptors at all. */
	CHECK_EQ(bypass_send_fds(s0, NULL, 0, "hello", 5), 5);
	n = 4;
	char hb[8];
	CHECK_EQ(bypass_recv_fds(s1, got, &n, hb, sizeof(hb)), 5);
	CHECK_EQ(n, 0);
	CHECK(!memcmp(hb, "hello", 5));
	close(dn);
}

static void bad_args(int s0, int s1)
{
	int fd = 0;
	unsigned n = 1;
	char b;
	CHECK_ERR(bypass_send_fds(-1, &fd, 1, "x", 1), -EINVAL);
	CHECK_ERR(bypass_send_fds(s0, NULL, 1, "x", 1), -EINVAL);
	CHECK_ERR(bypass_send_fds(s0, &fd, 1, NULL, 1), -EINVAL);
	CHECK_ERR(bypass_send_fds(s0, &fd, 1, "x", 0), -EINVAL);
	int bad = -1;
	CHECK_ERR(bypass_send_fds(s0, &bad, 1, "x", 1), -EBADF);
	CHECK_ERR(bypass_recv_fds(-1, &fd, &n, &b, 1), -EINVAL);
	CHECK_ERR(bypass_recv_fds(s1, &fd, NULL, &b, 1), -EINVAL);
	CHECK_ERR(bypass_recv_fds(s1, NULL, &n, &b, 1), -EINVAL);
	CHECK_ERR(bypass_recv_fds(s1, &fd, &n, NULL, 1), -EINVAL);
	CHECK_ERR(bypass_recv_fds(s1, &fd, &n, &b, 0), -EINVAL);
	/* Not a socket. */
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK(bypass_send_fds(p[1], NULL, 0, "x", 1) < 0);
	CHECK(bypass_recv_fds(p[0], NULL, &(unsigned){ 0 }, &b, 1) < 0);
	close(p[0]);
	close(p[1]);
	/* Nothing was sent by the failed calls. */
	CHECK_EQ(bypass_send_fds(s0, NULL, 0, "z", 1), 1);
	n = 0;
	CHECK_EQ(bypass_recv_fds(s1, NULL, &n, &b, 1), 1);
	CHECK_EQ(b, 'z');
}

int main(void)
{
	test_timeout(30);
	int types[2] = { SOCK_STREAM, SOCK_SEQPACKET };
	for (int t = 0; t < 2; t++) {
		int sv[2];
		CHECK_EQ(socketpair(AF_UNIX, types[t] | SOCK_CLOEXEC, 0, sv), 0);
		int base = test_count_fds();
		several(sv[0], sv[1]);
		limits(sv[0], sv[1]);
		bad_args(sv[0], sv[1]);
		CHECK_EQ(test_count_fds(), base);
		/* End of file. */
		close(sv[0]);
		int fd = -1;
		unsigned n = 1;
		char b;
		CHECK_EQ(bypass_recv_fds(sv[1], &fd, &n, &b, 1), 0);
		CHECK_EQ(n, 0);
		close(sv[1]);
	}
	return test_pass("core/fdpass");
}
