/* SPDX-License-Identifier: MIT */
/*
 * restart: a completion that comes back interrupted (-EINTR, or one of the
 * kernel's restart codes ERESTARTSYS 512, ERESTARTNOINTR 513,
 * ERESTARTNOHAND 514, ERESTART_RESTARTBLOCK 516, which an io-wq worker may
 * leave in a completion) is issued again for what it has not done: the
 * peer gets every byte in order, and no such code ever reaches the program.
 * A sendfile's file read that comes back in part is read again for the
 * rest.  One that fails for good (the engine's bound on restarts) fails the
 * stream with EIO (EINTR for an explicit send), and never lets the bytes
 * queued behind it out: the peer gets a prefix of the stream, never wrong
 * bytes.
 *
 * Drives the preload's decision layer in-process (batch/defer.h), with the
 * engine's test-only injection (bp_bt_inject: the request is made to fail
 * with EBADF, so it does nothing and breaks its chain as a real failure
 * would, and its completion carries the code instead).
 */
#include <bypass/batch.h>
#include <pthread.h>

#include "batch/util.h"
#include "batch/defer.h"

#define HDR 100
#define CHUNK 16384
#define NCHUNK 3
#define TRAILER 77
#define TOTAL (HDR + NCHUNK * CHUNK + TRAILER)
#define SPLICE_LEN (512 * 1024)

static int file_fd;
static unsigned char want[SPLICE_LEN + HDR];

static void new_pair(int sv[2])
{
	tcp_pair(sv);
	/* The numbers may have been used before: start clean. */
	bp_bt_fd_created(sv[0], 0);
	bp_bt_fd_created(sv[1], 0);
}

/* Until the thread's deferred work is done. */
static void settle(void)
{
	struct bt_thread *th = bp_bt_self();
	CHECK(th != NULL);
	bp_bt_lock(th);
	int r = bp_bt_drain(th, 20 * 1000000000ll);
	bp_bt_unlock(th);
	CHECK_EQ(r, 0);
}

/* The peer reads as the engine sends (a socket buffer need not hold it
 * all), up to EOF. */
struct reader {
	pthread_t t;
	int fd;
	unsigned char *buf;
	size_t cap, got;
};

static void *reader_fn(void *arg)
{
	struct reader *rd = arg;
	rd->got = read_full(rd->fd, rd->buf, rd->cap);
	return NULL;
}

static void reader_start(struct reader *rd, int fd, unsigned char *buf, size_t cap)
{
	*rd = (struct reader){ .fd = fd, .buf = buf, .cap = cap };
	CHECK(pthread_create(&rd->t, NULL, reader_fn, rd) == 0);
}

/* Everything the peer got, once our end is shut down (cap: more than the
 * stream holds, so that a longer one shows). */
static size_t reader_end(struct reader *rd, int sv[2])
{
	CHECK(shutdown(sv[0], SHUT_WR) == 0);
	CHECK(pthread_join(rd->t, NULL) == 0);
	return rd->got;
}

/* The stream the transparent scenarios send: a header, NCHUNK sendfile
 * calls of CHUNK bytes (the first goes into the header's send, as in an
 * HTTP server), a trailer. */
static void expected(unsigned char *b)
{
	fill_pat(b, HDR, 1, 0);
	for (int i = 0; i < NCHUNK; i++)
		fill_pat(b + HDR + i * CHUNK, CHUNK, 2, (uint64_t)i * CHUNK);
	fill_pat(b + HDR + NCHUNK * CHUNK, TRAILER, 3, 0);
}

static const char *cls_name(int cls)
{
	static const char *n[] = { "read", "short read", "send", "splice" };
	return n[cls];
}

/*
 * One segment of the stream above, with count requests of class cls
 * answered res.  whole: they must be issued again and the peer get it all,
 * nothing reported; else the stream fails with EIO and the peer gets a
 * prefix of it.
 */
