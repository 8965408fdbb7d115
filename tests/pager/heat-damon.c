/* SPDX-License-Identifier: MIT */
/*
 * Access heat from DAMON (sysfs): reads of resident pages (which no fault
 * shows) rank a hot range above an untouched one and mark its pages
 * referenced for 2Q; no kdamond is left after disable, nor after the
 * process is killed outright.  Where DAMON cannot be used the test says why
 * and skips, after checking that a kdamond it does not own was left as it
 * was, and that an unprivileged process (nobody) gets -EPERM for DAMON and
 * runs with the fault source.
 * TEST_LABELS: root
 */
#include "heat-util.h"

#include <grp.h>
#include <signal.h>
#include <sys/wait.h>

#define KDS "/sys/kernel/mm/damon/admin/kdamonds"
#define NPAGES 256ul
#define HOT 32ul

static long long readll(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = -1;
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int state_of(int i, char *buf, size_t len)
{
	char path[96];
	snprintf(path, sizeof(path), KDS "/%d/state", i);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok ? 0 : -1;
}

/* kdamonds that run now: "i:pid" list */
static void running(char *out, size_t len)
{
	out[0] = 0;
	long long nr = readll(KDS "/nr_kdamonds");
	for (int i = 0; i < nr; i++) {
		char st[32], path[96];
		if (state_of(i, st, sizeof(st)) || strcmp(st, "on"))
			continue;
		snprintf(path, sizeof(path), KDS "/%d/pid", i);
		size_t o = strlen(out);
		snprintf(out + o, len - o, "%d:%lld ", i, readll(path));
	}
}

static bypass_pager *make(size_t budget)
{
	return heat_pager(budget, 2 * NPAGES, false);
}

/* As nobody: DAMON refused with -EPERM, the fault source runs. */
static void unprivileged(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bypass_pager *p = make(NPAGES);
		char *m;
		CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			TEST_FAIL("dropping to nobody: %s", strerror(errno));
		struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_DAMON };
		int e = bypass_pager_heat_enable(p, &c);
		TEST_LOG("as nobody: DAMON: %s (%s)", strerror(-e), hstats(p).damon_why);
		CHECK(e == -EPERM || e == -ENOENT);
		c.sources = 0; /* whatever is available */
		CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
		struct bypass_pager_heat_stats st = hstats(p);
		CHECK(st.sources & BYPASS_PAGER_HEAT_FAULTS);
		CHECK(!(st.sources & BYPASS_PAGER_HEAT_DAMON));
		CHECK_EQ(st.damon_status, e);
		TEST_LOG("as nobody: sources %#x; written: %s", st.sources,
			 st.written_status ? st.written_why : "in use");
		memset(m, 7, NPAGES * PAGE);
		CHECK_EQ(bypass_pager_destroy(p), 0);
		fflush(stdout);
		_exit(0);
	}
	wait_child(pid);
}

/* Reads of resident pages, seen by DAMON only. */
static void ranking(void)
{
	bypass_pager *p = make(2 * NPAGES); /* all resident: no fault after the first */
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	memset(m, 1, NPAGES * PAGE);
	struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_DAMON,
					      .interval_ms = 100 };
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
	char now[256];
	running(now, sizeof(now));
	TEST_LOG("DAMON in use; kdamonds running: %s", now);
	uint64_t faults = stats_of(p).faults_zero;
	volatile char *v = m;
	unsigned sum = 0;
	while (hstats(p).samples < 10)
		for (size_t i = 0; i < HOT * PAGE; i += 64)
			sum += (unsigned char)v[i];
	(void)sum;
	CHECK_EQ(stats_of(p).faults_zero, faults); /* no fault: reads of resident pages */
	struct bypass_pager_heat_stats st = hstats(p);
	TEST_LOG("damon: %llu samples, %llu regions, %llu page-intervals, %llu refs",
		 (unsigned long long)st.samples, (unsigned long long)st.damon_regions,
		 (unsigned long long)st.damon_accessed, (unsigned long long)st.refs_set);
	CHECK(st.damon_accessed > 0);
	CHECK(st.refs_set > 0);
	struct bypass_pager_heat_range hot[4], cold[4];
	CHECK(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, hot, 4) >= 1);
	CHECK(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_COLD, cold, 4) >= 1);
	CHECK((char *)hot[0].addr < m + HOT * PAGE);
	CHECK((char *)cold[0].addr >= m + HOT * PAGE);
	CHECK_EQ(cold[0].heat, 0);
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	char st0[32] = "";
	CHECK(readll(KDS "/nr_kdamonds") == 0 || (state_of(0, st0, sizeof(st0)) == 0 &&
						   !strcmp(st0, "off")));
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

/* A process killed with DAMON on leaves no kdamond running. */
static void killed(void)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bypass_pager *p = make(NPAGES);
		char *m;
		CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
		struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_DAMON };
		char ok = bypass_pager_heat_enable(p, &c) == 0 ? 'y' : 'n';
		CHECK_EQ(write(pfd[1], &ok, 1), 1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	char ok = 0;
	CHECK_EQ(read(pfd[0], &ok, 1), 1);
	close(pfd[0]);
	CHECK_EQ(ok, 'y');
	kill(pid, SIGKILL);
	int wst;
	CHECK_EQ(waitpid(pid, &wst, 0), pid);
	/* DAMON stops a kdamond whose target is gone (at its next sample) */
	char st0[32] = "on";
	for (int i = 0; i < 3000 && !strcmp(st0, "on"); i++) {
		usleep(10000);
		if (state_of(0, st0, sizeof(st0)))
			break;
	}
	TEST_LOG("after SIGKILL: kdamond 0 %s", st0);
	CHECK(strcmp(st0, "on"));
	/* the stopped kdamond's directory is taken over by the next user */
	bypass_pager *p = make(NPAGES);
	struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_DAMON };
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	CHECK(readll(KDS "/nr_kdamonds") == 0);
}

int main(void)
{
	test_timeout(240);
	unsetenv("BYPASS_PAGER_HEAT");
	if (geteuid() != 0)
		SKIP("needs root (DAMON's sysfs, and dropping to nobody)");
	tmpdir(); /* made here, so that the children's pagers share it */
	unprivileged();
	char before[256], after[256];
	running(before, sizeof(before));
	bypass_pager *p = make(NPAGES);
	struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_DAMON };
	int e = bypass_pager_heat_enable(p, &c);
	struct bypass_pager_heat_stats st = hstats(p);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	if (e) {
		running(after, sizeof(after));
		CHECK(!strcmp(before, after)); /* a kdamond not ours: left alone */
		CHECK(e == -EBUSY || e == -ENOENT || e == -EOPNOTSUPP || e == -EPERM);
		CHECK_EQ(st.damon_status, e);
		tmpdir_cleanup();
		SKIP("DAMON source unavailable: %s: %s (kdamonds running, left as they were: %s)",
		     strerror(-e), st.damon_why, before[0] ? before : "none");
	}
	ranking();
	killed();
	tmpdir_cleanup();
	return test_pass("pager/heat-damon");
}
