/* SPDX-License-Identifier: MIT */
/*
 * preload-order-queue: the program's order across descriptors inside a
 * segment (docs/batch.md, "Order"), seen from the other ends of its
 * sockets without waiting (MSG_DONTWAIT: a read that never makes the
 * preload submit).
 *
 * - Calls queued on different sockets go to the kernel in the order they
 *   were made: when a call would be issued ahead of an earlier one on
 *   another socket (a second call on a socket after a call on another; a
 *   call after a socket whose queue holds more than one call, whose later
 *   ones io_uring issues only after every chain's first; a call after a
 *   queued close, which takes effect when the enter returns), what was
 *   queued goes in first: interleaved writes, data and shutdown, TCP_CORK
 *   around data, and a close, each followed by a write on another socket.
 * - A call that is not queued and that another process can see at once (a
 *   write to a pipe or to a datagram socket, a write too large to defer, a
 *   pipe's close, connect, bind, listen, a listening socket's close, dup2
 *   onto a descriptor) runs after what was queued before it.
 * - What is not ordered (and need not be): writes to two sockets, one call
 *   each, stay queued together until the segment ends; a write to a
 *   regular file does not send the queue ahead of it (docs/batch.md).
 *
 * Every "seen at once" check here fails on 95741d6, where these calls
 * waited for the next event-loop wait (or went in one enter, in another
 * order); the "stays queued" checks pass on both.
 */
#include <sys/epoll.h>

#include "batch/util.h"

static int ep;

static void boundary(void)
{
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0);
}

static bool nothing_yet(int fd)
{
	char c;
	return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* The next bytes on fd are s, there now (no wait). */
static void there(int fd, const char *s, const char *what)
{
	size_t n = strlen(s);
	char buf[64] = { 0 };
	CHECK(n < sizeof(buf));
	ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);
	if (r != (ssize_t)n || memcmp(buf, s, n))
		TEST_FAIL("%s: expected \"%s\" at once, recv gives %zd (%s)", what, s, r,
			  r < 0 ? strerror(errno) : buf);
}

static void eof_there(int fd, const char *what)
{
	char c;
	ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
	if (r != 0)
		TEST_FAIL("%s: expected the EOF at once, recv gives %zd (%s)", what, r,
			  r < 0 ? strerror(errno) : "data");
}

struct conn {
	int me, peer; /* the program's end (accepted), the other end */
};

static struct conn conn_new(void)
{
	int sv[2];
	tcp_pair(sv);
	struct conn c = { .me = sv[1], .peer = sv[0] };
	return c;
}

static void conn_close(struct conn *c)
{
	close(c->me);
	close(c->peer);
}

/* ------------------------------------------------ queued, in order */

static void interleaved_writes(int unused)
{
	(void)unused;
	struct conn x = conn_new(), y = conn_new();
	boundary();
	CHECK_EQ(write(x.me, "x1", 2), 2);
	CHECK_EQ(write(y.me, "y1", 2), 2);
	/* x2 would be issued with x1, ahead of y1: x1 and y1 go first. */
	CHECK_EQ(write(x.me, "x2", 2), 2);
	there(x.peer, "x1", "x1, before x2 is queued");
	there(y.peer, "y1", "y1, before x2 is queued");
	CHECK(nothing_yet(x.peer));
	boundary();
	there(x.peer, "x2", "x2 after the segment");
	conn_close(&x);
	conn_close(&y);
	boundary();
}

static void shutdown_then_other_write(int unused)
{
	(void)unused;
	struct conn a = conn_new(), b = conn_new();
	boundary();
	CHECK_EQ(write(b.me, "data", 4), 4);
	CHECK_EQ(shutdown(b.me, SHUT_WR), 0);
	/* b's shutdown is linked behind its data: it would be issued after
	 * a's write. */
	CHECK_EQ(write(a.me, "reply", 5), 5);
	there(b.peer, "data", "b's data, before a's reply is queued");
	eof_there(b.peer, "b's shutdown, before a's reply is queued");
	boundary();
	there(a.peer, "reply", "a's reply");
	conn_close(&a);
	conn_close(&b);
	boundary();
}

static void cork_then_other_write(int unused)
{
	(void)unused;
	struct conn a = conn_new(), b = conn_new();
	boundary();
	int on = 1, off = 0;
	CHECK_EQ(setsockopt(b.me, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), 0);
	CHECK_EQ(write(b.me, "corked", 6), 6);
	CHECK_EQ(setsockopt(b.me, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)), 0);
	CHECK_EQ(write(a.me, "reply", 5), 5);
	there(b.peer, "corked", "b's data, uncorked before a's reply is queued");
	boundary();
	there(a.peer, "reply", "a's reply");
	conn_close(&a);
	conn_close(&b);
	boundary();
}

static void close_then_other_write(int unused)
{
	(void)unused;
	struct conn a = conn_new(), b = conn_new();
	boundary();
	CHECK_EQ(close(b.me), 0); /* queued: a connected socket */
	CHECK_EQ(write(a.me, "reply", 5), 5);
	eof_there(b.peer, "b's close, before a's reply is queued");
	boundary();
	there(a.peer, "reply", "a's reply");
	close(b.peer);
	conn_close(&a);
	boundary();
}

