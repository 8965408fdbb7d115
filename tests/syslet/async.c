/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous paths on both engines: a read from an empty pipe and
 * from a FIFO goes to a worker at the cachemiss and finishes once data
 * arrives (the atoms before it ran inline, the ones after it on the
 * worker); an open of a FIFO for writing without a reader; the completion
 * ring wrapping around many times; many programs in flight at once;
 * io_uring chains that block (a pipe) beside ones that do not.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <sys/stat.h>

static void pipe_cachemiss(bypass_syslet *s)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	int64_t before = 0, after = 0;
	char buf[16] = { 0 };
	atom_t a[3] = {
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&before), C(1) } },
		{ .nr = SYS_read, .arg = { C(pfd[0]), P(buf), C(sizeof(buf)) } },
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&after), R(1) } },
	};
	prog_t p = prog_of(a, 3, 11);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0); /* went async at the read */
	CHECK_EQ(before, 1);                       /* atom 0 ran inline */
	CHECK_ERR(bypass_syslet_wait(s, 1, 10000000), -ETIMEDOUT);
	CHECK_EQ(write(pfd[1], "12345", 5), 5);
	c = wait_one(s);
	CHECK_EQ(c.tag, 11);
	CHECK_EQ(c.engine, BYPASS_SYSLET_ENGINE_WORKERS);
	CHECK_EQ(c.atom, 2);
	CHECK_EQ(c.result, 5);
	CHECK_EQ(after, 5);
	CHECK(!memcmp(buf, "12345", 5));
	struct bypass_syslet_stats st;
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	CHECK(st.cachemiss >= 1);
	CHECK(st.atoms_workers >= 2);
	close(pfd[0]);
	close(pfd[1]);
}

static void fifo(bypass_syslet *s, const char *dir)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK_EQ(mkfifo(path, 0600), 0);
	/* open for writing blocks until a reader comes: async */
	const char msg[] = "through the fifo";
	atom_t a[3] = {
		{ .nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
		  .arg = { C(AT_FDCWD), P(path), C(O_WRONLY), C(0) } },
		{ .nr = SYS_write, .arg = { R(0), P(msg), C(sizeof(msg)) } },
		{ .nr = SYS_close, .arg = { R(0) } },
	};
	prog_t p = prog_of(a, 3, 12);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0);
	int rfd = open(path, O_RDONLY);
	CHECK(rfd >= 0);
	char buf[64];
	CHECK_EQ(read(rfd, buf, sizeof(buf)), (ssize_t)sizeof(msg));
	CHECK(!memcmp(buf, msg, sizeof(msg)));
	c = wait_one(s);
	CHECK_EQ(c.result, 0);
	CHECK_EQ(c.atom, 2);
	/* a read from a FIFO with a writer but no data: async */
	int wfd = open(path, O_WRONLY);
	CHECK(wfd >= 0);
	atom_t r1[1] = { { .nr = SYS_read, .arg = { C(rfd), P(buf), C(sizeof(buf)) } } };
	p = prog_of(r1, 1, 13);
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0);
	CHECK_EQ(write(wfd, "x", 1), 1);
	c = wait_one(s);
	CHECK_EQ(c.result, 1);
	close(wfd);
	close(rfd);
	unlink(path);
}

/*
 * The rest after a cachemiss goes to io_uring when it can (the uring engine)
 * and the completion still names the program's atoms and steps.
 */
static void rest_to_uring(bypass_syslet *s, uint32_t engine)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	int64_t x = 0;
	char buf[8];
	atom_t a[2] = {
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&x), C(1) } },
		{ .nr = SYS_read, .arg = { C(pfd[0]), P(buf), C(sizeof(buf)) } },
	};
	prog_t p = prog_of(a, 2, 15);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0);
	CHECK_EQ(x, 1);
	CHECK_EQ(write(pfd[1], "zz", 2), 2);
	c = wait_one(s);
	CHECK_EQ(c.tag, 15);
	CHECK_EQ(c.atom, 1);
	CHECK_EQ(c.steps, 2);
	CHECK_EQ(c.result, 2);
	CHECK_EQ(c.engine, engine == BYPASS_SYSLET_ENGINE_URING ? BYPASS_SYSLET_ENGINE_URING
								: BYPASS_SYSLET_ENGINE_WORKERS);
	close(pfd[0]);
	close(pfd[1]);
}

/*
 * submit: a FIFO opened for writing before it has a reader.  io_uring's
 * openat answers -ENXIO where the blocking open waits; the chain's
 * completion hands the program to a worker, whose open waits.
 */
static void fifo_submit(bypass_syslet *s, const char *dir)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/fifo2", dir);
	CHECK_EQ(mkfifo(path, 0600), 0);
	const char msg[] = "late reader";
	atom_t a[3] = {
		{ .nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
		  .arg = { C(AT_FDCWD), P(path), C(O_WRONLY), C(0) } },
		{ .nr = SYS_write, .arg = { R(0), P(msg), C(sizeof(msg)) } },
		{ .nr = SYS_close, .arg = { R(0) } },
	};
	prog_t p = prog_of(a, 3, 16);
	CHECK_EQ(bypass_syslet_submit(s, &p, 1), 1);
	/* collecting the chain's completion hands the program over */
	CHECK_ERR(bypass_syslet_wait(s, 1, 20000000), -ETIMEDOUT);
	int rfd = open(path, O_RDONLY | O_NONBLOCK);
	CHECK(rfd >= 0);
	comp_t c = wait_one(s);
	CHECK_EQ(c.tag, 16);
	CHECK_EQ(c.result, 0);
	CHECK_EQ(c.atom, 2);
	char buf[64];
	CHECK_EQ(read(rfd, buf, sizeof(buf)), (ssize_t)sizeof(msg));
	CHECK(!memcmp(buf, msg, sizeof(msg)));
	close(rfd);
	unlink(path);
}

