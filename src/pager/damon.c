/* SPDX-License-Identifier: MIT */
/*
 * The DAMON source of access heat: a kdamond of this process's own,
 * configured through DAMON's sysfs interface (Documentation/admin-guide/mm/
 * damon/usage.rst), monitoring the virtual address ranges of one pager's
 * regions, with one "stat" scheme for every region accessed at least once
 * per aggregation; each round writes "update_schemes_tried_regions" to the
 * kdamond's state (the write returns once the scheme was applied, about an
 * interval later) and reads the tried regions: start, end, nr_accesses.
 *
 * DAMON's sysfs interface is machine-wide: the number of kdamonds cannot
 * change while any of them runs.  So bypass uses DAMON only when no kdamond
 * runs, takes kdamond 0 (nr_kdamonds = 1), holds an flock on nr_kdamonds
 * while it does (another bypass process then gets -EBUSY), and removes it
 * again on disable, on destroy and at exit.  A process killed outright
 * leaves no running kdamond either: DAMON stops a kdamond whose target
 * processes are gone; the stopped kdamond's directory is taken over by the
 * next user (its pid_target names a dead process).
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/table.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "core/syscall.h"
#include "pager/heat.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* paths below are relative to bp_damon_root */
#define KDS "kdamonds"
#define KD0 KDS "/0"
#define CTX KD0 "/contexts/0"
#define SCHEME CTX "/schemes/0"
#define DAMON_MAX_RANGES 32u /* monitored ranges: the closest regions merge */

struct bp_damon {
	struct bp_heat *h;
	unsigned max_acc;  /* samples per aggregation */
	uint64_t sig;      /* the ranges last written */
};

static struct {
	pthread_mutex_t lock;
	int lockfd;       /* nr_kdamonds, flock'ed while kdamond 0 is ours */
	pid_t owner;      /* the process that started it */
	struct bp_damon *d;
	bool atexit_set;
} g = { PTHREAD_MUTEX_INITIALIZER, -1, 0, NULL, false };

/* ------------------------------------------------------------ sysfs */

const char *bp_damon_root = "/sys/kernel/mm/damon/admin";

static const char *full(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", bp_damon_root, rel);
	return buf;
}

