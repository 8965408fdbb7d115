/* SPDX-License-Identifier: MIT */
/*
 * api: the explicit API on one thread.  Queued calls do nothing until the
 * flush, which stores each result (what the system call returns); calls on
 * one descriptor keep their order; one that fails stops the later ones on
 * that descriptor (-ECANCELED) and not those on others; without
 * MSG_DONTWAIT a send sends everything (it waits for the reader); with it,
 * a send may be short or -EAGAIN, as send(2) on a full socket; sendfile
 * reads and sends, short at the end of the file, at the file position when
 * offset is -1; close really closes; buffers described by iovecs and
 * msghdrs are copied at the call (the caller may reuse them).
 */
#include <bypass/batch.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include "batch/util.h"

static void segment_basics(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_EQ(bypass_batch_active(), 0);
	CHECK_ERR(bypass_batch_flush(), -ENOTCONN);
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_EQ(bypass_batch_active(), 1);
	CHECK_ERR(bypass_batch_start(), -EALREADY);

	ssize_t r1 = 7, r2 = 7, r3 = 7, r4 = 7;
	CHECK_ERR(bypass_batch_write(sv[0], "abc", 3, &r1), 0);
	CHECK_EQ(r1, -EINPROGRESS);
	CHECK_ERR(bypass_batch_send(sv[0], "defg", 4, 0, &r2), 0);
	struct iovec iov[2] = { { "hi", 2 }, { "jkl", 3 } };
	CHECK_ERR(bypass_batch_writev(sv[0], iov, 2, &r3), 0);
	/* The iovec array was copied: scribbling on it changes nothing. */
	iov[0].iov_base = NULL;
	iov[0].iov_len = 999;
	CHECK_ERR(bypass_batch_send(sv[0], "m", 1, MSG_NOSIGNAL, &r4), 0);
	CHECK_ERR(bypass_batch_send(sv[0], "n", 1, 0, NULL), 0);

	/* Nothing reached the kernel yet. */
	char buf[64];
	CHECK_EQ(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), -1);
	CHECK_EQ(errno, EAGAIN);

	CHECK_EQ(bypass_batch_flush(), 5);
	CHECK_EQ(bypass_batch_active(), 0);
	CHECK_EQ(r1, 3);
	CHECK_EQ(r2, 4);
	CHECK_EQ(r3, 5);
	CHECK_EQ(r4, 1);
	CHECK_EQ(read_full(sv[1], buf, 14), 14);
	CHECK(!memcmp(buf, "abcdefghijklmn", 14));

	/* An empty segment. */
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_EQ(bypass_batch_flush(), 0);
	close(sv[0]);
	close(sv[1]);
}

