/* SPDX-License-Identifier: MIT */
/* Signal handlers run through a trampoline that marks the thread as inside a handler. */
#include "preload.h"

/* ------------------------------------------------------------ signals */

/*
 * The program's handlers run through a trampoline that marks the thread as
 * inside a handler: calls made there pass straight through (a handler may
 * interrupt the library, or malloc), and an EINTR of epoll_wait is known to
 * come from a handler rather than from io_uring's task work.
 */
static struct {
	_Atomic(void *) fn;
	_Atomic int flags;
} handlers[_NSIG];

static void trampoline(int sig, siginfo_t *si, void *uc)
{
	bp_bt_enter(NULL);
	bp_bt_sig_seen++;
	void *fn = atomic_load_explicit(&handlers[sig].fn, memory_order_acquire);
	int flags = atomic_load_explicit(&handlers[sig].flags, memory_order_relaxed);
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))fn)(sig, si, uc);
	else if (fn)
		((void (*)(int))fn)(sig);
	bp_bt_leave(NULL);
}

static bool wrappable(int sig, const struct sigaction *act)
{
	if (!act || sig <= 0 || sig >= _NSIG)
		return false;
	void *h = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction
					       : (void *)act->sa_handler;
	return h != (void *)SIG_DFL && h != (void *)SIG_IGN && h != NULL;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	FROM_BYPASS();
	if (!bp_bt_cfg.enabled)
		return REAL(sigaction)(sig, act, old);
	struct sigaction mine, prev;
	const struct sigaction *use = act;
	void *app_fn = NULL;
	int app_flags = 0;
	bool wrap = wrappable(sig, act);
	if (wrap) {
		mine = *act;
		app_flags = act->sa_flags;
		app_fn = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction
						      : (void *)act->sa_handler;
		mine.sa_sigaction = trampoline;
		mine.sa_flags |= SA_SIGINFO;
		use = &mine;
	}
	void *old_fn = NULL;
	int old_flags = 0;
	if (sig > 0 && sig < _NSIG) {
		old_fn = atomic_load(&handlers[sig].fn);
		old_flags = atomic_load(&handlers[sig].flags);
		if (wrap) {
			atomic_store(&handlers[sig].flags, app_flags);
			atomic_store(&handlers[sig].fn, app_fn);
		}
	}
	int r = REAL(sigaction)(sig, use, &prev);
	if (r == 0 && old) {
		*old = prev;
		if (prev.sa_sigaction == trampoline) {
			old->sa_flags = old_flags;
			if (old_flags & SA_SIGINFO)
				old->sa_sigaction = (void (*)(int, siginfo_t *, void *))old_fn;
			else
				old->sa_handler = (void (*)(int))old_fn;
		}
	}
	return r;
}

EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	FROM_BYPASS();
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART; /* glibc's signal(): BSD semantics */
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}
