/* SPDX-License-Identifier: MIT */
/*
 * The preloads' scaffold: what every libbypass-<module>.so needs around its
 * wrappers, written once and named the same in each (docs/MODULES.md,
 * "Preloads").  A static library (bypass_preload_common, CMakeLists.txt)
 * linked into each preload, its symbols hidden there like the rest of the
 * preload's own: two preloads loaded together (`bypass run --batch --pager`)
 * each keep their own copy.
 *
 *   PL_REAL_FUNCS(X)      a preload's list of the functions it wraps,
 *                         X(ret, name, (args)), in its preload.h; it ends
 *                         with PL_REAL_BOTH(X), those both preloads wrap
 *   PL_REAL_DECLARE(L)    the pointers bp_pl_real_<name> and bp_pl_resolve(),
 *   PL_REAL_DEFINE(L)       declared in preload.h, defined in one .c file
 *   REAL(name)            the real function, resolved on first use
 *   PASS()                a wrapper's test: go straight to REAL (the preload
 *                         defines it over bp_pl_pass(its "enabled" switch))
 *   EXPORT                a wrapper's definition (the rest stays hidden)
 *   bp_pl_env_size/_onoff the environment, where a bad value is refused
 *                         (env.c; core's bp_env_u64/bp_env_bool warn and
 *                         keep the default instead)
 *   bp_pl_complain        a line on stderr (write.c)
 *   struct bp_pl_line ... the statistics line appended at exit (write.c)
 *   bp_pl_on_fork         the preload's fork handler (write.c)
 */
#ifndef BYPASS_PRELOAD_COMMON_SCAFFOLD_H
#define BYPASS_PRELOAD_COMMON_SCAFFOLD_H

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/internal.h"

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------ real functions */

/* What both preloads wrap: the batch preload to keep a descriptor's calls
 * in order behind its queued writes (and the event-loop waits, where its
 * segments begin and end), the pager to pin or copy buffers that lie in
 * its regions; sigaction, each for its own signals.  At the end of each
 * preload's PL_REAL_FUNCS. */
#define PL_REAL_BOTH(X)                                                       \
	X(ssize_t, read, (int, void *, size_t))                               \
	X(ssize_t, readv, (int, const struct iovec *, int))                   \
	X(ssize_t, write, (int, const void *, size_t))                        \
	X(ssize_t, writev, (int, const struct iovec *, int))                  \
	X(ssize_t, recv, (int, void *, size_t, int))                          \
	X(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *,    \
			      socklen_t *))                                   \
	X(ssize_t, recvmsg, (int, struct msghdr *, int))                      \
	X(ssize_t, send, (int, const void *, size_t, int))                    \
	X(ssize_t, sendto, (int, const void *, size_t, int,                   \
			    const struct sockaddr *, socklen_t))              \
	X(ssize_t, sendmsg, (int, const struct msghdr *, int))                \
	X(int, poll, (struct pollfd *, nfds_t, int))                          \
	X(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *,      \
		       const sigset_t *))                                     \
	X(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *)) \
	X(int, pselect, (int, fd_set *, fd_set *, fd_set *,                   \
			 const struct timespec *, const sigset_t *))          \
	X(int, epoll_wait, (int, struct epoll_event *, int, int))             \
	X(int, epoll_pwait, (int, struct epoll_event *, int, int,             \
			     const sigset_t *))                               \
	X(int, epoll_pwait2, (int, struct epoll_event *, int,                 \
			      const struct timespec *, const sigset_t *))     \
	X(int, sigaction, (int, const struct sigaction *, struct sigaction *))

#define PL_REAL_EXTERN_(ret, name, args) extern ret(*bp_pl_real_##name) args;
#define PL_REAL_DEFINE_(ret, name, args) ret(*bp_pl_real_##name) args;
#define PL_REAL_RESOLVE_(ret, name, args) \
	if (!bp_pl_real_##name)           \
		bp_pl_real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);

/* In preload.h: the pointers to the real functions of LIST, and the
 * function that resolves every one still NULL (dlsym(RTLD_NEXT): the next
 * object's, another preload's wrapper when one is loaded after this one). */
#define PL_REAL_DECLARE(LIST) \
	LIST(PL_REAL_EXTERN_)  \
	void bp_pl_resolve(void);

