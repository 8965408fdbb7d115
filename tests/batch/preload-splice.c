/* SPDX-License-Identifier: MIT */
/*
 * preload-splice: sendfile deferred as linked splices (file -> pipe ->
 * socket, BYPASS_BATCH_SPLICE=1) on a non-blocking TCP socket, as an epoll
 * server makes it, with a receiver thread that checks every byte:
 *  - files larger than the pipe (8 MiB through 256 KiB pipes, several
 *    rounds), with an offset pointer (at an odd offset; the file position
 *    does not move) and without (the position moves at once);
 *  - a file that grows after the call (exactly the bytes asked for go out),
 *    one that shrinks (what is left of it is sent, EIO is reported);
 *  - a reader that stops reading: the program's waits and other calls do
 *    not block, writes are queued behind the file up to the descriptor's
 *    bound and then answered EAGAIN, and everything arrives in order once
 *    it reads again;
 *  - the program closing the file right after sendfile (it reads as closed,
 *    the bytes still arrive, the number is free once they have);
 *  - the peer resetting the connection: reported by the next call;
 *  - lighttpd's pattern: TCP_CORK, writev headers and sendfile bodies of
 *    several responses in one iteration, in order;
 *  - io_uring refused (seccomp): sendfile is the system call (it returns
 *    what fit in the socket).
 */
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "batch/util.h"

#define MIB (1024u * 1024u)

static int ep;
static char dir[256];

/* ------------------------------------------------------------ receiver */

struct rx {
	int fd;
	unsigned char *buf;
	size_t cap;
	_Atomic size_t got;
	atomic_bool go, eof;
	pthread_t t;
};

static void *rx_main(void *arg)
{
	struct rx *r = arg;
	struct timespec ts = { 0, 1000000 };
	while (!atomic_load(&r->go))
		nanosleep(&ts, NULL);
	for (;;) {
		size_t g = atomic_load(&r->got);
		if (g == r->cap)
			break;
		ssize_t n = read(r->fd, r->buf + g, r->cap - g);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		atomic_store(&r->got, g + (size_t)n);
	}
	atomic_store(&r->eof, true);
	return NULL;
}

/* A connection: sv[0] ours (non-blocking, small buffers so that the socket
 * fills), sv[1] the receiver's; it starts reading when go is set. */
static void rx_start(struct rx *r, int sv[2], size_t cap, bool go)
{
	tcp_pair(sv);
	int small = 64 * 1024;
	CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
	CHECK(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) == 0);
	CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	memset(r, 0, sizeof(*r));
	r->fd = sv[1];
	r->cap = cap;
	r->buf = malloc(cap ? cap : 1);
	CHECK(r->buf != NULL);
	atomic_store(&r->go, go);
	CHECK(pthread_create(&r->t, NULL, rx_main, r) == 0);
}

/* The program's event loop waits (merged with the flush; splice rounds go
 * in again from there) until the receiver has want bytes or its EOF. */
static void pump_until(struct rx *r, size_t want)
{
	struct epoll_event e[4];
	for (int i = 0; i < 60000; i++) {
		if (atomic_load(&r->got) >= want || atomic_load(&r->eof))
			return;
		CHECK(epoll_wait(ep, e, 4, 1) >= 0);
	}
	TEST_FAIL("the receiver got %zu of %zu bytes in 60 s", atomic_load(&r->got), want);
}

static void pump(int n)
{
	struct epoll_event e[4];
	for (int i = 0; i < n; i++)
		CHECK(epoll_wait(ep, e, 4, 2) >= 0);
}

static void rx_end(struct rx *r, int sv[2])
{
	close(sv[0]);
	pump(1);
	CHECK(pthread_join(r->t, NULL) == 0);
	close(sv[1]);
	free(r->buf);
}

/* got[at .. at+n) is the pattern of stream s from offset off. */
static void check_pat(const struct rx *r, size_t at, size_t n, uint64_t s, uint64_t off)
{
	CHECK(at + n <= atomic_load(&r->got));
	for (size_t i = 0; i < n; i++)
		if (r->buf[at + i] != pat(s, off + i))
			TEST_FAIL("byte %zu (file offset %llu) differs", at + i,
				  (unsigned long long)(off + i));
}

static int open_pat(const char *name, size_t len, uint64_t s, struct stat *st)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_pat_file(path, len, s);
	int f = open(path, O_RDWR | O_CLOEXEC);
	CHECK(f >= 0);
	CHECK(fstat(f, st) == 0); /* the size the library goes by */
	CHECK_EQ((size_t)st->st_size, len);
	return f;
}

