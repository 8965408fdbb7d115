/* SPDX-License-Identifier: MIT */
/*
 * The DAMON source against a fake sysfs tree (bp_damon_root pointed at a
 * temporary directory of plain files), so that its logic runs where no
 * kernel DAMON can be used: what it writes to set a kdamond up (fvaddr,
 * this pid, the pager's region, a "stat" scheme, the intervals), how it
 * reads tried regions (a fixed accessed region: the hot range) and turns
 * them into heat and 2Q references, the ranges it commits when the
 * regions change, and teardown; a running kdamond that is not ours is left
 * alone (-EBUSY), an off one left by a dead process is taken over, a kernel
 * without virtual address monitoring gives -EOPNOTSUPP and nothing stays.
 * What the real kernel does with that input: tests/pager/heat-damon.
 */
#include "heat-util.h"
#include "pager/heat.h"

#include <sys/stat.h>
#include <sys/wait.h>

#define NPAGES 128ul
#define HOT 16ul

static char root[256];

static void put(const char *rel, const char *val)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	char *slash = strrchr(path, '/');
	*slash = 0;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	CHECK_EQ(system(cmd), 0);
	*slash = '/';
	FILE *f = fopen(path, "w");
	if (!f)
		TEST_FAIL("%s: %s", path, strerror(errno));
	fprintf(f, "%s\n", val);
	fclose(f);
}

static void get(const char *rel, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "r");
	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
}

static unsigned long long getu(const char *rel)
{
	char b[64];
	get(rel, b, sizeof(b));
	return strtoull(b, NULL, 10);
}

#define CTX "kdamonds/0/contexts/0/"

/* The tree as a kernel with no kdamond has it, plus kdamond 0's files. */
static void fresh(const char *ops)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ(system(cmd), 0);
	put("kdamonds/nr_kdamonds", "0");
	put("kdamonds/0/state", "off");
	put("kdamonds/0/pid", "-1");
	put("kdamonds/0/contexts/nr_contexts", "0");
	put(CTX "avail_operations", ops);
	put(CTX "operations", "vaddr");
	const char *files[] = {
		"monitoring_attrs/intervals/sample_us", "monitoring_attrs/intervals/aggr_us",
		"monitoring_attrs/intervals/update_us", "monitoring_attrs/nr_regions/min",
		"monitoring_attrs/nr_regions/max", "targets/nr_targets", "targets/0/pid_target",
		"targets/0/regions/nr_regions", "schemes/nr_schemes", "schemes/0/action",
		"schemes/0/access_pattern/sz/min", "schemes/0/access_pattern/sz/max",
		"schemes/0/access_pattern/nr_accesses/min",
		"schemes/0/access_pattern/nr_accesses/max", "schemes/0/access_pattern/age/min",
		"schemes/0/access_pattern/age/max",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char rel[200];
		snprintf(rel, sizeof(rel), CTX "%s", files[i]);
		put(rel, "0");
	}
	for (int i = 0; i < 32; i++) {
		char rel[200];
		snprintf(rel, sizeof(rel), CTX "targets/0/regions/%d/start", i);
		put(rel, "0");
		snprintf(rel, sizeof(rel), CTX "targets/0/regions/%d/end", i);
		put(rel, "0");
	}
}

static bypass_pager *make(void)
{
	return heat_pager(2 * NPAGES, 4 * NPAGES, false);
}

static int enable_damon(bypass_pager *p)
{
	struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_DAMON,
					      .interval_ms = 20 };
	return bypass_pager_heat_enable(p, &c);
}

