/* SPDX-License-Identifier: MIT */
/*
 * Access heat from faults and from PAGEMAP_SCAN's written bits: a hot range
 * touched over and over and a cold range left alone are ranked right by
 * bypass_pager_heat_ranges() (each source on its own); bad arguments; reset;
 * BYPASS_PAGER_HEAT / _INTERVAL / _FILE (and a bad value) at create; the
 * live view file.  The DAMON source: tests/pager/heat-damon.c.
 */
#include "heat-util.h"

#include <sys/stat.h>

#define NPAGES 256ul
#define HOT 48ul /* [0, HOT) hot: 3x the budget, so every sweep faults */
#define BUDGET 16ul

static bypass_pager *make(size_t budget)
{
	return heat_pager(budget, 2 * NPAGES, true);
}

static void bad_args(void)
{
	bypass_pager *p = make(BUDGET);
	struct bypass_pager_heat_config c = { 0 };
	struct bypass_pager_heat_range r[4];
	CHECK_ERR(bypass_pager_heat_enable(NULL, &c), -EINVAL);
	CHECK_ERR(bypass_pager_heat_enable(p, NULL), -EINVAL);
	c.sources = 0x8;
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EINVAL);
	c = (struct bypass_pager_heat_config){ .flags = 0x2 };
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EINVAL);
	c = (struct bypass_pager_heat_config){ .interval_ms = 9 };
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EINVAL);
	c = (struct bypass_pager_heat_config){ .interval_ms = 60001 };
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EINVAL);
	c = (struct bypass_pager_heat_config){ .reserved = { 0, 1 } };
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EINVAL);
	c = (struct bypass_pager_heat_config){ .reserved_u = 1 };
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EINVAL);
	c = (struct bypass_pager_heat_config){ .stats_path = "" };
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EINVAL);
	/* before any enable */
	CHECK_ERR(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, r, 4), -ENODATA);
	CHECK_ERR(bypass_pager_heat_reset(p), -ENODATA);
	CHECK_ERR(bypass_pager_heat_disable(p), 0);
	struct bypass_pager_heat_stats st = hstats(p);
	CHECK_EQ(st.sources, 0);
	CHECK_EQ(st.samples, 0);
	CHECK_ERR(bypass_pager_heat_stats(p, NULL), -EINVAL);
	CHECK_ERR(bypass_pager_heat_stats(NULL, &st), -EINVAL);
	CHECK_ERR(bypass_pager_heat_disable(NULL), -EINVAL);
	CHECK_ERR(bypass_pager_heat_reset(NULL), -EINVAL);
	CHECK_ERR(bypass_pager_heat_ranges(NULL, 0, r, 4), -EINVAL);
	/* enabled twice */
	c = (struct bypass_pager_heat_config){ .sources = BYPASS_PAGER_HEAT_FAULTS };
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
	CHECK_ERR(bypass_pager_heat_enable(p, &c), -EBUSY);
	CHECK_ERR(bypass_pager_heat_ranges(p, 2, r, 4), -EINVAL);
	CHECK_ERR(bypass_pager_heat_ranges(p, -1, r, 4), -EINVAL);
	CHECK_ERR(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, NULL, 4), -EINVAL);
	CHECK_ERR(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, NULL, 0), 0);
	CHECK_EQ(hstats(p).sources, BYPASS_PAGER_HEAT_FAULTS);
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	CHECK_EQ(hstats(p).sources, 0);
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0); /* again after disable */
	CHECK_EQ(bypass_pager_destroy(p), 0);       /* destroy while enabled */
	TEST_LOG("bad arguments: ok");
}

/* Sweep the hot range (reads) until n more samples were taken, then let
 * two more samples fold the last sweep's faults in (on a slow machine one
 * sweep may outlast the n samples: its last pages would not be counted
 * yet). */
