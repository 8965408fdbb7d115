/* SPDX-License-Identifier: MIT */
/*
 * The validator: every bad program and bad argument gets -EINVAL (or the
 * documented error) and none of it runs.  Each program starts with an atom
 * that would bump a counter, so running any part of it is seen.
 */
#include "util.h"

#include <stddef.h>

static int64_t ran;

#define BUMP { .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&ran), C(1) } }

static void expect_invalid(bypass_syslet *s, const atom_t *a, uint32_t n,
			   uint32_t max_steps, const char *what)
{
	prog_t p = prog_of(a, n, 1);
	p.max_steps = max_steps;
	int r1 = bypass_syslet_validate(&p);
	int r2 = bypass_syslet_run(s, &p, NULL);
	int r3 = bypass_syslet_submit(s, &p, 1);
	if (r1 != -EINVAL || r2 != -EINVAL || r3 != -EINVAL)
		TEST_FAIL("%s: validate %d run %d submit %d, want -EINVAL", what, r1, r2, r3);
	if (ran)
		TEST_FAIL("%s: part of an invalid program ran", what);
}

int main(void)
{
	test_timeout(20);
	unsetenv("BYPASS_SYSLET_ENGINE");
	bypass_syslet *s = ctx_for(BYPASS_SYSLET_ENGINE_AUTO, 0);
	atom_t a[4];

	/* options */
	struct bypass_syslet_opts o;
	bypass_syslet *t;
	memset(&o, 0, sizeof(o));
	o.flags = 1;
	CHECK_ERR(bypass_syslet_create(&o, &t), -EINVAL);
	o.flags = 0;
	o.reserved[3] = 1;
	CHECK_ERR(bypass_syslet_create(&o, &t), -EINVAL);
	o.reserved[3] = 0;
	o.engine = 99;
	CHECK_ERR(bypass_syslet_create(&o, &t), -EINVAL);
	o.engine = BYPASS_SYSLET_ENGINE_INLINE;
	CHECK_ERR(bypass_syslet_create(&o, &t), -EINVAL);
	o.engine = 0;
	o.entries = 65537;
	CHECK_ERR(bypass_syslet_create(&o, &t), -EINVAL);
	CHECK_ERR(bypass_syslet_create(NULL, NULL), -EINVAL);
	setenv("BYPASS_SYSLET_ENGINE", "bogus", 1);
	CHECK_ERR(bypass_syslet_create(NULL, &t), -EINVAL);
	setenv("BYPASS_SYSLET_ENGINE", "workers", 1);
	CHECK_EQ(bypass_syslet_create(NULL, &t), 0);
	struct bypass_syslet_stats st;
	CHECK_EQ(bypass_syslet_stats(t, &st), 0);
	CHECK_EQ(st.engine, BYPASS_SYSLET_ENGINE_WORKERS);
	CHECK_EQ(bypass_syslet_destroy(t), 0);
	/* the variable is only a default: an explicit engine wins over it (a
	 * bad value is not even read then) */
	o.entries = 0;
	o.engine = BYPASS_SYSLET_ENGINE_WORKERS;
	setenv("BYPASS_SYSLET_ENGINE", "bogus", 1);
	CHECK_EQ(bypass_syslet_create(&o, &t), 0);
	CHECK_EQ(bypass_syslet_destroy(t), 0);
	setenv("BYPASS_SYSLET_ENGINE", "workers", 1);
	o.engine = BYPASS_SYSLET_ENGINE_URING;
	int r = bypass_syslet_create(&o, &t);
	if (r == -EOPNOTSUPP) {
		TEST_LOG("io_uring refused here: the explicit uring engine is not tested");
	} else {
		CHECK_EQ(r, 0);
		CHECK_EQ(bypass_syslet_stats(t, &st), 0);
		CHECK_EQ(st.engine, BYPASS_SYSLET_ENGINE_URING);
		CHECK_EQ(bypass_syslet_destroy(t), 0);
	}
	o.engine = BYPASS_SYSLET_ENGINE_AUTO; /* auto: the variable decides */
	CHECK_EQ(bypass_syslet_create(&o, &t), 0);
	CHECK_EQ(bypass_syslet_stats(t, &st), 0);
	CHECK_EQ(st.engine, BYPASS_SYSLET_ENGINE_WORKERS);
	CHECK_EQ(bypass_syslet_destroy(t), 0);
	unsetenv("BYPASS_SYSLET_ENGINE");

	/* the stats carry a reserved tail for fields to come, and it is 0 */
	_Static_assert(sizeof(struct bypass_syslet_stats) == 128, "the stats' size is ABI");
	CHECK_EQ(sizeof(struct bypass_syslet_stats), 128);
	CHECK_EQ(sizeof(st.reserved), 6 * sizeof(uint64_t));
	CHECK_EQ(offsetof(struct bypass_syslet_stats, reserved) + sizeof(st.reserved), 128);
	memset(&st, 0xff, sizeof(st));
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	for (size_t i = 0; i < sizeof(st.reserved) / sizeof(st.reserved[0]); i++)
		CHECK_EQ(st.reserved[i], 0);

	/* calls with bad handles and arguments */
	prog_t ok;
	atom_t good[1] = { BUMP };
	ok = prog_of(good, 1, 0);
	comp_t c;
	CHECK_ERR(bypass_syslet_run(NULL, &ok, &c), -EINVAL);
	CHECK_ERR(bypass_syslet_submit(NULL, &ok, 1), -EINVAL);
	CHECK_ERR(bypass_syslet_submit(s, NULL, 1), -EINVAL);
	CHECK_ERR(bypass_syslet_reap(NULL, &c, 1), -EINVAL);
	CHECK_ERR(bypass_syslet_reap(s, NULL, 1), -EINVAL);
	CHECK_ERR(bypass_syslet_wait(NULL, 1, 0), -EINVAL);
	CHECK_ERR(bypass_syslet_wait(s, 0, 0), -EINVAL);
	CHECK_ERR(bypass_syslet_wait(s, 100000, 0), -EINVAL);
	CHECK_ERR(bypass_syslet_wait(s, 1, -2), -EINVAL);
	CHECK_ERR(bypass_syslet_stats(NULL, &st), -EINVAL);
	CHECK_ERR(bypass_syslet_stats(s, NULL), -EINVAL);
	CHECK_ERR(bypass_syslet_destroy(NULL), -EINVAL);
	CHECK_ERR(bypass_syslet_validate(NULL), -EINVAL);
	CHECK_ERR(bypass_syslet_run(s, NULL, &c), -EINVAL);
	CHECK_EQ(bypass_syslet_submit(s, &ok, 0), 0);
	CHECK_EQ(ran, 0);

	/* program bounds */
	expect_invalid(s, NULL, 1, 0, "no atoms");
	a[0] = (atom_t)BUMP;
	expect_invalid(s, a, 0, 0, "zero atoms");
	static atom_t many[BYPASS_SYSLET_MAX_ATOMS + 1];
	for (int i = 0; i <= BYPASS_SYSLET_MAX_ATOMS; i++)
		many[i] = (atom_t)BUMP;
	expect_invalid(s, many, BYPASS_SYSLET_MAX_ATOMS + 1, 0, "too many atoms");
	prog_t pr = prog_of(a, 1, 0);
	pr.reserved[1] = 1;
	CHECK_ERR(bypass_syslet_validate(&pr), -EINVAL);

	/* atoms: flags, reserved, numbers, forbidden calls */
	a[0] = (atom_t)BUMP;
	a[1] = (atom_t)BUMP;
	a[1].flags = 0x8000;
	expect_invalid(s, a, 2, 0, "unknown flag");
	a[1].flags = BYPASS_SYSLET_ASYNC | BYPASS_SYSLET_SYNC;
	expect_invalid(s, a, 2, 0, "ASYNC and SYNC");
	a[1] = (atom_t)BUMP;
	a[1].reserved = 1;
	expect_invalid(s, a, 2, 0, "atom reserved");
	a[1] = (atom_t)BUMP;
	a[1].ret = (int64_t *)((char *)&ran + 1);
	expect_invalid(s, a, 2, 0, "misaligned ret");
	static const long forbidden[] = { SYS_fork, SYS_vfork, SYS_clone, SYS_clone3,
		SYS_execve, SYS_execveat, SYS_exit, SYS_exit_group, SYS_io_uring_enter,
		SYS_io_uring_setup, SYS_io_uring_register, SYS_unshare, SYS_setuid,
		SYS_rt_sigprocmask, SYS_arch_prctl, SYS_prctl, SYS_rt_sigreturn, -2,
		512, 100000, 0x40000000 | SYS_getpid };
	for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
		a[1] = (atom_t){ .nr = (int32_t)forbidden[i] };
		char what[64];
		snprintf(what, sizeof(what), "forbidden call %ld", forbidden[i]);
		expect_invalid(s, a, 2, 0, what);
	}

	/* jumps */
	a[1] = (atom_t)BUMP;
	a[1].next = BYPASS_SYSLET_GOTO(2);
	expect_invalid(s, a, 2, 0, "next out of range");
	a[1].next = 0;
	a[1].flags = BYPASS_SYSLET_STOP_ON_ZERO;
	a[1].on_stop = BYPASS_SYSLET_GOTO(5);
	expect_invalid(s, a, 2, 0, "on_stop out of range");
	a[1] = (atom_t)BUMP;
	a[1].next = BYPASS_SYSLET_GOTO(0);
	expect_invalid(s, a, 2, 0, "loop without a step budget");
	a[0].next = BYPASS_SYSLET_GOTO(0);
	expect_invalid(s, a, 1, 0, "self loop without a step budget");
	a[0] = (atom_t)BUMP;
	a[0].flags = BYPASS_SYSLET_STOP_ON_ZERO;
	a[0].on_stop = BYPASS_SYSLET_GOTO(0);
	expect_invalid(s, a, 1, 0, "loop through on_stop without a budget");

	/* arguments */
	a[0] = (atom_t)BUMP;
	a[1] = (atom_t)BUMP;
	a[1].arg[2] = (struct bypass_syslet_arg){ 9, 0, 0 };
	expect_invalid(s, a, 2, 0, "unknown argument kind");
	a[1].arg[2] = (struct bypass_syslet_arg){ BYPASS_SYSLET_ARG_CONST, 1, 0 };
	expect_invalid(s, a, 2, 0, "argument reserved");
	a[1].arg[2] = (struct bypass_syslet_arg){ BYPASS_SYSLET_ARG_NONE, 0, 5 };
	expect_invalid(s, a, 2, 0, "NONE with a value");
	a[1].arg[2] = (struct bypass_syslet_arg)LD(NULL);
	expect_invalid(s, a, 2, 0, "LOAD from NULL");
	a[1].arg[2] = (struct bypass_syslet_arg)LD((char *)&ran + 4);
	expect_invalid(s, a, 2, 0, "misaligned LOAD");
	a[1] = (atom_t){ .nr = SYS_close, .arg = { R(2) } };
	expect_invalid(s, a, 2, 0, "reference past the end");
	a[1] = (atom_t){ .nr = SYS_close, .arg = { R(1) } };
	expect_invalid(s, a, 2, 0, "reference to itself");
	/* atom 2 refers to atom 1, which is skipped when atom 0 stops */
	a[0] = (atom_t)BUMP;
	a[0].flags = BYPASS_SYSLET_STOP_ON_NONZERO;
	a[0].on_stop = BYPASS_SYSLET_GOTO(2);
	a[1] = (atom_t){ .nr = SYS_getpid };
	a[2] = (atom_t){ .nr = SYS_close, .arg = { R(1) } };
	expect_invalid(s, a, 3, 0, "reference to an atom not run on every path");
	/* ... and to atom 0, which always runs: valid */
	a[2] = (atom_t){ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&ran), R(0) } };
	prog_t vp = prog_of(a, 3, 0);
	CHECK_EQ(bypass_syslet_validate(&vp), 0);
	/* a reference to a later atom reached only through a loop back */
	a[0] = (atom_t){ .nr = SYS_close, .arg = { R(1) } };
	a[1] = (atom_t){ .nr = SYS_getpid, .next = BYPASS_SYSLET_GOTO(0) };
	expect_invalid(s, a, 2, 10, "reference to a later atom");
	/* umem_add needs an address */
	a[0] = (atom_t){ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { C(0), C(1) } };
	expect_invalid(s, a, 1, 0, "umem_add of NULL");
	a[0] = (atom_t){ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P((char *)&ran + 2), C(1) } };
	expect_invalid(s, a, 1, 0, "umem_add misaligned");
	a[0] = (atom_t){ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&ran), C(1), C(3) } };
	expect_invalid(s, a, 1, 0, "umem_add with a third argument");

	/* submit validates all first: one bad program, none runs */
	prog_t two[3] = { ok, ok, prog_of(a, 1, 0) };
	CHECK_ERR(bypass_syslet_submit(s, two, 3), -EINVAL);
	CHECK_EQ(ran, 0);
	/* and -EBUSY for more than the ring holds */
	static prog_t lots[300];
	for (int i = 0; i < 300; i++)
		lots[i] = ok;
	CHECK_ERR(bypass_syslet_submit(s, lots, 300), -EBUSY);
	CHECK_EQ(ran, 0);

	CHECK_EQ(bypass_syslet_destroy(s), 0);
	return test_pass("syslet/validate");
}