static void working(void)
{
	fresh("vaddr fvaddr paddr");
	bypass_pager *p = make();
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	memset(m, 1, NPAGES * PAGE); /* resident, on the lists */
	/* what DAMON reports: the hot range, accessed at every sample */
	char v[64];
	snprintf(v, sizeof(v), "%lu", (unsigned long)(uintptr_t)m);
	put(CTX "schemes/0/tried_regions/0/start", v);
	snprintf(v, sizeof(v), "%lu", (unsigned long)(uintptr_t)(m + HOT * PAGE));
	put(CTX "schemes/0/tried_regions/0/end", v);
	put(CTX "schemes/0/tried_regions/0/nr_accesses", "4");
	/* and 16 TiB of someone else's address space (vaddr's regions span
	 * gaps like that): no page of ours, and no time spent walking it */
	put(CTX "schemes/0/tried_regions/1/start", "4096");
	snprintf(v, sizeof(v), "%llu", 1ull << 44);
	put(CTX "schemes/0/tried_regions/1/end", v);
	put(CTX "schemes/0/tried_regions/1/nr_accesses", "20");
	CHECK_EQ(enable_damon(p), 0);
	CHECK_EQ(hstats(p).sources, BYPASS_PAGER_HEAT_DAMON);
	CHECK_EQ(hstats(p).damon_status, 0);
	/* the setup it wrote */
	char b[128];
	CHECK_EQ(getu("kdamonds/nr_kdamonds"), 1);
	CHECK_EQ(getu("kdamonds/0/contexts/nr_contexts"), 1);
	get(CTX "operations", b, sizeof(b));
	CHECK(!strcmp(b, "fvaddr"));
	CHECK_EQ(getu(CTX "targets/nr_targets"), 1);
	CHECK_EQ(getu(CTX "targets/0/pid_target"), getpid());
	CHECK_EQ(getu(CTX "targets/0/regions/nr_regions"), 1);
	CHECK_EQ(getu(CTX "targets/0/regions/0/start"), (uintptr_t)m);
	CHECK_EQ(getu(CTX "targets/0/regions/0/end"), (uintptr_t)(m + NPAGES * PAGE));
	CHECK_EQ(getu(CTX "monitoring_attrs/intervals/aggr_us"), 20000);
	CHECK_EQ(getu(CTX "monitoring_attrs/intervals/sample_us"), 1000);
	CHECK_EQ(getu(CTX "schemes/nr_schemes"), 1);
	get(CTX "schemes/0/action", b, sizeof(b));
	CHECK(!strcmp(b, "stat"));
	CHECK_EQ(getu(CTX "schemes/0/access_pattern/nr_accesses/min"), 1);
	/* rounds: heat, 2Q references, ranking */
	while (hstats(p).samples < 4)
		usleep(2000);
	struct bypass_pager_heat_stats st = hstats(p);
	TEST_LOG("fake DAMON: %llu samples, %llu regions, %llu page-intervals, %llu refs",
		 (unsigned long long)st.samples, (unsigned long long)st.damon_regions,
		 (unsigned long long)st.damon_accessed, (unsigned long long)st.refs_set);
	CHECK(st.damon_regions >= 8);
	CHECK(st.damon_accessed >= 4 * HOT);
	CHECK(st.refs_set >= HOT);
	CHECK_EQ(st.fault_accessed, 0); /* the fault source is off */
	struct bypass_pager_heat_range hot[4], cold[4];
	CHECK_EQ(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, hot, 4), 1);
	CHECK(hot[0].addr == m && hot[0].length == HOT * PAGE && hot[0].heat > 0);
	CHECK(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_COLD, cold, 4) >= 1);
	CHECK(cold[0].addr == m + HOT * PAGE && cold[0].heat == 0);
	/* a new region: the monitored ranges follow (committed) */
	char *m2;
	CHECK_EQ(bypass_pager_map(p, 4 * PAGE, 0, (void **)&m2), 0);
	uintptr_t lo = (uintptr_t)(m2 < m ? m2 : m);
	for (int i = 0; i < 10000 && getu(CTX "targets/0/regions/0/start") != lo; i++)
		usleep(1000);
	CHECK_EQ(getu(CTX "targets/0/regions/0/start"), lo);
	CHECK(getu(CTX "targets/0/regions/nr_regions") >= 1);
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	get("kdamonds/0/state", b, sizeof(b));
	CHECK(!strcmp(b, "off"));
	CHECK_EQ(getu("kdamonds/nr_kdamonds"), 0);
	/* enabled again, then destroyed: torn down too */
	CHECK_EQ(enable_damon(p), 0);
	CHECK_EQ(getu("kdamonds/nr_kdamonds"), 1);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	CHECK_EQ(getu("kdamonds/nr_kdamonds"), 0);
	TEST_LOG("fake DAMON: set up, read, committed, torn down");
}

static void refused(void)
{
	bypass_pager *p = make();
	char b[64];
	/* a running kdamond of someone else's: not touched */
	fresh("vaddr fvaddr paddr");
	put("kdamonds/nr_kdamonds", "1");
	put("kdamonds/0/state", "on");
	put("kdamonds/0/pid", "4242");
	CHECK_ERR(enable_damon(p), -EBUSY);
	TEST_LOG("busy: %s", hstats(p).damon_why);
	CHECK(strstr(hstats(p).damon_why, "pid 4242"));
	get("kdamonds/0/state", b, sizeof(b));
	CHECK(!strcmp(b, "on"));
	CHECK_EQ(getu("kdamonds/nr_kdamonds"), 1);
	/* an off one configured by someone (alive) else: not touched */
	put("kdamonds/0/state", "off");
	put(CTX "targets/0/pid_target", "1");
	CHECK_ERR(enable_damon(p), -EBUSY);
	CHECK_EQ(getu("kdamonds/nr_kdamonds"), 1);
	/* an off one left by a dead process: taken over */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	wait_child(dead);
	snprintf(b, sizeof(b), "%d", (int)dead);
	put(CTX "targets/0/pid_target", b);
	CHECK_EQ(enable_damon(p), 0);
	CHECK_EQ(getu(CTX "targets/0/pid_target"), getpid());
	/* a second pager of this process: busy */
	bypass_pager *q = make();
	CHECK_ERR(enable_damon(q), -EBUSY);
	CHECK_EQ(bypass_pager_destroy(q), 0);
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	/* no virtual address monitoring: -EOPNOTSUPP, nothing left */
	fresh("paddr");
	CHECK_ERR(enable_damon(p), -EOPNOTSUPP);
	TEST_LOG("no vaddr: %s", hstats(p).damon_why);
	CHECK_EQ(getu("kdamonds/nr_kdamonds"), 0);
	/* optional: the others run */
	struct bypass_pager_heat_config c = { .interval_ms = 20 };
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
	CHECK_EQ(hstats(p).damon_status, -EOPNOTSUPP);
	CHECK(hstats(p).sources & BYPASS_PAGER_HEAT_FAULTS);
	/* no sysfs at all */
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK_EQ(system(cmd), 0);
	CHECK_ERR(enable_damon(p), -ENOENT);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	test_timeout(120);
	unsetenv("BYPASS_PAGER_HEAT");
	snprintf(root, sizeof(root), "%s/damon-admin", tmpdir());
	bp_damon_root = root;
	working();
	refused();
	tmpdir_cleanup();
	return test_pass("pager/heat-damon-fake");
}
