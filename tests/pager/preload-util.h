/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the tests of libbypass-pager.so.  Each test program runs its
 * body a second time, under the preload, in a child (pp_run), then checks
 * the child's exit and the statistics line it appended at exit
 * (BYPASS_STATS_FILE): evictions prove that the memory really was paged.
 */
#ifndef BYPASS_TEST_PAGER_PRELOAD_UTIL_H
#define BYPASS_TEST_PAGER_PRELOAD_UTIL_H

#include "harness.h"
#include "core/testutil.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>

#define PP_BUDGET (4ul << 20)      /* BYPASS_PAGER_BUDGET of the runs */
#define PP_THRESHOLD (256ul << 10) /* BYPASS_PAGER_THRESHOLD */

/* True in the run under the preload. */
static inline bool pp_preloaded(void)
{
	return getenv("PP_TEST_PRELOADED") != NULL;
}

/* The sanitizer runtime this test was built with ("" if none). */
static inline const char *pp_sanitizer_rt(void)
{
	return test_sanitizer_rt();
}

/*
 * Under AddressSanitizer the program's malloc is ASan's (its runtime comes
 * first in LD_PRELOAD), so malloc-family requests never reach the preload;
 * mmap does.  Tests skip their malloc parts there.
 */
static inline bool pp_malloc_reaches_preload(void)
{
	return !pp_sanitizer_rt()[0];
}

static inline const char *pp_lib(void)
{
	static char buf[1024];
	const char *b = getenv("BYPASS_BUILD");
	snprintf(buf, sizeof(buf), "%s/libbypass-pager.so", b && *b ? b : ".");
	return buf;
}

/* The checks every preload test makes first: a time limit, no TSan, the
 * library built. */
static inline void pp_start(unsigned timeout_sec)
{
	test_timeout(timeout_sec);
	if (TEST_TSAN)
		SKIP("LD_PRELOAD of a ThreadSanitizer build does not work");
	if (!pp_preloaded() && access(pp_lib(), R_OK))
		SKIP("no %s", pp_lib());
}

static char pp_dir[128];

static inline void pp_cleanup(void)
{
	if (pp_dir[0] && !pp_preloaded()) {
		char cmd[200];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", pp_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", pp_dir);
		pp_dir[0] = 0;
	}
}

/* A scratch directory (the swap directory of the runs, and files). */
static inline const char *pp_tmpdir(void)
{
	/* The run under the preload uses its parent's (which removes it). */
	const char *inherited = getenv("BYPASS_PAGER_SWAP");
	if (!pp_dir[0] && pp_preloaded() && inherited && strlen(inherited) < sizeof(pp_dir))
		strcpy(pp_dir, inherited);
	if (!pp_dir[0]) {
		const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		snprintf(pp_dir, sizeof(pp_dir), "%s/bypass-pp-XXXXXX", base);
		if (!mkdtemp(pp_dir))
			TEST_FAIL("mkdtemp: %s", strerror(errno));
		atexit(pp_cleanup);
	}
	return pp_dir;
}

static inline void pp_stats_path(char *buf, size_t n)
{
	snprintf(buf, n, "%s/stats", pp_tmpdir());
}

/* Set the preload's environment (env: extra "K=V" strings, NULL-ended). */
static inline void pp_setenv(const char *const *env)
{
	char pre[2200], stats[256];
	const char *rt = pp_sanitizer_rt();
	snprintf(pre, sizeof(pre), "%s%s%s", rt, rt[0] ? ":" : "", pp_lib());
	pp_stats_path(stats, sizeof(stats));
	setenv("LD_PRELOAD", pre, 1);
	setenv("PP_TEST_PRELOADED", "1", 1);
	setenv("BYPASS_STATS_FILE", stats, 1);
	setenv("BYPASS_PAGER_SWAP", pp_tmpdir(), 1);
	char v[64];
	snprintf(v, sizeof(v), "%lu", PP_BUDGET);
	setenv("BYPASS_PAGER_BUDGET", v, 1);
	snprintf(v, sizeof(v), "%lu", PP_THRESHOLD);
	setenv("BYPASS_PAGER_THRESHOLD", v, 1);
	setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
	for (int i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
}

/*
 * Run this program again under the preload, with argv[1] = mode; returns
 * its wait status.  stdout/stderr go to the files out/err in the scratch
 * directory when given (NULL: inherited).
 */
static inline int pp_run(char **argv, const char *mode, const char *const *env,
			 const char *errfile)
{
	pp_tmpdir(); /* the parent's, before the fork */
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pp_setenv(env);
		if (errfile) {
			int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0) {
				dup2(fd, 2);
				close(fd);
			}
		}
		char *av[] = { argv[0], (char *)mode, NULL };
		execv("/proc/self/exe", av);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		CHECK(errno == EINTR);
	return st;
}

