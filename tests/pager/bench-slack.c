/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified's slack rule (bench/pager/cgmem.c): Linux's limit is the
 * budget + the preload's charge less its anonymous memory, taken from the
 * samples of its calibration run.  The sampler is fed fake cgroup v1 files
 * (memory.stat and memory.usage_in_bytes in a temporary directory), one
 * sample at a time, in the shapes seen in traced runs:
 *   - the C program: anonymous memory flat at its budget, its highest
 *     sample early, while its own output file's page cache grows late:
 *     the slack is the late level (the sample of the anonymous peak gave
 *     1.1-34.2 MiB over runs of the same program);
 *   - a spike of one or two samples at the anonymous peak: not a level;
 *   - the exit's teardown (anonymous memory falling, charge spiking): not
 *     counted;
 *   - a sampler that never sampled: no slack.
 * And --param cg_trace's file (pb_cg_mem_trace): each run appended as a
 * header and one line a sample, in which the level the rule read is the
 * slack's at its highest and "-" outside the band; a file that cannot be
 * written is an error the caller sees.
 */
#include "pager/cgmem.c" /* bench/pager/cgmem.c: bench/CMakeLists.txt adds bench/ */

#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024)

static char dir[64];

/* One sample of anon and non-anonymous bytes (page cache: all of it). */
static void feed(struct pb_cg_sampler *s, uint64_t anon, uint64_t nonanon)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	FILE *f = fopen(path, "w");
	CHECK(f);
	fprintf(f, "cache %llu\nrss %llu\nswapcached 0\n", (unsigned long long)nonanon,
		(unsigned long long)anon);
	CHECK(fclose(f) == 0);
	snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", dir);
	f = fopen(path, "w");
	CHECK(f);
	fprintf(f, "%llu\n", (unsigned long long)(anon + nonanon));
	CHECK(fclose(f) == 0);
	take(s);
}

/* A sampler on dir without its thread (the test is the thread). */
static void start(struct pb_cg_sampler *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->cg, sizeof(s->cg), "%s", dir);
}

static double mib(uint64_t b)
{
	return (double)b / (double)MIB;
}

/* The C program's shape (below) fed to s: 137 samples (pb_cg_mem_end
 * takes a 138th, the last files again: what the run left). */
static void c_program(struct pb_cg_sampler *s)
{
	feed(s, 0, 0);
	for (int i = 0; i < 100; i++)
		feed(s, (i == 20 ? 185 : 177 + i % 4) * MIB / 10, 13 * MIB / 10);
	for (int i = 0; i < 35; i++)
		feed(s, (177 + i % 5) * MIB / 10, (i < 10 ? 13 + 287 * i / 10 : 300) * MIB / 10);
	feed(s, 0, 30 * MIB);
}

/* --param cg_trace's file after two runs of the C program's shape: each
 * run's header names it, one line a sample (ms, anon, nonanon, file,
 * level in KiB), the level "-" outside the band, the highest level the
 * slack; then a path that cannot be written. */
static void check_trace(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/trace", dir);
	struct pb_cg_sampler s;
	struct pb_cg_mem m;
	for (int run = 1; run <= 2; run++) {
		start(&s);
		pb_cg_mem_trace(&s, path, run == 1 ? "first" : "second");
		c_program(&s);
		pb_cg_mem_end(&s, &m);
		CHECK_EQ(s.trace_err, 0);
		CHECK_EQ(m.nonanon_at, 30 * MIB);
	}
	FILE *f = fopen(path, "r");
	CHECK(f);
	char line[512];
	int runs = 0, lines = 0, dashes = 0, headers = 0;
	unsigned long long top = 0, last_ms = 0;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#') {
			headers++;
			int k;
			if (sscanf(line, "# run %d:", &k) == 1) {
				runs++;
				CHECK_EQ(k, runs);
				CHECK(strstr(line, runs == 1 ? "first; cgroup " : "second; cgroup "));
				last_ms = 0;
			}
			if (strstr(line, "samples every"))
				CHECK(strstr(line, "slack 30720 KiB"));
			continue;
		}
		unsigned long long ms, a, na, fc, lv;
		char lvs[32];
		CHECK(sscanf(line, "%llu %llu %llu %llu %31s", &ms, &a, &na, &fc, lvs) == 5);
		CHECK(ms >= last_ms); /* the milliseconds since the run's start */
		last_ms = ms;
		CHECK_EQ(fc, na); /* feed() charges page cache only */
		lines++;
		if (!strcmp(lvs, "-")) {
			dashes++;
			CHECK(a < 185ull * 1024 / 10 * 9 / 10); /* below the band */
			continue;
		}
		CHECK(sscanf(lvs, "%llu", &lv) == 1);
		if (lv > top)
			top = lv;
	}
	fclose(f);
	TEST_LOG("trace: %d runs, %d sample lines (%d outside the band), %d header lines, "
		 "highest level %llu KiB", runs, lines, dashes, headers, top);
	CHECK_EQ(runs, 2);
	CHECK_EQ(lines, 2 * 138);
	CHECK_EQ(dashes, 2 * 3); /* the first and the last two samples: anon 0 */
	CHECK_EQ(headers, 2 * 3);
	CHECK_EQ(top, 30 * 1024);
	unlink(path);

	/* a file that cannot be written: the error, the slack still right */
	snprintf(path, sizeof(path), "%s/no-such-dir/trace", dir);
	start(&s);
	pb_cg_mem_trace(&s, path, "unwritable");
	c_program(&s);
	pb_cg_mem_end(&s, &m);
	CHECK_EQ(s.trace_err, -ENOENT);
	CHECK_EQ(m.nonanon_at, 30 * MIB);
}

