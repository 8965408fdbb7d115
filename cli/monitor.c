/* SPDX-License-Identifier: MIT */
/*
 * bypass run's watch over the process tree while the program runs: every
 * tick (0.1 s) the resident memory of every process under the program
 * (proportional set size, so that pages two processes share count once),
 * its peak, the largest single process's high-water mark and the bytes the
 * tree read from storage; under a terminal, a one-line live status on
 * stderr that disappears at exit.  Nothing here reads the preloads'
 * counters: they write those at exit (report.c).
 */
#include "cli.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MON_MAX_PROCS 4096

double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The value of "key:" in a /proc file of "key: value kB" lines, in bytes
 * when unit_kb, else as written; -1 when absent or unreadable. */
static int64_t proc_field(pid_t pid, const char *file, const char *key, int unit_kb)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t kl = strlen(key);
	int64_t v = -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtoll(line + kl + 1, NULL, 10);
			if (unit_kb)
				v *= 1024;
			break;
		}
	}
	fclose(f);
	return v;
}

/* Append the children of every thread of pid (/proc/PID/task/TID/children,
 * CONFIG_PROC_CHILDREN).  Returns 0, or -1 when the kernel has no such file. */
static int children_of(pid_t pid, pid_t *out, size_t *n, size_t max)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0; /* gone */
	int have = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char cpath[400];
		snprintf(cpath, sizeof(cpath), "%s/%s/children", path, e->d_name);
		FILE *f = fopen(cpath, "re");
		if (!f) {
			if (errno == ENOENT && !have) {
				closedir(d);
				return -1;
			}
			continue;
		}
		have = 1;
		long c;
		while (fscanf(f, "%ld", &c) == 1)
			if (*n < max)
				out[(*n)++] = (pid_t)c;
		fclose(f);
	}
	closedir(d);
	return 0;
}

/* Without /proc/.../children: every process's parent from /proc/N/stat. */
static size_t tree_by_scan(pid_t root, pid_t *out, size_t max)
{
	static pid_t pid[MON_MAX_PROCS * 4], ppid[MON_MAX_PROCS * 4];
	size_t np = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) && np < sizeof(pid) / sizeof(pid[0])) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t k = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[k] = 0;
		char *rp = strrchr(buf, ')');
		int pp;
		if (!rp || sscanf(rp + 1, " %*c %d", &pp) != 1)
			continue;
		pid[np] = (pid_t)atoi(e->d_name);
		ppid[np++] = (pid_t)pp;
	}
	closedir(d);
	size_t n = 0, i = 0;
	out[n++] = root;
	while (i < n) {
		pid_t p = out[i++];
		for (size_t j = 0; j < np && n < max; j++)
			if (ppid[j] == p)
				out[n++] = pid[j];
	}
	return n;
}

static size_t tree(pid_t root, pid_t *out, size_t max)
{
	static int no_children_file;
	if (!no_children_file) {
		size_t n = 0, i = 0;
		out[n++] = root;
		while (i < n) {
			if (children_of(out[i++], out, &n, max) < 0) {
				no_children_file = 1;
				break;
			}
		}
		if (!no_children_file)
			return n;
	}
	return tree_by_scan(root, out, max);
}

void cli_mon_init(struct cli_monitor *m, pid_t root, uint64_t budget, int status)
{
	memset(m, 0, sizeof(*m));
	m->root = root;
	m->budget = budget;
	m->status = status;
	m->start = cli_now();
	m->interval = 0.1;
}

static void size_short(char *b, size_t len, uint64_t bytes)
{
	if (bytes >= (10ull << 30))
		snprintf(b, len, "%.0fG", (double)bytes / (1ull << 30));
	else if (bytes >= (1ull << 30))
		snprintf(b, len, "%.1fG", (double)bytes / (1ull << 30));
	else if (bytes >= (1ull << 20))
		snprintf(b, len, "%.1fM", (double)bytes / (1ull << 20));
	else
		snprintf(b, len, "%" PRIu64 "K", bytes >> 10);
}

static void status_line(struct cli_monitor *m, double now)
{
	char res[16], bud[16], line[256];
	size_short(res, sizeof(res), m->now_resident);
	size_short(bud, sizeof(bud), m->budget);
	unsigned el = (unsigned)(now - m->start);
	int n;
	if (m->budget)
		n = snprintf(line, sizeof(line),
			     "bypass: %s resident / %s budget, disk reads %.1f MiB/s, %u process%s, %u:%02u",
			     res, bud, m->read_rate / (1 << 20), m->now_procs,
			     m->now_procs == 1 ? "" : "es", el / 60, el % 60);
	else
		n = snprintf(line, sizeof(line), "bypass: %s resident, %u process%s, %u:%02u", res,
			     m->now_procs, m->now_procs == 1 ? "" : "es", el / 60, el % 60);
	struct winsize ws;
	int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
	if (n > cols - 1)
		n = cols - 1;
	if (n < 0)
		return;
	/* carriage return, the line, erase to its end: one write */
	char out[300];
	int k = snprintf(out, sizeof(out), "\r%.*s\033[K", n, line);
	if (k > 0 && write(STDERR_FILENO, out, (size_t)k) == k)
		m->shown = 1;
}

void cli_mon_tick(struct cli_monitor *m)
{
	double now = cli_now();
	static pid_t pids[MON_MAX_PROCS];
	size_t n = tree(m->root, pids, MON_MAX_PROCS);
	uint64_t total = 0, reads = 0;
	unsigned alive = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t pss = proc_field(pids[i], "smaps_rollup", "Pss", 1);
		if (pss < 0) {
			/* no smaps_rollup (Linux < 4.14) or gone: the RSS */
			pss = proc_field(pids[i], "status", "VmRSS", 1);
		}
		if (pss < 0)
			continue; /* exited meanwhile */
		alive++;
		total += (uint64_t)pss;
		int64_t hwm = proc_field(pids[i], "status", "VmHWM", 1);
		if (hwm > 0 && (uint64_t)hwm > m->largest_hwm)
			m->largest_hwm = (uint64_t)hwm;
		int64_t rb = proc_field(pids[i], "io", "read_bytes", 0);
		if (rb > 0)
			reads += (uint64_t)rb;
	}
	if (!alive)
		return;
	m->samples++;
	m->now_resident = total;
	m->now_procs = alive;
	if (total > m->peak)
		m->peak = total;
	if (alive > m->max_procs)
		m->max_procs = alive;
	/* read_bytes of processes that ended drop out of the sum: a rate only
	 * from a sum that grew */
	if (m->last_reads_t > 0 && now > m->last_reads_t) {
		double r = reads >= m->last_reads ? (double)(reads - m->last_reads) / (now - m->last_reads_t) : 0;
		m->read_rate = m->read_rate ? 0.5 * m->read_rate + 0.5 * r : r;
	}
	m->last_reads = reads;
	m->last_reads_t = now;
	/* The status: after the first second, every half second. */
	if (m->status && now - m->start >= 1.0 && now - m->last_status >= 0.5) {
		status_line(m, now);
		m->last_status = now;
	}
}

void cli_mon_clear(struct cli_monitor *m)
{
	if (m->shown) {
		static const char clear[] = "\r\033[K";
		if (write(STDERR_FILENO, clear, sizeof(clear) - 1) < 0)
			m->shown = 0;
		m->shown = 0;
	}
}