/* ------------------------------------------------------------ cases */

/* 8 MiB with an offset pointer at an odd offset, then without one. */
static void big_files(void)
{
	struct stat st;
	int f = open_pat("big", 8 * MIB, 1, &st);
	int sv[2];
	struct rx r;
	size_t n1 = 8 * MIB - 1001, n2 = 3 * MIB + 5;
	rx_start(&r, sv, n1 + n2, true);
	pump(1);
	off_t off = 1001;
	CHECK_EQ(sendfile(sv[0], f, &off, n1), (ssize_t)n1);
	CHECK_EQ(off, (off_t)(8 * MIB));
	CHECK_EQ(lseek(f, 0, SEEK_CUR), 0); /* the position stays */
	CHECK_EQ(lseek(f, 777, SEEK_SET), 777);
	CHECK_EQ(sendfile(sv[0], f, NULL, n2), (ssize_t)n2);
	CHECK_EQ(lseek(f, 0, SEEK_CUR), (off_t)(777 + n2)); /* moved at once */
	pump_until(&r, n1 + n2);
	check_pat(&r, 0, n1, 1, 1001);
	check_pat(&r, n1, n2, 1, 777);
	rx_end(&r, sv);
	close(f);
}

/* A file that grows after the call: exactly the bytes asked for. */
static void grows(void)
{
	struct stat st;
	int f = open_pat("grow", 2 * MIB, 2, &st);
	int sv[2];
	struct rx r;
	rx_start(&r, sv, 2 * MIB + 4, true);
	pump(1);
	off_t off = 0;
	CHECK_EQ(sendfile(sv[0], f, &off, 2 * MIB), (ssize_t)(2 * MIB));
	unsigned char more[65536];
	fill_pat(more, sizeof(more), 9, 0);
	for (int i = 0; i < 16; i++)
		CHECK_EQ(pwrite(f, more, sizeof(more), (off_t)(2 * MIB + i * sizeof(more))),
			 (ssize_t)sizeof(more));
	CHECK_EQ(write(sv[0], "|END", 4), 4);
	pump_until(&r, 2 * MIB + 4);
	check_pat(&r, 0, 2 * MIB, 2, 0);
	CHECK(!memcmp(r.buf + 2 * MIB, "|END", 4));
	rx_end(&r, sv);
	close(f);
}

/*
 * A file that shrinks after the call, while the reader has stopped (so the
 * splices cannot have read it all before): what is left of it arrives, the
 * next call on the socket reports EIO.
 */
static void shrinks(void)
{
	struct stat st;
	int f = open_pat("shrink", 3 * MIB, 3, &st);
	int sv[2];
	struct rx r;
	rx_start(&r, sv, 3 * MIB, false);
	pump(1);
	off_t off = 0;
	CHECK_EQ(sendfile(sv[0], f, &off, 3 * MIB), (ssize_t)(3 * MIB));
	pump(5);
	CHECK(ftruncate(f, MIB) == 0);
	atomic_store(&r.go, true);
	int err = 0;
	socklen_t el = sizeof(err);
	for (int i = 0; i < 30000 && !err; i++) {
		pump(1);
		CHECK(getsockopt(sv[0], SOL_SOCKET, SO_ERROR, &err, &el) == 0);
	}
	CHECK_EQ(err, EIO);
	close(sv[0]); /* the receiver sees the end (the close goes in with */
	pump(1);      /* the event loop's next wait) */
	CHECK(pthread_join(r.t, NULL) == 0);
	size_t got = atomic_load(&r.got);
	CHECK(got >= MIB && got < 3 * MIB);
	check_pat(&r, 0, got, 3, 0);
	close(sv[1]);
	free(r.buf);
	close(f);
}

/*
 * The reader stops: the program's waits return, writes are queued behind
 * the file's bytes up to the descriptor's bound (BYPASS_BATCH_FD_BYTES),
 * then told EAGAIN (the socket is full: an EPOLLOUT edge will come), and
 * once the reader reads again everything arrives, in order.
 */