static void bad_arguments(void)
{
	ssize_t r = 0;
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	/* Outside a segment nothing is queued. */
	CHECK_ERR(bypass_batch_write(sv[0], "x", 1, &r), -ENOTCONN);
	CHECK_ERR(bypass_batch_send(sv[0], "x", 1, 0, &r), -ENOTCONN);
	CHECK_ERR(bypass_batch_close(sv[0], &r), -ENOTCONN);
	CHECK_EQ(r, 0);

	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_write(-1, "x", 1, &r), -EBADF);
	CHECK_ERR(bypass_batch_write(sv[0], NULL, 1, &r), -EINVAL);
	CHECK_ERR(bypass_batch_writev(sv[0], NULL, 1, &r), -EINVAL);
	CHECK_ERR(bypass_batch_writev(sv[0], (struct iovec *)&r, -1, &r), -EINVAL);
	CHECK_ERR(bypass_batch_writev(sv[0], (struct iovec *)&r, 100000, &r), -EINVAL);
	CHECK_ERR(bypass_batch_send(sv[0], "x", 1, MSG_OOB, &r), -EINVAL);
	CHECK_ERR(bypass_batch_send(sv[0], NULL, 5, 0, &r), -EINVAL);
	CHECK_ERR(bypass_batch_send(-3, "x", 1, 0, &r), -EBADF);
	CHECK_ERR(bypass_batch_sendmsg(sv[0], NULL, 0, &r), -EINVAL);
	struct msghdr m = { 0 };
	m.msg_namelen = 4000;
	m.msg_name = &m;
	CHECK_ERR(bypass_batch_sendmsg(sv[0], &m, 0, &r), -EINVAL);
	CHECK_ERR(bypass_batch_sendto(sv[0], NULL, 3, 0, NULL, 0, &r), -EINVAL);
	CHECK_ERR(bypass_batch_sendfile(sv[0], -1, 0, 10, &r), -EBADF);
	CHECK_ERR(bypass_batch_sendfile(-1, 0, 0, 10, &r), -EBADF);
	CHECK_ERR(bypass_batch_sendfile(sv[0], 0, -2, 10, &r), -EINVAL);
	CHECK_ERR(bypass_batch_shutdown(sv[0], 7, &r), -EINVAL);
	CHECK_ERR(bypass_batch_shutdown(-1, SHUT_WR, &r), -EBADF);
	CHECK_ERR(bypass_batch_close(-1, &r), -EBADF);
	char big[100] = { 0 };
	CHECK_ERR(bypass_batch_setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, big, 100, &r), -EINVAL);
	CHECK_ERR(bypass_batch_setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, NULL, 4, &r), -EINVAL);
	/* None of these queued anything, and the result slot is untouched. */
	CHECK_EQ(r, 0);
	CHECK_EQ(bypass_batch_flush(), 0);

	/* A call on a descriptor that is not open fails at the flush. */
	CHECK_ERR(bypass_batch_start(), 0);
	int bad = dup(sv[0]);
	close(bad);
	CHECK_ERR(bypass_batch_send(bad, "x", 1, 0, &r), 0);
	CHECK_EQ(bypass_batch_flush(), 1);
	CHECK_EQ(r, -EBADF);

	CHECK_ERR(bypass_batch_configure(NULL), -EINVAL);
	struct bypass_batch_opts o = { .entries = 100 };
	CHECK_ERR(bypass_batch_configure(&o), -EINVAL);
	o.entries = 0;
	o.flags = 0x80;
	CHECK_ERR(bypass_batch_configure(&o), -EINVAL);
	o.flags = 0;
	for (int i = 0; i < 4; i++) { /* each reserved word must be zero */
		o.reserved[i] = 1;
		CHECK_ERR(bypass_batch_configure(&o), -EINVAL);
		o.reserved[i] = 0;
	}
	/* This thread has its ring already. */
	CHECK_ERR(bypass_batch_configure(&o), -EBUSY);
	CHECK_ERR(bypass_batch_stats(NULL), -EINVAL);
	close(sv[0]);
	close(sv[1]);
}

