/* SPDX-License-Identifier: MIT */
/*
 * Where io_uring is refused (here: a seccomp filter makes io_uring_setup
 * fail with EPERM, as container runtimes' default profiles do), the auto
 * engine falls back to the workers and says so in its stats, asking for the
 * io_uring engine is -EOPNOTSUPP, and programs io_uring would have run
 * (submit) run inline and on the workers instead, with the same results.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <stddef.h>

static int refuse_io_uring(void)
{
	static const int nrs[] = { SYS_io_uring_setup };
	return test_seccomp_refuse(nrs, 1, EPERM);
}

int main(void)
{
	test_timeout(20);
	unsetenv("BYPASS_SYSLET_ENGINE");
	int r = refuse_io_uring();
	if (r)
		SKIP("cannot install a seccomp filter: %s", strerror(-r));

	bypass_syslet *s;
	struct bypass_syslet_opts o;
	memset(&o, 0, sizeof(o));
	o.engine = BYPASS_SYSLET_ENGINE_URING;
	CHECK_ERR(bypass_syslet_create(&o, &s), -EOPNOTSUPP);
	setenv("BYPASS_SYSLET_ENGINE", "uring", 1);
	CHECK_ERR(bypass_syslet_create(NULL, &s), -EOPNOTSUPP);
	unsetenv("BYPASS_SYSLET_ENGINE");
	CHECK_EQ(bypass_syslet_create(NULL, &s), 0);
	struct bypass_syslet_stats st;
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	CHECK_EQ(st.engine, BYPASS_SYSLET_ENGINE_WORKERS);

	/* a linear open+read+close (an io_uring chain elsewhere) and a read
	 * that blocks: both complete */
	char dir[64], path[128], buf[64];
	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	write_file(path, "refused", 7);
	int64_t got = 0;
	atom_t orc[3] = {
		{ .nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
		  .arg = { C(AT_FDCWD), P(path), C(O_RDONLY), C(0) } },
		{ .nr = SYS_read, .ret = &got, .arg = { R(0), P(buf), C(sizeof(buf)) } },
		{ .nr = SYS_close, .arg = { R(0) } },
	};
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	char b2[8];
	atom_t rd[1] = { { .nr = SYS_read, .arg = { C(pfd[0]), P(b2), C(8) } } };
	prog_t p[2] = { prog_of(orc, 3, 1), prog_of(rd, 1, 2) };
	CHECK_EQ(bypass_syslet_submit(s, p, 2), 2);
	CHECK_EQ(write(pfd[1], "ok", 2), 2);
	comp_t c[2];
	int n = 0;
	while (n < 2) {
		CHECK(bypass_syslet_wait(s, 1, 5000000000ll) >= 1);
		n += bypass_syslet_reap(s, c + n, 2 - (unsigned)n);
	}
	for (int i = 0; i < 2; i++) {
		CHECK(c[i].engine != BYPASS_SYSLET_ENGINE_URING);
		if (c[i].tag == 1) {
			CHECK_EQ(c[i].result, 0);
			CHECK_EQ(c[i].atom, 2);
		} else {
			CHECK_EQ(c[i].tag, 2);
			CHECK_EQ(c[i].result, 2);
			CHECK_EQ(c[i].engine, BYPASS_SYSLET_ENGINE_WORKERS);
		}
	}
	CHECK_EQ(got, 7);
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	CHECK_EQ(st.programs_uring, 0);
	CHECK_EQ(st.atoms_uring, 0);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
	close(pfd[0]);
	close(pfd[1]);
	unlink(path);
	rmdir(dir);
	return test_pass("syslet/refused");
}
