/* SPDX-License-Identifier: MIT */
/*
 * preload-tree: one budget for a process tree (issue 32, item 3), with
 * BYPASS_PAGER_BUDGET_SCOPE=tree.  What is measured is what the kernel
 * says is resident (mincore() of each process's paged regions, summed
 * over the processes while they all hold their memory), not only the
 * ledger's own count:
 *
 *  - pair: two processes each fill 0.6 of the budget; together they stay
 *    within the budget + the ledger's slack (both are parked while the
 *    sum is taken: the one that is asked to evict answers through its
 *    ledger thread, its main thread blocked in read()).  Under
 *    BYPASS_PAGER_BUDGET_SCOPE=process the same pair holds more than the
 *    budget (each has its own): the check can fail.
 *  - fork: a forked child (which keeps the parent's pager and its copies
 *    of the parent's pages) fills its own memory: parent + child within
 *    the budget + slack.
 *  - exec: a child that execs this program (the ledger found through
 *    BYPASS_PAGER_LEDGER) fills its memory: the same bound.
 *  - exec-idle: a forked child (its slot charged with its copies) execs a
 *    program that makes no pager: the parent can still fill 0.95 of the
 *    budget (the exec'd image gave its former slot back).
 *  - kill: a member holding 0.8 of the budget is SIGKILLed (not reaped
 *    yet: a zombie); another then gets 0.7 of the budget resident, which
 *    it could not if the dead one's share were not given back.
 *  - bad ledger descriptors in the environment (not a number, not open,
 *    a regular file, a memfd not sealed, of the wrong size, not a ledger):
 *    refused with one line on stderr, the program runs paged under a
 *    ledger of its own, the file named is not written.
 * No timing in any check.
 */
#include "pager/preload-util.h"

#include <signal.h>

#define PAGES (PP_BUDGET / 4096)
#define SLACK 64 /* the ledger's slack for a 4 MiB budget: 64 pages */

static unsigned char *region(size_t n)
{
	unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	CHECK(m != MAP_FAILED);
	return m;
}

/* Pages of [m, m + n) resident now. */
static long resident(const unsigned char *m, size_t n)
{
	static unsigned char vec[1 << 16];
	CHECK(n / 4096 <= sizeof(vec));
	CHECK_EQ(mincore((void *)m, n, vec), 0);
	long k = 0;
	for (size_t i = 0; i < n / 4096; i++)
		k += vec[i] & 1;
	return k;
}

static void put(int fd, long v)
{
	CHECK_EQ(write(fd, &v, sizeof(v)), (ssize_t)sizeof(v));
}

static long get(int fd)
{
	long v;
	ssize_t r;
	do
		r = read(fd, &v, sizeof(v));
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(v))
		TEST_FAIL("a member of the tree died (read: %zd)", r);
	return v;
}

static bool tree_scope(void)
{
	const char *s = getenv("BYPASS_PAGER_BUDGET_SCOPE");
	return s && !strcmp(s, "tree");
}

/*
 * A member (the exec'd child): fill n bytes (version k), report what is resident, wait for
 * go, check the data, report 0.  rep/go: pipe ends.
 */
static void member(size_t n, size_t k, int rep, int go)
{
	unsigned char *m = region(n);
	pp_fill(m, n, k);
	put(rep, resident(m, n));
	get(go);
	if (pp_check(m, n, k) != n)
		TEST_FAIL("member %zu: data lost", k);
	put(rep, 0);
}

static void pipes(int rep[2], int go[2])
{
	CHECK_EQ(pipe(rep), 0);
	CHECK_EQ(pipe(go), 0);
}

static void reap(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		CHECK(errno == EINTR);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("a member ended with status %#x", st);
}

static void within(const char *what, long sum)
{
	printf("%s: %ld pages resident together, budget %lu + slack %d\n", what, sum,
	       (unsigned long)PAGES, SLACK);
	if (tree_scope() && sum > (long)(PAGES + SLACK))
		TEST_FAIL("%s: %ld pages resident in the tree, above the budget %lu + %d",
			  what, sum, (unsigned long)PAGES, SLACK);
}

/* Two members, one after the other: each reports after filling; both
 * count again once the second has filled (parked: the first one's count
 * can only fall), and the sum is taken. */
