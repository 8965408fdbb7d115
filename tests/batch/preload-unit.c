/* SPDX-License-Identifier: MIT */
/*
 * preload-unit: the preload's promises one by one, in a process that runs
 * itself again under libbypass-batch.so.  A segment starts when epoll_wait
 * returns and is submitted when it is called again:
 *  - writes inside it are deferred (the peer sees nothing before the next
 *    wait) and copied (the caller may scribble on its buffers at once);
 *  - a deferred write that fails later is reported by the next call on that
 *    descriptor with its errno (EPIPE raises SIGPIPE unless MSG_NOSIGNAL),
 *    close included (the descriptor is closed all the same);
 *  - close keeps order (data, then EOF) and the number is not reused before
 *    the close is done; a closed descriptor gives EBADF; a reused number
 *    starts clean;
 *  - shutdown, dup2 onto a descriptor with queued data, and TCP_CORK keep
 *    their order; a blocking read does not wait for a peer that waits for
 *    our queued data;
 *  - a bad buffer gives EFAULT, not a crash;
 *  - fork (the child has its own queue), exec and exit (queued data is sent
 *    first).
 */
#include <dlfcn.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "batch/util.h"

static int ep;

/* End the current segment (submit) and start the next one. */
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

static void expect(int fd, const char *s)
{
	size_t n = strlen(s);
	char buf[256];
	CHECK(n < sizeof(buf));
	CHECK_EQ(read_full(fd, buf, n), n);
	if (memcmp(buf, s, n))
		TEST_FAIL("expected \"%s\", got \"%.*s\"", s, (int)n, buf);
}

static volatile sig_atomic_t sigpipes;
static void on_pipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void deferral_and_copy(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	boundary();
	char buf[8] = "abcdefg";
	CHECK_EQ(write(sv[0], buf, 3), 3);
	struct iovec v[2] = { { buf + 3, 2 }, { buf + 5, 2 } };
	CHECK_EQ(writev(sv[0], v, 2), 4);
	CHECK_EQ(send(sv[0], "h", 1, 0), 1);
	memset(buf, 'X', sizeof(buf)); /* copied at the call */
	CHECK(nothing_yet(sv[1]));
	boundary();
	expect(sv[1], "abcdefgh");
	/* Outside a segment? There is always one after epoll_wait: a write
	 * after a poll() is deferred as well. */
	CHECK_EQ(poll(NULL, 0, 0), 0);
	CHECK_EQ(write(sv[0], "p", 1), 1);
	CHECK(nothing_yet(sv[1]));
	CHECK_EQ(poll(NULL, 0, 0), 0);
	expect(sv[1], "p");
	close(sv[0]);
	close(sv[1]);
}

static void errors_reported(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[1]);
	boundary();
	CHECK_EQ(write(sv[0], "lost", 4), 4); /* deferred: fails at the flush */
	CHECK_EQ(sigpipes, 0);
	boundary();
	errno = 0;
	CHECK_EQ(write(sv[0], "x", 1), -1);
	CHECK_EQ(errno, EPIPE);
	CHECK_EQ(sigpipes, 1);
	/* Reported once; then the socket's own EPIPE (the kernel's). */
	CHECK_EQ(send(sv[0], "y", 1, MSG_NOSIGNAL), -1);
	CHECK_EQ(errno, EPIPE);
	close(sv[0]);

	/* MSG_NOSIGNAL: no signal; close reports it and still closes. */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[1]);
	boundary();
	CHECK_EQ(send(sv[0], "z", 1, MSG_NOSIGNAL), 1);
	boundary();
	int before = sigpipes;
	errno = 0;
	CHECK_EQ(close(sv[0]), -1);
	CHECK_EQ(errno, EPIPE);
	CHECK_EQ(sigpipes, before);
	boundary();
	CHECK(fcntl(sv[0], F_GETFD) < 0 && errno == EBADF);
}

static void close_order_and_reuse(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	boundary();
	CHECK_EQ(write(sv[0], "bye", 3), 3);
	int a = sv[0];
	CHECK_EQ(close(a), 0);
	/* For the program it is closed. */
	CHECK(fcntl(a, F_GETFD) < 0 && errno == EBADF);
	CHECK_EQ(write(a, "x", 1), -1);
	CHECK_EQ(errno, EBADF);
	/* The number is not handed out again before our close is done (a
	 * regular file: its close runs at once, without sending the queue
	 * ahead of it, docs/batch.md "Order"). */
	int b = memfd_create("preload-unit", MFD_CLOEXEC);
	CHECK(b >= 0 && b != a);
	close(b);
	CHECK(nothing_yet(sv[1]));
	boundary();
	expect(sv[1], "bye");
	char c;
	CHECK_EQ(read(sv[1], &c, 1), 0); /* then EOF */
	close(sv[1]);
	/* Now the number comes back, and starts clean. */
	int p[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0);
	CHECK(p[0] == a || p[1] == a);
	boundary();
	CHECK_EQ(write(p[0], "new", 3), 3);
	boundary();
	expect(p[1], "new");
	close(p[0]);
	close(p[1]);
}

