/* SPDX-License-Identifier: MIT */
/*
 * fork while programs are in flight (blocked on workers and, with the
 * io_uring engine, as chains): the child's context starts over (empty
 * ring, its own workers and io_uring) and works; the parent's programs
 * complete in the parent only.
 * TEST_LABELS: threads
 */
#include "util.h"

static void one(uint32_t engine)
{
	bypass_syslet *s = ctx_for(engine, 0);
	if (!s)
		return;
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	char buf[2][8];
	atom_t wr[1] = { { .nr = SYS_read, .arg = { C(pfd[0]), P(buf[0]), C(1) } } };
	atom_t ch[1] = { { .nr = SYS_read, .arg = { C(pfd[0]), P(buf[1]), C(1) } } };
	prog_t p = prog_of(wr, 1, 1);
	CHECK_EQ(bypass_syslet_run(s, &p, NULL), 0);     /* on a worker */
	prog_t q = prog_of(ch, 1, 2);
	CHECK_EQ(bypass_syslet_submit(s, &q, 1), 1);     /* a chain, or a worker */

	/* let the workers settle in their reads: a thread still being
	 * created when fork() runs is the libc's and sanitizers' hazard,
	 * not the one tested here */
	test_sleep_ms(20);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* nothing of the parent's shows up here */
		comp_t c;
		CHECK_EQ(bypass_syslet_reap(s, &c, 1), 0);
		CHECK_ERR(bypass_syslet_wait(s, 1, 10000000), -ETIMEDOUT);
		int64_t x = 0;
		atom_t a[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .flags = BYPASS_SYSLET_ASYNC,
				  .arg = { P(&x), C(5) } } };
		prog_t r = prog_of(a, 1, 77);
		/* ThreadSanitizer cannot start threads after a multi-threaded
		 * fork: the child's own workers are tested without it */
		if (TEST_TSAN) {
			CHECK_EQ(bypass_syslet_destroy(s), 0);
			_exit(0);
		}
		CHECK_EQ(bypass_syslet_run(s, &r, NULL), 0);
		c = wait_one(s);
		CHECK_EQ(c.tag, 77);
		CHECK_EQ(x, 5);
		/* and a chain of its own */
		char path[] = "/proc/self/stat";
		char b[64];
		atom_t o[3] = {
			{ .nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
			  .arg = { C(AT_FDCWD), P(path), C(O_RDONLY), C(0) } },
			{ .nr = SYS_read, .arg = { R(0), P(b), C(sizeof(b)) } },
			{ .nr = SYS_close, .arg = { R(0) } },
		};
		r = prog_of(o, 3, 78);
		CHECK_EQ(bypass_syslet_submit(s, &r, 1), 1);
		c = wait_one(s);
		CHECK_EQ(c.tag, 78);
		CHECK_EQ(c.result, 0);
		CHECK_EQ(bypass_syslet_destroy(s), 0);
		_exit(0);
	}
	wait_child(pid);
	CHECK_EQ(write(pfd[1], "ab", 2), 2);
	comp_t c[2];
	int got = 0;
	while (got < 2) {
		CHECK(bypass_syslet_wait(s, 1, 5000000000ll) >= 1);
		got += bypass_syslet_reap(s, c + got, 2 - (unsigned)got);
	}
	CHECK_EQ(c[0].result, 1);
	CHECK_EQ(c[1].result, 1);
	CHECK_EQ(c[0].tag + c[1].tag, 3);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
	close(pfd[0]);
	close(pfd[1]);
	TEST_LOG("%s engine: ok", engine_name(engine));
}

int main(void)
{
	test_timeout(30);
	unsetenv("BYPASS_SYSLET_ENGINE");
	one(BYPASS_SYSLET_ENGINE_WORKERS);
	one(BYPASS_SYSLET_ENGINE_URING);
	return test_pass("syslet/fork");
}