static void order_and_short(void)
{
	/* MSG_DONTWAIT: short, then -EAGAIN on the full socket; a failure
	 * stops what follows on its descriptor only. */
	int a[2], b[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	int small = 4096;
	CHECK(setsockopt(a[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
	size_t big = 4 << 20;
	char *data = malloc(big);
	CHECK(data);
	fill_pat((unsigned char *)data, big, 1, 0);
	ssize_t r1, r2, r3;
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_send(a[0], data, big, MSG_DONTWAIT, &r1), 0);
	CHECK_ERR(bypass_batch_send(a[0], "tail", 4, MSG_DONTWAIT, &r2), 0);
	ssize_t r5;
	CHECK_ERR(bypass_batch_send(a[0], "more", 4, 0, &r5), 0);
	CHECK_ERR(bypass_batch_send(b[0], "other", 5, 0, &r3), 0);
	CHECK_EQ(bypass_batch_flush(), 4);
	CHECK(r1 > 0 && (size_t)r1 < big);
	CHECK_EQ(r2, -EAGAIN);
	CHECK_EQ(r5, -ECANCELED);
	CHECK_EQ(r3, 5);

	/* MSG_DONTWAIT on a full socket: -EAGAIN, as send(2). */
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_send(a[0], data, 1, MSG_DONTWAIT, &r2), 0);
	CHECK_EQ(bypass_batch_flush(), 1);
	CHECK_EQ(r2, -EAGAIN);

	char *got = malloc(big);
	CHECK(got);
	CHECK_EQ(read_full(a[1], got, (size_t)r1), (size_t)r1);
	CHECK(!memcmp(got, data, (size_t)r1));
	char buf[16];
	CHECK_EQ(recv(a[1], buf, sizeof(buf), MSG_DONTWAIT), -1);
	CHECK_EQ(read_full(b[1], buf, 5), 5);
	CHECK(!memcmp(buf, "other", 5));

	/* Without MSG_DONTWAIT io_uring waits for room: a reader drains. */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(a[0]);
		size_t want = big, n = 0;
		char *sink = malloc(65536);
		while (n < want) {
			ssize_t k = read(a[1], sink, want - n < 65536 ? want - n : 65536);
			if (k <= 0)
				_exit(1);
			n += (size_t)k;
		}
		_exit(0);
	}
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_send(a[0], data, big, 0, &r1), 0);
	CHECK_EQ(bypass_batch_flush(), 1);
	CHECK_EQ(r1, (ssize_t)big);
	wait_child(pid);
	free(got);
	free(data);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

static void files_and_sendfile(void)
{
	char dir[256], path[300];
	make_tmpdir(dir, sizeof(dir), "api");
	snprintf(path, sizeof(path), "%s/f", dir);
	write_pat_file(path, 10000, 5);
	int f = open(path, O_RDONLY);
	CHECK(f >= 0);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	ssize_t r1, r2, r3, r4;
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_sendfile(sv[0], f, 100, 1000, &r1), 0);
	CHECK_ERR(bypass_batch_sendfile(sv[0], f, 9500, 1000, &r2), 0); /* short */
	CHECK_ERR(bypass_batch_sendfile(sv[0], f, -1, 300, &r3), 0);    /* position 0 */
	CHECK_ERR(bypass_batch_sendfile(sv[0], f, -1, 200, &r4), 0);    /* then 300 */
	CHECK_EQ(bypass_batch_flush(), 4);
	CHECK_EQ(r1, 1000);
	CHECK_EQ(r2, 500);
	CHECK_EQ(r3, 300);
	CHECK_EQ(r4, 200);
	CHECK_EQ(lseek(f, 0, SEEK_CUR), 500);
	unsigned char got[2000], want[2000];
	CHECK_EQ(read_full(sv[1], got, 2000), 2000);
	fill_pat(want, 1000, 5, 100);
	fill_pat(want + 1000, 500, 5, 9500);
	fill_pat(want + 1500, 500, 5, 0);
	CHECK(!memcmp(got, want, 2000));

	/* Past the end: 0.  A descriptor that is not a file: an error. */
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_sendfile(sv[0], f, 20000, 10, &r1), 0);
	CHECK_ERR(bypass_batch_sendfile(sv[0], 999, 0, 10, &r2), 0);
	CHECK_EQ(bypass_batch_flush(), 2);
	CHECK_EQ(r1, 0);
	CHECK_EQ(r2, -EBADF);

	/* write to a file at its position; writev; close closes. */
	int w = open(path, O_WRONLY | O_TRUNC);
	CHECK(w >= 0);
	struct iovec v[3] = { { "one ", 4 }, { "two ", 4 }, { "three", 5 } };
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_write(w, "zero ", 5, &r1), 0);
	CHECK_ERR(bypass_batch_writev(w, v, 3, &r2), 0);
	CHECK_ERR(bypass_batch_close(w, &r3), 0);
	CHECK(fcntl(w, F_GETFD) >= 0); /* not closed before the flush */
	CHECK_EQ(bypass_batch_flush(), 3);
	CHECK_EQ(r1, 5);
	CHECK_EQ(r2, 13);
	CHECK_EQ(r3, 0);
	CHECK(fcntl(w, F_GETFD) < 0 && errno == EBADF);
	char txt[32] = { 0 };
	CHECK_EQ(pread(f, txt, sizeof(txt), 0), 18);
	CHECK(!strcmp(txt, "zero one two three"));
	close(f);
	close(sv[0]);
	close(sv[1]);
	rm_tree(dir);
}

