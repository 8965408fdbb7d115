/* SPDX-License-Identifier: MIT */
/*
 * The basics on both engines: a one-atom program, open+read+close with the
 * descriptor passed from openat to read and close (inline with run, as an
 * io_uring chain or inline with submit), results stored through ret,
 * counters, and no descriptor leaked.
 */
#include "util.h"

static void one_engine(uint32_t engine, const char *dir)
{
	bypass_syslet *s = ctx_for(engine, 0);
	if (!s)
		return;
	struct bypass_syslet_stats st;
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	CHECK_EQ(st.engine, engine);
	int fds0 = test_count_fds();

	/* one atom */
	atom_t one[1] = { { .nr = SYS_getppid } };
	prog_t p = prog_of(one, 1, 7);
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 1);
	CHECK_EQ(c.tag, 7);
	CHECK_EQ(c.result, getppid());
	CHECK_EQ(c.atom, 0);
	CHECK_EQ(c.engine, BYPASS_SYSLET_ENGINE_INLINE);
	CHECK_EQ(c.steps, 1);

	/* open + read + close, the fd fed forward */
	char path[256], buf[64];
	snprintf(path, sizeof(path), "%s/f", dir);
	write_file(path, "hello syslet", 12);
	int64_t rd_ret = -999;
	atom_t orc[3] = {
		{ .nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
		  .arg = { C(AT_FDCWD), P(path), C(O_RDONLY), C(0) } },
		{ .nr = SYS_read, .ret = &rd_ret, .arg = { R(0), P(buf), C(sizeof(buf)) } },
		{ .nr = SYS_close, .arg = { R(0) } },
	};
	p = prog_of(orc, 3, 8);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 1); /* cached: inline */
	CHECK_EQ(c.result, 0);
	CHECK_EQ(c.atom, 2);
	CHECK_EQ(c.steps, 3);
	CHECK_EQ(rd_ret, 12);
	CHECK(!memcmp(buf, "hello syslet", 12));
	CHECK_EQ(test_count_fds(), fds0);

	/* the same through submit: an io_uring chain on the uring engine */
	memset(buf, 0, sizeof(buf));
	rd_ret = -999;
	CHECK_EQ(bypass_syslet_submit(s, &p, 1), 1);
	c = wait_one(s);
	CHECK_EQ(c.tag, 8);
	CHECK_EQ(c.result, 0);
	CHECK_EQ(c.atom, 2);
	CHECK_EQ(rd_ret, 12);
	CHECK(!memcmp(buf, "hello syslet", 12));
	CHECK_EQ(c.engine, engine == BYPASS_SYSLET_ENGINE_URING
				   ? BYPASS_SYSLET_ENGINE_URING
				   : BYPASS_SYSLET_ENGINE_INLINE);
	CHECK_EQ(test_count_fds(), fds0);

	/* a missing file stops the program at the openat */
	char missing[300];
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	orc[0].arg[1] = (struct bypass_syslet_arg)P(missing);
	for (int k = 0; k < 2; k++) {
		rd_ret = -999;
		if (k == 0) {
			/* a look-up the dentry cache cannot answer goes async */
			int r = bypass_syslet_run(s, &p, &c);
			CHECK(r == 0 || r == 1);
			if (r == 0)
				c = wait_one(s);
		} else {
			CHECK_EQ(bypass_syslet_submit(s, &p, 1), 1);
			c = wait_one(s);
		}
		CHECK_EQ(c.result, -ENOENT);
		CHECK_EQ(c.atom, 0);
		CHECK_EQ(c.steps, 1);
		CHECK_EQ(rd_ret, -999); /* the read did not run */
	}
	CHECK_EQ(test_count_fds(), fds0);

	/* nothing left in the ring */
	CHECK_EQ(bypass_syslet_reap(s, &c, 1), 0);
	CHECK_ERR(bypass_syslet_wait(s, 1, 0), -ETIMEDOUT);
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	CHECK_EQ(st.programs, 5);
	if (engine == BYPASS_SYSLET_ENGINE_URING)
		CHECK_EQ(st.programs_uring, 2);
	TEST_LOG("%s: %llu programs, inline %llu, uring %llu, workers %llu; atoms "
		 "inline %llu, uring %llu; syscalls %llu", engine_name(engine),
		 (unsigned long long)st.programs, (unsigned long long)st.programs_inline,
		 (unsigned long long)st.programs_uring,
		 (unsigned long long)st.programs_workers,
		 (unsigned long long)st.atoms_inline, (unsigned long long)st.atoms_uring,
		 (unsigned long long)st.syscalls);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
	unlink(path);
}

int main(void)
{
	test_timeout(20);
	unsetenv("BYPASS_SYSLET_ENGINE");
	char dir[64];
	make_tmpdir(dir, sizeof(dir));
	one_engine(BYPASS_SYSLET_ENGINE_WORKERS, dir);
	one_engine(BYPASS_SYSLET_ENGINE_URING, dir);
	rmdir(dir);
	return test_pass("syslet/basic");
}
