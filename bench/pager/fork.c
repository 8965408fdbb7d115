/* SPDX-License-Identifier: MIT */
/*
 * pager.fork (issue 32, item 2): fork() of a process whose memory is mostly
 * evicted, against the same fork without the pager at the same resident
 * set.  The figure: 1 GiB evicted at a 128 MiB budget (full size);
 * --quick takes a quarter (256 MiB at 32 MiB), --smoke 32 MiB at 4 MiB.
 *
 * Two side processes live through the whole run, each made once:
 *   Linux    plain anonymous memory, `budget` bytes written (resident);
 *   bypass   a pager as the preload makes one (upcall, access samples, the
 *            prefetch policy, an unnamed swap file) with a region of
 *            budget + evicted bytes written: `budget` resident, the rest in
 *            its swap file.
 * The driver asks them in turn (A B A B ..., the first side rotating each
 * round) to fork once: the side reads the TSC, forks, and the parent side
 * reads it again when fork() returns; the child reads it first thing (in
 * shared memory), then _exits; the side waits for it.  Two figures per
 * fork: fork() returning in the parent (the target: within 2x of
 * Linux's) and the child running its first instruction after fork()
 * (bypass's child has re-armed the pager by then: a userfaultfd registered
 * over the region, the clean pages write-protected, its threads).  And the
 * count that is the point: the bytes the bypass side read from swap during
 * its forks (the target: none; before issue 32 a fork read every evicted
 * page back), and its resident peak (within the budget).
 */
#include "pager_bench.h"
#include "pager/pager_internal.h" /* bp_evict_settle, bp_share_holders */

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { S_LINUX, S_BYPASS, S_EVFORK, S_N };
static const char *sname[S_N] = { "Linux: fork() at the same resident set, nothing evicted",
				  "bypass: fork() with the rest evicted (nothing read back)",
				  "userfaultfd EVENT_FORK: the kernel registers the child" };
static const char *cname[S_N] = { "Linux: the child runs",
				  "bypass: the child runs (pager re-armed)",
				  "userfaultfd EVENT_FORK: the child runs" };

struct fk_shared {
	volatile uint64_t child_tsc;
};

/* What a side reports after setting up, and after each fork. */
struct fk_msg {
	int err;             /* 0, or -errno (setup) */
	char why[160];
	uint64_t parent_cyc; /* fork() in the parent */
	uint64_t child_cyc;  /* to the child's first instruction */
	uint64_t rd_bytes;   /* read from swap during the fork (bypass) */
	uint64_t peak, resident, evicted; /* pages (bypass) */
};

struct fk_side {
	pid_t pid;
	int cmd, res; /* pipes: commands to it, results from it */
};

static void side_send(int fd, const struct fk_msg *m)
{
	ssize_t w = write(fd, m, sizeof(*m));
	(void)w;
}

static void fill(char *m, size_t len)
{
	for (size_t off = 0; off < len; off += PB_PAGE)
		memset(m + off, (int)(off >> 12) | 1, PB_PAGE);
}

/* The EVENT_FORK side's reader: a fork waits until its event is read; the
 * child's new userfaultfd (installed here) is closed. */
static void *evfork_reader(void *arg)
{
	int uffd = (int)(intptr_t)arg;
	for (;;) {
		struct pollfd pf = { .fd = uffd, .events = POLLIN };
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			return NULL;
		struct uffd_msg msg;
		ssize_t n = read(uffd, &msg, sizeof(msg));
		if (n == (ssize_t)sizeof(msg) && msg.event == UFFD_EVENT_FORK)
			close((int)msg.arg.fork.ufd);
	}
}

/* The comparison the design chose against (docs/pager.md, "Fork"): plain
 * memory registered with a userfaultfd that has UFFD_FEATURE_EVENT_FORK
 * (the kernel copies the registration into the child and hands the parent
 * a descriptor for it): what that costs fork() itself.  0 or -errno. */
static int evfork_setup(char *m, size_t len, char *why, size_t whylen)
{
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0) {
		snprintf(why, whylen, "userfaultfd (not user-mode-only): %s", strerror(errno));
		return -errno;
	}
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_FORK };
	struct uffdio_register reg = { .range = { (uintptr_t)m, len },
				       .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (ioctl(uffd, UFFDIO_API, &api) < 0 || ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		int e = errno;
		snprintf(why, whylen, "UFFD_FEATURE_EVENT_FORK: %s (it needs CAP_SYS_PTRACE)",
			 strerror(e));
		close(uffd);
		return -e;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, evfork_reader, (void *)(intptr_t)uffd)) {
		snprintf(why, whylen, "pthread_create");
		return -EAGAIN;
	}
	return 0;
}