/* Run and require exit status 0. */
static inline void pp_run_ok(char **argv, const char *mode, const char *const *env)
{
	int st = pp_run(argv, mode, env, NULL);
	if (WIFSIGNALED(st))
		TEST_FAIL("%s: killed by signal %d", mode, WTERMSIG(st));
	if (WEXITSTATUS(st) == 77)
		SKIP("%s skipped", mode);
	if (WEXITSTATUS(st))
		TEST_FAIL("%s: exit %d", mode, WEXITSTATUS(st));
}

/*
 * The sum of one counter over the lines of the stats file (all processes),
 * -1 if there is no line; lines counts them.
 */
static inline long long pp_stat(const char *key, int *lines)
{
	char path[256], pat[64];
	pp_stats_path(path, sizeof(path));
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	FILE *f = fopen(path, "r");
	if (lines)
		*lines = 0;
	if (!f)
		return -1;
	long long sum = -1;
	char line[8192];
	while (fgets(line, sizeof(line), f)) {
		if (lines)
			(*lines)++;
		char *p = strstr(line, pat);
		if (p)
			sum = (sum < 0 ? 0 : sum) + atoll(p + strlen(pat));
	}
	fclose(f);
	return sum;
}

/* The statistics after one run: one line, the run evicted, and no page
 * was left pinned at exit. */
static inline void pp_check_evicted_unpinned(void)
{
	int lines;
	long long ev = pp_stat("evictions", &lines), pinned = pp_stat("pinned_pages", NULL);
	TEST_LOG("stats lines %d, evictions %lld, pinned at exit %lld", lines, ev, pinned);
	CHECK_EQ(lines, 1);
	CHECK(ev > 0);
	CHECK_EQ(pinned, 0);
}

static inline void pp_stats_reset(void)
{
	char path[256];
	pp_stats_path(path, sizeof(path));
	unlink(path);
}

/* A private anonymous mapping of n bytes: a region at or above the
 * threshold. */
static inline void *pp_region(size_t n)
{
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	return m;
}

/* Words that say where they are and which pass wrote them: pp_fill_words
 * writes m[0..n) as pass v; pp_check_words fails the test when any word of
 * pass v is not there (how many are wrong, the first one's page). */
static inline uint64_t pp_word(size_t i, uint64_t v)
{
	return (i + 1) * 0x9e3779b97f4a7c15ull + v;
}

static inline void pp_fill_words(uint64_t *m, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		m[i] = pp_word(i, v);
}

static inline void pp_check_words(const uint64_t *m, size_t n, uint64_t v, const char *when)
{
	size_t bad = 0, first = 0;
	for (size_t i = 0; i < n; i++)
		if (m[i] != pp_word(i, v) && !bad++)
			first = i;
	if (bad)
		TEST_FAIL("%zu words wrong %s (the first in page %zu)", bad, when,
			  first * 8 / 4096);
}

/* Write one byte of each page of junk[0..n): with n several budgets, the
 * rest of the regions is pushed out and the budget is full of dirty pages. */
static inline void pp_dirty(unsigned char *junk, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		junk[i]++;
}

/* The first line of /proc/self/task/TID/NAME into buf ("" if none). */
static inline void pp_task_file(pid_t tid, const char *name, char *buf, size_t len)
{
	char path[128];
	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	FILE *f = fopen(path, "r");
	buf[0] = 0;
	if (f && !fgets(buf, (int)len, f))
		buf[0] = 0;
	if (f)
		fclose(f);
}

/*
 * Is thread tid blocked (state S) in one of the system calls nr[]?  With
 * restarts: a poll interrupted by task work with no signal to deliver (the
 * completion of a write-back the thread submitted in a fault) is restarted
 * by the kernel as restart_syscall, not as poll: that one counts too,
 * unless it sleeps in a futex (a fault waiting for room, before the call).
 * Missing it made preload-poll wait forever for a thread already blocked.
 */
