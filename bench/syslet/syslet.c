/* SPDX-License-Identifier: MIT */
/*
 * bench_syslet: the Syslets async-test (open+read+close of 1000 small files,
 * cached and uncached; files.c) and the cost of one- and two-atom programs
 * beside the plain system calls (atoms.c).
 *
 * --param only=files|atoms runs one experiment.
 */
#include "syslet_bench.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

uint64_t sb_cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

void sb_note_load(struct bench_ctx *c, const char *when)
{
	char buf[64] = "?";
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			strcpy(buf, "?");
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
	}
	bench_note(c, "load average %s: %s (the machine is shared: CPU time is the steadier figure "
		   "when the load exceeds the CPU count)", when, buf);
}

int bench_syslet(struct bench_ctx *c)
{
	const char *only = bench_param(c, "only", NULL);
	int r1 = !only || !strcmp(only, "files") ? bench_syslet_files(c) : BENCH_SKIP;
	int r2 = !only || !strcmp(only, "atoms") ? bench_syslet_atoms(c) : BENCH_SKIP;
	if (r1 && r1 != BENCH_SKIP)
		return r1;
	if (r2 && r2 != BENCH_SKIP)
		return r2;
	return r1 == BENCH_SKIP && r2 == BENCH_SKIP ? BENCH_SKIP : 0;
}