static void transparent(int cls, int res, int count, bool whole)
{
	TEST_LOG("transparent, %s answered %d x%d", cls_name(cls), res, count);
	int sv[2];
	new_pair(sv);
	static unsigned char exp[TOTAL], got[TOTAL + 1];
	expected(exp);
	bp_bt_segment_begin();
	struct iovec v = { exp, HDR };
	CHECK_EQ(bp_bt_tx_data(sv[0], &v, 1, 0, NULL), HDR);
	for (int i = 0; i < NCHUNK; i++) {
		off_t off = (off_t)i * CHUNK;
		CHECK_EQ(bp_bt_tx_sendfile(sv[0], file_fd, &off, CHUNK), CHUNK);
		CHECK_EQ(off, (off_t)(i + 1) * CHUNK);
	}
	v = (struct iovec){ exp + HDR + NCHUNK * CHUNK, TRAILER };
	CHECK_EQ(bp_bt_tx_data(sv[0], &v, 1, 0, NULL), TRAILER);
	struct reader rd;
	reader_start(&rd, sv[1], got, sizeof(got));
	bp_bt_inject(cls, res, count);
	bp_bt_segment_end();
	settle();
	int left = bp_bt_inject(0, 0, 0);
	long err = bp_bt_report_err(sv[0]);
	size_t n = reader_end(&rd, sv);
	if (whole)
		CHECK_EQ(left, 0); /* each went to a request */
	/* Wrong bytes first: the worst a stream can do. */
	for (size_t i = 0; i < n; i++)
		if (got[i] != exp[i])
			TEST_FAIL("the peer got a wrong byte at %zu of %zu (reported: %ld)",
				  i, n, err);
	if (whole) {
		if (err)
			TEST_FAIL("an interrupted request was reported: %ld (%s)", err,
				  strerror((int)-err));
		if (n != TOTAL)
			TEST_FAIL("the peer got %zu bytes of %d", n, TOTAL);
	} else {
		if (err != -EIO)
			TEST_FAIL("a request that failed for good was reported as %ld (%s), "
				  "want EIO", err, strerror((int)-err));
		if (n >= TOTAL)
			TEST_FAIL("the peer got all %zu bytes of a stream that failed", n);
	}
	close(sv[0]);
	close(sv[1]);
}

/* The explicit API: a send and a sendfile in one segment, count requests
 * of class cls answered res; their results as the calls return them. */
static void explicit(int cls, int res, int count, long want_send, long want_sf)
{
	TEST_LOG("explicit, %s answered %d x%d", cls_name(cls), res, count);
	int sv[2];
	new_pair(sv);
	static unsigned char got[HDR + CHUNK + 1];
	unsigned char hdr[HDR];
	fill_pat(hdr, HDR, 1, 0);
	CHECK_EQ(bypass_batch_start(), 0);
	ssize_t r_send = 0, r_sf = 0;
	CHECK_EQ(bypass_batch_send(sv[0], hdr, HDR, 0, &r_send), 0);
	CHECK_EQ(bypass_batch_sendfile(sv[0], file_fd, 0, CHUNK, &r_sf), 0);
	struct reader rd;
	reader_start(&rd, sv[1], got, sizeof(got));
	bp_bt_inject(cls, res, count);
	CHECK_EQ(bypass_batch_flush(), 2);
	int left = bp_bt_inject(0, 0, 0);
	if (count < BT_MAX_RESTARTS)
		CHECK_EQ(left, 0);
	size_t n = reader_end(&rd, sv);
	CHECK_EQ(r_send, want_send);
	CHECK_EQ(r_sf, want_sf);
	size_t expect_n = (want_send > 0 ? HDR : 0) + (want_sf > 0 ? (size_t)want_sf : 0);
	CHECK_EQ(n, expect_n);
	size_t at = 0;
	if (want_send > 0) {
		CHECK(memcmp(got, hdr, HDR) == 0);
		at = HDR;
	}
	for (size_t i = at; i < n; i++)
		if (got[i] != pat(2, i - at))
			TEST_FAIL("the peer got a wrong byte at %zu of %zu", i, n);
	close(sv[0]);
	close(sv[1]);
}

/* A sendfile deferred as splices (file -> pipe -> socket), one of its
 * requests answered res once: the rounds go on from where they were. */