static void stalled_reader(void)
{
	struct stat st;
	int f = open_pat("stall", 8 * MIB, 4, &st);
	int sv[2];
	struct rx r;
	size_t cap = 8 * MIB + 4 + 64 * 65536;
	rx_start(&r, sv, cap, false);
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLET, .data.fd = sv[0] };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev) == 0);
	pump(1);
	off_t off = 0;
	CHECK_EQ(sendfile(sv[0], f, &off, 8 * MIB), (ssize_t)(8 * MIB));
	pump(20); /* returns: the splices wait for room, not the program */
	CHECK_EQ(write(sv[0], "TAIL", 4), 4); /* queued behind */
	static unsigned char chunk[65536];
	size_t extra = 0;
	ssize_t w;
	for (int i = 0; i < 64; i++) {
		fill_pat(chunk, sizeof(chunk), 10, extra);
		if ((w = write(sv[0], chunk, sizeof(chunk))) < 0)
			break;
		CHECK_EQ(w, (ssize_t)sizeof(chunk));
		extra += sizeof(chunk);
		pump(1);
	}
	CHECK_EQ(w, -1); /* the bound: the socket is full */
	CHECK_EQ(errno, EAGAIN);
	CHECK(extra <= 512 * 1024);
	atomic_store(&r.go, true);
	pump_until(&r, 8 * MIB + 4 + extra);
	/* Room again: the write goes behind what was queued. */
	for (int i = 0; (w = write(sv[0], "END!", 4)) < 0 && errno == EAGAIN && i < 10000; i++)
		pump(1);
	CHECK_EQ(w, 4);
	pump_until(&r, 8 * MIB + 8 + extra);
	check_pat(&r, 0, 8 * MIB, 4, 0);
	CHECK(!memcmp(r.buf + 8 * MIB, "TAIL", 4));
	check_pat(&r, 8 * MIB + 4, extra, 10, 0);
	CHECK(!memcmp(r.buf + 8 * MIB + 4 + extra, "END!", 4));
	CHECK(epoll_ctl(ep, EPOLL_CTL_DEL, sv[0], NULL) == 0);
	rx_end(&r, sv);
	close(f);
}

/* The program closes the file at once: closed for it, read to the end by
 * the splices, and its number free once they are done. */
static void close_after(void)
{
	struct stat st;
	int f = open_pat("closed", 5 * MIB, 5, &st);
	int sv[2];
	struct rx r;
	rx_start(&r, sv, 5 * MIB, false);
	pump(1);
	off_t off = 0;
	CHECK_EQ(sendfile(sv[0], f, &off, 5 * MIB), (ssize_t)(5 * MIB));
	CHECK_EQ(close(f), 0);
	char c;
	CHECK_EQ(read(f, &c, 1), -1);
	CHECK_EQ(errno, EBADF);
	CHECK_EQ(close(f), -1);
	CHECK_EQ(errno, EBADF);
	atomic_store(&r.go, true);
	pump_until(&r, 5 * MIB);
	check_pat(&r, 0, 5 * MIB, 5, 0);
	/* Closed for real once the last splice ended (the kernel asked
	 * directly, past the preload). */
	long k = 0;
	for (int i = 0; i < 10000 && (k = syscall(SYS_fcntl, f, F_GETFD)) >= 0; i++)
		pump(1);
	CHECK_EQ(k, -1);
	CHECK_EQ(errno, EBADF);
	rx_end(&r, sv);
}

