/* SPDX-License-Identifier: MIT */
/*
 * Issue 34's syslet case: a program that closes the process's descriptors
 * 3..40 with its first atom ASYNC, then an ordinary asynchronous program
 * that reads the caller's own pipe (made after the close, so it takes
 * descriptors 3 and 4): the read gets the pipe's data, on every engine.
 *
 * The close is written three ways: one close atom per descriptor, one
 * close_range(3, 40, 0), and close_range(3, 40, CLOSE_RANGE_UNSHARE).  The
 * last gives the thread that runs it a file table of its own (it is
 * unshare(CLONE_FILES) and a close): on a worker, every later program that
 * worker ran named descriptors of a table the caller no longer sees, and a
 * read of a pipe made afterwards got -EBADF, its data never read.  Like
 * unshare itself it is refused: -EINVAL from validate, run and submit when
 * the flags are a constant (nothing closed), and -EINVAL as the atom's
 * result when they are loaded at run time (nothing closed either).
 *
 * Each case runs in a child of its own, so that it starts with the
 * descriptors the test was given and a context without workers.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <linux/close_range.h>
#include <sys/uio.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

enum how { CLOSE_EACH, CLOSE_RANGE, CLOSE_RANGE_UNSHARED, CLOSE_RANGE_LOADED };

static const char *how_name(enum how h)
{
	return h == CLOSE_EACH ? "close 3..40" :
	       h == CLOSE_RANGE ? "close_range(3, 40, 0)" :
	       h == CLOSE_RANGE_UNSHARED ? "close_range(3, 40, UNSHARE)" :
					   "close_range(3, 40, loaded UNSHARE)";
}

/* Is fd open in the calling thread's table? */
static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/*
 * An ordinary asynchronous program reading the caller's pipe: its read
 * finds the pipe empty, so it leaves the caller (for a worker, or for
 * io_uring when 'vector' is false and the context has it), and completes
 * once the caller writes.  'vector' uses readv, which io_uring chains do
 * not take: the read then always runs on a worker.
 */
static void read_own_pipe(bypass_syslet *s, bool vector)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	char buf[16] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	atom_t rd[1] = { { .nr = SYS_read, .arg = { C(pfd[0]), P(buf), C(sizeof(buf)) } } };
	atom_t rv[1] = { { .nr = SYS_readv, .arg = { C(pfd[0]), P(&iov), C(1) } } };
	prog_t p = prog_of(vector ? rv : rd, 1, 2);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0); /* the pipe is empty: async */
	CHECK_EQ(write(pfd[1], "pipe data", 9), 9);
	c = wait_one(s);
	CHECK_EQ(c.tag, 2);
	CHECK_EQ(c.result, 9);
	CHECK(!memcmp(buf, "pipe data", 9));
	/* and the data is gone from the pipe: the read took it */
	CHECK_EQ(fcntl(pfd[0], F_SETFL, O_NONBLOCK), 0);
	CHECK_ERR(read(pfd[0], buf, sizeof(buf)) < 0 ? -errno : 0, -EAGAIN);
	close(pfd[0]);
	close(pfd[1]);
}

static void one(uint32_t engine, enum how how)
{
	bypass_syslet *s = ctx_for(engine, 0);
	if (!s)
		return;
	/* a descriptor of ours in the range, to see whether it was closed */
	int mine = open("/dev/null", O_RDONLY);
	CHECK(mine >= 3 && mine <= 40);

	int64_t flags = CLOSE_RANGE_UNSHARE;
	atom_t a[BYPASS_SYSLET_MAX_ATOMS];
	memset(a, 0, sizeof(a));
	uint32_t n = 0;
	if (how == CLOSE_EACH) {
		for (int fd = 3; fd <= 40; fd++) {
			a[n].nr = SYS_close;
			a[n++].arg[0] = (struct bypass_syslet_arg)C(fd);
		}
	} else {
		a[0].nr = SYS_close_range;
		a[0].arg[0] = (struct bypass_syslet_arg)C(3);
		a[0].arg[1] = (struct bypass_syslet_arg)C(40);
		a[0].arg[2] = how == CLOSE_RANGE ? (struct bypass_syslet_arg)C(0) :
			      how == CLOSE_RANGE_UNSHARED ?
							(struct bypass_syslet_arg)C(CLOSE_RANGE_UNSHARE) :
							(struct bypass_syslet_arg)LD(&flags);
		n = 1;
	}
	a[0].flags = BYPASS_SYSLET_ASYNC;
	prog_t p = prog_of(a, n, 1);
	comp_t c;

	if (how == CLOSE_RANGE_UNSHARED) {
		/* refused before anything runs, by every entry point, with
		 * ASYNC or without */
		CHECK_ERR(bypass_syslet_validate(&p), -EINVAL);
		CHECK_ERR(bypass_syslet_run(s, &p, &c), -EINVAL);
		CHECK_ERR(bypass_syslet_submit(s, &p, 1), -EINVAL);
		a[0].flags = 0;
		CHECK_ERR(bypass_syslet_run(s, &p, &c), -EINVAL);
		CHECK(is_open(mine));
		/* CLOSE_RANGE_CLOEXEC alone changes no thread's table */
		a[0].arg[2] = (struct bypass_syslet_arg)C(CLOSE_RANGE_CLOEXEC);
		CHECK_EQ(bypass_syslet_validate(&p), 0);
	} else {
		CHECK_EQ(bypass_syslet_run(s, &p, &c), 0); /* ASYNC: not here */
		c = wait_one(s);
		CHECK_EQ(c.tag, 1);
		if (how == CLOSE_RANGE_LOADED) {
			CHECK_EQ(c.result, -EINVAL);
			CHECK(is_open(mine));
			/* inline too: the atom's result, nothing closed */
			a[0].flags = 0;
			CHECK_EQ(bypass_syslet_run(s, &p, &c), 1);
			CHECK_EQ(c.result, -EINVAL);
			CHECK(is_open(mine));
		} else {
			if (how == CLOSE_RANGE)
				CHECK_EQ(c.result, 0);
			CHECK(!is_open(mine));
		}
	}
	read_own_pipe(s, false);
	read_own_pipe(s, true);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
}

int main(void)
{
	test_timeout(60);
	static const uint32_t engines[] = { BYPASS_SYSLET_ENGINE_WORKERS,
					    BYPASS_SYSLET_ENGINE_URING };
	for (size_t e = 0; e < BP_ARRAY_SIZE(engines); e++)
		for (enum how h = CLOSE_EACH; h <= CLOSE_RANGE_LOADED; h++) {
			printf("%s, %s\n", engine_name(engines[e]), how_name(h));
			fflush(stdout);
			pid_t pid = fork();
			CHECK(pid >= 0);
			if (pid == 0) {
				one(engines[e], h);
				_exit(0);
			}
			wait_child(pid);
		}
	return test_pass("syslet close-range");
}
