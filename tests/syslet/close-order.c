/* SPDX-License-Identifier: MIT */
/*
 * Issue 34's syslet case, the form that still reads -EBADF on main: a
 * program closing descriptors 3..40 with its first atom ASYNC, and, without
 * waiting for its completion, a pipe the caller makes and an asynchronous
 * read of it.  The close runs on a worker whenever the worker reaches it;
 * if that is after the caller's pipe() took descriptors 3 and 4, the close
 * takes the pipe (the read gets -EBADF, the caller's write too).  That is
 * the order the program asked for (ASYNC: run it later), not a descriptor
 * table of its own nor a descriptor of the library (close-range.c covers
 * those), so it is documented (docs/syslet.md, "Programs that close
 * descriptors") and this test pins the contract, deterministically:
 *
 *   - an asynchronous program's close has not happened when run() returns:
 *     with the context's one worker busy, a descriptor the caller opens in
 *     the range afterwards is open, and the close then takes it;
 *   - once the program's completion is reaped, the close is done: a pipe
 *     made then is the caller's, and a read of it gets its data;
 *   - the same close without ASYNC (close and close_range never block)
 *     ends in run() (1): a pipe made after it is safe at once.
 *
 * It fails if an ASYNC close ran before run() returned (checked: with the
 * queued close's ASYNC flag planted off, run() ends it in the caller and
 * the test fails) or if a completion came before its atoms ran.
 * TEST_LABELS: threads
 */
#include "util.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* A pipe whose two ends are above the closed range. */
static void high_pipe(int pfd[2])
{
	int lo[2];
	CHECK_EQ(pipe(lo), 0);
	for (int i = 0; i < 2; i++) {
		pfd[i] = fcntl(lo[i], F_DUPFD, 100);
		CHECK(pfd[i] >= 100);
		close(lo[i]);
	}
}

/* An asynchronous read of the caller's pipe made now gets its data. */
static void read_new_pipe(bypass_syslet *s, uint64_t tag)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	char buf[16] = { 0 };
	atom_t rd[1] = { { .nr = SYS_read, .arg = { C(pfd[0]), P(buf), C(sizeof(buf)) } } };
	prog_t p = prog_of(rd, 1, tag);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0); /* empty pipe: a worker */
	CHECK_EQ(write(pfd[1], "pipe data", 9), 9);
	c = wait_one(s);
	CHECK_EQ(c.tag, tag);
	CHECK_EQ(c.result, 9);
	CHECK(!memcmp(buf, "pipe data", 9));
	close(pfd[0]);
	close(pfd[1]);
}

static void close_prog(atom_t *a, prog_t *p, uint32_t flags, uint64_t tag)
{
	memset(a, 0, sizeof(*a));
	a->nr = SYS_close_range;
	a->arg[0] = (struct bypass_syslet_arg)C(3);
	a->arg[1] = (struct bypass_syslet_arg)C(40);
	a->arg[2] = (struct bypass_syslet_arg)C(0);
	a->flags = flags;
	*p = prog_of(a, 1, tag);
}

static void run_case(void)
{
	struct bypass_syslet_opts o;
	memset(&o, 0, sizeof(o));
	o.engine = BYPASS_SYSLET_ENGINE_WORKERS;
	o.workers = 1;
	bypass_syslet *s = NULL;
	CHECK_EQ(bypass_syslet_create(&o, &s), 0);

	/* The one worker, held in a read of an empty pipe above the range. */
	int hold[2];
	high_pipe(hold);
	char hb[8];
	atom_t ha[1] = { { .nr = SYS_read, .arg = { C(hold[0]), P(hb), C(sizeof(hb)) } } };
	prog_t hp = prog_of(ha, 1, 1);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &hp, &c), 0);

	/* The close, queued behind it. */
	atom_t ca;
	prog_t cp;
	close_prog(&ca, &cp, BYPASS_SYSLET_ASYNC, 2);
	CHECK_EQ(bypass_syslet_run(s, &cp, &c), 0);

	/* The caller's pipe, made before the close's completion. */
	int early[2];
	CHECK_EQ(pipe(early), 0);
	CHECK(early[0] >= 3 && early[1] <= 40);
	CHECK(is_open(early[0]) && is_open(early[1])); /* not closed yet */

	CHECK_EQ(write(hold[1], "go", 2), 2);
	c = wait_one(s);
	CHECK_EQ(c.tag, 1);
	CHECK_EQ(c.result, 2);
	c = wait_one(s);
	CHECK_EQ(c.tag, 2);
	CHECK_EQ(c.result, 0);
	/* the close took the pipe made before its completion */
	if (is_open(early[0]) || is_open(early[1]))
		TEST_FAIL("the ASYNC close ran before run() returned: the caller's "
			  "pipe %d,%d is still open after its completion",
			  early[0], early[1]);

	/* After the completion: the read gets the pipe's data. */
	read_new_pipe(s, 3);

	/* Without ASYNC the close ends in run(): safe at once. */
	close_prog(&ca, &cp, 0, 4);
	int mine = open("/dev/null", O_RDONLY);
	CHECK(mine >= 3 && mine <= 40);
	CHECK_EQ(bypass_syslet_run(s, &cp, &c), 1);
	CHECK_EQ(c.tag, 4);
	CHECK_EQ(c.result, 0);
	CHECK(!is_open(mine));
	read_new_pipe(s, 5);

	close(hold[0]);
	close(hold[1]);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
}

int main(void)
{
	test_timeout(60);
	/* In a child: it closes descriptors 3..40 of its process. */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		run_case();
		_exit(0);
	}
	wait_child(pid);
	return test_pass("syslet close-order");
}