static void mode_pair_sum(void)
{
	size_t n = PP_BUDGET * 6 / 10;
	int rep[2][2], go[2][2];
	pid_t pid[2];
	long first[2];
	for (int i = 0; i < 2; i++) {
		pipes(rep[i], go[i]);
		fflush(NULL);
		pid[i] = fork();
		CHECK(pid[i] >= 0);
		if (!pid[i]) {
			unsigned char *m = region(n);
			pp_fill(m, n, (size_t)i + 1);
			put(rep[i][1], resident(m, n));
			get(go[i][0]); /* "count again" */
			put(rep[i][1], resident(m, n));
			get(go[i][0]); /* "check and end" */
			if (pp_check(m, n, (size_t)i + 1) != n)
				TEST_FAIL("member %d: data lost", i);
			exit(0);
		}
		first[i] = get(rep[i][0]);
	}
	long sum = 0;
	for (int i = 0; i < 2; i++) {
		put(go[i][1], 1);
		sum += get(rep[i][0]);
	}
	printf("pair: filled %ld and %ld pages\n", first[0], first[1]);
	within("pair", sum);
	if (!tree_scope() && sum <= (long)(PAGES + SLACK))
		TEST_FAIL("scope=process: %ld pages together, not above the budget: each "
			  "process should have had a budget of its own", sum);
	if (!tree_scope() && getenv("BYPASS_PAGER_LEDGER"))
		TEST_FAIL("scope=process: BYPASS_PAGER_LEDGER is set");
	for (int i = 0; i < 2; i++) {
		put(go[i][1], 2);
		reap(pid[i]);
	}
}

static void mode_fork(void)
{
	size_t n = PP_BUDGET * 6 / 10;
	unsigned char *m = region(n);
	pp_fill(m, n, 7);
	int rep[2], go[2];
	pipes(rep, go);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		unsigned char *c = region(n);
		pp_fill(c, n, 8);
		/* its own memory and its copies of the parent's */
		put(rep[1], resident(c, n) + resident(m, n));
		get(go[0]);
		if (pp_check(c, n, 8) != n || pp_check(m, n, 7) != n)
			TEST_FAIL("fork child: data lost");
		exit(0);
	}
	long child = get(rep[0]);
	within("fork", child + resident(m, n));
	put(go[1], 1);
	reap(pid);
	if (pp_check(m, n, 7) != n)
		TEST_FAIL("fork parent: data lost");
}

/* A child that execs this program as role: the pipes (pipes()) made
 * here, the child's ends named in PP_TREE_FDS (child_fds() reads them). */
static pid_t exec_self(char **argv, const char *role, int rep[2], int go[2])
{
	pipes(rep, go);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		char fds[64];
		snprintf(fds, sizeof(fds), "%d,%d", rep[1], go[0]);
		setenv("PP_TREE_FDS", fds, 1);
		char *av[] = { argv[0], (char *)role, NULL };
		execv("/proc/self/exe", av);
		_exit(127);
	}
	return pid;
}

/* In the exec'd child: its ends of the pipes. */
static void child_fds(int *rep, int *go)
{
	const char *fds = getenv("PP_TREE_FDS");
	CHECK(fds && sscanf(fds, "%d,%d", rep, go) == 2);
}

static void mode_exec(char **argv)
{
	size_t n = PP_BUDGET * 6 / 10;
	unsigned char *m = region(n);
	pp_fill(m, n, 9);
	int rep[2], go[2];
	pid_t pid = exec_self(argv, "exec-child", rep, go);
	long child = get(rep[0]);
	within("exec", child + resident(m, n));
	put(go[1], 1);
	get(rep[0]);
	reap(pid);
	if (pp_check(m, n, 9) != n)
		TEST_FAIL("exec parent: data lost");
}

/*
 * A child that keeps the parent's pager (and its slot, charged with its
 * copies of the parent's pages) execs a program that makes no pager: the
 * slot of its former image must not keep holding the tree's room.
 */
static void mode_exec_idle(char **argv)
{
	size_t n = PP_BUDGET * 6 / 10, n2 = PP_BUDGET * 35 / 100;
	unsigned char *m = region(n);
	pp_fill(m, n, 14);
	int rep[2], go[2];
	pid_t pid = exec_self(argv, "idle-child", rep, go);
	get(rep[0]); /* the exec'd program runs (the preload loaded) */
	unsigned char *m2 = region(n2);
	pp_fill(m2, n2, 15);
	long mine = resident(m, n) + resident(m2, n2);
	long want = (long)((n + n2) / 4096);
	printf("exec-idle: %ld of %ld pages resident beside an exec'd child without a "
	       "pager\n", mine, want);
	put(go[1], 1);
	reap(pid);
	if (mine < want * 9 / 10)
		TEST_FAIL("exec-idle: only %ld of %ld pages resident: the exec'd child's former "
			  "slot still holds the tree's room", mine, want);
	if (pp_check(m, n, 14) != n || pp_check(m2, n2, 15) != n2)
		TEST_FAIL("exec-idle: data lost");
}

