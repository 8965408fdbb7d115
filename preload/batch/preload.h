/* SPDX-License-Identifier: MIT */
/*
 * libbypass-batch.so: system call batching for unmodified event-driven
 * programs, by LD_PRELOAD.
 *
 * A segment opens when the thread's event-loop wait (epoll_wait,
 * epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect) returns, and is
 * submitted with one io_uring_enter when the thread waits again.  Inside it,
 * writes to stream sockets (write, writev, send, sendto, sendmsg), sendfile,
 * shutdown, TCP_CORK/TCP_NODELAY and close are queued; their arguments are
 * copied and they return what the system call returns on success.  The rest
 * of the wrappers keep order (a call on a descriptor with queued work runs
 * behind it), learn what descriptors are (accept4, socket, open, fcntl,
 * fstat, epoll_ctl) and keep the process's life intact (fork, exec, exit,
 * signal handlers).  Decisions are in defer.c (defer.h: the decision layer,
 * over the engine of src/batch/); see docs/batch.md.
 *
 * BYPASS_BATCH=0 makes every wrapper a pure pass-through.
 *
 * Files: the wrappers: real.c (the real functions), signals.c (handlers run
 * through a trampoline), io.c (writes, sends, sendfile, shutdown, close,
 * socket options, reads), loop.c (the event-loop waits that open and close
 * segments), fds.c (what descriptors are, and their life), process.c (fork,
 * exec, spawn, exit, the constructor), from.c (the count of calls from
 * another libbypass object, FROM_BYPASS).  The decision layer they call:
 * defer.c, fdqueue.c, sendfile.c, epwait.c, settings.c (defer.h).
 */
#ifndef BYPASS_PRELOAD_BATCH_H
#define BYPASS_PRELOAD_BATCH_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "defer.h"
#include "common/scaffold.h"

/* ------------------------------------------------------------ real functions */

/* The functions the wrappers wrap (preload/common/scaffold.h: REAL(name),
 * resolved in real.c). */
#define PL_REAL_FUNCS(X)                                                      \
	X(ssize_t, sendfile, (int, int, off_t *, size_t))                     \
	X(ssize_t, splice, (int, loff_t *, int, loff_t *, size_t, unsigned))  \
	X(int, sendmmsg, (int, struct mmsghdr *, unsigned, int))              \
	X(int, recvmmsg, (int, struct mmsghdr *, unsigned, int,               \
			  struct timespec *))                                 \
	X(ssize_t, sendfile64, (int, int, off64_t *, size_t))                 \
	X(int, shutdown, (int, int))                                          \
	X(int, close, (int))                                                  \
	X(int, setsockopt, (int, int, int, const void *, socklen_t))          \
	X(int, getsockopt, (int, int, int, void *, socklen_t *))              \
	X(int, epoll_ctl, (int, int, int, struct epoll_event *))              \
	X(int, accept, (int, struct sockaddr *, socklen_t *))                 \
	X(int, accept4, (int, struct sockaddr *, socklen_t *, int))           \
	X(int, socket, (int, int, int))                                       \
	X(int, socketpair, (int, int, int, int *))                            \
	X(int, connect, (int, const struct sockaddr *, socklen_t))            \
	X(int, bind, (int, const struct sockaddr *, socklen_t))               \
	X(int, listen, (int, int))                                            \
	X(int, open, (const char *, int, ...))                                \
	X(int, open64, (const char *, int, ...))                              \
	X(int, openat, (int, const char *, int, ...))                         \
	X(int, openat64, (int, const char *, int, ...))                       \
	X(int, dup, (int))                                                    \
	X(int, dup2, (int, int))                                              \
	X(int, dup3, (int, int, int))                                         \
	X(int, fcntl, (int, int, ...))                                        \
	X(int, fcntl64, (int, int, ...))                                      \
	X(int, ioctl, (int, unsigned long, ...))                              \
	X(int, close_range, (unsigned, unsigned, int))                        \
	X(int, fclose, (FILE *))                                              \
	X(int, fstat, (int, struct stat *))                                   \
	X(int, fstat64, (int, struct stat64 *))                               \
	X(int, execve, (const char *, char *const[], char *const[]))          \
	X(int, execv, (const char *, char *const[]))                          \
	X(int, execvp, (const char *, char *const[]))                         \
	X(int, execvpe, (const char *, char *const[], char *const[]))         \
	X(int, fexecve, (int, char *const[], char *const[]))                  \
	X(int, posix_spawn, (pid_t *, const char *,                           \
			     const posix_spawn_file_actions_t *,              \
			     const posix_spawnattr_t *, char *const[],        \
			     char *const[]))                                  \
	X(int, posix_spawnp, (pid_t *, const char *,                          \
			      const posix_spawn_file_actions_t *,             \
			      const posix_spawnattr_t *, char *const[],       \
			      char *const[]))                                 \
	X(void, _exit, (int))                                                 \
	X(void, _Exit, (int))                                                 \
	X(pid_t, waitpid, (pid_t, int *, int))                                \
	X(pid_t, wait, (int *))                                               \
	X(pid_t, wait3, (int *, int, struct rusage *))                        \
	X(pid_t, wait4, (pid_t, int *, int, struct rusage *))                 \
	X(int, waitid, (idtype_t, id_t, siginfo_t *, int))                    \
	X(int, nanosleep, (const struct timespec *, struct timespec *))       \
	X(int, clock_nanosleep, (clockid_t, int, const struct timespec *,     \
				 struct timespec *))                          \
	X(int, usleep, (useconds_t))                                          \
	X(unsigned, sleep, (unsigned))                                        \
	X(int, pause, (void))                                                 \
	X(int, sigsuspend, (const sigset_t *))                                \
	X(int, sigwaitinfo, (const sigset_t *, siginfo_t *))                  \
	X(int, sigtimedwait, (const sigset_t *, siginfo_t *,                  \
			      const struct timespec *))                       \
	X(int, sigwait, (const sigset_t *, int *))                            \
	PL_REAL_BOTH(X)