static void sweep_hot(bypass_pager *p, volatile char *m, uint64_t n, bool write)
{
	uint64_t want = hstats(p).samples + n;
	unsigned sum = 0;
	while (hstats(p).samples < want)
		for (size_t i = 0; i < HOT; i++) {
			if (write)
				m[i * PAGE + 8] = (char)i;
			else
				sum += (unsigned char)m[i * PAGE];
		}
	(void)sum;
	want = hstats(p).samples + 2;
	while (hstats(p).samples < want) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

/* The top hot range lies in [0, HOT), the top cold one beyond it. */
static void check_ranking(bypass_pager *p, char *m, const char *what)
{
	struct bypass_pager_heat_range hot[8], cold[8];
	int nh = bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, hot, 8);
	int nc = bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_COLD, cold, 8);
	CHECK(nh >= 1);
	CHECK(nc >= 1);
	for (int i = 1; i < nh; i++)
		CHECK(hot[i - 1].heat >= hot[i].heat);
	for (int i = 1; i < nc; i++)
		CHECK(cold[i - 1].heat <= cold[i].heat);
	char *h0 = hot[0].addr, *c0 = cold[0].addr;
	TEST_LOG("%s: hottest +%zu pages %zu heat %u; coldest +%zu pages %zu heat %u", what,
		 (size_t)(h0 - m) / PAGE, hot[0].length / PAGE, hot[0].heat,
		 (size_t)(c0 - m) / PAGE, cold[0].length / PAGE, cold[0].heat);
	CHECK(hot[0].heat > 0);
	CHECK(h0 >= m && h0 + hot[0].length <= m + HOT * PAGE);
	CHECK_EQ(cold[0].heat, 0);
	CHECK(c0 >= m + HOT * PAGE && c0 + cold[0].length <= m + NPAGES * PAGE);
	CHECK(cold[0].length >= (NPAGES - HOT) / 2 * PAGE);
	/* no hot range in the cold part */
	for (int i = 0; i < nh; i++)
		CHECK((char *)hot[i].addr + hot[i].length <= m + HOT * PAGE);
}

