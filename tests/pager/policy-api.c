/* SPDX-License-Identifier: MIT */
/*
 * Policies and hints, the API: every new function with bad arguments, the
 * registry (names, duplicates, versions), set_policy's spec forms (built-in
 * names, a registered name, a shared object with :symbol and ,args) and
 * their errors, advise's errors and its hint table limit.  A policy whose
 * init fails leaves the old one in place; a forked child gets -ECHILD.
 * TEST_LABELS: threads (the prefetch thread)
 */
#include "policy-util.h"
#include "pager/pager_internal.h" /* the fork generation of a kept pager */

#include <dlfcn.h>
#include <limits.h>

static int reg_init(bypass_pager *p, const char *args, void **state)
{
	(void)p;
	*state = NULL;
	return args && !strcmp(args, "bad") ? -EDOM : 0;
}

static const struct bypass_pager_policy reg_pol = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "api-test", .init = reg_init,
};

static char so[PATH_MAX];

int main(void)
{
	snprintf(so, sizeof(so), "%s", test_policy_so());
	if (access(so, R_OK))
		TEST_FAIL("%s is missing", so);

	/* register */
	CHECK_ERR(bypass_pager_policy_register(NULL), -EINVAL);
	struct bypass_pager_policy bad = reg_pol;
	bad.version = 0;
	CHECK_ERR(bypass_pager_policy_register(&bad), -EINVAL);
	bad = reg_pol;
	bad.name = NULL;
	CHECK_ERR(bypass_pager_policy_register(&bad), -EINVAL);
	bad.name = "";
	CHECK_ERR(bypass_pager_policy_register(&bad), -EINVAL);
	bad.name = "a,b";
	CHECK_ERR(bypass_pager_policy_register(&bad), -EINVAL);
	bad.name = "x/y";
	CHECK_ERR(bypass_pager_policy_register(&bad), -EINVAL);
	bad.name = "0123456789012345678901234567890123";
	CHECK_ERR(bypass_pager_policy_register(&bad), -EINVAL);
	bad = reg_pol;
	bad.reserved[2] = (void *)&bad;
	CHECK_ERR(bypass_pager_policy_register(&bad), -EINVAL);
	bad = reg_pol;
	bad.name = "2Q"; /* names are case-insensitive: a built-in's */
	CHECK_ERR(bypass_pager_policy_register(&bad), -EEXIST);
	CHECK_ERR(bypass_pager_policy_register(&reg_pol), 0);
	CHECK_ERR(bypass_pager_policy_register(&reg_pol), -EEXIST);
	static struct bypass_pager_policy many[40];
	static char names[40][16];
	int full = 0;
	for (int i = 0; i < 40; i++) {
		many[i] = reg_pol;
		snprintf(names[i], sizeof(names[i]), "many-%d", i);
		many[i].name = names[i];
		int r = bypass_pager_policy_register(&many[i]);
		if (r == -ENOSPC) {
			full = 1;
			break;
		}
		CHECK_EQ(r, 0);
	}
	CHECK(full);

	/* set_policy */
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, 64 * PAGE, 1024 * PAGE);
	CHECK_ERR(bypass_pager_set_policy(NULL, "2q"), -EINVAL);
	CHECK_ERR(bypass_pager_set_policy(p, NULL), -EINVAL);
	CHECK_ERR(bypass_pager_set_policy(p, ""), -EINVAL);
	CHECK_ERR(bypass_pager_set_policy(p, ",x"), -EINVAL);
	CHECK_ERR(bypass_pager_set_policy(p, "no-such-policy"), -ENOENT);
	CHECK_ERR(bypass_pager_set_policy(p, "2q,unexpected"), -EINVAL);
	CHECK_ERR(bypass_pager_set_policy(p, "clock,x"), -EINVAL);
	static char longspec[5000];
	memset(longspec, 'a', sizeof(longspec) - 1);
	CHECK_ERR(bypass_pager_set_policy(p, longspec), -EINVAL);
	const char *builtins[] = { "2q", "clock", "prefetch", "window", "CLOCK", "api-test",
				   "many-3" };
	for (unsigned i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		CHECK_ERR(bypass_pager_set_policy(p, builtins[i]), 0);
	CHECK_ERR(bypass_pager_set_policy(p, "api-test,bad"), -EDOM);
	char spec[PATH_MAX + 64];
	snprintf(spec, sizeof(spec), "%s", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), 0);
	snprintf(spec, sizeof(spec), "%s,garbage", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), 0);
	snprintf(spec, sizeof(spec), "%s:testpol_alt,dup", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), 0);
	snprintf(spec, sizeof(spec), "%s:bypass_pager_policy", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), 0);
	snprintf(spec, sizeof(spec), "%s,initfail", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), -EIO);
	snprintf(spec, sizeof(spec), "%s,nonsense", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), -EINVAL);
	snprintf(spec, sizeof(spec), "%s:testpol_badver", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), -EINVAL);
	snprintf(spec, sizeof(spec), "%s:no_such_symbol", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), -ENOENT);
	snprintf(spec, sizeof(spec), "%s:", so);
	CHECK_ERR(bypass_pager_set_policy(p, spec), -EINVAL);
	CHECK_ERR(bypass_pager_set_policy(p, "/no/such/dir/policy.so"), -ENOENT);
	CHECK_ERR(bypass_pager_set_policy(p, "missing.so"), -ENOENT);
	/* every instance that was replaced was finished, the current one not */
	void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
	CHECK(h);
	_Atomic unsigned long *inits = dlsym(h, "testpol_inits");
	_Atomic unsigned long *finis = dlsym(h, "testpol_finis");
	CHECK(inits && finis);
	/* 4 good inits, initfail and nonsense failed (no fini for those) */
	CHECK_EQ(*inits, 6);
	CHECK_EQ(*finis, 3);
	dlclose(h);

	/* advise */
	char *m;
	CHECK_EQ(bypass_pager_map(p, 256 * PAGE, 0, (void **)&m), 0);
	CHECK_ERR(bypass_pager_advise(NULL, m, PAGE, BYPASS_PAGER_ADV_NORMAL), -EINVAL);
	CHECK_ERR(bypass_pager_advise(p, m, PAGE, -1), -EINVAL);
	CHECK_ERR(bypass_pager_advise(p, m, PAGE, 6), -EINVAL);
	CHECK_ERR(bypass_pager_advise(p, m, 0, BYPASS_PAGER_ADV_RANDOM), 0);
	CHECK_ERR(bypass_pager_advise(p, m + 255 * PAGE, 2 * PAGE, BYPASS_PAGER_ADV_RANDOM),
		  -EINVAL);
	CHECK_ERR(bypass_pager_advise(p, m - PAGE, 2 * PAGE, BYPASS_PAGER_ADV_RANDOM), -EINVAL);
	static char notours[PAGE];
	CHECK_ERR(bypass_pager_advise(p, notours, PAGE, BYPASS_PAGER_ADV_RANDOM), -EINVAL);
	CHECK_ERR(bypass_pager_advise(p, m, SIZE_MAX, BYPASS_PAGER_ADV_RANDOM), -EINVAL);
	for (int a = BYPASS_PAGER_ADV_NORMAL; a <= BYPASS_PAGER_ADV_PRIORITY; a++)
		CHECK_ERR(bypass_pager_advise(p, m + 1, 3 * PAGE, a), 0); /* rounded out */
	/* 64 ranges fit, the 65th does not; NORMAL frees them */
	CHECK_ERR(bypass_pager_advise(p, m, 256 * PAGE, BYPASS_PAGER_ADV_NORMAL), 0);
	for (int i = 0; i < 64; i++)
		CHECK_ERR(bypass_pager_advise(p, m + 2 * i * PAGE, PAGE, BYPASS_PAGER_ADV_RANDOM), 0);
	CHECK_ERR(bypass_pager_advise(p, m + 200 * PAGE, PAGE, BYPASS_PAGER_ADV_RANDOM), -ENOSPC);
	CHECK_ERR(bypass_pager_advise(p, m, 256 * PAGE, BYPASS_PAGER_ADV_NORMAL), 0);
	CHECK_ERR(bypass_pager_advise(p, m + 200 * PAGE, PAGE, BYPASS_PAGER_ADV_RANDOM), 0);
	/* a hint in the middle of another splits it */
	CHECK_ERR(bypass_pager_advise(p, m, 100 * PAGE, BYPASS_PAGER_ADV_SEQUENTIAL), 0);
	CHECK_ERR(bypass_pager_advise(p, m + 50 * PAGE, PAGE, BYPASS_PAGER_ADV_PRIORITY), 0);
	/* unmapping a hinted part forgets it; the rest still works */
	CHECK_EQ(bypass_pager_unmap(p, m + 40 * PAGE, 20 * PAGE), 0);
	CHECK_ERR(bypass_pager_advise(p, m + 40 * PAGE, PAGE, BYPASS_PAGER_ADV_RANDOM), -EINVAL);
	for (int i = 0; i < 40; i++)
		m[i * PAGE] = (char)i;
	for (int i = 0; i < 40; i++)
		CHECK_EQ(m[i * PAGE], (char)i);
	/* a forked child uses the pager it kept (issue 32: nothing read back),
	 * or none where the fork read back (then -ECHILD) */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int want = p->cfg.gen == bp_fork_gen() ? 0 : -ECHILD;
		int ok = bypass_pager_set_policy(p, "clock") == want &&
			 bypass_pager_advise(p, m, PAGE, BYPASS_PAGER_ADV_RANDOM) == want;
		_exit(ok ? 0 : 1);
	}
	int wst;
	CHECK_EQ(waitpid(pid, &wst, 0), pid);
	CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	struct bypass_pager_stats st = stats_of(p);
	CHECK_EQ(st.reserved[0], 0);
	CHECK_EQ(st.reserved[1], 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	printf("ok\n");
	return 0;
}
