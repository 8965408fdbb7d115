/* SPDX-License-Identifier: MIT */
/*
 * The helpers of the pager experiments: files, /proc counters, the sides
 * run in child processes, policy calls.  The Linux baseline itself (swap
 * file, cgroup, zram, zswap) is in linuxback.c.
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
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ files */

/* A swap file written in full (like dd): no holes, no unwritten extents. */
int pb_write_file(const char *path, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t chunk = 1 << 20;
	char *buf = calloc(1, chunk);
	int e = buf ? 0 : -ENOMEM;
	for (size_t done = 0; !e && done < size; done += chunk)
		if (write(fd, buf, chunk) != (ssize_t)chunk)
			e = -EIO;
	if (!e && fsync(fd) < 0)
		e = -errno;
	free(buf);
	close(fd);
	if (e)
		unlink(path);
	return e;
}

int pb_run_cmd(const char *cmd, const char *arg)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp(cmd, cmd, arg, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ENOEXEC;
}

int pb_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

int pb_write_small(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = n == (ssize_t)strlen(s) ? 0 : -errno;
	close(fd);
	return e;
}

uint64_t pb_vmstat(const char *key)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char k[64];
	unsigned long long v;
	uint64_t r = 0;
	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		if (!strcmp(k, key))
			r = v;
	fclose(f);
	return r;
}

/* ------------------------------------------------------------ sides */

int pb_run_side(const struct pb_linux_env *env, void (*fn)(void *), void *arg,
		unsigned timeout_s, char *why, size_t whylen)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		pb_cleanup_on_signal(NULL); /* the parent cleans up, not us */
		if (env) {
			char buf[32];
			snprintf(buf, sizeof(buf), "%d", (int)getpid());
			if (pb_write_small(env->procs, buf))
				_exit(4);
		}
		fn(arg);
		_exit(0);
	}
	pb_running_child = pid;
	int st = 0;
	struct timespec t0, t, nap = { 0, 10000000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > (time_t)timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			pb_running_child = 0;
			snprintf(why, whylen, "stalled: no result after %u s (killed)", timeout_s);
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
	pb_running_child = 0;
	if (WIFSIGNALED(st)) {
		snprintf(why, whylen, "killed by signal %d%s", WTERMSIG(st),
			 env && WTERMSIG(st) == SIGKILL ? " (the cgroup's OOM killer?)" : "");
		return -EINTR;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, whylen, "exited with status %d%s", WEXITSTATUS(st),
			 WEXITSTATUS(st) == 4 ? " (could not join the cgroup)" : "");
		return -EIO;
	}
	return 0;
}

void pb_note_linux(struct bench_ctx *c, const struct pb_sides *t, int side, int runs,
		   const char *facts, const char *extra, const char *setup_why,
		   uint64_t pswpin, uint64_t pswpout)
{
	if (t->have[side] || t->kills)
		bench_note(c, "Linux: %s%s%s; memory.swappiness 100; %llu pages swapped in, %llu "
			   "out over all rounds", facts, extra[0] ? "; " : "", extra,
			   (unsigned long long)pswpin, (unsigned long long)pswpout);
	if (t->kills)
		bench_note(c, "Linux side killed in %d of %d runs (%s): not a bypass failure; its "
			   "row is over the other runs", t->kills, t->kills + runs, t->kill_why);
	else if (!t->have[side])
		bench_note(c, "Linux side not run: %s", setup_why);
}

void pb_stats_add(struct bypass_pager_stats *sum, const struct bypass_pager_stats *st)
{
	sum->faults_zero += st->faults_zero;
	sum->faults_swapin += st->faults_swapin;
	sum->faults_wp += st->faults_wp;
	sum->faults_other += st->faults_other;
	sum->readahead_pages += st->readahead_pages;
	sum->evictions += st->evictions;
	sum->evictions_clean += st->evictions_clean;
	sum->bytes_read += st->bytes_read;
	sum->bytes_written += st->bytes_written;
#ifdef BYPASS_PAGER_ADV_PRIORITY
	sum->prefetch_pages += st->prefetch_pages;
	sum->prefetch_used += st->prefetch_used;
	sum->policy_rejects += st->policy_rejects;
#endif
}

