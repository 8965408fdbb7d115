/* SPDX-License-Identifier: MIT */
/*
 * `bypass heat FILE` on the live view of a pager that faults right now:
 * the counters and both range lists are printed; --watch --count 2 prints
 * them twice; exit 1 for a missing file or one that is not a view, 2 for
 * bad usage; --help.
 */
#include "util.h"

#include <sys/wait.h>

#define NPAGES 128ul
#define BUDGET 16ul

static char out[16384];

/* Run "bypass ARGS" (a shell word list); its exit status, output in out. */
static int bypass(const char *args)
{
	const char *build = getenv("BYPASS_BUILD");
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s/bypass' %s 2>&1", build ? build : ".", args);
	FILE *f = popen(cmd, "r");
	CHECK(f != NULL);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	int st = pclose(f);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *s = hay; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

int main(void)
{
	test_timeout(120);
	unsetenv("BYPASS_PAGER_HEAT");
	const char *build = getenv("BYPASS_BUILD");
	char exe[512];
	snprintf(exe, sizeof(exe), "%s/bypass", build ? build : ".");
	if (access(exe, X_OK) < 0)
		SKIP("no %s (BYPASS_BUILD unset or the command not built)", exe);

	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(), .swap_size = 2 * NPAGES * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	bypass_pager *p;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	char view[300], args[400];
	snprintf(view, sizeof(view), "%s/view", tmpdir());
	struct bypass_pager_heat_config hc = { .sources = BYPASS_PAGER_HEAT_FAULTS,
					       .interval_ms = 10, .stats_ms = 10,
					       .stats_path = view };
	CHECK_EQ(bypass_pager_heat_enable(p, &hc), 0);
	/* fault until the view has a hot range */
	for (int tries = 0;; tries++) {
		for (size_t i = 0; i < 3 * BUDGET; i++)
			m[i * PAGE] = (char)tries;
		snprintf(args, sizeof(args), "heat '%s'", view);
		if (access(view, R_OK) == 0 && bypass(args) == 0 && !strstr(out, "(none)"))
			break;
		CHECK(tries < 100000);
		usleep(1000);
	}
	printf("%s", out);
	CHECK(strstr(out, "sources faults "));
	CHECK(strstr(out, "hottest"));
	CHECK(strstr(out, "coldest"));
	CHECK(strstr(out, "pager: "));
	CHECK(strstr(out, "damon: off: not requested"));
	snprintf(args, sizeof(args), "heat --watch --count 2 '%s'", view);
	CHECK_EQ(bypass(args), 0);
	CHECK_EQ(count(out, "hottest"), 2);
	snprintf(args, sizeof(args), "heat -w -n 1 '%s'", view);
	CHECK_EQ(bypass(args), 0);
	CHECK_EQ(count(out, "hottest"), 1);
	CHECK_EQ(bypass_pager_destroy(p), 0);

	/* errors */
	CHECK_EQ(bypass("heat --help"), 0);
	CHECK(strstr(out, "usage: bypass heat"));
	CHECK_EQ(bypass("heat"), 2);
	CHECK_EQ(bypass("heat --bogus x"), 2);
	CHECK_EQ(bypass("heat -n 0 x"), 2);
	CHECK_EQ(bypass("heat -n"), 2);
	CHECK_EQ(bypass("heat a b"), 2);
	snprintf(args, sizeof(args), "heat '%s/missing'", tmpdir());
	CHECK_EQ(bypass(args), 1);
	CHECK(strstr(out, "No such file"));
	char notview[300];
	snprintf(notview, sizeof(notview), "%s/notview", tmpdir());
	FILE *f = fopen(notview, "w");
	CHECK(f != NULL);
	fprintf(f, "hello\n");
	fclose(f);
	snprintf(args, sizeof(args), "heat '%s'", notview);
	CHECK_EQ(bypass(args), 1);
	CHECK(strstr(out, "not a heat view"));
	CHECK_EQ(bypass("--help"), 0);
	CHECK(strstr(out, "heat [--watch]"));
	tmpdir_cleanup();
	return test_pass("pager/heat-cli");
}
