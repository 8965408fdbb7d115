/* SPDX-License-Identifier: MIT */
/*
 * The Linux baselines' backends (split from linuxswap.c): the swap file
 * and the memory cgroup of the budget's size (pb_linux_setup, teardown,
 * the signal cleanup, pb_linux_limit and the cgroups of pager.unmodified),
 * and issue 35's compressed backends behind the same cgroup: zram as the
 * only swap, zswap in front of the swap file (pb_linux_use), their state
 * file for a SIGKILLed run's reap, and their pool's peak
 * (pb_linux_pool_begin/end).  The rows use only the interface in
 * pager_bench.h ("Linux swap baseline").
 */
#include "pager_bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ Linux side */


static struct pb_linux_env *cleanup_env; /* for the signal handler */
volatile pid_t pb_running_child;
volatile pid_t pb_running_group;

static void backend_undo(struct pb_linux_env *env);
static void comp_unlock(void);

void pb_linux_teardown(struct pb_linux_env *env)
{
	backend_undo(env);
	if (env->swap_on && swapoff(env->swapfile) == 0)
		env->swap_on = false;
	if (env->file_made && unlink(env->swapfile) == 0)
		env->file_made = false;
	if (env->cg_made) {
		for (int i = 0; i < 50 && rmdir(env->cg) < 0 && errno == EBUSY; i++) {
			struct timespec ts = { 0, 20000000 };
			nanosleep(&ts, NULL);
		}
		env->cg_made = false;
	}
	if (env->state[0])
		unlink(env->state);
	comp_unlock(); /* zram and zswap are undone: another bench may set them up */
}