static void sockets_control(void)
{
	int sv[2];
	tcp_pair(sv);
	int one = 1, v = 0;
	socklen_t vl = sizeof(v);
	ssize_t r1, r2, r3, r4;
	/* an option between two sends on the same socket keeps its place
	 * (before Linux 6.7 it is set by a system call once "a" has gone) */
	int zero = 0;
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_send(sv[0], "a", 1, 0, &r1), 0);
	CHECK_ERR(bypass_batch_setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &zero, sizeof(zero), &r2), 0);
	CHECK_ERR(bypass_batch_send(sv[0], "b", 1, 0, &r3), 0);
	CHECK_EQ(bypass_batch_flush(), 3);
	CHECK_EQ(r1, 1);
	CHECK_EQ(r2, 0);
	CHECK_EQ(r3, 1);
	CHECK(getsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0);
	CHECK_EQ(v, 0);

	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one), &r1), 0);
	one = 0; /* the value was copied */
	CHECK_ERR(bypass_batch_send(sv[0], "bye", 3, 0, &r2), 0);
	CHECK_ERR(bypass_batch_shutdown(sv[0], SHUT_WR, &r3), 0);
	struct sockaddr_in to = { 0 };
	CHECK_ERR(bypass_batch_sendto(sv[0], "x", 1, 0, (struct sockaddr *)&to, sizeof(to), &r4), 0);
	CHECK_EQ(bypass_batch_flush(), 4);
	CHECK_EQ(r2, 3);
	CHECK_EQ(r3, 0);
	CHECK(r4 < 0); /* after shutdown: EPIPE (or EISCONN for the address) */
	CHECK_EQ(r1, 0); /* io_uring's socket command, or the system call */
	CHECK(getsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0);
	CHECK(v != 0);
	char buf[8];
	CHECK_EQ(read_full(sv[1], buf, sizeof(buf)), 5);
	CHECK(!memcmp(buf, "abbye", 5));
	close(sv[0]);
	close(sv[1]);
}

static void registered_files(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_ERR(bypass_batch_unregister_fd(sv[0]), -ENOENT);
	CHECK_ERR(bypass_batch_register_fd(-1), -EBADF);
	CHECK_ERR(bypass_batch_register_fd(5000), -ENOSPC);
	CHECK_ERR(bypass_batch_register_fd(sv[0]), 0);
	CHECK_ERR(bypass_batch_register_fd(sv[0]), -EALREADY);
	ssize_t r[40];
	static const char digits[] = "0123456789";
	CHECK_ERR(bypass_batch_start(), 0);
	for (int i = 0; i < 40; i++)
		CHECK_ERR(bypass_batch_send(sv[0], &digits[i % 10], 1, 0, &r[i]), 0);
	CHECK_EQ(bypass_batch_flush(), 40);
	for (int i = 0; i < 40; i++)
		CHECK_EQ(r[i], 1);
	char buf[40];
	CHECK_EQ(read_full(sv[1], buf, 40), 40);
	for (int i = 0; i < 40; i++)
		CHECK_EQ(buf[i], '0' + i % 10);
	/* bypass_batch_close unregisters, then closes. */
	CHECK_ERR(bypass_batch_start(), 0);
	CHECK_ERR(bypass_batch_close(sv[0], &r[0]), 0);
	CHECK_EQ(bypass_batch_flush(), 1);
	CHECK_EQ(r[0], 0);
	CHECK_ERR(bypass_batch_unregister_fd(sv[0]), -ENOENT);
	CHECK_EQ(read(sv[1], buf, 1), 0); /* the peer sees EOF: really closed */
	close(sv[1]);
}

enum { MANY = 2000 };
static unsigned char many_in[MANY];

static void *many_reader(void *arg)
{
	return (void *)read_full(*(int *)arg, many_in, MANY);
}

static void many_calls(void)
{
	/* More calls than the ring holds: submitted as the queue fills.  A
	 * thread reads meanwhile: 2000 one-byte sends hold more than a socket
	 * buffer where net.core.wmem_max is the default 208 KiB (the 1 MiB
	 * asked for below is then cut to that), and the flush waits for all. */
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	int big = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	enum { N = MANY };
	static ssize_t r[N];
	static unsigned char out[N];
	fill_pat(out, N, 9, 0);
	pthread_t rd;
	CHECK(pthread_create(&rd, NULL, many_reader, &sv[1]) == 0);
	CHECK_ERR(bypass_batch_start(), 0);
	for (int i = 0; i < N; i++)
		CHECK_ERR(bypass_batch_send(sv[0], &out[i], 1, 0, &r[i]), 0);
	CHECK_EQ(bypass_batch_flush(), N);
	for (int i = 0; i < N; i++)
		CHECK_EQ(r[i], 1);
	void *got;
	CHECK(pthread_join(rd, &got) == 0);
	CHECK_EQ((size_t)got, N);
	CHECK(!memcmp(many_in, out, N));
	struct bypass_batch_stats st;
	CHECK_ERR(bypass_batch_stats(&st), 0);
	CHECK(st.deferred >= N);
	CHECK(st.submitted >= N);
	CHECK(st.enters > 0 && st.enters < st.submitted);
	CHECK(st.segments >= 5);
	close(sv[0]);
	close(sv[1]);
}