static void heads_stay_queued(int unused)
{
	(void)unused;
	/* One call on each of two sockets: issued in order by one enter,
	 * nothing submitted early. */
	struct conn a = conn_new(), b = conn_new();
	boundary();
	CHECK_EQ(write(a.me, "one", 3), 3);
	CHECK_EQ(write(b.me, "two", 3), 3);
	CHECK_EQ(write(b.me, "+", 1), 1); /* the same socket: merged */
	CHECK(nothing_yet(a.peer));
	CHECK(nothing_yet(b.peer));
	boundary();
	there(a.peer, "one", "a");
	there(b.peer, "two+", "b");
	conn_close(&a);
	conn_close(&b);
	boundary();
}

/* ------------------------------------------------ calls that run now */

enum direct { PIPE_WRITE, PIPE_CLOSE, UDP_SENDTO, BIG_WRITE, CONNECT, BIND, LISTEN,
	      LISTENER_CLOSE, DUP2 };
static const char *const direct_name[] = { "a write to a pipe", "a pipe's close",
	"a datagram sendto", "a write too large to defer", "connect", "bind", "listen",
	"a listening socket's close", "dup2 onto a descriptor" };

static void direct_after_data(int k)
{
	enum direct kind = (enum direct)k;
	struct conn a = conn_new();
	int osv[2]; /* a Unix socket: its buffer takes the large write unread */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, osv) == 0);
	struct conn o = { .me = osv[0], .peer = osv[1] };
	int p[2];
	CHECK(pipe2(p, O_CLOEXEC) == 0);
	int uport;
	int u = loopback_socket(SOCK_DGRAM, &uport);
	struct sockaddr_in ua = loopback_addr(uport);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	int lport = 0;
	int l = -1;
	if (kind == LISTENER_CLOSE || kind == CONNECT)
		l = loopback_socket(SOCK_STREAM, &lport);
	static char big[66 * 1024]; /* above BYPASS_BATCH_MAX_COPY (64 KiB) */
	boundary();
	CHECK_EQ(write(a.me, "before", 6), 6); /* queued */
	struct sockaddr_in any = loopback_addr(0);
	switch (kind) {
	case PIPE_WRITE:
		CHECK_EQ(write(p[1], "!", 1), 1);
		break;
	case PIPE_CLOSE:
		CHECK_EQ(close(p[1]), 0);
		p[1] = -1;
		break;
	case UDP_SENDTO:
		CHECK_EQ(sendto(u, "!", 1, 0, (struct sockaddr *)&ua, sizeof(ua)), 1);
		break;
	case BIG_WRITE:
		CHECK_EQ(write_full(o.me, big, sizeof(big)), sizeof(big));
		break;
	case CONNECT: {
		struct sockaddr_in la = loopback_addr(lport);
		CHECK_EQ(connect(s, (struct sockaddr *)&la, sizeof(la)), 0);
		break;
	}
	case BIND:
		CHECK_EQ(bind(s, (struct sockaddr *)&any, sizeof(any)), 0);
		break;
	case LISTEN:
		CHECK_EQ(listen(s, 4), 0); /* binds a port, and listens */
		break;
	case LISTENER_CLOSE:
		CHECK_EQ(close(l), 0);
		l = -1;
		break;
	case DUP2:
		CHECK_EQ(dup2(p[0], s), s); /* closes s's socket */
		break;
	}
	char what[96];
	snprintf(what, sizeof(what), "data queued before %s", direct_name[kind]);
	there(a.peer, "before", what);
	boundary();
	if (kind == BIG_WRITE) {
		size_t got = 0;
		while (got < sizeof(big)) {
			ssize_t r = read(o.peer, big, sizeof(big));
			CHECK(r > 0);
			got += (size_t)r;
		}
	}
	conn_close(&a);
	conn_close(&o);
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	close(u);
	close(s);
	if (l >= 0)
		close(l);
	boundary();
}

static void regular_file_not_ordered(int unused)
{
	(void)unused;
	char dir[256], path[300];
	make_tmpdir(dir, sizeof(dir), "order");
	snprintf(path, sizeof(path), "%s/log", dir);
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(f >= 0);
	struct conn a = conn_new();
	boundary();
	CHECK_EQ(write(a.me, "response", 8), 8);
	CHECK_EQ(write(f, "log line\n", 9), 9); /* an access log: not ordered */
	CHECK(nothing_yet(a.peer));
	boundary();
	there(a.peer, "response", "the response");
	close(f);
	unlink(path);
	conn_close(&a);
	boundary();
}

int main(int argc, char **argv)
{
	preload_reexec(argv, 60);
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);

	/* One case by name (argv[1]), or all. */
	static const struct test_case cases[] = {
		{ "interleaved", interleaved_writes, 0 },
		{ "shutdown", shutdown_then_other_write, 0 },
		{ "cork", cork_then_other_write, 0 },
		{ "close", close_then_other_write, 0 },
		{ "heads", heads_stay_queued, 0 },
		{ "pipe-write", direct_after_data, PIPE_WRITE },
		{ "pipe-close", direct_after_data, PIPE_CLOSE },
		{ "udp-sendto", direct_after_data, UDP_SENDTO },
		{ "big-write", direct_after_data, BIG_WRITE },
		{ "connect", direct_after_data, CONNECT },
		{ "bind", direct_after_data, BIND },
		{ "listen", direct_after_data, LISTEN },
		{ "listener-close", direct_after_data, LISTENER_CLOSE },
		{ "dup2", direct_after_data, DUP2 },
		{ "file", regular_file_not_ordered, 0 },
	};
	run_named_cases(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
	return test_pass("batch/preload-order-queue");
}