PL_REAL_DECLARE(PL_REAL_FUNCS)

/* Wrappers work only once configured, and never inside bypass (core's
 * per-thread depth: inside the library, a fault hook, a signal handler). */
#define PASS() bp_pl_pass(bp_bt_cfg.enabled)

static inline long ret_errno(long r, bool sigpipe)
{
	if (r >= 0)
		return r;
	if (sigpipe && r == -EPIPE)
		raise(SIGPIPE);
	errno = (int)-r;
	return -1;
}

/* ------------------------------------------------------------ from_bypass */

/* The executable segments of the other libbypass objects (from.c). */
#define BT_FROM_SPANS 8
struct bt_span {
	uintptr_t lo, hi;
};
extern struct bt_span bp_bt_from_text[BT_FROM_SPANS];
extern int bp_bt_from_nspans;
extern int bp_bt_from_state;
void bp_bt_from_init(void);

static inline void bp_bt_note_caller(uintptr_t ra)
{
	if (bp_unlikely(__atomic_load_n(&bp_bt_from_state, __ATOMIC_ACQUIRE) != 2)) {
		bp_bt_from_init();
		if (__atomic_load_n(&bp_bt_from_state, __ATOMIC_ACQUIRE) != 2)
			return;
	}
	for (int i = 0; i < bp_bt_from_nspans; i++)
		if (bp_unlikely(ra - bp_bt_from_text[i].lo <
				bp_bt_from_text[i].hi - bp_bt_from_text[i].lo)) {
			__atomic_fetch_add(&bp_bt_from_bypass, 1, __ATOMIC_RELAXED);
			return;
		}
}

/* First statement of every wrapper: counts the call when its caller is
 * another libbypass object (the stats line's "from_bypass"; a macro, so
 * that the return address is the wrapper's own). */
#define FROM_BYPASS() bp_bt_note_caller((uintptr_t)__builtin_return_address(0))

/* A read waits behind the descriptor's queued work, and reports the error
 * of a deferred call on it that failed. */
#define BEFORE_READ(fd, flags)                                              \
	do {                                                                \
		if (!PASS()) {                                              \
			long r_ = bp_bt_before_fd((fd), (flags) & MSG_DONTWAIT \
							     ? BT_READ_NOWAIT   \
							     : BT_READ);        \
			if (!r_)                                            \
				r_ = bp_bt_report_err(fd);                  \
			if (r_)                                             \
				return ret_errno(r_, false);                \
		}                                                           \
	} while (0)

#endif