/* Options: a small queue, then SQPOLL, each in a thread of its own. */
static void *opts_thread(void *arg)
{
	struct bypass_batch_opts *o = arg;
	int r = bypass_batch_configure(o);
	if (r)
		return (void *)(intptr_t)(1000 - r);
	r = bypass_batch_start();
	if (r)
		return (void *)(intptr_t)(2000 - r);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return (void *)3;
	static __thread ssize_t res[100];
	static const char letters[] = "abcdefghij";
	for (int i = 0; i < 100; i++)
		if (bypass_batch_send(sv[0], &letters[i % 10], 1, 0, &res[i]))
			return (void *)4;
	if (bypass_batch_flush() != 100)
		return (void *)5;
	for (int i = 0; i < 100; i++)
		if (res[i] != 1)
			return (void *)6;
	char buf[100];
	if (read_full(sv[1], buf, 100) != 100)
		return (void *)7;
	for (int i = 0; i < 100; i++)
		if (buf[i] != 'a' + i % 10)
			return (void *)8;
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

static void *restore_defaults(void *arg)
{
	(void)arg;
	struct bypass_batch_opts def = { 0 };
	return bypass_batch_configure(&def) ? (void *)1 : NULL;
}

/* The counters' struct keeps its size (256 bytes) as counters are added
 * into its reserved tail, which the call fills with zeros. */
_Static_assert(sizeof(struct bypass_batch_stats) == 256, "bypass_batch_stats is 256 bytes");
static void stats_struct(void)
{
	struct bypass_batch_stats st;
	memset(&st, 0xa5, sizeof(st));
	CHECK_ERR(bypass_batch_stats(&st), 0);
	for (size_t i = 0; i < sizeof(st.reserved) / sizeof(st.reserved[0]); i++)
		CHECK_EQ(st.reserved[i], 0);
	CHECK(st.segments > 0 && st.segments != 0xa5a5a5a5a5a5a5a5ull);
	CHECK_ERR(bypass_batch_stats(NULL), -EINVAL);
}

static void options(void)
{
	struct bypass_batch_opts small = { .entries = 8 };
	pthread_t t;
	void *ret;
	CHECK(pthread_create(&t, NULL, opts_thread, &small) == 0);
	pthread_join(t, &ret);
	if (ret)
		TEST_FAIL("small queue: step %ld", (long)(intptr_t)ret);
	struct bypass_batch_opts sq = { .flags = BYPASS_BATCH_SQPOLL, .sqpoll_idle_ms = 10 };
	CHECK(pthread_create(&t, NULL, opts_thread, &sq) == 0);
	pthread_join(t, &ret);
	long code = (long)(intptr_t)ret;
	if (code > 2000 && (code - 2000 == EPERM || code - 2000 == EINVAL))
		TEST_LOG("SQPOLL refused here (%s)", strerror((int)(code - 2000)));
	else if (ret)
		TEST_FAIL("SQPOLL: step %ld", code);
	CHECK(pthread_create(&t, NULL, restore_defaults, NULL) == 0);
	pthread_join(t, &ret);
	CHECK(ret == NULL);
}

int main(void)
{
	test_timeout(60);
	signal(SIGPIPE, SIG_IGN);
	int r = bypass_batch_start();
	if (r == -ENOSYS || r == -EPERM)
		SKIP("io_uring unavailable: %s", strerror(-r));
	CHECK_ERR(r, 0);
	CHECK_EQ(bypass_batch_flush(), 0);
	segment_basics();
	bad_arguments();
	order_and_short();
	files_and_sendfile();
	sockets_control();
	registered_files();
	many_calls();
	options();
	stats_struct();
	return test_pass("batch/api");
}