static void on_fatal(int sig)
{
	pid_t child = pb_running_child, group = pb_running_group;
	if (group > 0) /* pager.unmodified: Redis's client side, its check */
		kill(-group, SIGKILL);
	if (child > 0) { /* out of the cgroup first: it must be empty to go */
		kill(-child, SIGKILL); /* pager.unmodified's: its process group */
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (cleanup_env) {
		pb_linux_teardown(cleanup_env);
		if (cleanup_env->bypass_file)
			unlink(cleanup_env->bypass_file);
		if (cleanup_env->extra_file)
			unlink(cleanup_env->extra_file);
		if (cleanup_env->scratch_dir) { /* its files, then itself */
			DIR *d = opendir(cleanup_env->scratch_dir);
			struct dirent *de;
			char p[600];
			while (d && (de = readdir(d)))
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
					snprintf(p, sizeof(p), "%s/%s", cleanup_env->scratch_dir,
						 de->d_name);
					unlink(p);
				}
			if (d)
				closedir(d);
			rmdir(cleanup_env->scratch_dir);
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Remove the swap files, swap and cgroup of env if the run is interrupted
 * (env NULL: stop doing so). */
void pb_cleanup_on_signal(struct pb_linux_env *env)
{
	cleanup_env = env;
	signal(SIGINT, env ? on_fatal : SIG_DFL);
	signal(SIGTERM, env ? on_fatal : SIG_DFL);
	signal(SIGHUP, env ? on_fatal : SIG_DFL);
}

/* Returns 0, or -1 with the reason in why. */
void pb_linux_reset(const struct pb_linux_env *env)
{
	char path[400];
	/* v1: reclaim every page charged to the cgroup (it has no task now);
	 * v2: ask memory.reclaim for all of it (EAGAIN when less was freed:
	 * fine, what is left is not the last run's) */
	snprintf(path, sizeof(path), "%s/memory.force_empty", env->cg);
	if (access(path, W_OK) == 0) {
		pb_write_small(path, "0");
	} else {
		snprintf(path, sizeof(path), "%s/memory.reclaim", env->cg);
		if (access(path, W_OK) == 0)
			pb_write_small(path, "1G");
	}
}

/* The pid in NAME if it is PREFIX<pid>SUFFIX and that process is gone. */
static bool stale_name(const char *name, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl))
		return false;
	char *end;
	long pid = strtol(name + pl, &end, 10);
	if (end == name + pl || strcmp(end, suffix) || pid <= 0)
		return false;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* ------------------------------------------ the compressed sides' lock */

/*
 * zram and zswap are system-wide: two bypass-bench processes must never
 * have them set up at once (one's zswap would sit in front of the other's
 * swap file; "zswap is enabled already" was another bench's, a trial saw).
 * A bench takes this file's exclusive lock (flock) before it first sets
 * either up, and keeps it until pb_linux_teardown (or its death: the lock
 * goes with the process), its pid written in it for the other's message.
 * Waited for at most env->comp_wait_s (--param compressed_wait, default
 * 300 s); then the side is not run, with the holder named.
 * BYPASS_BENCH_COMPRESSED_LOCK names another file (tests).
 */
#define PB_COMP_LOCK "/run/lock/bypass-bench-compressed.lock"
static int comp_fd = -1;

static const char *comp_path(void)
{
	const char *e = getenv("BYPASS_BENCH_COMPRESSED_LOCK");
	if (e && *e)
		return e;
	return access("/run/lock", W_OK) == 0 ? PB_COMP_LOCK : "/tmp/bypass-bench-compressed.lock";
}

/* Who holds it, as its holder wrote (or "a process that wrote nothing"). */
static void comp_holder(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (!buf[0])
		snprintf(buf, len, "a process that wrote nothing in it");
}

static int comp_lock(const struct pb_linux_env *env, char *why, size_t whylen)
{
	if (comp_fd >= 0)
		return 0;
	const char *path = comp_path();
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(why, whylen, "the lock of zram and zswap, %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char who[128];
		comp_holder(fd, who, sizeof(who));
		fprintf(stderr, "bypass-bench: waiting (at most %u s) for %s: zram/zswap are set up "
			"by %s\n", env->comp_wait_s, path, who);
		struct timespec t0, t, nap = { 0, 100000000 };
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0)
				break;
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec >= (time_t)env->comp_wait_s) {
				comp_holder(fd, who, sizeof(who));
				snprintf(why, whylen, "another bypass-bench has zram/zswap set up (%s "
					 "held by %s for the %u s this run waits: --param "
					 "compressed_wait); zram and zswap are system-wide, one "
					 "bench at a time", path, who, env->comp_wait_s);
				close(fd);
				return -1;
			}
			nanosleep(&nap, NULL);
		}
		fprintf(stderr, "bypass-bench: %s taken\n", path);
	}
	char me[64];
	int k = snprintf(me, sizeof(me), "pid %d (bypass-bench)\n", (int)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, me, (size_t)k, 0) != k)
		(void)0; /* only the other's message reads it */
	comp_fd = fd;
	return 0;
}

static void comp_unlock(void)
{
	if (comp_fd < 0)
		return;
	if (ftruncate(comp_fd, 0))
		(void)0;
	close(comp_fd);
	comp_fd = -1;
}

/* ------------------------------------------------------------ zram, zswap */

const char *const pb_backend_name[PB_NBACKENDS] = { "swap file", "zram", "zswap + swap file" };

#define ZSWAP_P "/sys/module/zswap/parameters/"

static void zram_path(char *buf, size_t len, int dev, const char *attr)
{
	snprintf(buf, len, "/sys/block/zram%d/%s", dev, attr);
}

/* A zram device set up by us: swap off, reset, removed if we added it. */
static void zram_down(int dev, bool added)
{
	char p[200], d[32];
	snprintf(d, sizeof(d), "/dev/zram%d", dev);
	swapoff(d); /* fails harmlessly when it is not swap */
	zram_path(p, sizeof(p), dev, "reset");
	for (int i = 0; i < 50 && pb_write_small(p, "1") == -EBUSY; i++) {
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
	if (added) {
		snprintf(d, sizeof(d), "%d", dev);
		pb_write_small("/sys/class/zram-control/hot_remove", d);
	}
}

/* A state file's undo (a killed run's, or ours): "zram DEV ADDED",
 * "zswap WAS_ON WAS_COMPRESSOR". */
static void undo_state(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[200], a[64], b[64];
	int dev, added;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "zram %d %d", &dev, &added) == 2 && dev >= 0)
			zram_down(dev, added);
		else if (sscanf(line, "zswap %63s %63s", a, b) == 2) {
			pb_write_small(ZSWAP_P "enabled", a);
			pb_write_small(ZSWAP_P "compressor", b);
		}
	}
	if (f)
		fclose(f);
}