static void mode_idle_child(void)
{
	int rep, go;
	child_fds(&rep, &go);
	put(rep, 0);
	get(go);
}

static void mode_exec_child(void)
{
	int rep, go;
	child_fds(&rep, &go);
	if (tree_scope() && !getenv("BYPASS_PAGER_LEDGER"))
		TEST_FAIL("exec'd child: no BYPASS_PAGER_LEDGER");
	member(PP_BUDGET * 6 / 10, 10, rep, go);
}

static void mode_kill(void)
{
	int rep[2], go[2];
	pipes(rep, go);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		unsigned char *c = region(PP_BUDGET * 8 / 10);
		pp_fill(c, PP_BUDGET * 8 / 10, 11);
		put(rep[1], resident(c, PP_BUDGET * 8 / 10));
		for (;;)
			pause();
	}
	long held = get(rep[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	/* a zombie now: gone for the ledger, not reaped yet */
	siginfo_t si;
	CHECK_EQ(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	size_t n = PP_BUDGET * 7 / 10;
	unsigned char *m = region(n);
	pp_fill(m, n, 12);
	long mine = resident(m, n);
	printf("kill: the killed member held %ld pages; the survivor has %ld of %zu\n", held,
	       mine, n / 4096);
	if (mine < (long)(n / 4096) * 9 / 10)
		TEST_FAIL("kill: only %ld of %zu pages resident: the killed member's share did "
			  "not come back", mine, n / 4096);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (pp_check(m, n, 12) != n)
		TEST_FAIL("kill: data lost");
}

/* A program paged past its budget (the bad-ledger runs). */
static void mode_plain(void)
{
	size_t n = 2 * PP_BUDGET;
	unsigned char *m = region(n);
	pp_fill(m, n, 13);
	if (pp_check(m, n, 13) != n)
		TEST_FAIL("plain: data lost");
}

/* ------------------------------------------------------------ the runs */

static void run_checked(char **argv, const char *mode, const char *scope)
{
	char sc[64];
	snprintf(sc, sizeof(sc), "BYPASS_PAGER_BUDGET_SCOPE=%s", scope);
	const char *env[] = { sc, "BYPASS_PAGER_HEAP=0", NULL };
	pp_stats_reset();
	pp_run_ok(argv, mode, env);
	int lines;
	long long ev = pp_stat("evictions", &lines);
	long long peak = pp_stat("tree_peak_pages", NULL);
	printf("%s (%s): %d stats lines, evictions %lld\n", mode, scope, lines, ev);
	if (!strcmp(scope, "tree")) {
		/* every line carries the ledger's peak: the sum is below lines x max */
		if (peak < 0)
			TEST_FAIL("%s: no tree_peak_pages in the statistics", mode);
		char path[256], line[8192];
		pp_stats_path(path, sizeof(path));
		FILE *f = fopen(path, "r");
		CHECK(f);
		while (fgets(line, sizeof(line), f)) {
			char *q = strstr(line, "\"tree_peak_pages\":");
			char *b = strstr(line, "\"tree_budget_pages\":");
			char *s = strstr(line, "\"tree_slack_pages\":");
			if (!q || !b || !s)
				continue;
			long long pk = atoll(q + 18), bud = atoll(b + 20), sl = atoll(s + 19);
			if (bud != (long long)PAGES || sl != SLACK)
				TEST_FAIL("%s: the ledger's budget %lld + %lld, not %lu + %d", mode,
					  bud, sl, (unsigned long)PAGES, SLACK);
			if (pk > bud + sl)
				TEST_FAIL("%s: the ledger's peak %lld pages, above %lld + %lld",
					  mode, pk, bud, sl);
		}
		fclose(f);
	}
}

static void bad_ledgers(char **argv)
{
	char file[256];
	snprintf(file, sizeof(file), "%s/not-a-ledger", pp_tmpdir());
	int ffd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(ffd >= 0);
	static char page[65536];
	memset(page, 'x', sizeof(page));
	CHECK_EQ(write(ffd, page, sizeof(page)), (ssize_t)sizeof(page));
	int unsealed = memfd_create("t-unsealed", MFD_ALLOW_SEALING);
	CHECK(unsealed >= 0 && ftruncate(unsealed, 65536) == 0);
	int small = memfd_create("t-small", MFD_ALLOW_SEALING);
	CHECK(small >= 0 && ftruncate(small, 4096) == 0);
	CHECK_EQ(fcntl(small, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
	int zeros = memfd_create("t-zeros", MFD_ALLOW_SEALING);
	CHECK(zeros >= 0 && ftruncate(zeros, 65536) == 0);
	CHECK_EQ(fcntl(zeros, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
	struct {
		char v[32];
		const char *why;
	} cases[] = {
		{ "abc", "not a descriptor number" },
		{ "-3", "not a descriptor number" },
		{ "4000", "not an open descriptor" },
		{ "", "not a memfd" },
		{ "", "not sealed against resizing" },
		{ "", "not the size of a ledger" },
		{ "", "not a ledger" },
	};
	snprintf(cases[3].v, sizeof(cases[3].v), "%d", ffd);
	snprintf(cases[4].v, sizeof(cases[4].v), "%d", unsealed);
	snprintf(cases[5].v, sizeof(cases[5].v), "%d", small);
	snprintf(cases[6].v, sizeof(cases[6].v), "%d", zeros);
	char err[256];
	snprintf(err, sizeof(err), "%s/err", pp_tmpdir());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char lv[320];
		snprintf(lv, sizeof(lv), "BYPASS_PAGER_LEDGER=%s", cases[i].v);
		const char *env[] = { "BYPASS_PAGER_BUDGET_SCOPE=tree", "BYPASS_PAGER_HEAP=0", lv,
				      NULL };
		pp_stats_reset();
		int st = pp_run(argv, "plain", env, err);
		char msg[2048] = "";
		FILE *f = fopen(err, "r");
		if (f) {
			size_t k = fread(msg, 1, sizeof(msg) - 1, f);
			msg[k] = 0;
			fclose(f);
		}
		printf("BYPASS_PAGER_LEDGER=%-6s exit %#x, stderr: %s", cases[i].v, st, msg);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			TEST_FAIL("BYPASS_PAGER_LEDGER=%s: the program failed (%#x)", cases[i].v, st);
		if (!strstr(msg, "BYPASS_PAGER_LEDGER=") || !strstr(msg, "refused") ||
		    !strstr(msg, cases[i].why))
			TEST_FAIL("BYPASS_PAGER_LEDGER=%s: no line saying it is refused (%s)",
				  cases[i].v, cases[i].why);
		if (pp_stat("tree_budget_pages", NULL) != (long long)PAGES)
			TEST_FAIL("BYPASS_PAGER_LEDGER=%s: not paged under a ledger of its own",
				  cases[i].v);
		if (pp_stat("evictions", NULL) <= 0)
			TEST_FAIL("BYPASS_PAGER_LEDGER=%s: nothing evicted", cases[i].v);
	}
	char back[65536];
	CHECK_EQ(pread(ffd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	if (memcmp(back, page, sizeof(back)))
		TEST_FAIL("the regular file named as a ledger was written");
	close(ffd);
	close(unsealed);
	close(small);
	close(zeros);
}

int main(int argc, char **argv)
{
	pp_start(300);
	if (pp_preloaded()) {
		const char *m = argc > 1 ? argv[1] : "";
		if (!strcmp(m, "pair"))
			mode_pair_sum();
		else if (!strcmp(m, "fork"))
			mode_fork();
		else if (!strcmp(m, "exec"))
			mode_exec(argv);
		else if (!strcmp(m, "exec-child"))
			mode_exec_child();
		else if (!strcmp(m, "exec-idle"))
			mode_exec_idle(argv);
		else if (!strcmp(m, "idle-child"))
			mode_idle_child();
		else if (!strcmp(m, "kill"))
			mode_kill();
		else if (!strcmp(m, "plain"))
			mode_plain();
		else
			TEST_FAIL("unknown mode %s", m);
		return 0;
	}
	run_checked(argv, "pair", "tree");
	run_checked(argv, "pair", "process");
	run_checked(argv, "fork", "tree");
	run_checked(argv, "exec", "tree");
	run_checked(argv, "exec-idle", "tree");
	run_checked(argv, "kill", "tree");
	bad_ledgers(argv);
	printf("PASS\n");
	return 0;
}
