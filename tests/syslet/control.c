/* SPDX-License-Identifier: MIT */
/*
 * Control flow: every stop condition, next and on_stop branches, loops
 * (read while positive; a counter decremented by umem_add), the step budget,
 * result passing between atoms, LOAD arguments read when the atom runs,
 * NO_COMPLETE, ASYNC and SYNC, on both engines.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <sys/mman.h>
#include <sys/socket.h>

static int64_t counter;

/* Run p; if it went async, wait for its completion. */
static comp_t run_wait(bypass_syslet *s, prog_t *p, int *went_async)
{
	comp_t c;
	int r = bypass_syslet_run(s, p, &c);
	CHECK(r == 0 || r == 1);
	if (went_async)
		*went_async = r == 0;
	if (r == 0)
		c = wait_one(s);
	return c;
}

static void stops(bypass_syslet *s)
{
	static const struct {
		uint32_t flag;
		int64_t val;
		bool stop;
	} cases[] = {
		{ BYPASS_SYSLET_STOP_ON_NONZERO, 5, true },
		{ BYPASS_SYSLET_STOP_ON_NONZERO, 0, false },
		{ BYPASS_SYSLET_STOP_ON_ZERO, 0, true },
		{ BYPASS_SYSLET_STOP_ON_ZERO, -1, false },
		{ BYPASS_SYSLET_STOP_ON_NEGATIVE, -3, true },
		{ BYPASS_SYSLET_STOP_ON_NEGATIVE, 0, false },
		{ BYPASS_SYSLET_STOP_ON_NON_POSITIVE, 0, true },
		{ BYPASS_SYSLET_STOP_ON_NON_POSITIVE, -2, true },
		{ BYPASS_SYSLET_STOP_ON_NON_POSITIVE, 1, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* umem_add(&counter, 0) reads counter; then a marker atom */
		int64_t marker = 0;
		counter = cases[i].val;
		atom_t a[2] = {
			{ .nr = BYPASS_SYSLET_UMEM_ADD, .flags = cases[i].flag,
			  .arg = { P(&counter), C(0) } },
			{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&marker), C(1) } },
		};
		prog_t p = prog_of(a, 2, i);
		comp_t c = run_wait(s, &p, NULL);
		CHECK_EQ(c.atom, cases[i].stop ? 0 : 1);
		CHECK_EQ(marker, cases[i].stop ? 0 : 1);
		CHECK_EQ(c.result, cases[i].stop ? cases[i].val : 1);
	}
}

static void branches(bypass_syslet *s)
{
	/* if (x != 0) then atom 2 else atom 1; both end */
	int64_t x, took1 = 0, took2 = 0;
	atom_t a[3] = {
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .flags = BYPASS_SYSLET_STOP_ON_NONZERO,
		  .on_stop = BYPASS_SYSLET_GOTO(2), .arg = { P(&x), C(0) } },
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .next = BYPASS_SYSLET_END,
		  .arg = { P(&took1), C(1) } },
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&took2), C(1) } },
	};
	prog_t p = prog_of(a, 3, 1);
	x = 0;
	comp_t c = run_wait(s, &p, NULL);
	CHECK_EQ(c.atom, 1);
	CHECK(took1 == 1 && took2 == 0);
	x = 9;
	c = run_wait(s, &p, NULL);
	CHECK_EQ(c.atom, 2);
	CHECK(took1 == 1 && took2 == 1);
	/* on_stop = END ends like the default */
	a[0].on_stop = BYPASS_SYSLET_END;
	c = run_wait(s, &p, NULL);
	CHECK_EQ(c.atom, 0);
	CHECK_EQ(c.result, 9);
}

static void loops(bypass_syslet *s)
{
	/* while (--counter > 0) total += 2: a counter loop with umem_add */
	int64_t total = 0;
	counter = 10;
	atom_t a[2] = {
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .flags = BYPASS_SYSLET_STOP_ON_NON_POSITIVE,
		  .arg = { P(&counter), C(-1) } },
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .next = BYPASS_SYSLET_GOTO(0),
		  .arg = { P(&total), C(2) } },
	};
	prog_t p = prog_of(a, 2, 2);
	CHECK_ERR(bypass_syslet_run(s, &p, NULL), -EINVAL); /* loop without budget */
	p.max_steps = 100;
	comp_t c = run_wait(s, &p, NULL);
	CHECK_EQ(c.atom, 0);
	CHECK_EQ(c.result, 0);
	CHECK_EQ(total, 18);
	CHECK_EQ(c.steps, 19);

	/* the budget runs out: -ELOOP at the atom that did not run */
	counter = 1000;
	p.max_steps = 7;
	c = run_wait(s, &p, NULL);
	CHECK_EQ(c.result, -ELOOP);
	CHECK_EQ(c.steps, 7);
	CHECK_EQ(c.atom, 1);

	/* read from a socket while positive, total bytes via umem_add of the
	 * result: the length read is fed to the next atom */
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	char big[3000], buf[512];
	memset(big, 'x', sizeof(big));
	CHECK_EQ(write(sv[1], big, sizeof(big)), (ssize_t)sizeof(big));
	close(sv[1]);
	total = 0;
	atom_t rl[2] = {
		{ .nr = SYS_read, .flags = BYPASS_SYSLET_STOP_ON_NON_POSITIVE,
		  .arg = { C(sv[0]), P(buf), C(sizeof(buf)) } },
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .next = BYPASS_SYSLET_GOTO(0),
		  .arg = { P(&total), R(0) } },
	};
	p = prog_of(rl, 2, 3);
	p.max_steps = 1000;
	c = run_wait(s, &p, NULL);
	CHECK_EQ(c.atom, 0);
	CHECK_EQ(c.result, 0); /* end of file */
	CHECK_EQ(total, 3000);
	close(sv[0]);
}