static int sys_write(const char *rel, const char *val)
{
	char path[PATH_MAX];
	/* O_TRUNC: ignored by sysfs, needed by the tests' fake tree */
	int fd = bp_sys_open(full(path, sizeof(path), rel), O_WRONLY | O_TRUNC | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	size_t len = strlen(val);
	ssize_t n;
	do /* the system call (core/syscall.h): the atexit handler runs this
	    * outside bypass, where write is the pager preload's wrapper */
		n = bp_sys_write(fd, val, len);
	while (n < 0 && errno == EINTR);
	int e = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	bp_sys_close(fd);
	return e;
}

static int sys_writeu(const char *rel, unsigned long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%llu", v);
	return sys_write(rel, b);
}

static int sys_read(const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	int fd = bp_sys_open(full(path, sizeof(path), rel), O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ssize_t n;
	do
		n = bp_sys_read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	int e = n < 0 ? -errno : 0;
	bp_sys_close(fd);
	if (e)
		return e;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static long long sys_readll(const char *rel)
{
	char b[32];
	if (sys_read(rel, b, sizeof(b)))
		return -1;
	return strtoll(b, NULL, 10);
}

/* ------------------------------------------------------------ ranges */

struct range {
	uintptr_t s, e;
};

/*
 * The pager's regions as at most DAMON_MAX_RANGES ranges (the smallest gaps
 * merged: a merged gap is monitored but matches no page of ours).
 */
static size_t pager_ranges(struct bypass_pager *p, struct range *out)
{
	size_t n = 0;
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (size_t i = 0; t && i < t->n; i++) {
		const struct region *r = t->r[i];
		if (r->pager != p)
			continue;
		if (n && out[n - 1].e == r->start) {
			out[n - 1].e = r->end;
			continue;
		}
		if (n == DAMON_MAX_RANGES) { /* merge the closest pair */
			size_t best = 0;
			for (size_t k = 1; k + 1 < n; k++)
				if (out[k + 1].s - out[k].e < out[best + 1].s - out[best].e)
					best = k;
			if (r->start - out[n - 1].e < out[best + 1].s - out[best].e) {
				out[n - 1].e = r->end;
				continue;
			}
			out[best].e = out[best + 1].e;
			memmove(&out[best + 1], &out[best + 2], (n - best - 2) * sizeof(out[0]));
			n--;
		}
		out[n++] = (struct range){ r->start, r->end };
	}
	bp_tab_leave(idx);
	return n;
}

/* Write the monitored ranges if they changed; commit a running kdamond. */
static int set_ranges(struct bp_damon *d, bool running)
{
	struct range rg[DAMON_MAX_RANGES];
	size_t n = pager_ranges(d->h->p, rg);
	if (!n) { /* no region yet: watch the heat arrays (never ours to rank) */
		rg[0].s = (uintptr_t)d->h->score;
		rg[0].e = rg[0].s + PG_SIZE;
		n = 1;
	}
	uint64_t sig = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		sig = (sig ^ rg[i].s ^ (rg[i].e << 1)) * 1099511628211ull;
	if (sig == d->sig)
		return 0;
	int e = sys_writeu(CTX "/targets/0/regions/nr_regions", n);
	for (size_t i = 0; !e && i < n; i++) {
		char path[160];
		snprintf(path, sizeof(path), CTX "/targets/0/regions/%zu/start", i);
		e = sys_writeu(path, rg[i].s);
		snprintf(path, sizeof(path), CTX "/targets/0/regions/%zu/end", i);
		if (!e)
			e = sys_writeu(path, rg[i].e);
	}
	if (!e && running)
		e = sys_write(KD0 "/state", "commit");
	if (!e)
		d->sig = sig;
	return e;
}

/* ------------------------------------------------------------ start, stop */

static void teardown_locked(void)
{
	if (!g.d)
		return;
	sys_write(KD0 "/state", "off");
	sys_write(KDS "/nr_kdamonds", "0");
	if (g.lockfd >= 0)
		bp_sys_close(g.lockfd); /* releases the flock */
	g.lockfd = -1;
	bp_pg_free(g.d);
	g.d = NULL;
}

/* A forked child must not keep the parent's flock alive after it exits. */
static void at_fork_child(void)
{
	pthread_mutex_init(&g.lock, NULL);
	if (g.lockfd >= 0)
		bp_sys_close(g.lockfd);
	g.lockfd = -1;
	bp_pg_free(g.d); /* the child's copy of the parent's */
	g.d = NULL;
}

static void at_exit(void)
{
	bp_mutex_lock(&g.lock, BP_RANK_DAMON);
	if (g.d && g.owner == getpid())
		teardown_locked();
	bp_mutex_unlock(&g.lock, BP_RANK_DAMON);
}

/*
 * May kdamond i (off) be taken over?  Only a leftover of a bypass-like user:
 * virtual address monitoring of one process that no longer exists.
 */
static bool leftover(void)
{
	char ops[32];
	if (sys_read(CTX "/operations", ops, sizeof(ops)) ||
	    (strcmp(ops, "vaddr") && strcmp(ops, "fvaddr")))
		return false;
	long long pid = sys_readll(CTX "/targets/0/pid_target");
	return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

static int start_locked(struct bp_heat *h, unsigned interval_ms, char *why, size_t wl)
{
	char nrpath[PATH_MAX];
	int fd = bp_sys_open(full(nrpath, sizeof(nrpath), KDS "/nr_kdamonds"), O_RDWR | O_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(why, wl, "%s: %s (DAMON's sysfs needs root)", nrpath, strerror(e));
		return e == EACCES ? -EPERM : -e;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		bp_sys_close(fd);
		snprintf(why, wl, "another bypass process uses DAMON");
		return -EBUSY;
	}
	char buf[256];
	long long nr = sys_readll(KDS "/nr_kdamonds");
	for (long long i = 0; i < nr; i++) {
		char path[96];
		snprintf(path, sizeof(path), KDS "/%lld/state", i);
		if (sys_read(path, buf, sizeof(buf)) == 0 && strcmp(buf, "off")) {
			snprintf(path, sizeof(path), KDS "/%lld/pid", i);
			long long kpid = sys_readll(path);
			char ops[64] = "";
			snprintf(path, sizeof(path), KDS "/%lld/contexts/0/avail_operations", i);
			bool no_va = sys_read(path, ops, sizeof(ops)) == 0 && !strstr(ops, "vaddr");
			snprintf(why, wl, "kdamond %lld (pid %lld) runs, not ours (sysfs adds no "
				 "kdamond while one runs)%s%s%s", i, kpid,
				 no_va ? "; no vaddr monitoring either (" : "", no_va ? ops : "",
				 no_va ? " only)" : "");
			bp_sys_close(fd);
			return -EBUSY;
		}
	}
	if (nr > 1 || (nr == 1 && !leftover())) {
		snprintf(why, wl, "%lld kdamond(s) configured by someone else (off); not touched", nr);
		bp_sys_close(fd);
		return -EBUSY;
	}
	int e = sys_write(KDS "/nr_kdamonds", "0");
	if (!e)
		e = sys_write(KDS "/nr_kdamonds", "1");
	if (!e)
		e = sys_write(KD0 "/contexts/nr_contexts", "1");
	if (e) {
		snprintf(why, wl, "setting up kdamond 0: %s", strerror(-e));
		goto undo;
	}
	if (sys_read(CTX "/avail_operations", buf, sizeof(buf)) == 0 &&
	    !strstr(buf, "vaddr")) {
		snprintf(why, wl, "this kernel has no DAMON virtual address monitoring "
			 "(CONFIG_DAMON_VADDR; avail_operations: %s)", buf);
		e = -EOPNOTSUPP;
		goto undo;
	}
	/* fvaddr: only the ranges we give (vaddr would watch the whole
	 * address space, which works too: damon_apply keeps our pages) */
	e = sys_write(CTX "/operations", strstr(buf, "fvaddr") ? "fvaddr" : "vaddr");
	unsigned sample_us = interval_ms >= 100 ? 5000 : interval_ms * 50;
	struct bp_damon *d = bp_pg_calloc(1, sizeof(*d));
	if (!d && !e)
		e = -ENOMEM;
	if (e) {
		bp_pg_free(d);
		snprintf(why, wl, "configuring kdamond 0: %s", strerror(-e));
		goto undo;
	}
	d->h = h;
	d->max_acc = interval_ms * 1000 / sample_us;
	const struct {
		const char *path;
		unsigned long long v;
	} num[] = {
		{ CTX "/monitoring_attrs/intervals/sample_us", sample_us },
		{ CTX "/monitoring_attrs/intervals/aggr_us", interval_ms * 1000ull },
		{ CTX "/monitoring_attrs/intervals/update_us", 1000000 },
		{ CTX "/monitoring_attrs/nr_regions/min", 10 },
		{ CTX "/monitoring_attrs/nr_regions/max", 1000 },
		{ CTX "/targets/nr_targets", 1 },
		{ CTX "/targets/0/pid_target", (unsigned long long)getpid() },
		{ CTX "/schemes/nr_schemes", 1 },
		{ SCHEME "/access_pattern/sz/min", 0 },
		{ SCHEME "/access_pattern/sz/max", ~0ull >> 1 },
		{ SCHEME "/access_pattern/nr_accesses/min", 1 },
		{ SCHEME "/access_pattern/nr_accesses/max", 0xffffffffu },
		{ SCHEME "/access_pattern/age/min", 0 },
		{ SCHEME "/access_pattern/age/max", 0xffffffffu },
	};
	for (size_t i = 0; !e && i < BP_ARRAY_SIZE(num); i++) {
		e = sys_writeu(num[i].path, num[i].v);
		if (e)
			snprintf(why, wl, "%s: %s", num[i].path, strerror(-e));
	}
	if (!e && (e = sys_write(SCHEME "/action", "stat")))
		snprintf(why, wl, SCHEME "/action stat: %s", strerror(-e));
	if (!e && (e = set_ranges(d, false)))
		snprintf(why, wl, "the monitored regions: %s", strerror(-e));
	if (!e && (e = sys_write(KD0 "/state", "on")))
		snprintf(why, wl, "turning kdamond 0 on: %s", strerror(-e));
	if (e) {
		bp_pg_free(d);
		goto undo;
	}
	g.lockfd = fd;
	g.owner = getpid();
	g.d = d;
	h->damon = d;
	if (!g.atexit_set) {
		g.atexit_set = atexit(at_exit) == 0;
		pthread_atfork(NULL, NULL, at_fork_child);
	}
	return 0;
undo:
	sys_write(KD0 "/state", "off");
	sys_write(KDS "/nr_kdamonds", "0");
	bp_sys_close(fd);
	return e;
}

int bp_damon_start(struct bp_heat *h, unsigned interval_ms, char *why, size_t whylen)
{
	if (access(bp_damon_root, F_OK) < 0) {
		snprintf(why, whylen, "no %s (a kernel without CONFIG_DAMON_SYSFS)", bp_damon_root);
		return -ENOENT;
	}
	bp_mutex_lock(&g.lock, BP_RANK_DAMON);
	int e;
	if (g.d && g.owner == getpid()) {
		snprintf(why, whylen, "DAMON serves another pager of this process");
		e = -EBUSY;
	} else {
		e = start_locked(h, interval_ms, why, whylen);
	}
	bp_mutex_unlock(&g.lock, BP_RANK_DAMON);
	return e;
}

int bp_damon_read(struct bp_heat *h, struct bp_damon_range *out, size_t max,
		  unsigned *max_accesses)
{
	struct bp_damon *d = h->damon;
	int e = set_ranges(d, true);
	if (e)
		return e;
	e = sys_write(KD0 "/state", "update_schemes_tried_regions");
	if (e)
		return e;
	*max_accesses = d->max_acc;
	size_t n = 0;
	for (; n < max; n++) {
		char path[128];
		int k = snprintf(path, sizeof(path), SCHEME "/tried_regions/%zu/", n);
		char *leaf = path + k;
		size_t room = sizeof(path) - (size_t)k;
		snprintf(leaf, room, "start");
		long long s = sys_readll(path);
		snprintf(leaf, room, "end");
		long long en = sys_readll(path);
		snprintf(leaf, room, "nr_accesses");
		long long acc = sys_readll(path);
		if (s < 0 || en <= s || acc < 0)
			break; /* no more */
		out[n] = (struct bp_damon_range){ (uintptr_t)s, (uintptr_t)en, (unsigned)acc };
	}
	return (int)n;
}

void bp_damon_stop(struct bp_heat *h)
{
	bp_mutex_lock(&g.lock, BP_RANK_DAMON);
	if (g.d && g.d->h == h && g.owner == getpid())
		teardown_locked();
	h->damon = NULL;
	bp_mutex_unlock(&g.lock, BP_RANK_DAMON);
}