void pb_prefetch_counts(const struct bypass_pager_stats *st, uint64_t *pages, uint64_t *used)
{
#ifdef BYPASS_PAGER_ADV_PRIORITY
	*pages = st->prefetch_pages;
	*used = st->prefetch_used;
#else
	(void)st;
	*pages = *used = 0;
#endif
}

void pb_side_fail(struct pb_side_report *rep, const char *what, int e)
{
	snprintf(rep->msg, sizeof(rep->msg), "%s: %s", what, strerror(-e));
	_exit(1);
}

bool pb_side_run(struct pb_sides *t, int s, const struct pb_linux_env *env,
		 void (*fn)(void *), void *arg, unsigned timeout_s,
		 struct pb_side_report *rep, const char *name)
{
	char r[300] = "";
	memset(rep, 0, sizeof(*rep));
	int e = pb_run_side(env, fn, arg, timeout_s, r, sizeof(r));
	if (!e && rep->skipped) {
		t->have[s] = false;
		snprintf(t->skip_why[s], sizeof(t->skip_why[s]), "%s", rep->msg);
	} else if (e == -EINTR && env) {
		t->kills++;
		snprintf(t->kill_why, sizeof(t->kill_why), "%s", r);
	} else if (e) {
		snprintf(t->fail, sizeof(t->fail), "%s: %s%s%s", name, r, rep->msg[0] ? ": " : "",
			 rep->msg);
	}
	return !e && !rep->skipped;
}

void pb_linux_readahead(char *buf, size_t len)
{
	char pc[64] = "?", vma[64] = "absent";
	if (pb_read_small("/proc/sys/vm/page-cluster", pc, sizeof(pc)) == 0)
		pc[strcspn(pc, "\n")] = 0;
	if (pb_read_small("/sys/kernel/mm/swap/vma_ra_enabled", vma, sizeof(vma)) == 0)
		vma[strcspn(vma, "\n")] = 0;
	snprintf(buf, len, "vm.page-cluster %s (up to %d pages per swap-in), VMA-based "
		 "swap read-ahead %s", pc, pc[0] >= '0' && pc[0] <= '9' ? 1 << atoi(pc) : 0, vma);
}

/* ------------------------------------------------------------ policies */

#ifdef BYPASS_PAGER_ADV_PRIORITY
int pb_set_policy(bypass_pager *p, const char *spec)
{
	return bypass_pager_set_policy(p, spec);
}

int pb_advise(bypass_pager *p, void *addr, size_t len, int advice)
{
	return bypass_pager_advise(p, addr, len, advice == PB_ADV_PRIORITY
					     ? BYPASS_PAGER_ADV_PRIORITY
					     : BYPASS_PAGER_ADV_SEQUENTIAL);
}
#else
int pb_set_policy(bypass_pager *p, const char *spec)
{
	(void)p;
	(void)spec;
	return -ENOSYS;
}

int pb_advise(bypass_pager *p, void *addr, size_t len, int advice)
{
	(void)p;
	(void)addr;
	(void)len;
	(void)advice;
	return -ENOSYS;
}
#endif

/* ------------------------------------------------------------ the tier */

int pb_tier_check(struct bench_ctx *c, char *why, size_t whylen)
{
	struct bypass_pager_config cfg = { .budget = 64 * PB_PAGE, .swap_path = pb_swapdir(c),
					   .swap_size = 256 * PB_PAGE,
					   .flags = BYPASS_PAGER_SWAP_TEMP };
	struct bypass_pager_tier_config tc;
	bypass_pager *p;
	memset(&tc, 0, sizeof(tc));
	int e = bypass_pager_create(&cfg, &p);
	if (e) {
		snprintf(why, whylen, "a pager to try the tier on: %s", strerror(-e));
		return e;
	}
	e = bypass_pager_tier(p, &tc);
	bypass_pager_destroy(p);
	if (e == -EOPNOTSUPP)
		snprintf(why, whylen, "this build has no liblz4 (the compressed tier needs it; "
			 "tools/deps.sh installs liblz4-dev)");
	else if (e)
		snprintf(why, whylen, "bypass_pager_tier: %s", strerror(-e));
	return e;
}
