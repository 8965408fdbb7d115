/* SPDX-License-Identifier: MIT */
/*
 * preload-badenv: a bad BYPASS_PAGER* value prints a clear message on
 * stderr naming the variable, and the program runs unpaged (and correctly:
 * no statistics line, its memory is the kernel's); BYPASS_PAGER=0 turns the
 * preload off silently; good values with suffixes are taken.  Policies:
 * the built-ins and a shared object are taken; an unknown name, a missing
 * file and a policy whose init fails (found when the pager is made) run
 * the program unpaged with one message.  The variables the library itself
 * no longer reads (BYPASS_PAGER_ENGINE, BYPASS_PAGER_HEAT*): bad values
 * likewise; good ones reach the pager as explicit options (the engine held
 * on its pool, the heat view file written with %p expanded).
 */
#include "pager/preload-util.h"

#define N (4 * PP_BUDGET)

static void work(void)
{
	unsigned char *m = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	CHECK(m != MAP_FAILED);
	pp_fill(m, N, 4);
	CHECK_EQ(pp_check(m, N, 4), N);
	CHECK_EQ(munmap(m, N), 0);
	if (pp_malloc_reaches_preload()) {
		unsigned char *a = malloc(N);
		CHECK(a);
		pp_fill(a, N, 5);
		CHECK_EQ(pp_check(a, N, 5), N);
		free(a);
	}
}

static void slurp(const char *path, char *buf, size_t n)
{
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = 0;
	fclose(f);
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		work();
		return 0;
	}
	(void)argc;
	static char so_ok[600], so_fail[600];
	const char *b = getenv("BYPASS_BUILD");
	snprintf(so_ok, sizeof(so_ok), "BYPASS_PAGER_POLICY=%s/tests/pager/testpolicy.so",
		 b ? b : ".");
	snprintf(so_fail, sizeof(so_fail),
		 "BYPASS_PAGER_POLICY=%s/tests/pager/testpolicy.so,initfail", b ? b : ".");
	const struct {
		const char *env, *var; /* var: what the message names; NULL: silent */
		int paged;
	} cases[] = {
		{ "BYPASS_PAGER_BUDGET=abc", "BYPASS_PAGER_BUDGET", 0 },
		{ "BYPASS_PAGER_BUDGET=4096", "BYPASS_PAGER_BUDGET", 0 },    /* below 16 pages */
		{ "BYPASS_PAGER_BUDGET=4Q", "BYPASS_PAGER_BUDGET", 0 },
		{ "BYPASS_PAGER_BUDGET=99999999999T", "BYPASS_PAGER_BUDGET", 0 },
		{ "BYPASS_PAGER_THRESHOLD=-1", "BYPASS_PAGER_THRESHOLD", 0 },
		{ "BYPASS_PAGER_SWAP_SIZE=1.5G", "BYPASS_PAGER_SWAP_SIZE", 0 },
		{ "BYPASS_PAGER_POLICY=lru", "BYPASS_PAGER_POLICY", 0 },
		{ "BYPASS_PAGER_POLICY=/nonexistent/p.so", "BYPASS_PAGER_POLICY", 0 },
		{ "BYPASS_PAGER_POLICY=2q,args", "BYPASS_PAGER_POLICY", 0 },
		{ so_fail, "BYPASS_PAGER_POLICY", -1 }, /* -1: found late, a stats line of
							  zeros may be written */
		{ "BYPASS_PAGER_SWAP=/nonexistent/dir", "BYPASS_PAGER_SWAP", 0 },
		{ "BYPASS_PAGER=maybe", "BYPASS_PAGER=", 0 },
		{ "BYPASS_PAGER_ENGINE=fast", "BYPASS_PAGER_ENGINE", 0 },
		{ "BYPASS_PAGER_HEAT=faults,bogus", "BYPASS_PAGER_HEAT", 0 },
		{ "BYPASS_PAGER_HEAT=,", "BYPASS_PAGER_HEAT", 0 },
		{ "BYPASS_PAGER_HEAT_INTERVAL=5", "BYPASS_PAGER_HEAT_INTERVAL", 0 },
		{ "BYPASS_PAGER_HEAT_INTERVAL=12x", "BYPASS_PAGER_HEAT_INTERVAL", 0 },
		{ "BYPASS_PAGER_HEAP=maybe", "BYPASS_PAGER_HEAP", 0 },
		{ "BYPASS_PAGER_SAMPLE=2", "BYPASS_PAGER_SAMPLE", 0 },
		{ "BYPASS_PAGER_SPIN=fast", "BYPASS_PAGER_SPIN", 0 },
		{ "BYPASS_PAGER_SPIN=0", NULL, 1 },
		{ "BYPASS_PAGER_SPIN=on", NULL, 1 },
		{ "BYPASS_PAGER_ENGINE=adaptive", NULL, 1 },
		{ "BYPASS_PAGER_ENGINE=upcall", NULL, 1 },
		{ "BYPASS_PAGER_HEAT=0", NULL, 1 },
		{ "BYPASS_PAGER=0", NULL, 0 },
		{ "BYPASS_PAGER=off", NULL, 0 },
		{ "BYPASS_PAGER_BUDGET=4M", NULL, 1 },
		{ "BYPASS_PAGER_POLICY=2q", NULL, 1 },
		{ "BYPASS_PAGER_POLICY=clock", NULL, 1 },
		{ "BYPASS_PAGER_POLICY=Prefetch", NULL, 1 },
		{ "BYPASS_PAGER_POLICY=window", NULL, 1 },
		{ so_ok, NULL, 1 },
	};
	char errf[256], err[4096];
	snprintf(errf, sizeof(errf), "%s/stderr", pp_tmpdir());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pp_stats_reset();
		const char *env[] = { cases[i].env, NULL };
		int st = pp_run(argv, "run", env, errf);
		slurp(errf, err, sizeof(err));
		int lines;
		pp_stat("evictions", &lines);
		TEST_LOG("%-36s exit %d, stats lines %d, stderr: %s", cases[i].env,
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1, lines, err[0] ? err : "(none)\n");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (cases[i].paged >= 0)
			CHECK_EQ(lines, cases[i].paged);
		if (cases[i].var) {
			CHECK(strstr(err, "bypass: pager preload:"));
			CHECK(strstr(err, cases[i].var));
			CHECK(strstr(err, "unpaged"));
		} else {
			CHECK(!strstr(err, "bypass"));
		}
	}
	/* good engine and heat values arrive as options */
	char heatenv[300], view[300];
	snprintf(heatenv, sizeof(heatenv), "BYPASS_PAGER_HEAT_FILE=%s/heat-%%p.txt", pp_tmpdir());
	const char *env2[] = { "BYPASS_PAGER_ENGINE=pool", "BYPASS_PAGER_HEAT=faults,written",
			       "BYPASS_PAGER_HEAT_INTERVAL=10", heatenv, NULL };
	pp_stats_reset();
	int st = pp_run(argv, "run", env2, errf);
	slurp(errf, err, sizeof(err));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!strstr(err, "bypass"));
	int lines;
	CHECK_EQ(pp_stat("engine_pool", &lines), 1);
	CHECK_EQ(lines, 1);
	long long pid = pp_stat("pid", NULL);
	snprintf(view, sizeof(view), "%s/heat-%lld.txt", pp_tmpdir(), pid);
	slurp(view, err, sizeof(err));
	TEST_LOG("engine pool and heat: view %s: %.40s", view, err);
	CHECK(!strncmp(err, "bypass-heat 1\n", 14));
	return test_pass("pager/preload-badenv");
}