static void write_state(struct pb_linux_env *env)
{
	if (!env->state[0])
		return;
	FILE *f = fopen(env->state, "w");
	if (!f)
		return;
	if (env->zram_dev >= 0)
		fprintf(f, "zram %d %d\n", env->zram_dev, env->zram_added ? 1 : 0);
	if (env->zswap_set)
		fprintf(f, "zswap %s %s\n", env->zswap_was_on, env->zswap_was_comp);
	fclose(f);
}

/* Back to the swap file alone (zram down, zswap parameters restored). */
static void backend_undo(struct pb_linux_env *env)
{
	if (env->zram_dev >= 0) {
		zram_down(env->zram_dev, env->zram_added);
		env->zram_dev = -1;
		env->zram_on = false;
	}
	if (env->zswap_set) {
		/* off first: the pool's pages were the exited child's (freed) */
		pb_write_small(ZSWAP_P "enabled", env->zswap_was_on);
		pb_write_small(ZSWAP_P "compressor", env->zswap_was_comp);
		env->zswap_set = false;
	}
	write_state(env);
	env->backend = PB_FILE;
}

/* The algorithm in brackets of zram's comp_algorithm. */
static void bracketed(const char *s, char *out, size_t len)
{
	const char *a = strchr(s, '['), *b = a ? strchr(a, ']') : NULL;
	if (!a || !b || (size_t)(b - a) > len)
		snprintf(out, len, "?");
	else
		snprintf(out, len, "%.*s", (int)(b - a - 1), a + 1);
}

static int zram_up(struct pb_linux_env *env, size_t size, char *why, size_t whylen)
{
	char p[200], buf[256], d[32];
	if (access("/sys/class/zram-control", F_OK) && access("/sys/block/zram0", F_OK)) {
		pb_run_cmd("modprobe", "zram");
		if (access("/sys/class/zram-control", F_OK) && access("/sys/block/zram0", F_OK)) {
			snprintf(why, whylen, "no zram module (no /sys/block/zram0, modprobe zram "
				 "failed)");
			return -1;
		}
	}
	/* zram0 if it is unused (disk size 0), else a device of our own */
	int dev = -1;
	bool added = false;
	if (pb_read_small("/sys/block/zram0/disksize", buf, sizeof(buf)) == 0 &&
	    strtoull(buf, NULL, 10) == 0)
		dev = 0;
	else if (pb_read_small("/sys/class/zram-control/hot_add", buf, sizeof(buf)) == 0) {
		dev = atoi(buf);
		added = true;
	}
	if (dev < 0) {
		snprintf(why, whylen, "zram0 is busy (its disk size is set) and no device could "
			 "be added (hot_add)");
		return -1;
	}
	env->zram_dev = dev;
	env->zram_added = added;
	write_state(env); /* from here, a killed run's reap undoes it */
	zram_path(p, sizeof(p), dev, "comp_algorithm");
	pb_write_small(p, "lz4"); /* where offered; else the default stays */
	if (pb_read_small(p, buf, sizeof(buf)) == 0)
		bracketed(buf, env->zram_comp, sizeof(env->zram_comp));
	zram_path(p, sizeof(p), dev, "disksize");
	snprintf(buf, sizeof(buf), "%zu", size);
	int e = pb_write_small(p, buf);
	if (e) {
		snprintf(why, whylen, "zram%d disksize %zu: %s (device busy?)", dev, size,
			 strerror(-e));
		return -1;
	}
	snprintf(d, sizeof(d), "/dev/zram%d", dev);
	if (pb_run_cmd("mkswap", d)) {
		snprintf(why, whylen, "mkswap %s failed", d);
		return -1;
	}
	if (swapon(d, SWAP_FLAG_PREFER | (32767 & SWAP_FLAG_PRIO_MASK)) < 0) {
		snprintf(why, whylen, "swapon %s: %s", d, strerror(errno));
		return -1;
	}
	env->zram_on = true;
	return 0;
}

