/* SPDX-License-Identifier: MIT */
/*
 * preload-order: what another process sees happens in the program's order
 * (docs/batch.md, "Order").  A peer process learns of a call through the
 * program's next write on another descriptor (a reply on a pipe or on a
 * socket), then at once re-binds the port, connects, or reads without
 * waiting; the program meanwhile waits for the peer in waitpid, which the
 * preload does not see (it flushes nothing there), so nothing but the
 * order rule can have made the call visible in time.  No assertion depends
 * on timing.
 *
 * Cases: the close of a listening socket (its port re-bound by the program
 * itself and by the peer, a connect to it refused, after a reply on a pipe
 * and after a deferred one), the close of a bound datagram socket (its
 * port), the shutdown of a listening socket (connects refused), a socket
 * option set on a listening socket (inherited by the connection the peer
 * then makes), the close of a connected socket (the peer's EOF) before a
 * reply on a pipe and before a deferred reply, and queued data before a
 * reply on a pipe and before a connect, and a close while the program
 * waits for a child that reads until its EOF.  Each case fails on 95741d6
 * (where these calls were queued until the next event-loop wait) except
 * listen-close-deferred-reply's peer, which races there (one run in five
 * failed), and whose program-side check fails on it every time.
 */
#include <sys/epoll.h>
#include <sys/syscall.h>

#include "batch/util.h"

static int ep;

/* The event loop's wait: a segment begins after it (queued calls go in
 * before it). */
static void boundary(void)
{
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0);
}

/* 0 or the errno of binding a new socket of type to 127.0.0.1:port (no
 * SO_REUSEADDR: a port still held by anyone is refused). */
static int try_bind(int type, int port)
{
	int s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	struct sockaddr_in a = loopback_addr(port);
	int r = bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : errno;
	close(s);
	return r;
}

/* 0 or the errno of a blocking connect to 127.0.0.1:port. */
static int try_connect(int port, int *out)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	struct sockaddr_in a = loopback_addr(port);
	int r = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : errno;
	if (out && !r)
		*out = s;
	else
		close(s);
	return r;
}

/*
 * The peer: a child forked before the sockets it observes exist (a copy of
 * them in the child would keep them open), which reads what the program
 * tells it on a pipe.  Its calls pass through: it has no event loop.
 */
struct peer {
	pid_t pid;
	int to;   /* the program writes here */
	int from; /* the program reads here */
};

typedef void (*peer_fn)(int in, int out);

/* mine: the program's end of a connection (or -1), closed in the child so
 * that the program's close is the last. */
