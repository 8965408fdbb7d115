/* SPDX-License-Identifier: MIT */
/*
 * A memory cgroup's anonymous memory and page cache over one run (issue
 * 35's equal memory): a thread reads the cgroup's memory.stat and its
 * charge every 10 ms and keeps the peaks of its anonymous memory (v1 rss,
 * v2 anon), of its page cache (v1 cache, v2 file, less swapcached: pages of
 * swap kept in memory are the anonymous pages' own, not a file's) and of
 * its charge less its anonymous memory (the non-anonymous part: page cache
 * and the kernel memory charged to the cgroup), and the run's slack: the
 * highest level of that part the run held while its anonymous memory was
 * near its peak (pager.unmodified's slack; the rule is at slack_of below).
 */
#include "cgmem.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The whole of a small file (at most len - 1 bytes): its length, or -1. */
static ssize_t read_all(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t k = read(fd, buf + n, len - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The value of key (a whole word at the start of a line), or 0. */
static uint64_t stat_key(const char *buf, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

/* One sample of cg: false if its memory.stat cannot be read. */
static bool sample(const char *cg, uint64_t *anon, uint64_t *file, uint64_t *charge)
{
	char path[500], buf[16384];
	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	if (read_all(path, buf, sizeof(buf)) <= 0)
		return false;
	bool v2 = strstr(buf, "\nfile ") || !strncmp(buf, "anon ", 5);
	uint64_t sc = stat_key(buf, "swapcached");
	uint64_t f = stat_key(buf, v2 ? "file" : "cache");
	*anon = stat_key(buf, v2 ? "anon" : "rss");
	*file = f > sc ? f - sc : 0;
	char c[64];
	snprintf(path, sizeof(path), "%s/%s", cg, v2 ? "memory.current" : "memory.usage_in_bytes");
	*charge = read_all(path, c, sizeof(c)) > 0 ? strtoull(c, NULL, 10) : 0;
	return true;
}

static void take(struct pb_cg_sampler *s)
{
	uint64_t a, f, c;
	if (!sample(s->cg, &a, &f, &c))
		return;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (!s->t0.tv_sec && !s->t0.tv_nsec)
		s->t0 = t; /* a sampler started without pb_cg_mem_begin (a test's) */
	int64_t ms = (int64_t)(t.tv_sec - s->t0.tv_sec) * 1000 +
		     (t.tv_nsec - s->t0.tv_nsec) / 1000000;
	uint64_t na = c > a ? c - a : 0;
	if (a > s->m.anon || !s->m.samples) { /* the first sample of the peak */
		s->m.anon = a;
		s->m.nonanon_at = na;
	}
	if (s->n == s->cap && s->cap < PB_CG_MEM_MAX_SAMPLES) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		void *p = realloc(s->pts, cap * sizeof(*s->pts));
		if (p) {
			s->pts = p;
			s->cap = cap;
		}
	}
	if (s->n < s->cap) {
		s->pts[s->n].anon = a;
		s->pts[s->n].nonanon = na;
		s->pts[s->n].file = f;
		s->pts[s->n].ms = ms < 0 ? 0 : ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
		s->n++;
	}
	if (f > s->m.file)
		s->m.file = f;
	if (c > a && c - a > s->m.nonanon)
		s->m.nonanon = c - a;
	s->m.samples++;
}

/* The median of v[0..n) (1 <= n <= PB_CG_SLACK_RUN), the lower middle of
 * an even count; v is sorted in place. */
static uint64_t median_small(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return v[(n - 1) / 2];
}

/* The anonymous memory from which a sample is near the peak. */
static uint64_t band_of(uint64_t peak)
{
	return peak - peak * (100 - PB_CG_SLACK_NEAR_PCT) / 100;
}

/* The level at sample i: the median of the PB_CG_SLACK_RUN samples centred
 * on it (fewer at the run's ends). */
static uint64_t level_at(const struct pb_cg_pt *p, size_t n, size_t i)
{
	const size_t h = PB_CG_SLACK_RUN / 2;
	uint64_t v[PB_CG_SLACK_RUN];
	size_t k = 0;
	for (size_t j = i > h ? i - h : 0; j < n && j <= i + h; j++)
		v[k++] = p[j].nonanon;
	return median_small(v, k);
}

/*
 * The run's slack: the highest level of its charge less its anonymous
 * memory that it held while its anonymous memory was within
 * PB_CG_SLACK_NEAR_PCT % of its peak.  The level at a sample is the median
 * of the PB_CG_SLACK_RUN samples centred on it (fewer at the run's ends),
 * so a spike of fewer than half of them (kernel memory, the exit's
 * teardown) is not a level, and the band keeps out the samples where the
 * program has not grown yet or is tearing down.  Why not the sample of the
 * anonymous peak (the rule until this session): a program whose anonymous
 * memory sits flat at its budget while its page cache grows (the C
 * program writes its 28 MiB file in the run's last quarter) has its peak
 * in whichever sample happens to be a page higher: 1.1 to 34.2 MiB over
 * runs of the same program.  Nor the highest sample (the rule before it):
 * single spikes, up to 18.6 MiB for a program whose level is 1.2.
 */
static uint64_t slack_of(const struct pb_cg_pt *p, size_t n, uint64_t peak)
{
	uint64_t near = band_of(peak), best = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].anon < near)
			continue;
		uint64_t lv = level_at(p, n, i);
		if (lv > best)
			best = lv;
	}
	return best;
}