static int zswap_up(struct pb_linux_env *env, char *why, size_t whylen)
{
	char buf[64];
	if (pb_read_small(ZSWAP_P "enabled", buf, sizeof(buf))) {
		snprintf(why, whylen, "no zswap in this kernel (%senabled absent)", ZSWAP_P);
		return -1;
	}
	if (buf[0] == 'Y') {
		snprintf(why, whylen, "zswap is enabled already (by someone else: not ours to "
			 "change or restore)");
		return -1;
	}
	snprintf(env->zswap_was_on, sizeof(env->zswap_was_on), "N");
	if (pb_read_small(ZSWAP_P "compressor", buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "lzo");
	buf[strcspn(buf, "\n")] = 0;
	snprintf(env->zswap_was_comp, sizeof(env->zswap_was_comp), "%.31s", buf);
	if (pb_read_small(ZSWAP_P "max_pool_percent", buf, sizeof(buf)) == 0) {
		buf[strcspn(buf, "\n")] = 0;
		snprintf(env->zswap_pool_pct, sizeof(env->zswap_pool_pct), "%.15s", buf);
	}
	env->zswap_set = true;
	write_state(env);
	/* lz4 where the kernel's crypto API has it (CONFIG_CRYPTO_LZ4): else
	 * the write fails and the compressor stays as it was */
	bool lz4 = pb_write_small(ZSWAP_P "compressor", "lz4") == 0;
	int e = pb_write_small(ZSWAP_P "enabled", "Y");
	if (e) {
		snprintf(why, whylen, "enabling zswap: %s", strerror(-e));
		return -1;
	}
	if (pb_read_small(ZSWAP_P "compressor", buf, sizeof(buf)) == 0) {
		buf[strcspn(buf, "\n")] = 0;
		snprintf(env->zswap_comp, sizeof(env->zswap_comp), "%.15s%s", buf,
			 lz4 ? "" : " (lz4 refused)");
	}
	return 0;
}

int pb_linux_use(struct pb_linux_env *env, int b, size_t swap_size, char *why, size_t whylen,
		 char *facts, size_t factslen)
{
	if (b < 0 || b >= PB_NBACKENDS || !env->file_made) {
		snprintf(why, whylen, "no swap file set up");
		return -1;
	}
	if ((b == PB_ZRAM || b == PB_ZSWAP) && comp_lock(env, why, whylen))
		return -1;
	backend_undo(env);
	if (b == PB_ZRAM) {
		if (env->swap_on && swapoff(env->swapfile) == 0)
			env->swap_on = false;
		if (env->swap_on) {
			snprintf(why, whylen, "swapoff %s: %s", env->swapfile, strerror(errno));
			return -1;
		}
		if (zram_up(env, swap_size, why, whylen)) {
			backend_undo(env);
			return -1;
		}
		if (facts)
			snprintf(facts, factslen, "zram%d the only swap: disksize %zu, %s",
				 env->zram_dev, swap_size, env->zram_comp);
	} else {
		if (!env->swap_on) {
			if (swapon(env->swapfile, SWAP_FLAG_PREFER |
				   (32767 & SWAP_FLAG_PRIO_MASK)) < 0) {
				snprintf(why, whylen, "swapon %s: %s", env->swapfile,
					 strerror(errno));
				return -1;
			}
			env->swap_on = true;
		}
		if (b == PB_ZSWAP && zswap_up(env, why, whylen)) {
			backend_undo(env);
			return -1;
		}
		if (facts && b == PB_ZSWAP)
			snprintf(facts, factslen, "zswap in front of the swap file: compressor %s, "
				 "max_pool_percent %s (the default, left alone), enabled only for "
				 "these runs", env->zswap_comp, env->zswap_pool_pct);
		else if (facts)
			snprintf(facts, factslen, "the swap file");
	}
	env->backend = b;
	return 0;
}

static uint64_t pool_now(const struct pb_linux_env *env, int field)
{
	char buf[512];
	if (env->backend == PB_ZRAM && env->zram_dev >= 0) {
		char p[200];
		unsigned long long v[5] = { 0 };
		zram_path(p, sizeof(p), env->zram_dev, "mm_stat");
		if (pb_read_small(p, buf, sizeof(buf)) == 0 &&
		    sscanf(buf, "%llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5)
			return v[field];
		return 0;
	}
	if (env->backend == PB_ZSWAP) {
		FILE *f = fopen("/proc/meminfo", "r");
		char k[64];
		unsigned long long kb;
		uint64_t r = 0;
		while (f && fgets(buf, sizeof(buf), f))
			if (sscanf(buf, "%63s %llu", k, &kb) == 2 && !strcmp(k, "Zswap:"))
				r = kb << 10;
		if (f)
			fclose(f);
		return r;
	}
	return 0;
}

static void *pool_sampler(void *arg)
{
	struct pb_linux_env *env = arg;
	struct timespec nap = { 0, 5000000 };
	while (!env->pool_stop) {
		uint64_t v = pool_now(env, 2); /* zram: mem_used_total */
		if (v > env->pool_peak)
			env->pool_peak = v;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

void pb_linux_pool_begin(struct pb_linux_env *env)
{
	env->pool_peak = 0;
	env->pool_stop = 0;
	env->pool_thread = 0;
	if (env->backend == PB_FILE)
		return;
	if (env->backend == PB_ZRAM) {
		char p[200];
		zram_path(p, sizeof(p), env->zram_dev, "mem_used_max");
		pb_write_small(p, "0"); /* the peak from now */
	}
	pthread_t t;
	if (pthread_create(&t, NULL, pool_sampler, env) == 0)
		env->pool_thread = (unsigned long)t;
}

uint64_t pb_linux_pool_end(struct pb_linux_env *env)
{
	if (env->pool_thread) {
		env->pool_stop = 1;
		pthread_join((pthread_t)env->pool_thread, NULL);
		env->pool_thread = 0;
	}
	if (env->backend == PB_ZRAM) {
		uint64_t m = pool_now(env, 4); /* mem_used_max */
		if (m > env->pool_peak)
			env->pool_peak = m;
	}
	return env->pool_peak;
}

/* A killed run's zram device and zswap parameters (its state files),
 * undone first: before zswap is checked, before its swap file goes. */
static int reap_state(const char *swapdir)
{
	int n = 0;
	char path[600];
	DIR *d = opendir(swapdir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!stale_name(de->d_name, "bypass-bench-linux-", ".state"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", swapdir, de->d_name);
		undo_state(path);
		if (unlink(path) == 0)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * What a run killed by SIGKILL left behind (its cleanup could not run):
 * a swap file still swapped on, swap files, a memory cgroup, each named
 * with the pid of a process that no longer exists.  Removed before a new
 * run sets up, so that no stale swap area takes the baseline's pages; the
 * count goes into the table's facts.
 */
static int reap_stale(const char *cgroot, const char *swapdir)
{
	int n = 0;
	char line[512], path[600];
	FILE *f = fopen("/proc/swaps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *sp = strpbrk(line, " \t");
		if (sp)
			*sp = 0;
		const char *base = strrchr(line, '/');
		if (base && stale_name(base + 1, "bypass-bench-linux-", ".swap") &&
		    swapoff(line) == 0)
			n++;
	}
	if (f)
		fclose(f);
	DIR *d = opendir(swapdir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!stale_name(de->d_name, "bypass-bench-linux-", ".swap") &&
		    !stale_name(de->d_name, "bypass-bench-pager-", ".swap"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", swapdir, de->d_name);
		if (unlink(path) == 0)
			n++;
	}
	if (d)
		closedir(d);
	d = opendir(cgroot);
	while (d && (de = readdir(d))) {
		/* bypass-bench-<pid>, and pb_cg_make's bypass-bench-<pid>-<tag>-peak */
		char base[256];
		snprintf(base, sizeof(base), "%s", de->d_name);
		size_t bl = strlen(base);
		if (bl > 5 && !strcmp(base + bl - 5, "-peak")) {
			base[bl - 5] = 0;
			char *dash = strrchr(base, '-');
			if (dash && dash > base + 13)
				*dash = 0;
		}
		if (!stale_name(base, "bypass-bench-", ""))
			continue;
		snprintf(path, sizeof(path), "%s/%s", cgroot, de->d_name);
		if (rmdir(path) == 0)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

int pb_linux_setup(struct bench_ctx *c, size_t budget, size_t swap_size, struct pb_linux_env *env,
		       char *why, size_t whylen, char *facts, size_t factslen)
{
	memset(env, 0, sizeof(*env));
	env->zram_dev = -1;
	env->comp_wait_s = (unsigned)strtoul(bench_param(c, "compressed_wait", "300"), NULL, 10);
	pb_cleanup_on_signal(env);
	if (geteuid() != 0) {
		snprintf(why, whylen, "needs root (swapon and a memory cgroup)");
		return -1;
	}
	char buf[256];
	int stale = reap_state(pb_swapdir(c));
	if (pb_read_small("/sys/module/zswap/parameters/enabled", buf, sizeof(buf)) == 0 &&
	    buf[0] == 'Y') {
		snprintf(why, whylen, "zswap is enabled: Linux would compress pages in RAM "
			 "instead of writing them to the swap file");
		return -1;
	}
	snprintf(facts, factslen, "zswap %s", buf[0] == 'N' ? "off" : "absent");

	/* the memory cgroup: v1 memory.limit_in_bytes, else v2 memory.max */
	const char *v1 = "/sys/fs/cgroup/memory";
	char path[400];
	snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", v1);
	const char *limit_file = NULL, *root = NULL;
	if (access(path, W_OK) == 0) {
		root = v1;
		limit_file = "memory.limit_in_bytes";
	} else {
		const char *v2s[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
		for (int i = 0; i < 2 && !root; i++) {
			snprintf(path, sizeof(path), "%s/cgroup.subtree_control", v2s[i]);
			if (pb_read_small(path, buf, sizeof(buf)) == 0 && strstr(buf, "memory")) {
				root = v2s[i];
				limit_file = "memory.max";
			}
		}
	}
	if (!root) {
		snprintf(why, whylen, "no memory cgroup controller (cgroup v1 memory or v2 "
			 "with memory enabled in subtree_control)");
		return -1;
	}
	stale += reap_stale(root, pb_swapdir(c));
	if (stale) {
		size_t sl = strlen(facts);
		snprintf(facts + sl, factslen - sl,
			 "; %d leftovers of a killed run removed first (stale swap area, swap "
			 "files, cgroup, zram device or zswap settings)", stale);
	}
	snprintf(env->cgroot, sizeof(env->cgroot), "%s", root);
	env->limit_file = limit_file;
	snprintf(env->cg, sizeof(env->cg), "%s/bypass-bench-%d", root, (int)getpid());
	if (mkdir(env->cg, 0755) < 0) {
		snprintf(why, whylen, "mkdir %s: %s", env->cg, strerror(errno));
		return -1;
	}
	env->cg_made = true;
	snprintf(path, sizeof(path), "%s/%s", env->cg, limit_file);
	snprintf(buf, sizeof(buf), "%zu", budget);
	int e = pb_write_small(path, buf);
	if (!e && !strcmp(limit_file, "memory.max")) {
		snprintf(path, sizeof(path), "%s/memory.swap.max", env->cg);
		pb_write_small(path, "max");
	}
	if (e) {
		snprintf(why, whylen, "setting %s: %s", limit_file, strerror(-e));
		goto fail;
	}
	snprintf(env->procs, sizeof(env->procs), "%s/cgroup.procs", env->cg);
	size_t fl = strlen(facts);
	snprintf(facts + fl, factslen - fl, "; cgroup %s (%s = %zu)",
		 strcmp(limit_file, "memory.max") ? "v1" : "v2", limit_file, budget);

	snprintf(env->swapfile, sizeof(env->swapfile), "%s/bypass-bench-linux-%d.swap",
		 pb_swapdir(c), (int)getpid());
	e = pb_write_file(env->swapfile, swap_size);
	if (e) {
		snprintf(why, whylen, "writing swap file %s: %s", env->swapfile, strerror(-e));
		goto fail;
	}
	env->file_made = true;
	snprintf(env->swapdir, sizeof(env->swapdir), "%s", pb_swapdir(c));
	snprintf(env->state, sizeof(env->state), "%s/bypass-bench-linux-%d.state", env->swapdir,
		 (int)getpid());
	if (pb_run_cmd("mkswap", env->swapfile)) {
		snprintf(why, whylen, "mkswap %s failed (is util-linux installed?)", env->swapfile);
		goto fail;
	}
	if (swapon(env->swapfile, SWAP_FLAG_PREFER | (32767 & SWAP_FLAG_PRIO_MASK)) < 0) {
		snprintf(why, whylen, "swapon %s: %s (this filesystem may not support swap "
			 "files)", env->swapfile, strerror(errno));
		goto fail;
	}
	env->swap_on = true;
	/* other swap in use would be used too: say so */
	FILE *f = fopen("/proc/swaps", "r");
	int lines = 0;
	while (f && fgets(buf, sizeof(buf), f))
		lines++;
	if (f)
		fclose(f);
	fl = strlen(facts);
	snprintf(facts + fl, factslen - fl, "; %s", lines > 2 ? "OTHER SWAP AREAS ARE ACTIVE too"
							   : "no other swap active");
	return 0;
fail:
	pb_linux_teardown(env);
	return -1;
}


/* ------------------------------------------------------------ cgroups */

void pb_cg_remove(const char *cg)
{
	for (int i = 0; i < 100 && rmdir(cg) < 0 && errno == EBUSY; i++) {
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
}

int pb_linux_limit(struct pb_linux_env *env, size_t limit)
{
	char path[400], buf[64];
	if (!env->limit_file)
		return -EINVAL;
	if (env->cg_made) {
		pb_cg_remove(env->cg);
		env->cg_made = false;
	}
	if (mkdir(env->cg, 0755) < 0)
		return -errno;
	env->cg_made = true;
	snprintf(path, sizeof(path), "%s/%s", env->cg, env->limit_file);
	snprintf(buf, sizeof(buf), "%zu", limit);
	int e = pb_write_small(path, buf);
	if (e)
		return e;
	if (!strcmp(env->limit_file, "memory.max")) {
		snprintf(path, sizeof(path), "%s/memory.swap.max", env->cg);
		pb_write_small(path, "max");
	}
	snprintf(path, sizeof(path), "%s/memory.swappiness", env->cg);
	if (access(path, W_OK) == 0)
		pb_write_small(path, "100");
	return 0;
}

int pb_linux_set_limit(const struct pb_linux_env *env, size_t limit)
{
	char path[400], buf[64];
	if (!env->limit_file || !env->cg_made)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", env->cg, env->limit_file);
	snprintf(buf, sizeof(buf), "%zu", limit);
	return pb_write_small(path, buf);
}

int pb_cg_make(const struct pb_linux_env *env, const char *tag, char *path, size_t len)
{
	if (!env->cgroot[0])
		return -EINVAL;
	snprintf(path, len, "%s/bypass-bench-%d-%s-peak", env->cgroot, (int)getpid(), tag);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

uint64_t pb_cg_peak(const char *cg)
{
	char path[400], buf[64];
	snprintf(path, sizeof(path), "%s/memory.max_usage_in_bytes", cg);
	if (pb_read_small(path, buf, sizeof(buf))) {
		snprintf(path, sizeof(path), "%s/memory.peak", cg);
		if (pb_read_small(path, buf, sizeof(buf)))
			return 0;
	}
	return strtoull(buf, NULL, 10);
}

int pb_cg_join(const char *cg, pid_t pid)
{
	char path[400], buf[32];
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	return pb_write_small(path, buf);
}