/* A side's process: set up, then fork once per command byte. */
static void side_main(int s, size_t budget, size_t evicted, const char *swapdir, int cmd,
		      int res)
{
	struct fk_msg msg = { 0 };
	struct fk_shared *sh = bench_shared_alloc(sizeof(*sh));
	bypass_pager *p = NULL;
	char *m = NULL;
	if (!sh) {
		msg.err = -ENOMEM;
		snprintf(msg.why, sizeof(msg.why), "shared memory");
	} else if (s == S_LINUX || s == S_EVFORK) {
		m = mmap(NULL, budget, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			msg.err = -errno;
			snprintf(msg.why, sizeof(msg.why), "mmap: %s", strerror(errno));
		} else {
			fill(m, budget);
			if (s == S_EVFORK)
				msg.err = evfork_setup(m, budget, msg.why, sizeof(msg.why));
		}
	} else {
		struct bypass_pager_config c = {
			.budget = budget, .swap_path = swapdir, .swap_size = budget + evicted,
			.mode = BYPASS_PAGER_UPCALL,
			.flags = BYPASS_PAGER_SWAP_TEMP | BYPASS_PAGER_SAMPLE,
		};
		int e = bypass_pager_create(&c, &p);
		if (!e)
			e = bypass_pager_set_policy(p, "prefetch");
		if (!e)
			e = bypass_pager_map(p, budget + evicted, 0, (void **)&m);
		if (e) {
			msg.err = e;
			snprintf(msg.why, sizeof(msg.why), "the pager: %s", strerror(-e));
		} else {
			fill(m, budget + evicted);
			bp_evict_settle(p);
		}
	}
	if (p) {
		struct bypass_pager_stats st;
		bypass_pager_stats(p, &st);
		msg.resident = st.resident_pages;
		msg.evicted = st.evictions;
	}
	side_send(res, &msg);
	if (msg.err)
		_exit(1);
	char c;
	while (read(cmd, &c, 1) == 1) {
		struct bypass_pager_stats a = { 0 }, b = { 0 };
		if (p)
			bypass_pager_stats(p, &a);
		sh->child_tsc = 0;
		uint64_t t0 = bypass_rdtscp(NULL);
		pid_t pid = fork();
		uint64_t t1 = bypass_rdtscp(NULL);
		if (pid == 0) {
			sh->child_tsc = t1; /* its first instruction after fork() */
			_exit(0);
		}
		memset(&msg, 0, sizeof(msg));
		if (pid < 0) {
			msg.err = -errno;
			snprintf(msg.why, sizeof(msg.why), "fork: %s", strerror(errno));
		} else {
			int st;
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				msg.err = -EIO;
				snprintf(msg.why, sizeof(msg.why), "the forked child failed (status %#x)",
					 st);
			}
		}
		if (p)
			bypass_pager_stats(p, &b);
		msg.parent_cyc = t1 - t0;
		msg.child_cyc = sh->child_tsc > t0 ? sh->child_tsc - t0 : 0;
		msg.rd_bytes = b.bytes_read - a.bytes_read;
		msg.peak = b.resident_peak;
		msg.resident = b.resident_pages;
		side_send(res, &msg);
	}
	_exit(0);
}

/* Start side s (sides before it started already: its process must not
 * hold their pipes, or they would never see the end of their commands). */
