/* SPDX-License-Identifier: MIT */
/*
 * preload-otherwrites: calls that write to a socket without being deferred
 * (splice from a pipe, as proxies send bodies; sendmmsg) keep their place
 * behind the data queued before them on that socket, on a Unix and a TCP
 * socket; a blocking splice out of a socket does not wait for a peer that
 * waits for the data queued before it.
 */
#include <sys/epoll.h>
#include <sys/uio.h>

#include "batch/util.h"

static int ep;

static void boundary(void)
{
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0);
}

static void expect(int fd, const char *s)
{
	size_t n = strlen(s);
	char buf[64] = { 0 };
	CHECK(n < sizeof(buf));
	CHECK_EQ(read_full(fd, buf, n), n);
	if (memcmp(buf, s, n))
		TEST_FAIL("expected \"%s\", got \"%.*s\"", s, (int)n, buf);
}

static void one(int sv[2])
{
	int p[2];
	CHECK(pipe(p) == 0);
	CHECK_EQ(write(p[1], "BODY", 4), 4);
	boundary();
	CHECK_EQ(write(sv[0], "HEAD", 4), 4);
	CHECK_EQ(splice(p[0], NULL, sv[0], NULL, 4, 0), 4);
	boundary();
	expect(sv[1], "HEADBODY");

	boundary();
	CHECK_EQ(send(sv[0], "one,", 4, 0), 4);
	struct iovec v = { "two", 3 };
	struct mmsghdr m;
	memset(&m, 0, sizeof(m));
	m.msg_hdr.msg_iov = &v;
	m.msg_hdr.msg_iovlen = 1;
	CHECK_EQ(sendmmsg(sv[0], &m, 1, 0), 1);
	CHECK_EQ(m.msg_len, 3);
	boundary();
	expect(sv[1], "one,two");

	/* A blocking splice out of the socket after a queued write: the
	 * write goes first (the peer answers only once it has it). */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char b[4];
		if (read_full(sv[1], b, 4) != 4 || memcmp(b, "ping", 4))
			_exit(1);
		_exit(write(sv[1], "pong", 4) == 4 ? 0 : 1);
	}
	boundary();
	CHECK_EQ(write(sv[0], "ping", 4), 4);
	CHECK_EQ(splice(sv[0], NULL, p[1], NULL, 4, 0), 4);
	wait_child(pid);
	expect(p[0], "pong");
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	(void)argc;
	preload_reexec(argv, 60);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	one(sv);
	close(sv[0]);
	close(sv[1]);
	tcp_pair(sv);
	one(sv);
	close(sv[0]);
	close(sv[1]);
	return test_pass("batch/preload-otherwrites");
}