int main(void)
{
	test_timeout(60);
	snprintf(dir, sizeof(dir), "/tmp/bench-slack-XXXXXX");
	CHECK(mkdtemp(dir));
	struct pb_cg_sampler s;
	struct pb_cg_mem m;

	/* the C program: 100 samples at 17.7-18.5 MiB with 1.3 MiB beside,
	 * the peak (18.5) at the 20th; then 35 samples at 17.7-18.1 while the
	 * file's cache climbs to 30 MiB and stays; then the exit */
	start(&s);
	c_program(&s);
	pb_cg_mem_end(&s, &m);
	TEST_LOG("C program: slack %.1f MiB (anonymous peak %.1f, highest sample %.1f)",
		 mib(m.nonanon_at), mib(m.anon), mib(m.nonanon));
	CHECK_EQ(m.anon, 185 * MIB / 10);
	CHECK_EQ(m.nonanon_at, 30 * MIB);

	/* a level of 1.2 MiB with spikes of 18 MiB: one sample at the
	 * anonymous peak, two in a row later (neither is a level) */
	start(&s);
	for (int i = 0; i < 200; i++) {
		uint64_t na = 12 * MIB / 10;
		if (i == 50 || i == 120 || i == 121)
			na = 18 * MIB;
		feed(&s, (i == 50 ? 200 : 190 + i % 7) * MIB / 10, na);
	}
	pb_cg_mem_end(&s, &m);
	TEST_LOG("spikes: slack %.1f MiB (highest sample %.1f)", mib(m.nonanon_at),
		 mib(m.nonanon));
	CHECK_EQ(m.nonanon, 18 * MIB);
	CHECK_EQ(m.nonanon_at, 12 * MIB / 10);

	/* the teardown: the anonymous memory falls below the band while
	 * the charge less it rises to 20 MiB for 10 samples */
	start(&s);
	for (int i = 0; i < 100; i++)
		feed(&s, 20 * MIB, MIB);
	for (int i = 0; i < 10; i++)
		feed(&s, (17 - i) * MIB, 20 * MIB);
	pb_cg_mem_end(&s, &m);
	TEST_LOG("teardown: slack %.1f MiB (highest sample %.1f)", mib(m.nonanon_at),
		 mib(m.nonanon));
	CHECK_EQ(m.nonanon_at, MIB);

	/* a level held at the run's very start (the window cut short there) */
	start(&s);
	for (int i = 0; i < 3; i++)
		feed(&s, 20 * MIB, 4 * MIB);
	for (int i = 0; i < 50; i++)
		feed(&s, 19 * MIB, MIB);
	pb_cg_mem_end(&s, &m);
	CHECK_EQ(m.nonanon_at, 4 * MIB);

	/* nothing sampled (no cgroup): no slack, nothing left allocated */
	memset(&s, 0, sizeof(s));
	pb_cg_mem_end(&s, &m);
	CHECK_EQ(m.samples, 0);
	CHECK_EQ(m.nonanon_at, 0);
	CHECK(!s.pts);

	check_trace();

	char path[128];
	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", dir);
	unlink(path);
	rmdir(dir);
	return test_pass("pager/bench-slack");
}