static void faults_source(void)
{
	bypass_pager *p = make(BUDGET);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	memset(m, 1, NPAGES * PAGE); /* every page once: the cold part too */
	struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_FAULTS,
					      .interval_ms = 20 };
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
	CHECK_EQ(bypass_pager_heat_reset(p), 0);
	CHECK_EQ(hstats(p).samples, 0);
	sweep_hot(p, m, 6, false);
	struct bypass_pager_heat_stats st = hstats(p);
	TEST_LOG("faults: %llu samples, %llu page-intervals accessed, %llu written, %llu refs",
		 (unsigned long long)st.samples, (unsigned long long)st.fault_accessed,
		 (unsigned long long)st.fault_written, (unsigned long long)st.refs_set);
	CHECK(st.fault_accessed >= HOT);
	CHECK_EQ(st.fault_written, 0); /* reads only */
	check_ranking(p, m, "faults");
	sweep_hot(p, m, 3, true);
	CHECK(hstats(p).fault_written > 0);
	/* reset forgets */
	CHECK_EQ(bypass_pager_heat_disable(p), 0);
	CHECK_EQ(bypass_pager_heat_reset(p), 0);
	struct bypass_pager_heat_range r[4];
	CHECK_EQ(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, r, 4), 0);
	CHECK_EQ(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_COLD, r, 4), 1);
	CHECK_EQ(r[0].length, NPAGES * PAGE);
	CHECK_EQ(hstats(p).fault_accessed, 0);
	for (size_t i = 0; i < NPAGES; i++) { /* the data survived */
		CHECK_EQ(m[i * PAGE], 1);
		CHECK_EQ(m[i * PAGE + 8], i < HOT ? (char)i : 1);
	}
	/* a region mapped over the page ids of an unmapped hot one starts cold */
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
	sweep_hot(p, m, 3, false);
	CHECK(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, r, 4) >= 1);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	char *m2;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m2), 0);
	uint64_t s0 = hstats(p).samples;
	while (hstats(p).samples < s0 + 2)
		usleep(1000);
	CHECK_EQ(bypass_pager_heat_ranges(p, BYPASS_PAGER_HEAT_HOT, r, 4), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

static void written_source(void)
{
	bypass_pager *p = make(2 * NPAGES); /* no eviction */
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	unsigned sum = 0;
	for (size_t i = 0; i < NPAGES; i++) /* read: clean, write-protected */
		sum += (unsigned char)((volatile char *)m)[i * PAGE];
	CHECK_EQ(sum, 0);
	struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_WRITTEN,
					      .interval_ms = 20 };
	int e = bypass_pager_heat_enable(p, &c);
	if (e == -EOPNOTSUPP) { /* no PAGEMAP_SCAN: the one reason to skip */
		struct bypass_pager_heat_stats st = hstats(p);
		CHECK_EQ(st.written_status, e);
		TEST_LOG("SKIP written source: %s (%s)", strerror(-e), st.written_why);
		CHECK_EQ(bypass_pager_destroy(p), 0);
		return;
	}
	CHECK_EQ(e, 0);
	CHECK_EQ(hstats(p).sources, BYPASS_PAGER_HEAT_WRITTEN);
	uint64_t s0 = hstats(p).samples;
	while (hstats(p).samples < s0 + 2)
		usleep(1000);
	/* writes make the pages dirty: PAGE_IS_WRITTEN, once each */
	sweep_hot(p, m, 3, true);
	struct bypass_pager_heat_stats st = hstats(p);
	TEST_LOG("written: %llu samples, %llu pages newly written, fault source off (%llu)",
		 (unsigned long long)st.samples, (unsigned long long)st.written_pages,
		 (unsigned long long)st.fault_accessed);
	CHECK_EQ(st.written_pages, HOT);
	CHECK_EQ(st.fault_accessed, 0);
	check_ranking(p, m, "written");
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

/*
 * The view file, asked for explicitly; and the library reads no environment
 * behind the caller's back: BYPASS_PAGER_HEAT starts no sampler (the
 * preload reads it: tests/pager/preload-badenv).
 */
static void env_and_view(void)
{
	char file[256];
	snprintf(file, sizeof(file), "%s/heat-view.txt", tmpdir());
	setenv("BYPASS_PAGER_HEAT", "faults,written", 1);
	setenv("BYPASS_PAGER_HEAT_INTERVAL", "10", 1);
	setenv("BYPASS_PAGER_HEAT_FILE", file, 1);
	bypass_pager *p = make(BUDGET);
	CHECK_EQ(hstats(p).sources, 0); /* the environment did nothing */
	CHECK_EQ(hstats(p).samples, 0);
	unsetenv("BYPASS_PAGER_HEAT");
	unsetenv("BYPASS_PAGER_HEAT_INTERVAL");
	unsetenv("BYPASS_PAGER_HEAT_FILE");
	struct bypass_pager_heat_config c = { .sources = BYPASS_PAGER_HEAT_FAULTS,
					      .interval_ms = 10, .stats_path = file };
	CHECK_EQ(bypass_pager_heat_enable(p, &c), 0);
	struct bypass_pager_heat_stats st = hstats(p);
	CHECK(st.sources & BYPASS_PAGER_HEAT_FAULTS);
	CHECK_EQ(st.interval_ms, 10);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	sweep_hot(p, m, 3, false);
	CHECK_EQ(bypass_pager_destroy(p), 0); /* writes the view a last time */
	FILE *f = fopen(file, "r");
	if (!f)
		TEST_FAIL("no view file %s: %s", file, strerror(errno));
	char line[512];
	bool head = false, hot = false, cold = false;
	while (fgets(line, sizeof(line), f)) {
		head |= !strcmp(line, "bypass-heat 1\n");
		hot |= !strncmp(line, "hot 0x", 6);
		cold |= !strncmp(line, "cold 0x", 7);
	}
	fclose(f);
	CHECK(head && hot && cold);
	snprintf(line, sizeof(line), "%s.tmp", file);
	CHECK(access(line, F_OK) < 0); /* renamed, not left behind */
	TEST_LOG("environment ignored, view file: ok");
}

int main(void)
{
	test_timeout(240);
	unsetenv("BYPASS_PAGER_HEAT");
	bad_args();
	faults_source();
	written_source();
	env_and_view();
	tmpdir_cleanup();
	return test_pass("pager/heat");
}