static void load_args(bypass_syslet *s)
{
	/* LOAD reads the value when the atom runs: atom 0 changes it */
	int64_t v = 5, out = 0;
	atom_t a[2] = {
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&v), C(10) } },
		{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&out), LD(&v) } },
	};
	prog_t p = prog_of(a, 2, 4);
	comp_t c = run_wait(s, &p, NULL);
	CHECK_EQ(out, 15);
	CHECK_EQ(c.result, 15);
	/* a LOAD from an unmapped address gives -EFAULT, not a crash */
	void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(bad != MAP_FAILED);
	a[1].arg[1] = (struct bypass_syslet_arg)LD(bad);
	c = run_wait(s, &p, NULL);
	CHECK_EQ(c.atom, 1);
	CHECK_EQ(c.result, -EFAULT);
	a[1].arg[0] = (struct bypass_syslet_arg)P(bad);
	a[1].arg[1] = (struct bypass_syslet_arg)C(1);
	c = run_wait(s, &p, NULL);
	CHECK_EQ(c.result, -EFAULT);
	munmap(bad, 4096);
}

static void flags(bypass_syslet *s, uint32_t engine)
{
	int64_t x = 0;
	atom_t a[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .flags = BYPASS_SYSLET_ASYNC,
			  .arg = { P(&x), C(1) } } };
	prog_t p = prog_of(a, 1, 5);
	/* ASYNC: goes to a worker at once */
	comp_t c;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0);
	c = wait_one(s);
	CHECK_EQ(c.engine, BYPASS_SYSLET_ENGINE_WORKERS);
	CHECK_EQ(c.tag, 5);
	CHECK_EQ(x, 1);
	/* NO_COMPLETE: nothing in the ring */
	a[0].flags = BYPASS_SYSLET_ASYNC | BYPASS_SYSLET_NO_COMPLETE;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 0);
	for (int i = 0; i < 2000 && __atomic_load_n(&x, __ATOMIC_SEQ_CST) != 2; i++)
		test_sleep_ms(1);
	CHECK_EQ(__atomic_load_n(&x, __ATOMIC_SEQ_CST), 2);
	CHECK_ERR(bypass_syslet_wait(s, 1, 20000000), -ETIMEDOUT);
	/* via submit too */
	CHECK_EQ(bypass_syslet_submit(s, &p, 1), 1);
	for (int i = 0; i < 2000 && __atomic_load_n(&x, __ATOMIC_SEQ_CST) != 3; i++)
		test_sleep_ms(1);
	CHECK_EQ(bypass_syslet_reap(s, &c, 1), 0);
	/* SYNC: a read that would block runs in the caller; make it not block
	 * forever by having data arrive... it is simply ready here */
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	CHECK_EQ(write(pfd[1], "ab", 2), 2);
	char buf[8];
	atom_t r1[1] = { { .nr = SYS_read, .flags = BYPASS_SYSLET_SYNC,
			   .arg = { C(pfd[0]), P(buf), C(sizeof(buf)) } } };
	p = prog_of(r1, 1, 6);
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 1);
	CHECK_EQ(c.result, 2);
	/* NO_COMPLETE on an io_uring chain */
	CHECK_EQ(write(pfd[1], "cd", 2), 2);
	r1[0].flags = BYPASS_SYSLET_NO_COMPLETE;
	CHECK_EQ(bypass_syslet_submit(s, &p, 1), 1);
	CHECK_ERR(bypass_syslet_wait(s, 1, 20000000), -ETIMEDOUT);
	struct bypass_syslet_stats st;
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	if (engine == BYPASS_SYSLET_ENGINE_URING)
		CHECK_EQ(st.programs_uring, 1);
	close(pfd[0]);
	close(pfd[1]);
}

int main(void)
{
	test_timeout(30);
	unsetenv("BYPASS_SYSLET_ENGINE");
	uint32_t engines[2] = { BYPASS_SYSLET_ENGINE_WORKERS, BYPASS_SYSLET_ENGINE_URING };
	for (int e = 0; e < 2; e++) {
		bypass_syslet *s = ctx_for(engines[e], 0);
		if (!s)
			continue;
		stops(s);
		branches(s);
		loops(s);
		load_args(s);
		flags(s, engines[e]);
		CHECK_EQ(bypass_syslet_destroy(s), 0);
		TEST_LOG("%s engine: ok", engine_name(engines[e]));
	}
	return test_pass("syslet/control");
}