/* The peer resets: the deferred splice fails, the next call says so. */
static void peer_reset(void)
{
	struct stat st;
	int f = open_pat("reset", 2 * MIB, 6, &st);
	int sv[2];
	tcp_pair(sv);
	CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	struct linger lg = { 1, 0 };
	CHECK(setsockopt(sv[1], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	pump(1);
	off_t off = 0;
	CHECK_EQ(sendfile(sv[0], f, &off, 2 * MIB), (ssize_t)(2 * MIB));
	close(sv[1]); /* unread data and linger 0: an RST */
	int e = 0;
	for (int i = 0; i < 10000 && !e; i++) {
		pump(1);
		ssize_t w = send(sv[0], "x", 1, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN)
			e = errno;
	}
	CHECK(e == EPIPE || e == ECONNRESET);
	close(sv[0]);
	close(f);
}

/* lighttpd's pattern: cork, writev header, sendfile body, uncork; several
 * responses in one iteration, in order. */
static void cork_headers(void)
{
	struct stat st;
	int f = open_pat("bodies", 2 * MIB, 7, &st);
	int sv[2];
	struct rx r;
	static const size_t sizes[] = { 20480, 300000, 5000, 1048576, 65537, 3000 };
	size_t total = 0;
	char hdr[6][64];
	for (size_t i = 0; i < 6; i++) {
		snprintf(hdr[i], sizeof(hdr[i]), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n",
			 sizes[i]);
		total += strlen(hdr[i]) + 2 + sizes[i];
	}
	rx_start(&r, sv, total, true);
	pump(1);
	int one = 1, zero = 0;
	off_t pos = 0;
	for (size_t i = 0; i < 6; i++) {
		CHECK(setsockopt(sv[0], IPPROTO_TCP, TCP_CORK, &one, sizeof(one)) == 0);
		struct iovec v[2] = { { hdr[i], strlen(hdr[i]) }, { "\r\n", 2 } };
		CHECK_EQ(writev(sv[0], v, 2), (ssize_t)(strlen(hdr[i]) + 2));
		off_t off = pos;
		CHECK_EQ(sendfile(sv[0], f, &off, sizes[i]), (ssize_t)sizes[i]);
		CHECK_EQ(off, pos + (off_t)sizes[i]);
		CHECK(setsockopt(sv[0], IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero)) == 0);
		pos = (pos + (off_t)sizes[i] * 3) % (off_t)MIB;
	}
	pump_until(&r, total);
	size_t at = 0;
	pos = 0;
	for (size_t i = 0; i < 6; i++) {
		size_t h = strlen(hdr[i]);
		CHECK(!memcmp(r.buf + at, hdr[i], h));
		CHECK(!memcmp(r.buf + at + h, "\r\n", 2));
		at += h + 2;
		check_pat(&r, at, sizes[i], 7, (uint64_t)pos);
		at += sizes[i];
		pos = (pos + (off_t)sizes[i] * 3) % (off_t)MIB;
	}
	rx_end(&r, sv);
	close(f);
}

/* io_uring refused: the call is the system call and returns what fit. */
static void refused(void)
{
	struct stat st;
	int f = open_pat("refused", 8 * MIB, 8, &st);
	int sv[2];
	struct rx r;
	rx_start(&r, sv, 8 * MIB, false);
	pump(1);
	off_t off = 0;
	ssize_t n = sendfile(sv[0], f, &off, 8 * MIB);
	CHECK(n > 0 && n < (ssize_t)(8 * MIB));
	CHECK_EQ(off, (off_t)n);
	atomic_store(&r.go, true);
	while (atomic_load(&r.got) < (size_t)n)
		pump(1);
	check_pat(&r, 0, (size_t)n, 8, 0);
	rx_end(&r, sv);
	close(f);
}

/* The kernel can splice for us: io_uring with IORING_OP_SPLICE, and the
 * merged wait (IORING_OP_EPOLL_WAIT, Linux 6.15) that resubmits rounds. */
static bool kernel_splices(void)
{
	struct io_uring ring;
	bool have = false;
	if (io_uring_queue_init(4, &ring, 0) == 0) {
		struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
		have = p && io_uring_opcode_supported(p, IORING_OP_SPLICE) &&
		       io_uring_opcode_supported(p, 59 /* IORING_OP_EPOLL_WAIT */);
		if (p)
			io_uring_free_probe(p);
		io_uring_queue_exit(&ring);
	}
	return have;
}

static void run_refused(char **argv)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid) {
		wait_child(pid);
		return;
	}
	static const int nrs[] = { __NR_io_uring_setup };
	int e = test_seccomp_refuse(nrs, 1, EPERM);
	if (e) {
		printf("note: seccomp unavailable (%s): refused case not run\n", strerror(-e));
		_exit(0);
	}
	setenv("BT_SPLICE_REFUSED", "1", 1);
	preload_reexec(argv, 60);
	_exit(1);
}

int main(int argc, char **argv)
{
	(void)argc;
	if (!getenv("BT_TEST_PRELOADED")) {
		setenv("BYPASS_BATCH_SPLICE", "1", 1); /* not the default */
		if (!kernel_splices())
			SKIP("no io_uring with IORING_OP_SPLICE and IORING_OP_EPOLL_WAIT here");
		run_refused(argv);
	}
	preload_reexec(argv, 120);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	make_tmpdir(dir, sizeof(dir), "splice");
	if (getenv("BT_SPLICE_REFUSED")) {
		refused();
		rm_tree(dir);
		return test_pass("batch/preload-splice (io_uring refused)");
	}
	TEST_LOG("big files");
	big_files();
	TEST_LOG("grows");
	grows();
	TEST_LOG("shrinks");
	shrinks();
	TEST_LOG("stalled reader");
	stalled_reader();
	TEST_LOG("close after");
	close_after();
	TEST_LOG("peer reset");
	peer_reset();
	TEST_LOG("cork headers");
	cork_headers();
	rm_tree(dir);
	return test_pass("batch/preload-splice");
}