static bool spliced(int res)
{
	TEST_LOG("splice answered %d", res);
	int sv[2];
	new_pair(sv);
	static unsigned char got[HDR + SPLICE_LEN + 1];
	fill_pat(want, HDR, 1, 0);
	fill_pat(want + HDR, SPLICE_LEN, 2, 0);
	bp_bt_segment_begin();
	struct iovec v = { want, HDR };
	CHECK_EQ(bp_bt_tx_data(sv[0], &v, 1, 0, NULL), HDR);
	off_t off = 0;
	long r = bp_bt_tx_sendfile(sv[0], file_fd, &off, SPLICE_LEN);
	if (r == BT_PASS) { /* the system call ran: no splices here */
		bp_bt_segment_end();
		close(sv[0]);
		close(sv[1]);
		return false;
	}
	CHECK_EQ(r, SPLICE_LEN);
	struct reader rd;
	reader_start(&rd, sv[1], got, sizeof(got));
	bp_bt_inject(BT_INJ_SPLICE, res, 1);
	bp_bt_segment_end();
	settle();
	CHECK_EQ(bp_bt_inject(0, 0, 0), 0);
	long err = bp_bt_report_err(sv[0]);
	size_t n = reader_end(&rd, sv);
	if (err)
		TEST_FAIL("an interrupted splice was reported: %ld (%s)", err, strerror((int)-err));
	CHECK_EQ(n, HDR + SPLICE_LEN);
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			TEST_FAIL("the peer got a wrong byte at %zu of %zu", i, n);
	close(sv[0]);
	close(sv[1]);
	return true;
}

int main(void)
{
	test_timeout(120);
	signal(SIGPIPE, SIG_IGN);
	int r = bypass_batch_start();
	if (r == -ENOSYS || r == -EPERM)
		SKIP("io_uring unavailable: %s", strerror(-r));
	CHECK_EQ(r, 0);
	CHECK_EQ(bypass_batch_flush(), 0);

	char dir[128], path[192];
	make_tmpdir(dir, sizeof(dir), "restart");
	snprintf(path, sizeof(path), "%s/file", dir);
	write_pat_file(path, SPLICE_LEN, 2);
	file_fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(file_fd >= 0);
	struct stat st;
	CHECK(fstat(file_fd, &st) == 0);
	bp_bt_fd_size(file_fd, &st); /* what the preload's fstat wrapper does */
	bp_bt_cfg.sendfile_mode = BT_SENDFILE_COPY;
	bp_bt_cfg.sendfile_max = 65536;
	bp_bt_cfg.max_delay_ns = 0;

	static const int codes[] = { -EINTR, -512, -513, -514, -516 };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		transparent(BT_INJ_READ, codes[i], 1, true);
		transparent(BT_INJ_SEND, codes[i], 1, true);
	}
	transparent(BT_INJ_READ, -512, 3, true);  /* every read once */
	transparent(BT_INJ_SEND, -512, 4, true);  /* the chain, again and again */
	transparent(BT_INJ_READ_SHORT, 0, 3, true);
	/* Past the bound on restarts: the stream fails, with no wrong byte. */
	transparent(BT_INJ_READ, -512, 1000, false);
	transparent(BT_INJ_SEND, -512, 1000, false);
	transparent(BT_INJ_READ, -EIO, 1, false);

	explicit(BT_INJ_SEND, -512, 1, HDR, CHUNK);
	explicit(BT_INJ_READ, -512, 1, HDR, CHUNK);
	explicit(BT_INJ_READ_SHORT, 0, 1, HDR, CHUNK);
	explicit(BT_INJ_SEND, -512, 1000, -EINTR, -ECANCELED);
	explicit(BT_INJ_READ, -512, 1000, HDR, -EIO);

	bp_bt_cfg.splice = true;
	bp_bt_cfg.sendfile_max = 4096;
	bool any = false;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		any |= spliced(codes[i]);
	if (!any)
		TEST_LOG("no splices here (IORING_OP_SPLICE or POLL_ADD missing): "
			 "that part not run");
	close(file_fd);
	printf("PASS: batch/restart\n");
	return 0;
}