static int side_start(struct fk_side *all, int s, size_t budget, size_t evicted,
		      const char *swapdir, struct fk_msg *setup)
{
	struct fk_side *sd = &all[s];
	int c[2], r[2];
	if (pipe2(c, O_CLOEXEC) || pipe2(r, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(c[1]);
		close(r[0]);
		for (int k = 0; k < s; k++) {
			close(all[k].cmd);
			close(all[k].res);
		}
		side_main(s, budget, evicted, swapdir, c[0], r[1]);
	}
	close(c[0]);
	close(r[1]);
	sd->pid = pid;
	sd->cmd = c[1];
	sd->res = r[0];
	if (read(sd->res, setup, sizeof(*setup)) != (ssize_t)sizeof(*setup)) {
		setup->err = -EIO;
		snprintf(setup->why, sizeof(setup->why), "the side process ended while it set up");
	}
	return setup->err;
}

static int side_fork(struct fk_side *sd, struct fk_msg *out)
{
	if (write(sd->cmd, "f", 1) != 1 ||
	    read(sd->res, out, sizeof(*out)) != (ssize_t)sizeof(*out)) {
		out->err = -EIO;
		snprintf(out->why, sizeof(out->why), "the side process is gone");
	}
	return out->err;
}

static void side_stop(struct fk_side *sd)
{
	if (sd->pid <= 0)
		return;
	close(sd->cmd);
	close(sd->res);
	int st;
	while (waitpid(sd->pid, &st, 0) < 0 && errno == EINTR)
		;
	sd->pid = 0;
}

static const char *side_word(int s)
{
	return s == S_LINUX ? "Linux" : s == S_BYPASS ? "bypass" : "EVENT_FORK";
}

int bench_pager_fork(struct bench_ctx *c)
{
	const char *id = "pager.fork";
	/* MiB: the 1 GiB evicted at a 128 MiB budget in full */
	size_t budget = (size_t)bench_count(c, "fork_budget_mb", 128, 32) << 20;
	size_t evicted = (size_t)bench_count(c, "fork_evicted_mb", 1024, 256) << 20;
	if (bench_smoke(c)) {
		budget = 4ul << 20;
		evicted = 32ul << 20;
	}
	int rounds = bench_rounds_or(c, 5, 5);
	int per = (int)bench_count(c, "forks_per_round", 20, 8);
	if (per < 1)
		per = 1;
	if (per > 64)
		per = 64;
	struct fk_side sd[S_N] = { { 0 } };
	struct fk_msg setup[S_N];
	bool have[S_N] = { false };
	char fail[1024] = "";
	for (int s = 0; s < S_N && !fail[0]; s++) {
		int e = side_start(sd, s, budget, evicted, pb_swapdir(c), &setup[s]);
		have[s] = !e;
		if (!e)
			continue;
		sd[s].pid = sd[s].pid > 0 ? sd[s].pid : 0;
		side_stop(&sd[s]);
		if (s == S_EVFORK) /* a comparison, not a side of the target */
			continue;
		if (s == S_BYPASS && (e == -ENOSYS || e == -EOPNOTSUPP || e == -EPERM)) {
			side_stop(&sd[S_LINUX]);
			bench_skip(c, id, "%s", setup[s].why);
			return 0;
		}
		snprintf(fail, sizeof(fail), "%s side: %s", side_word(s), setup[s].why);
	}
	size_t n = (size_t)rounds * (size_t)per;
	uint64_t *pc[S_N], *cc[S_N];
	double *rmed[S_N];
	for (int s = 0; s < S_N; s++) {
		pc[s] = calloc(n, sizeof(uint64_t));
		cc[s] = calloc(n, sizeof(uint64_t));
		rmed[s] = calloc((size_t)rounds, sizeof(double));
	}
	uint64_t rd = 0, peak = 0;
	bench_watchdog(600, "pager.fork", 0);
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds, 0);
	while (!fail[0] && bench_round(c, &rr, &r)) {
		for (int k = 0; k < per && !fail[0]; k++)
			for (int j = 0; j < S_N && !fail[0]; j++) {
				int s = (j + r + k) % S_N;
				if (!have[s])
					continue;
				struct fk_msg m;
				if (side_fork(&sd[s], &m)) {
					snprintf(fail, sizeof(fail), "%s side: %s", side_word(s), m.why);
					break;
				}
				pc[s][(size_t)r * per + k] = m.parent_cyc;
				cc[s][(size_t)r * per + k] = m.child_cyc;
				if (s == S_BYPASS) {
					rd += m.rd_bytes;
					if (m.peak > peak)
						peak = m.peak;
				}
			}
		for (int s = 0; s < S_N && !fail[0]; s++) {
			uint64_t tmp[64];
			memcpy(tmp, pc[s] + (size_t)r * per, (size_t)per * sizeof(uint64_t));
			struct bench_summary su;
			bench_summarize(tmp, (size_t)per, &su);
			rmed[s][r] = su.median;
		}
	}
	bench_watchdog(0, NULL, 0);
	for (int s = 0; s < S_N; s++)
		if (have[s])
			side_stop(&sd[s]);

	bench_begin(c, id, "fork() of a process with most of its memory evicted, against the same "
			   "fork without the pager at the same resident set",
		    sname[S_LINUX]);
	bench_fact(c, "fork_budget_bytes", "%zu", budget);
	bench_fact(c, "fork_evicted_bytes", "%zu", evicted);
	if (fail[0])
		bench_fail(c, "%s", fail);
	struct bench_summary sp[S_N], sc[S_N];
	for (int s = 0; s < S_N; s++) {
		for (size_t i = 0; i < n; i++) { /* cycles to ns */
			pc[s][i] = (uint64_t)llround(bench_cycles_to_ns((double)pc[s][i]));
			cc[s][i] = (uint64_t)llround(bench_cycles_to_ns((double)cc[s][i]));
		}
		bench_summarize(pc[s], n, &sp[s]);
		bench_summarize(cc[s], n, &sc[s]);
	}
	double lo[S_N] = { 0 }, hi[S_N] = { 0 };
	for (int s = 1; s < S_N && rounds >= 2; s++)
		if (have[s])
			bench_ratio_ci(rmed[s], (size_t)rounds, rmed[S_LINUX], (size_t)rounds, &lo[s],
				       &hi[s]);
	for (int s = 0; s < S_N; s++) {
		if (!have[s])
			continue;
		struct bench_row row = {
			.variant = sname[s], .kind = s == S_LINUX ? BENCH_BASELINE :
						     s == S_BYPASS ? BENCH_BYPASS : BENCH_PEER,
			.unit = "ns", .s = sp[s], .is_base = s == S_LINUX, .ci_lo = lo[s],
			.ci_hi = hi[s], .ci_n = rounds, .note = "fork() returning in the parent",
		};
		bench_row(c, &row);
	}
	for (int s = 0; s < S_N; s++) {
		if (!have[s])
			continue;
		struct bench_row row = {
			.variant = cname[s], .kind = s == S_LINUX ? BENCH_BASELINE :
						     s == S_BYPASS ? BENCH_BYPASS : BENCH_PEER,
			.unit = "ns", .s = sc[s], .ratio = sc[s].median / sc[S_LINUX].median,
			.note = "fork() called to the child's first instruction after it",
		};
		bench_row(c, &row);
	}
	bench_note(c, "%zu MiB resident on every side; bypass: %zu MiB more in its swap file "
		      "(%llu pages evicted at set-up); %d rounds of %d forks per side, alternating; "
		      "the ratios' intervals: bootstrap over the per-round medians",
		   budget >> 20, evicted >> 20, (unsigned long long)setup[S_BYPASS].evicted,
		   rounds, per);
	bench_note(c, "bypass read %llu bytes from swap during its %zu forks; its resident peak "
		      "%llu pages, budget %zu", (unsigned long long)rd, n,
		   (unsigned long long)peak, budget / PB_PAGE);
	if (have[S_EVFORK])
		bench_note(c, "EVENT_FORK: the same memory as Linux's, registered with a userfaultfd "
			      "that has UFFD_FEATURE_EVENT_FORK and a thread reading it: what the "
			      "kernel's registration of the child costs fork() (bypass registers its "
			      "child from an atfork handler instead: docs/pager.md, \"Fork\")");
	else
		bench_note(c, "EVENT_FORK row not run: %s", setup[S_EVFORK].why);
	struct bench_est est;
	bench_est_ratio(rmed[S_BYPASS], rmed[S_LINUX], (size_t)rounds, rounds, BENCH_CI_BOOT,
			&est);
	bench_target_est(c, "fork() within 2x of Linux's at the same resident set (per-round "
			    "median ratio)", &est, "<=", 2.0);
	bench_target_exact(c, "bytes read from swap by the forks", (double)rd, "<=", 0);
	bench_target_exact(c, "resident peak within the budget (pages)", (double)peak, "<=",
			   (double)(budget / PB_PAGE));
	bench_end(c);
	for (int s = 0; s < S_N; s++) {
		free(pc[s]);
		free(cc[s]);
		free(rmed[s]);
	}
	return fail[0] ? 1 : 0;
}
