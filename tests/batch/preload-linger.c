/* SPDX-License-Identifier: MIT */
/*
 * preload-linger: a non-blocking server aborts a connection whose reader
 * stopped reading (nginx's reset_timedout_connection): SO_LINGER {1, 0},
 * then close.  While deferred data still waits for room, the setsockopt
 * must not wait for the reader (it would hang the server for as long as
 * the peer does not read); the close must then abort as close(2) does:
 * the descriptor is gone at once, unsent data is dropped and the peer gets
 * a reset.
 */
#include <sys/epoll.h>
#include <sys/syscall.h>

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
	int t[2];
	tcp_pair(t);
	/* Fixed buffers: the window does not grow while nobody reads. */
	int sz = 8192;
	CHECK(setsockopt(t[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)) == 0);
	CHECK(setsockopt(t[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)) == 0);
	CHECK(fcntl(t[0], F_SETFL, O_NONBLOCK) == 0);

	/* Write until the library says the socket is full: its last data
	 * then waits in io_uring for room that never comes. */
	static char chunk[16384];
	size_t total = 0;
	boundary();
	for (;;) {
		ssize_t r = write(t[0], chunk, sizeof(chunk));
		if (r < 0) {
			CHECK_EQ(errno, EAGAIN);
			break;
		}
		total += (size_t)r;
		CHECK(total < (64u << 20));
		boundary();
	}
	TEST_LOG("%zu bytes accepted before EAGAIN", total);

	struct linger lg = { 1, 0 };
	CHECK_EQ(setsockopt(t[0], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	int num = t[0];
	CHECK_EQ(close(t[0]), 0);
	boundary();

	/* The peer reads what reached it, then the reset. */
	static char sink[65536];
	size_t got = 0;
	ssize_t n;
	while ((n = read(t[1], sink, sizeof(sink))) > 0)
		got += (size_t)n;
	TEST_LOG("peer read %zd (errno %d) after %zu bytes", n, n < 0 ? errno : 0, got);
	CHECK(n < 0 && errno == ECONNRESET);
	(void)num;
	close(t[1]);
	return test_pass("batch/preload-linger");
}
