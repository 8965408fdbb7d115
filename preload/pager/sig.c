/* SPDX-License-Identifier: MIT */
/*
 * sigaction and signal for SIGSEGV and SIGBUS: once core's handler is
 * installed (the first region made the pager), the program's handler is not
 * installed in its place but stored as the one core passes every fault it
 * does not serve to; asking for the current action returns the program's.
 */
#include "preload.h"

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!PASS() && (sig == SIGSEGV || sig == SIGBUS) &&
	    bp_fault_chain_sigaction(sig, act, old))
		return 0;
	return REAL(sigaction)(sig, act, old);
}

static sighandler_t set(int sig, sighandler_t h, int flags)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (sig > 0 && sig < NSIG && !(flags & SA_NODEFER))
		sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal() and bsd_signal(): BSD semantics. */
EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	return set(sig, h, SA_RESTART);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return set(sig, h, SA_RESTART);
}

/* System V: reset on delivery, not blocked while it runs. */
EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return set(sig, h, SA_RESETHAND | SA_NODEFER);
}