/* --param cg_trace: the run's samples appended to s->trace (cgmem.h). */
static int write_trace(const struct pb_cg_sampler *s, const struct pb_cg_mem *m)
{
	static int runs; /* the runs traced by this process */
	FILE *f = fopen(s->trace, "a");
	if (!f)
		return -errno;
	uint64_t near = band_of(m->anon);
	fprintf(f, "# run %d: %s; cgroup %s\n", ++runs, s->label, s->cg);
	fprintf(f, "# %zu samples every %d ms (%d taken); anonymous peak %llu KiB, band from "
		"%llu KiB (%d%%); slack %llu KiB (the highest level in the band, a level the "
		"median of %d samples); highest charge less anonymous %llu KiB; page cache "
		"peak %llu KiB\n",
		s->n, PB_CG_MEM_PERIOD_MS, m->samples, (unsigned long long)(m->anon >> 10),
		(unsigned long long)(near >> 10), PB_CG_SLACK_NEAR_PCT,
		(unsigned long long)(m->nonanon_at >> 10), PB_CG_SLACK_RUN,
		(unsigned long long)(m->nonanon >> 10), (unsigned long long)(m->file >> 10));
	fprintf(f, "# ms anon_kib nonanon_kib file_kib level_kib\n");
	for (size_t i = 0; i < s->n; i++) {
		const struct pb_cg_pt *p = &s->pts[i];
		fprintf(f, "%u %llu %llu %llu ", p->ms, (unsigned long long)(p->anon >> 10),
			(unsigned long long)(p->nonanon >> 10), (unsigned long long)(p->file >> 10));
		if (p->anon < near)
			fputs("-\n", f);
		else
			fprintf(f, "%llu\n", (unsigned long long)(level_at(s->pts, s->n, i) >> 10));
	}
	int e = ferror(f) ? -EIO : 0;
	if (fclose(f) && !e)
		e = -errno;
	return e;
}

static void *sampler(void *arg)
{
	struct pb_cg_sampler *s = arg;
	struct timespec nap = { 0, PB_CG_MEM_PERIOD_MS * 1000000L };
	while (!s->stop) {
		take(s);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

void pb_cg_mem_begin(struct pb_cg_sampler *s, const char *cg)
{
	memset(s, 0, sizeof(*s));
	if (!cg || !cg[0])
		return;
	snprintf(s->cg, sizeof(s->cg), "%s", cg);
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	pthread_t t;
	if (pthread_create(&t, NULL, sampler, s) == 0)
		s->thread = (unsigned long)t;
}

void pb_cg_mem_trace(struct pb_cg_sampler *s, const char *path, const char *label)
{
	snprintf(s->trace, sizeof(s->trace), "%s", path ? path : "");
	snprintf(s->label, sizeof(s->label), "%s", label ? label : "");
}

void pb_cg_mem_end(struct pb_cg_sampler *s, struct pb_cg_mem *m)
{
	if (s->thread) {
		s->stop = 1;
		pthread_join((pthread_t)s->thread, NULL);
		s->thread = 0;
	}
	if (s->cg[0])
		take(s); /* the last of it (what the run left charged) */
	*m = s->m;
	if (s->n)
		m->nonanon_at = slack_of(s->pts, s->n, m->anon);
	s->trace_err = s->trace[0] && s->cg[0] ? write_trace(s, m) : 0;
	free(s->pts);
	s->pts = NULL;
	s->n = s->cap = 0;
}

void pb_cg_mem_max(struct pb_cg_mem *sum, const struct pb_cg_mem *m)
{
	if (m->anon > sum->anon) {
		sum->anon = m->anon;
		sum->nonanon_at = m->nonanon_at;
	}
	if (m->file > sum->file)
		sum->file = m->file;
	if (m->nonanon > sum->nonanon)
		sum->nonanon = m->nonanon;
	sum->samples += m->samples;
}
