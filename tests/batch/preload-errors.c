/* SPDX-License-Identifier: MIT */
/*
 * preload-errors: a deferred write that fails after it returned (its peer
 * went away while the data waited for room) is reported by the very next
 * call on the descriptor, whichever it is: write, recv, read,
 * getsockopt(SO_ERROR) (in the value, as a socket reports its own), another
 * getsockopt, setsockopt, or close (-1 with the errno, and the descriptor is
 * closed all the same).  The completion the kernel has posted is reaped
 * before the pending error is looked at, so no call comes one too late.
 */
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "batch/util.h"

static int ep;

static void boundary(void)
{
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0);
}

enum how { W_WRITE, W_RECV, W_READ, W_SOERROR, W_GETOPT, W_SETOPT, W_CLOSE, W_N };
static const char *names[] = { "write", "recv", "read", "getsockopt(SO_ERROR)",
			       "getsockopt(SO_SNDBUF)", "setsockopt(SO_SNDBUF)", "close" };

static void one(enum how how)
{
	int sv[2], go[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	CHECK(pipe(go) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* The peer: never reads, leaves when told. */
		char c;
		CHECK(read(go[0], &c, 1) == 1);
		_exit(0);
	}
	close(sv[1]); /* the child holds the peer end now */
	close(go[0]);
	boundary();
	/* Fill the socket: deferred writes until the preload answers EAGAIN
	 * (its data waits for room in the socket, in flight). */
	static char chunk[16384];
	memset(chunk, 'x', sizeof(chunk));
	bool full = false;
	for (int i = 0; i < 4096 && !full; i++) {
		ssize_t n = write(sv[0], chunk, sizeof(chunk));
		if (n < 0) {
			CHECK_EQ(errno, EAGAIN);
			full = true;
		}
		if (i % 8 == 7)
			boundary();
	}
	CHECK(full);
	/* Everything queued goes in (a short send's remainder is queued
	 * again and goes with the next submit); some waits for room. */
	for (int i = 0; i < 4; i++) {
		boundary();
		struct timespec d = { 0, 2 * 1000000 };
		nanosleep(&d, NULL);
	}
	/* The peer goes: the waiting send fails (EPIPE) in the kernel, whose
	 * completion is posted while this thread is in waitpid. */
	CHECK_EQ(write(go[1], "q", 1), 1);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	struct timespec ts = { 0, 20 * 1000000 };
	nanosleep(&ts, NULL);
	long r;
	int e = 0, v = 0;
	socklen_t len = sizeof(v);
	char buf[16];
	errno = 0;
	switch (how) {
	case W_WRITE:
		r = send(sv[0], "y", 1, MSG_NOSIGNAL);
		break;
	case W_RECV:
		r = recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT);
		break;
	case W_READ:
		r = read(sv[0], buf, sizeof(buf));
		break;
	case W_SOERROR:
		r = getsockopt(sv[0], SOL_SOCKET, SO_ERROR, &v, &len);
		CHECK_EQ(r, 0);
		r = -1;
		e = v;
		break;
	case W_GETOPT:
		r = getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &v, &len);
		break;
	case W_SETOPT:
		v = 65536;
		r = setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
		break;
	default:
		r = close(sv[0]);
		break;
	}
	if (!e)
		e = errno;
	TEST_LOG("%-22s -> %ld (%s)", names[how], r, r < 0 ? strerror(e) : "no error");
	if (r != -1 || (e != EPIPE && e != ECONNRESET))
		TEST_FAIL("%s after a failed deferred write: %ld (%s), want -1 EPIPE",
			  names[how], r, strerror(e));
	if (how == W_CLOSE) {
		/* Closed all the same. */
		CHECK_EQ(fcntl(sv[0], F_GETFD), -1);
		CHECK_EQ(errno, EBADF);
	} else {
		/* Reported once: the next call gets the socket's own answer. */
		len = sizeof(v);
		CHECK_EQ(getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &v, &len), 0);
		CHECK_EQ(v, SOCK_STREAM);
		CHECK_EQ(close(sv[0]), 0);
	}
	close(go[1]);
	boundary();
}

int main(int argc, char **argv)
{
	(void)argc;
	preload_reexec(argv, 60);
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	for (int h = 0; h < W_N; h++)
		one((enum how)h);
	return test_pass("batch/preload-errors");
}