static void order_kept(void)
{
	/* shutdown after queued data: data, then EOF. */
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	boundary();
	CHECK_EQ(write(sv[0], "data", 4), 4);
	CHECK_EQ(shutdown(sv[0], SHUT_WR), 0);
	boundary();
	expect(sv[1], "data");
	char c;
	CHECK_EQ(read(sv[1], &c, 1), 0);
	close(sv[0]);
	close(sv[1]);

	/* dup2 onto a descriptor with queued data: the data goes first, to
	 * the socket it was written to. */
	int a[2], b[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	boundary();
	CHECK_EQ(write(a[0], "old", 3), 3);
	CHECK_EQ(dup2(b[0], a[0]), a[0]);
	CHECK_EQ(write(a[0], "NEW", 3), 3);
	boundary();
	expect(a[1], "old");
	expect(b[1], "NEW");
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);

	/* TCP_CORK queued between writes takes effect in order. */
	int t[2];
	tcp_pair(t);
	boundary();
	int one = 1, v = 0;
	CHECK_EQ(setsockopt(t[0], IPPROTO_TCP, TCP_CORK, &one, sizeof(one)), 0);
	CHECK_EQ(write(t[0], "cork", 4), 4);
	one = 0; /* copied */
	boundary();
	socklen_t vl = sizeof(v);
	CHECK_EQ(getsockopt(t[0], IPPROTO_TCP, TCP_CORK, &v, &vl), 0);
	CHECK(v != 0);
	int zero = 0;
	CHECK_EQ(setsockopt(t[0], IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero)), 0);
	boundary();
	expect(t[1], "cork");
	close(t[0]);
	close(t[1]);
}

static void blocking_read_no_deadlock(void)
{
	/* A request queued, then a blocking read of the answer: the read must
	 * submit the request first. */
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char buf[4];
		if (read_full(sv[1], buf, 4) != 4)
			_exit(1);
		_exit(write(sv[1], "pong", 4) == 4 ? 0 : 1);
	}
	boundary();
	CHECK_EQ(write(sv[0], "ping", 4), 4);
	expect(sv[0], "pong");
	wait_child(pid);
	close(sv[0]);
	close(sv[1]);
}

static void bad_buffer(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	char *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(bad != MAP_FAILED);
	boundary();
	errno = 0;
	CHECK_EQ(write(sv[0], bad, 10), -1);
	CHECK_EQ(errno, EFAULT);
	struct iovec v[2] = { { "ok", 2 }, { bad + 16, 4 } };
	CHECK_EQ(writev(sv[0], v, 2), -1);
	CHECK_EQ(errno, EFAULT);
	CHECK_EQ(writev(sv[0], (struct iovec *)(bad + 32), 2), -1);
	CHECK_EQ(errno, EFAULT);
	munmap(bad, 4096);
	CHECK_EQ(write(sv[0], "fine", 4), 4);
	boundary();
	expect(sv[1], "fine");
	close(sv[0]);
	close(sv[1]);
}

static void fork_exec_exit(const char *self)
{
	/* fork: the parent's queued data is sent once, by the parent; the
	 * child has a queue of its own. */
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	boundary();
	CHECK_EQ(write(sv[0], "P", 1), 1);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		boundary();
		if (write(sv[0], "C", 1) != 1)
			_exit(1);
		boundary();
		_exit(0);
	}
	wait_child(pid);
	boundary();
	char buf[2];
	CHECK_EQ(read_full(sv[1], buf, 2), 2);
	CHECK((buf[0] == 'P' && buf[1] == 'C') || (buf[0] == 'C' && buf[1] == 'P'));
	CHECK(nothing_yet(sv[1]));

	/* exit and exec with data queued (more than the socket holds, so it
	 * waits in io_uring): all of it arrives before the process goes. */
	for (int how = 0; how < 3; how++) {
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			int ep2 = epoll_create1(0);
			struct epoll_event e;
			epoll_wait(ep2, &e, 1, 0);
			static unsigned char chunk[60000];
			for (int i = 0; i < 8; i++) {
				fill_pat(chunk, sizeof(chunk), 3, (uint64_t)i * sizeof(chunk));
				if (write(sv[0], chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
					_exit(2);
			}
			if (how == 0)
				exit(0);
			if (how == 1)
				_exit(0);
			execl("/bin/true", "true", (char *)NULL);
			_exit(3);
		}
		size_t total = 8 * 60000;
		unsigned char *got = malloc(total), *want = malloc(total);
		CHECK(got && want);
		fill_pat(want, total, 3, 0);
		test_sleep_ms(50); /* let it reach exit first */
		CHECK_EQ(read_full(sv[1], got, total), total);
		CHECK(!memcmp(got, want, total));
		wait_child(pid);
		free(got);
		free(want);
	}
	close(sv[0]);
	close(sv[1]);
	(void)self;
}

int main(int argc, char **argv)
{
	(void)argc;
	test_timeout(120);
	SKIP_UNDER_TSAN();
	if (!getenv("BT_UNIT_PRELOADED")) {
		if (access(preload_path(), R_OK))
			SKIP("no %s", preload_path());
		setenv("LD_PRELOAD", preload_env(), 1);
		setenv("BT_UNIT_PRELOADED", "1", 1);
		setenv("BYPASS_BATCH", "1", 1);
		/* no age limit: under emulation two calls can be more than the
		 * default 1 ms apart, and the segment would go early */
		setenv("BYPASS_BATCH_MAX_DELAY_US", "0", 1);
		execv("/proc/self/exe", argv);
		TEST_FAIL("re-exec: %s", strerror(errno));
	}
	CHECK(dlopen(preload_path(), RTLD_NOLOAD | RTLD_NOW) != NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_pipe;
	CHECK(sigaction(SIGPIPE, &sa, NULL) == 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	deferral_and_copy();
	errors_reported();
	close_order_and_reuse();
	order_kept();
	blocking_read_no_deadlock();
	bad_buffer();
	fork_exec_exit(argv[0]);
	return test_pass("batch/preload-unit");
}