/* A write larger than the pipe: the inline try writes part, a worker the
 * rest, and the atom's result is the whole count (as a blocking write's). */
static void big_write(bypass_syslet *s)
{
	enum { LEN = 300000 };
	static char out[LEN], in[LEN];
	for (int i = 0; i < LEN; i++)
		out[i] = (char)(i * 7);
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	int64_t wrote = 0;
	atom_t a[1] = { { .nr = SYS_write, .ret = &wrote,
			  .arg = { C(pfd[1]), P(out), C(LEN) } } };
	prog_t p = prog_of(a, 1, 14);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0);
	size_t got = 0;
	while (got < LEN) {
		ssize_t r = read(pfd[0], in + got, LEN - got);
		CHECK(r > 0);
		got += (size_t)r;
	}
	c = wait_one(s);
	CHECK_EQ(c.result, LEN);
	CHECK_EQ(wrote, LEN);
	CHECK(!memcmp(in, out, LEN));
	close(pfd[0]);
	close(pfd[1]);
}

/* A tiny ring (8 entries) wrapped many times; -EBUSY when full. */
static void wrap(uint32_t engine)
{
	bypass_syslet *s = ctx_for(engine, 8);
	if (!s)
		return;
	int64_t x = 0;
	atom_t a[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&x), C(1) } } };
	prog_t p[8];
	for (int i = 0; i < 8; i++)
		p[i] = prog_of(a, 1, (uint64_t)i);
	uint64_t next = 0;
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 8; i++)
			p[i].tag = next + (uint64_t)i;
		CHECK_EQ(bypass_syslet_submit(s, p, 8), 8);
		CHECK_ERR(bypass_syslet_submit(s, p, 1), -EBUSY);
		CHECK_ERR(bypass_syslet_run(s, p, NULL), -EBUSY);
		comp_t c[8];
		int got = 0;
		while (got < 8) {
			int r = bypass_syslet_reap(s, c + got, 8 - (unsigned)got);
			CHECK(r >= 0);
			got += r;
		}
		unsigned seen = 0; /* each tag once (a batch may be spread) */
		for (int i = 0; i < 8; i++) {
			CHECK(c[i].tag >= next && c[i].tag < next + 8);
			seen |= 1u << (c[i].tag - next);
		}
		CHECK_EQ(seen, 0xff);
		next += 8;
	}
	CHECK_EQ(x, 1600);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
}

/* Many programs blocked at once, then released. */
static void many(bypass_syslet *s, uint32_t engine)
{
	enum { N = 64 };
	int pfd[N][2];
	char buf[N][8];
	prog_t p[N];
	atom_t a[N][1];
	for (int i = 0; i < N; i++) {
		CHECK_EQ(pipe(pfd[i]), 0);
		a[i][0] = (atom_t){ .nr = SYS_read, .arg = { C(pfd[i][0]), P(buf[i]), C(8) } };
		p[i] = prog_of(a[i], 1, (uint64_t)i);
	}
	/* with the uring engine these are io_uring chains (poll-driven) */
	CHECK_EQ(bypass_syslet_submit(s, p, N), N);
	CHECK_ERR(bypass_syslet_wait(s, 1, 5000000), -ETIMEDOUT);
	for (int i = 0; i < N; i++)
		CHECK_EQ(write(pfd[i][1], "abc", 3), 3);
	bool seen[N] = { false };
	for (int got = 0; got < N;) {
		comp_t c[N];
		int r = bypass_syslet_wait(s, 1, 5000000000ll);
		CHECK(r >= 1);
		r = bypass_syslet_reap(s, c, N);
		for (int i = 0; i < r; i++) {
			CHECK(c[i].tag < N && !seen[c[i].tag]);
			seen[c[i].tag] = true;
			CHECK_EQ(c[i].result, 3);
			if (engine == BYPASS_SYSLET_ENGINE_URING)
				CHECK_EQ(c[i].engine, BYPASS_SYSLET_ENGINE_URING);
		}
		got += r;
	}
	for (int i = 0; i < N; i++) {
		close(pfd[i][0]);
		close(pfd[i][1]);
	}
}

int main(void)
{
	test_timeout(60);
	unsetenv("BYPASS_SYSLET_ENGINE");
	char dir[64];
	make_tmpdir(dir, sizeof(dir));
	uint32_t engines[2] = { BYPASS_SYSLET_ENGINE_WORKERS, BYPASS_SYSLET_ENGINE_URING };
	for (int e = 0; e < 2; e++) {
		bypass_syslet *s = ctx_for(engines[e], 0);
		if (!s)
			continue;
		int fds0 = test_count_fds();
		pipe_cachemiss(s);
		fifo(s, dir);
		fifo_submit(s, dir);
		rest_to_uring(s, engines[e]);
		big_write(s);
		many(s, engines[e]);
		CHECK_EQ(test_count_fds(), fds0);
		CHECK_EQ(bypass_syslet_destroy(s), 0);
		wrap(engines[e]);
		TEST_LOG("%s engine: ok", engine_name(engines[e]));
	}
	rmdir(dir);
	return test_pass("syslet/async");
}