/* In one .c file of the preload. */
#define PL_REAL_DEFINE(LIST)      \
	LIST(PL_REAL_DEFINE_)      \
	void bp_pl_resolve(void)   \
	{                          \
		LIST(PL_REAL_RESOLVE_) \
	}

/* The real function, resolved on first use (before the constructor too). */
#define REAL(name) \
	(bp_likely(bp_pl_real_##name) ? bp_pl_real_##name : (bp_pl_resolve(), bp_pl_real_##name))

/* ------------------------------------------------------------ pass-through */

/*
 * A wrapper passes straight through to the real function when its preload
 * is off (not configured, configured off, or given up), or when the calling
 * thread is inside bypass (core's per-thread depth: raised around a
 * preload's calls into the library, by core's fault handler around a fault
 * hook, for good in the library's threads), so that the library's own
 * calls and a signal handler's never come back into a wrapper's work.
 * Each preload defines PASS() as bp_pl_pass(its switch).
 */
static inline bool bp_pl_pass(bool enabled)
{
	return bp_unlikely(!enabled) || bp_unlikely(bp_inside());
}

/* ------------------------------------------------------------ environment */

/* For the readers that refuse (env.c): the preload's name in their
 * messages ("bypass: <name> preload: ..."), and what a refused setting
 * means ("the program runs unpaged"); a preload that uses them defines
 * both, with PL_NAMES(name, refused). */
extern const char bp_pl_name[];
extern const char bp_pl_refused[];
#define PL_NAMES(name, refused)          \
	const char bp_pl_name[] = name;  \
	const char bp_pl_refused[] = refused;

/* One line on stderr, whatever BYPASS_LOG says (a setting refused, a
 * feature given up), through core/syscall.h: never another preload's
 * write(). */
void bp_pl_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The value of an environment variable, or NULL when unset or empty. */
const char *bp_pl_env(const char *name);

/*
 * A size: digits with an optional K, M, G or T (powers of 1024), and "B" or
 * "iB" after it.  Unset or empty: def.  Not a size, or below min: a line on
 * stderr (bp_pl_complain, ending with bp_pl_refused) and false.
 */
bool bp_pl_env_size(const char *name, size_t def, size_t min, size_t *out);

/* A switch, on unless 0/off/no/false (core's bp_env_switch); anything
 * else but 1/on/yes/true: a line on stderr and false. */
bool bp_pl_env_onoff(const char *name, bool *out);

/* ------------------------------------------------------------ statistics */

/*
 * The line of counters a preload appends at exit to the file(s) named by
 * its environment: one JSON object on one line, {"module": NAME, "pid": N,
 * then the preload's own pairs}.  Pairs are added whole or not at all (a
 * line that would overflow loses its last pairs, never its closing brace).
 * spaced: ", " and ": " between items (batch's line) or "," and ":" (the
 * pager's); each preload's line is documented as it is.
 */
struct bp_pl_line {
	size_t n;
	bool spaced;
	char buf[4096];
};
void bp_pl_line_open(struct bp_pl_line *l, const char *module, bool spaced);
/* Append text as it is (a pair's value, an array's items). */
void bp_pl_line_put(struct bp_pl_line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Append the separator and "key" with its colon; the value follows. */
void bp_pl_line_key(struct bp_pl_line *l, const char *key);
/* Append "key": v, and "key": "s". */
void bp_pl_line_u64(struct bp_pl_line *l, const char *key, uint64_t v);
void bp_pl_line_str(struct bp_pl_line *l, const char *key, const char *s);
/* Close the object and append it to path, and to also unless it is the
 * same file (either NULL or empty: none), created 0644, with one write
 * each (O_APPEND: lines of processes exiting together do not mix), through
 * core/syscall.h (another preload's wrappers never see it). */
void bp_pl_line_write(struct bp_pl_line *l, const char *path, const char *also);

/* ------------------------------------------------------------ fork */

/* The preload's work in the child of a fork (pthread_atfork's child
 * handler), registered by its constructor once it is configured.  (The
 * library's objects learn of a fork from core's bp_fork_gen(): the batch
 * preload's thread state does, and needs no handler.) */
void bp_pl_on_fork(void (*child)(void));

#endif
