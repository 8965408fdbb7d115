/* SPDX-License-Identifier: MIT */
/*
 * preload-fork: what a child sees.  A forked child does not have the
 * parent's regions (a touch is a SIGSEGV, never stale or zeroed data), may
 * free them (nothing happens), and pages its own memory with a pager of its
 * own; the parent's data is intact afterwards.  An exec'd child inherits the
 * environment and starts its own pager.  Each process appends its own
 * statistics line.
 */
#include "pager/preload-util.h"

#define N (4 * PP_BUDGET)

static unsigned char *big(void)
{
	unsigned char *m;
	if (pp_malloc_reaches_preload()) {
		m = malloc(N);
		CHECK(m && ((uintptr_t)m & 4095) == 0);
	} else {
		m = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(m != MAP_FAILED);
	}
	return m;
}

static void drop(unsigned char *m)
{
	if (pp_malloc_reaches_preload())
		free(m);
	else
		CHECK_EQ(munmap(m, N), 0);
}

static void work(unsigned char *m, size_t k)
{
	pp_fill(m, N, k);
	CHECK_EQ(pp_check(m, N, k), N);
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded() && !strcmp(argv[1], "exec-child")) {
		unsigned char *m = big();
		work(m, 9);
		drop(m);
		return 0;
	}
	if (pp_preloaded()) {
		unsigned char *a = big();
		work(a, 1);
		pid_t c = fork();
		CHECK(c >= 0);
		if (!c) {
			/* the parent's region is not here */
			pid_t g = fork();
			if (!g) {
				signal(SIGSEGV, SIG_DFL);
				volatile unsigned char x = a[12345];
				(void)x;
				_exit(0);
			}
			int st;
			CHECK_EQ(waitpid(g, &st, 0), g);
			CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
			drop(a); /* forgotten, not a crash */
			unsigned char *b = big();
			work(b, 2);
			drop(b);
			exit(0); /* its own statistics line */
		}
		wait_child(c);
		CHECK_EQ(pp_check(a, N, 1), N);
		fflush(NULL);
		c = fork();
		CHECK(c >= 0);
		if (!c) {
			char *av[] = { argv[0], "exec-child", NULL };
			execv("/proc/self/exe", av);
			_exit(127);
		}
		wait_child(c);
		work(a, 3);
		drop(a);
		return 0;
	}
	(void)argc;
	pp_run_ok(argv, "run", NULL);
	int lines;
	long long ev = pp_stat("evictions", &lines), mapped = pp_stat("mapped_pages", NULL);
	TEST_LOG("stats lines %d (parent, forked child, exec'd child), evictions %lld, "
		 "mapped at exit %lld", lines, ev, mapped);
	CHECK_EQ(lines, 3);
	CHECK(ev > 3 * (long long)(N - PP_BUDGET) / 4096);
	CHECK_EQ(mapped, 0);
	/* every line has its own pid and evictions */
	char path[256], line[8192];
	pp_stats_path(path, sizeof(path));
	FILE *f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		char *e = strstr(line, "\"evictions\":");
		CHECK(e && atoll(e + 12) > 0);
		CHECK(strstr(line, "{\"module\":\"pager\",\"pid\":") == line);
	}
	fclose(f);
	return test_pass("pager/preload-fork");
}