static inline bool pp_blocked(pid_t tid, const long *nr, int n, bool restarts)
{
	char buf[256];
	pp_task_file(tid, "stat", buf, sizeof(buf));
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return false;
	pp_task_file(tid, "syscall", buf, sizeof(buf));
	long got = -1;
	if (sscanf(buf, "%ld", &got) != 1)
		return false;
	if (restarts && got == SYS_restart_syscall) {
		pp_task_file(tid, "wchan", buf, sizeof(buf));
		return !strstr(buf, "futex");
	}
	for (int i = 0; i < n; i++)
		if (got == nr[i])
			return true;
	return false;
}

/* Cancel thread t and join it: it must end cancelled. */
static inline void pp_cancel(pthread_t t)
{
	CHECK_EQ(pthread_cancel(t), 0);
	void *res;
	CHECK_EQ(pthread_join(t, &res), 0);
	CHECK(res == PTHREAD_CANCELED);
}

/* A pattern byte for offset i of buffer k. */
static inline unsigned char pp_pat(size_t k, size_t i)
{
	return (unsigned char)((i >> 12) * 131 + (i & 4095) * 7 + k * 29 + 1);
}

static inline void pp_fill(unsigned char *b, size_t n, size_t k)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pp_pat(k, i);
}

/* Index of the first byte that differs from the pattern, or n. */
static inline size_t pp_check(const unsigned char *b, size_t n, size_t k)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pp_pat(k, i))
			return i;
	return n;
}


/* main() of a test whose body runs under the preload with
 * BYPASS_PAGER_BUDGET_SCOPE=process (timeout 120 s). */
static inline int pp_main_process(char **argv, void (*body)(void), const char *name)
{
	pp_start(120);
	if (pp_preloaded()) {
		body();
		return 0;
	}
	static const char *const process[] = { "BYPASS_PAGER_BUDGET_SCOPE=process", NULL };
	pp_run_ok(argv, "run", process);
	pp_check_evicted_unpinned();
	return test_pass(name);
}

/* ------------------------------------------------------------ asks */

/* getsockopt(SOL_SOCKET, SO_RCVTIMEO [1] / SO_SNDTIMEO [2]) calls trapped
 * in the thread that called pp_trap_asks() (the pager preload's asks for a
 * socket's timeout: preload/pager/io.c). */
static inline _Atomic long *pp_asks(void)
{
	static _Atomic long asks[3];
	return asks;
}

static inline void pp_on_sys(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	if (si->si_errno == 1 || si->si_errno == 2)
		pp_asks()[si->si_errno]++;
#if defined(__x86_64__)
	/* the call returns 0, its timeval left as the caller set it (zero:
	 * no timeout, unless the test set one) */
	((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RAX] = 0;
#else
	(void)ctx;
#endif
}

/* Trap the calling thread's getsockopt of the two timeouts (SECCOMP_RET_DATA
 * 1 or 2 comes as si_errno), counted in pp_asks().  0, or -errno. */
static inline int pp_trap_asks(void)
{
#if defined(__x86_64__)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getsockopt, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* the low halves of level and name (little-endian) */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOL_SOCKET, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SO_RCVTIMEO, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SO_SNDTIMEO, 2, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | 2),
	};
	struct sock_fprog prog = { .len = (unsigned short)BP_ARRAY_SIZE(f), .filter = f };
	struct sigaction sa = { .sa_sigaction = pp_on_sys, .sa_flags = SA_SIGINFO };
	/* this thread only (no TSYNC): the other threads are not filtered */
	bool ok = !sigaction(SIGSYS, &sa, NULL) && !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
		  !prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
	return ok ? 0 : -errno;
#else
	return -ENOSYS;
#endif
}

/* A blocking AF_UNIX stream pair, no timeouts: *a sends, *b receives. */
static inline void pp_pair(int *a, int *b)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	*a = sv[0];
	*b = sv[1];
}

struct pp_trapped {
	void (*fn)(void);
	int err;
};

static inline void *pp_trapped_main(void *arg)
{
	struct pp_trapped *t = arg;
	t->err = pp_trap_asks();
	if (!t->err)
		t->fn();
	return NULL;
}

/* fn() in a thread of its own whose timeout asks are counted
 * (pp_trap_asks); the test skips if they cannot be. */
static inline void pp_run_trapped(void (*fn)(void))
{
	struct pp_trapped tr = { fn, 0 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, pp_trapped_main, &tr), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	if (tr.err)
		SKIP("seccomp unavailable (%s): the asks cannot be counted", strerror(-tr.err));
}

#endif