static void peer_start(struct peer *p, peer_fn fn, int mine)
{
	int a[2], b[2];
	CHECK(pipe2(a, O_CLOEXEC) == 0);
	CHECK(pipe2(b, O_CLOEXEC) == 0);
	p->pid = fork();
	CHECK(p->pid >= 0);
	if (p->pid == 0) {
		close(a[1]);
		close(b[0]);
		if (mine >= 0)
			close(mine);
		fn(a[0], b[1]);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	p->to = a[1];
	p->from = b[0];
}

/* The program waits for the peer's verdict (waitpid: nothing is flushed). */
static void peer_end(struct peer *p)
{
	wait_child(p->pid);
	close(p->to);
	close(p->from);
}

static void send_int(int fd, int v)
{
	CHECK_EQ(write(fd, &v, sizeof(v)), sizeof(v));
}

static int recv_int(int fd)
{
	int v = 0;
	CHECK_EQ(read_full(fd, &v, sizeof(v)), sizeof(v));
	return v;
}

/* A connected TCP pair whose second end is passed to a peer: returns the
 * program's end in *mine and keeps the peer's in *theirs. */
static void pair(int *mine, int *theirs)
{
	int sv[2];
	tcp_pair(sv);
	*mine = sv[1]; /* the accepted end, as a server's */
	*theirs = sv[0];
}

/* ------------------------------------------------ listening sockets, ports */

static void listen_close_rebind_self(int unused)
{
	(void)unused;
	int port;
	int l = loopback_socket(SOCK_STREAM, &port);
	boundary();
	/* Redis's CONFIG SET port / bind: close the listener, bind again. */
	CHECK_EQ(close(l), 0);
	CHECK_EQ(try_bind(SOCK_STREAM, port), 0);
	boundary();
}

static void peer_rebinds(int in, int out)
{
	(void)out;
	int port = recv_int(in);
	int e = try_bind(SOCK_STREAM, port);
	if (e)
		TEST_FAIL("peer: the port of the closed listener: bind: %s", strerror(e));
}

static void peer_connect_refused(int in, int out)
{
	(void)out;
	int port = recv_int(in);
	int e = try_connect(port, NULL);
	if (e != ECONNREFUSED)
		TEST_FAIL("peer: connect to the closed listener: %s",
			  e ? strerror(e) : "accepted");
}

static void listen_close_seen_by_peer(peer_fn fn)
{
	struct peer p;
	peer_start(&p, fn, -1);
	int port;
	int l = loopback_socket(SOCK_STREAM, &port);
	boundary();
	CHECK_EQ(close(l), 0);
	send_int(p.to, port); /* the reply, on a pipe */
	peer_end(&p);
	boundary();
}

/* The reply is deferred (a socket): the peer reads it, then re-binds. */
static int deferred_peer_end = -1;

static void peer_reads_then_rebinds(int in, int out)
{
	(void)out;
	int port = recv_int(in);
	int v = recv_int(deferred_peer_end);
	CHECK_EQ(v, 1);
	int e = try_bind(SOCK_STREAM, port);
	if (e)
		TEST_FAIL("peer: after the deferred reply, bind: %s", strerror(e));
}

static void listen_close_deferred_reply(int unused)
{
	(void)unused;
	int a, a_peer;
	pair(&a, &a_peer);
	deferred_peer_end = a_peer;
	struct peer p;
	peer_start(&p, peer_reads_then_rebinds, a);
	close(a_peer);
	int port;
	int l = loopback_socket(SOCK_STREAM, &port);
	send_int(p.to, port);
	boundary();
	CHECK_EQ(close(l), 0);
	/* Closed in the kernel now, not at the flush (where the port would
	 * be freed only when the enter that also sends the reply returns:
	 * the peer could bind before it). */
	if (syscall(SYS_fcntl, l, F_GETFD) != -1 || errno != EBADF)
		TEST_FAIL("the listening socket's close is still pending after close()");
	int one = 1;
	CHECK_EQ(write(a, &one, sizeof(one)), sizeof(one)); /* deferred */
	boundary(); /* sent here */
	peer_end(&p);
	close(a);
	boundary();
}

static void peer_rebinds_udp(int in, int out)
{
	(void)out;
	int port = recv_int(in);
	int e = try_bind(SOCK_DGRAM, port);
	if (e)
		TEST_FAIL("peer: the port of the closed datagram socket: bind: %s", strerror(e));
}

static void udp_close_seen_by_peer(int unused)
{
	(void)unused;
	struct peer p;
	peer_start(&p, peer_rebinds_udp, -1);
	int port;
	int u = loopback_socket(SOCK_DGRAM, &port);
	boundary();
	CHECK_EQ(close(u), 0);
	send_int(p.to, port);
	peer_end(&p);
	boundary();
}

static void listen_shutdown_seen_by_peer(int unused)
{
	(void)unused;
	struct peer p;
	peer_start(&p, peer_connect_refused, -1);
	int port;
	int l = loopback_socket(SOCK_STREAM, &port);
	boundary();
	/* On a listening socket, shutdown stops it listening. */
	CHECK_EQ(shutdown(l, SHUT_RDWR), 0);
	send_int(p.to, port);
	peer_end(&p);
	close(l);
	boundary();
}

static void peer_connects(int in, int out)
{
	(void)out;
	int port = recv_int(in);
	int s = -1;
	int e = try_connect(port, &s);
	if (e)
		TEST_FAIL("peer: connect: %s", strerror(e));
	close(s);
}

/* An option set on a listening socket passes to the connections it takes
 * from then on: to the one the peer makes after the program's reply. */
static void listen_sockopt_inherited(int unused)
{
	(void)unused;
	struct peer p;
	peer_start(&p, peer_connects, -1);
	int port;
	int l = loopback_socket(SOCK_STREAM, &port);
	boundary();
	int one = 1;
	CHECK_EQ(setsockopt(l, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	send_int(p.to, port);
	peer_end(&p); /* connected (and gone): the connection waits in the backlog */
	int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(c >= 0);
	int v = 0;
	socklen_t vl = sizeof(v);
	CHECK_EQ(getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &vl), 0);
	if (!v)
		TEST_FAIL("the connection made after setsockopt(TCP_NODELAY) on its listener "
			  "does not have it");
	close(c);
	close(l);
	boundary();
}

/* ------------------------------------------------ a connected peer's EOF */

static int eof_peer_end = -1;

static void peer_sees_eof(int in, int out)
{
	(void)out;
	CHECK_EQ(recv_int(in), 1);
	char c;
	ssize_t n = recv(eof_peer_end, &c, 1, MSG_DONTWAIT);
	if (n != 0)
		TEST_FAIL("peer: the program closed the connection before its reply, but "
			  "recv gives %zd (%s), not the EOF", n, n < 0 ? strerror(errno) : "data");
}

static void eof_before_pipe_reply(int unused)
{
	(void)unused;
	int b, b_peer;
	pair(&b, &b_peer);
	eof_peer_end = b_peer;
	struct peer p;
	peer_start(&p, peer_sees_eof, b);
	close(b_peer);
	boundary();
	CHECK_EQ(close(b), 0); /* queued: a connected socket */
	send_int(p.to, 1);
	peer_end(&p);
	boundary();
}

static void peer_reads_then_sees_eof(int in, int out)
{
	(void)in;
	(void)out;
	CHECK_EQ(recv_int(deferred_peer_end), 1);
	char c;
	ssize_t n = recv(eof_peer_end, &c, 1, MSG_DONTWAIT);
	if (n != 0)
		TEST_FAIL("peer: after the deferred reply, recv gives %zd (%s), not the EOF", n,
			  n < 0 ? strerror(errno) : "data");
}

static void eof_before_deferred_reply(int unused)
{
	(void)unused;
	int a, a_peer, b, b_peer;
	pair(&a, &a_peer);
	pair(&b, &b_peer);
	deferred_peer_end = a_peer;
	eof_peer_end = b_peer;
	struct peer p;
	peer_start(&p, peer_reads_then_sees_eof, b);
	close(a_peer);
	close(b_peer);
	boundary();
	CHECK_EQ(close(b), 0); /* queued */
	int one = 1;
	CHECK_EQ(write(a, &one, sizeof(one)), sizeof(one)); /* queued, behind it */
	/* The close has taken effect before the reply was queued (the kernel's
	 * descriptor table says so; the program sees b closed either way). */
	if (syscall(SYS_fcntl, b, F_GETFD) != -1 || errno != EBADF)
		TEST_FAIL("a close queued before a reply on another socket is still pending "
			  "when the reply is queued (both would go in one enter, the close "
			  "taking effect only when it returns)");
	boundary();
	peer_end(&p);
	close(a);
	boundary();
}

/* The program waits for a child that reads until the EOF of a socket the
 * program closed (waitpid now submits what the thread queued: a hang on
 * 95741d6, where the close waited for the next event-loop wait). */
static void peer_reads_to_eof(int in, int out)
{
	(void)in;
	(void)out;
	char c;
	ssize_t n;
	while ((n = read(eof_peer_end, &c, 1)) > 0)
		;
	CHECK_EQ(n, 0);
}

static void eof_while_waiting(int unused)
{
	(void)unused;
	int b, b_peer;
	pair(&b, &b_peer);
	eof_peer_end = b_peer;
	struct peer p;
	peer_start(&p, peer_reads_to_eof, b);
	close(b_peer);
	boundary();
	CHECK_EQ(write(b, "last words", 10), 10);
	CHECK_EQ(close(b), 0); /* both queued */
	peer_end(&p);
	boundary();
}

/* ------------------------------------------------ queued data */

static int data_peer_end = -1;

static void peer_has_data(int in, int out)
{
	(void)out;
	CHECK_EQ(recv_int(in), 1);
	char buf[8] = { 0 };
	ssize_t n = recv(data_peer_end, buf, sizeof(buf), MSG_DONTWAIT);
	if (n != 5 || memcmp(buf, "hello", 5))
		TEST_FAIL("peer: data written before the reply is not there: recv gives %zd (%s)",
			  n, n < 0 ? strerror(errno) : "other bytes");
}

static void data_before_pipe_reply(int unused)
{
	(void)unused;
	int a, a_peer;
	pair(&a, &a_peer);
	data_peer_end = a_peer;
	struct peer p;
	peer_start(&p, peer_has_data, a);
	close(a_peer);
	boundary();
	CHECK_EQ(write(a, "hello", 5), 5); /* queued */
	send_int(p.to, 1);
	peer_end(&p);
	close(a);
	boundary();
}

static void peer_accepts_then_has_data(int in, int out)
{
	(void)in;
	int port;
	int l = loopback_socket(SOCK_STREAM, &port);
	send_int(out, port);
	int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(c >= 0);
	char buf[8] = { 0 };
	ssize_t n = recv(data_peer_end, buf, sizeof(buf), MSG_DONTWAIT);
	if (n != 5 || memcmp(buf, "hello", 5))
		TEST_FAIL("peer: data written before the connect is not there: recv gives %zd (%s)",
			  n, n < 0 ? strerror(errno) : "other bytes");
	close(c);
	close(l);
}

static void data_before_connect(int unused)
{
	(void)unused;
	int a, a_peer;
	pair(&a, &a_peer);
	data_peer_end = a_peer;
	struct peer p;
	peer_start(&p, peer_accepts_then_has_data, a);
	close(a_peer);
	int port = recv_int(p.from);
	boundary();
	CHECK_EQ(write(a, "hello", 5), 5); /* queued */
	int s = -1;
	CHECK_EQ(try_connect(port, &s), 0);
	peer_end(&p);
	close(s);
	close(a);
	boundary();
}

static void listen_close_peer_rebinds(int unused)
{
	(void)unused;
	listen_close_seen_by_peer(peer_rebinds);
}

static void listen_close_peer_connects(int unused)
{
	(void)unused;
	listen_close_seen_by_peer(peer_connect_refused);
}

int main(int argc, char **argv)
{
	preload_reexec(argv, 60);
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);

	static const struct test_case cases[] = {
		{ "listen-close-rebind-self", listen_close_rebind_self, 0 },
		{ "listen-close-peer-rebinds", listen_close_peer_rebinds, 0 },
		{ "listen-close-peer-connects", listen_close_peer_connects, 0 },
		{ "listen-close-deferred-reply", listen_close_deferred_reply, 0 },
		{ "udp-close", udp_close_seen_by_peer, 0 },
		{ "listen-shutdown", listen_shutdown_seen_by_peer, 0 },
		{ "listen-sockopt", listen_sockopt_inherited, 0 },
		{ "eof-before-pipe-reply", eof_before_pipe_reply, 0 },
		{ "eof-before-deferred-reply", eof_before_deferred_reply, 0 },
		{ "eof-while-waiting", eof_while_waiting, 0 },
		{ "data-before-pipe-reply", data_before_pipe_reply, 0 },
		{ "data-before-connect", data_before_connect, 0 },
	};
	run_named_cases(cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
	return test_pass("batch/preload-order");
}
