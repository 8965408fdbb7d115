/* SPDX-License-Identifier: MIT */
/* Process life: exec, spawn and exit drain queued work; the constructor configures the preload. */
#include "preload.h"

/* ------------------------------------------------------------ process life */

/* exec ends the io_uring requests of the process: everything must be out. */
static void before_exec(void)
{
	if (PASS())
		return;
	/* A vfork child shares our memory: it must not touch our queues. */
	if ((pid_t)syscall(SYS_getpid) != bp_pid())
		return;
	bp_bt_enter(NULL);
	bp_bt_drain_all((int64_t)bp_bt_ecfg.exit_wait_ms * 1000000);
	bp_bt_leave(NULL);
}

EXPORT int execve(const char *p, char *const argv[], char *const envp[])
{
	FROM_BYPASS();
	before_exec();
	return REAL(execve)(p, argv, envp);
}

EXPORT int execv(const char *p, char *const argv[])
{
	FROM_BYPASS();
	before_exec();
	return REAL(execv)(p, argv);
}

EXPORT int execvp(const char *p, char *const argv[])
{
	FROM_BYPASS();
	before_exec();
	return REAL(execvp)(p, argv);
}

EXPORT int execvpe(const char *p, char *const argv[], char *const envp[])
{
	FROM_BYPASS();
	before_exec();
	return REAL(execvpe)(p, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	FROM_BYPASS();
	before_exec();
	return REAL(fexecve)(fd, argv, envp);
}

/* execl, execlp, execle: collect the arguments, then the v forms above
 * (the array is lost if exec fails, as a few bytes). */
static char **collect_args(const char *first, va_list ap, char ***envp)
{
	va_list c;
	va_copy(c, ap);
	size_t n = 1;
	while (va_arg(c, char *))
		n++;
	va_end(c);
	char **argv = malloc((n + 1) * sizeof(char *));
	if (!argv)
		return NULL;
	argv[0] = (char *)first;
	for (size_t i = 1; i <= n; i++)
		argv[i] = i < n ? va_arg(ap, char *) : NULL;
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

/* The three variadic forms share one body. */
#define EXEC_L(call, with_env)                              \
	do {                                                \
		char **envp_ = NULL;                        \
		va_list ap_;                                \
		va_start(ap_, arg);                         \
		char **argv_ = collect_args(arg, ap_, with_env ? &envp_ : NULL); \
		va_end(ap_);                                \
		if (!argv_) {                               \
			errno = ENOMEM;                     \
			return -1;                          \
		}                                           \
		(void)envp_;                                \
		int r_ = call;                              \
		free(argv_);                                \
		return r_;                                  \
	} while (0)

EXPORT int execl(const char *p, const char *arg, ...)
{
	FROM_BYPASS();
	EXEC_L(execv(p, argv_), false);
}

EXPORT int execlp(const char *p, const char *arg, ...)
{
	FROM_BYPASS();
	EXEC_L(execvp(p, argv_), false);
}

EXPORT int execle(const char *p, const char *arg, ...)
{
	FROM_BYPASS();
	EXEC_L(execve(p, argv_, envp_), true);
}

/* A spawned child inherits descriptors: submit closes and writes first. */
static void before_spawn(void)
{
	if (!PASS())
		bp_bt_flush_own();
}

EXPORT int posix_spawn(pid_t *pid, const char *path,
		       const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *at,
		       char *const argv[], char *const envp[])
{
	FROM_BYPASS();
	before_spawn();
	return REAL(posix_spawn)(pid, path, fa, at, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file,
			const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *at,
			char *const argv[], char *const envp[])
{
	FROM_BYPASS();
	before_spawn();
	return REAL(posix_spawnp)(pid, file, fa, at, argv, envp);
}

/*
 * Waiting somewhere other than the event loop (for a child, a time, a
 * signal): what the thread queued goes in first (submitted, not waited
 * for).  What the program waits for may be a peer that waits for it: a
 * child reading until the EOF of a socket the program closed, a process
 * that answers what the program wrote (docs/batch.md, "Order").
 */
static void before_block(void)
{
	if (!PASS())
		bp_bt_flush_own();
}

EXPORT pid_t waitpid(pid_t pid, int *st, int opt)
{
	FROM_BYPASS();
	if (!(opt & WNOHANG))
		before_block();
	return REAL(waitpid)(pid, st, opt);
}

EXPORT pid_t wait(int *st)
{
	FROM_BYPASS();
	before_block();
	return REAL(wait)(st);
}

EXPORT pid_t wait3(int *st, int opt, struct rusage *ru)
{
	FROM_BYPASS();
	if (!(opt & WNOHANG))
		before_block();
	return REAL(wait3)(st, opt, ru);
}

EXPORT pid_t wait4(pid_t pid, int *st, int opt, struct rusage *ru)
{
	FROM_BYPASS();
	if (!(opt & WNOHANG))
		before_block();
	return REAL(wait4)(pid, st, opt, ru);
}

EXPORT int waitid(idtype_t t, id_t id, siginfo_t *info, int opt)
{
	FROM_BYPASS();
	if (!(opt & WNOHANG))
		before_block();
	return REAL(waitid)(t, id, info, opt);
}

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	FROM_BYPASS();
	before_block();
	return REAL(nanosleep)(req, rem);
}

EXPORT int clock_nanosleep(clockid_t c, int flags, const struct timespec *req,
			   struct timespec *rem)
{
	FROM_BYPASS();
	before_block();
	return REAL(clock_nanosleep)(c, flags, req, rem);
}

EXPORT int usleep(useconds_t us)
{
	FROM_BYPASS();
	before_block();
	return REAL(usleep)(us);
}

EXPORT unsigned sleep(unsigned s)
{
	FROM_BYPASS();
	before_block();
	return REAL(sleep)(s);
}

EXPORT int pause(void)
{
	FROM_BYPASS();
	before_block();
	return REAL(pause)();
}

EXPORT int sigsuspend(const sigset_t *m)
{
	FROM_BYPASS();
	before_block();
	return REAL(sigsuspend)(m);
}

EXPORT int sigwaitinfo(const sigset_t *s, siginfo_t *i)
{
	FROM_BYPASS();
	before_block();
	return REAL(sigwaitinfo)(s, i);
}

EXPORT int sigtimedwait(const sigset_t *s, siginfo_t *i, const struct timespec *t)
{
	FROM_BYPASS();
	before_block();
	return REAL(sigtimedwait)(s, i, t);
}

EXPORT int sigwait(const sigset_t *s, int *sig)
{
	FROM_BYPASS();
	before_block();
	return REAL(sigwait)(s, sig);
}

/* Leaving the process ends its io_uring requests: send what is deferred. */
static void before_exit(const char *why)
{
	if (PASS())
		return;
	bp_bt_enter(NULL);
	bp_bt_drain_all((int64_t)bp_bt_ecfg.exit_wait_ms * 1000000);
	bp_bt_stats_dump(why);
	bp_bt_leave(NULL);
}

EXPORT void _exit(int status)
{
	FROM_BYPASS();
	before_exit("_exit");
	REAL(_exit)(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	FROM_BYPASS();
	before_exit("_exit");
	REAL(_Exit)(status);
	__builtin_unreachable();
}

static bool exited;

static void at_exit(void)
{
	if (!exited) {
		exited = true;
		before_exit("exit");
	}
}

__attribute__((constructor)) static void batch_preload_init(void)
{
	bp_pl_resolve();
	bp_bt_from_init();
	bp_bt_config_init();
	bp_bt_engine_init();
	if (bp_bt_cfg.enabled) {
		atexit(at_exit);
		bp_info("bypass batch: preload active (entries %u, max copy %zu, "
			"sendfile %s, close %d)", bp_bt_ecfg.entries, bp_bt_cfg.max_copy,
			bp_bt_cfg.sendfile_mode == BT_SENDFILE_COPY ? "copy" : "sync",
			bp_bt_cfg.defer_close);
	}
}
