/* SPDX-License-Identifier: MIT */
/*
 * bypass heat FILE: print the live view of a pager's access heat, the file
 * that bypass_pager_heat_enable() (stats_path) or BYPASS_PAGER_HEAT_FILE
 * has the pager rewrite (atomic rename) every second: counters, then the
 * hottest and coldest ranges.  --watch prints it again every second.
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void heat_usage(FILE *f)
{
	fprintf(f, "usage: bypass heat [--watch|-w] [--count N|-n N] FILE\n"
		   "  print the access-heat view a pager writes to FILE (BYPASS_PAGER_HEAT_FILE,\n"
		   "  or stats_path of bypass_pager_heat_enable); --watch: again every second\n"
		   "  (N times with --count, else until interrupted)\n");
}

struct view {
	char key[48][32];
	char val[48][160];
	unsigned n;
};

static const char *get(const struct view *v, const char *k)
{
	for (unsigned i = 0; i < v->n; i++)
		if (!strcmp(v->key[i], k))
			return v->val[i];
	return "";
}

static unsigned long long getu(const struct view *v, const char *k)
{
	return strtoull(get(v, k), NULL, 10);
}

static void size_str(char *b, size_t len, unsigned long long bytes)
{
	if (bytes >= (1ull << 30))
		snprintf(b, len, "%.1f GiB", (double)bytes / (1ull << 30));
	else if (bytes >= (1ull << 20))
		snprintf(b, len, "%.1f MiB", (double)bytes / (1ull << 20));
	else
		snprintf(b, len, "%llu KiB", bytes >> 10);
}

/* Print FILE once; 0, or 1 if it cannot be read or is not a view. */
static int show(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "bypass heat: %s: %s\n", path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	struct stat sb;
	double age = -1;
	if (fstat(fileno(f), &sb) == 0) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		age = (double)(now.tv_sec - sb.st_mtim.tv_sec) +
		      (double)(now.tv_nsec - sb.st_mtim.tv_nsec) / 1e9;
	}
	struct view v = { .n = 0 };
	char line[256], ranges[2][16][160];
	unsigned nr[2] = { 0, 0 };
	bool head = false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!head) {
			if (strcmp(line, "bypass-heat 1"))
				break;
			head = true;
			continue;
		}
		int which = !strncmp(line, "hot ", 4) ? 0 : !strncmp(line, "cold ", 5) ? 1 : -1;
		if (which >= 0) {
			unsigned long long addr, len, heat;
			if (nr[which] < 16 &&
			    sscanf(line + 4 + which, "%llx %llu %llu", &addr, &len, &heat) == 3) {
				char sz[32];
				size_str(sz, sizeof(sz), len);
				snprintf(ranges[which][nr[which]++], sizeof(ranges[0][0]),
					 "  %#14llx  %10s  %8llu  %4llu", addr, sz, len >> 12, heat);
			}
			continue;
		}
		char *sp = strchr(line, ' ');
		if (!sp || v.n == 48)
			continue;
		*sp = 0;
		snprintf(v.key[v.n], sizeof(v.key[0]), "%.31s", line);
		snprintf(v.val[v.n], sizeof(v.val[0]), "%.159s", sp + 1);
		v.n++;
	}
	fclose(f);
	if (!head) {
		fprintf(stderr, "bypass heat: %s: not a heat view (no 'bypass-heat 1' line)\n", path);
		return CLI_EXIT_FAIL;
	}
	char src[64];
	snprintf(src, sizeof(src), "%s", get(&v, "sources"));
	size_t sl = strlen(src);
	if (sl && src[sl - 1] == ',')
		src[sl - 1] = 0;
	printf("pid %s  sources %s  every %s ms  %llu samples  (written %.1f s ago)\n",
	       get(&v, "pid"), src[0] ? src : "none", get(&v, "interval_ms"),
	       getu(&v, "samples"), age);
	printf("pager: %llu of %llu budget pages resident, %llu mapped; %llu swap-ins, "
	       "%llu evictions\n",
	       getu(&v, "resident_pages"), getu(&v, "budget_pages"), getu(&v, "mapped_pages"),
	       getu(&v, "faults_swapin"), getu(&v, "evictions"));
	printf("seen (page-intervals): faults %llu (writes %llu), written %llu, damon %llu "
	       "(%llu regions); 2Q refs set %llu; sampling %.1f ms\n",
	       getu(&v, "fault_accessed"), getu(&v, "fault_written"), getu(&v, "written_pages"),
	       getu(&v, "damon_accessed"), getu(&v, "damon_regions"), getu(&v, "refs_set"),
	       (double)getu(&v, "sample_ns") / 1e6);
	if (get(&v, "written_off")[0])
		printf("written: off: %s\n", get(&v, "written_off"));
	if (get(&v, "damon_off")[0])
		printf("damon: off: %s\n", get(&v, "damon_off"));
	for (int w = 0; w < 2; w++) {
		printf("%-8s  %14s  %10s  %8s  %4s\n", w ? "coldest" : "hottest", "address", "size",
		       "pages", "heat");
		for (unsigned i = 0; i < nr[w]; i++)
			printf("%s\n", ranges[w][i]);
		if (!nr[w])
			printf("  (none)\n");
	}
	return CLI_EXIT_OK;
}

int cli_heat(int argc, char **argv)
{
	bool watch = false;
	long count = -1;
	const char *file = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			heat_usage(stdout);
			return CLI_EXIT_OK;
		} else if (!strcmp(a, "--watch") || !strcmp(a, "-w")) {
			watch = true;
		} else if (!strcmp(a, "--count") || !strcmp(a, "-n")) {
			char *end;
			if (i + 1 >= argc || (count = strtol(argv[i + 1], &end, 10)) < 1 || *end) {
				fprintf(stderr, "bypass heat: %s wants a count of 1 or more\n", a);
				return CLI_EXIT_USAGE;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "bypass heat: unknown option %s\n", a);
			heat_usage(stderr);
			return CLI_EXIT_USAGE;
		} else if (file) {
			fprintf(stderr, "bypass heat: one FILE only\n");
			return CLI_EXIT_USAGE;
		} else {
			file = a;
		}
	}
	if (!file) {
		heat_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!watch)
		return show(file);
	for (long k = 0; count < 0 || k < count; k++) {
		if (k)
			sleep(1);
		if (isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		else if (k)
			printf("\n");
		int e = show(file);
		fflush(stdout);
		if (e)
			return e;
	}
	return CLI_EXIT_OK;
}
