/* SPDX-License-Identifier: MIT */
/*
 * The library's one SIGSEGV/SIGBUS handler: module hooks first (the pager
 * resolves userfaultfd faults there), then the faulting thread's recovery
 * point, then the program's own handler: the one installed before bypass,
 * or (through bp_fault_chain_sigaction, which the pager preload's sigaction
 * wrapper calls) one the program installed after.  A recovery point whose
 * frame the thread left by siglongjmp is not recovered into (record_gone).
 *
 * Installed with bp_sys_sigaction (core/syscall.h: rt_sigaction with a
 * restorer of the library's own), never through the process's sigaction:
 * under LD_PRELOAD that name is a preload's wrapper (the batch preload's
 * runs handlers through a trampoline that marks the thread as inside a
 * handler; the pager preload's chains SIGSEGV/SIGBUS here), and the
 * library's own handler must not pass through either.  Under
 * ThreadSanitizer bp_sys_sigaction is libc's, as the whole layer is.
 */
#include "core/internal.h"
#include "core/syscall.h"

#include <pthread.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FAULT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULT_ASAN 1
#endif
#endif
#ifdef FAULT_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define MAX_HOOKS 8

static _Atomic(bp_fault_hook) hooks[MAX_HOOKS];
/*
 * The program's handler for each signal, where the unresolved faults go.
 * Two copies per signal and an index: a replacement is written into the copy
 * not in use and then published, so the handler never reads a half-written
 * one (writers hold install_lock).
 */
static struct sigaction prev_act[2][2]; /* [SIGBUS?][copy] */
static _Atomic int prev_cur[2];
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic bool bp_fault_installed;

__thread struct bp_recover *bp_recover_top __attribute__((tls_model("initial-exec")));
static _Atomic bp_recover_hook recover_hook;

static inline int sig_idx(int sig)
{
	return sig == SIGBUS;
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	int k = sig_idx(sig);
	struct sigaction *old =
		&prev_act[k][atomic_load_explicit(&prev_cur[k], memory_order_acquire)];
	void (*sa)(int, siginfo_t *, void *) = old->sa_sigaction;
	void (*h)(int) = old->sa_handler;
	int flags = old->sa_flags;
	if (flags & SA_RESETHAND) {
		/* The kernel resets such a handler as it runs it. */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		int n = 1 - atomic_load(&prev_cur[k]);
		prev_act[k][n] = dfl;
		atomic_store_explicit(&prev_cur[k], n, memory_order_release);
	}
	if (flags & SA_SIGINFO) {
		if (sa) {
			sa(sig, si, uc);
			return;
		}
	} else if (h != SIG_DFL && h != SIG_IGN) {
		h(sig);
		return;
	}
	/*
	 * Default action: restore it and return; the faulting instruction
	 * runs again and the process dies of the signal, as without bypass.
	 * A fault sent by kill() (not by the CPU) is re-raised instead.
	 */
#if BP_TSAN
	/* signal(), not sigaction(): under ThreadSanitizer only this reaches
	 * the kernel (its sigaction interceptor keeps its own handler, which
	 * then reports the repeated fault as a bug). */
	signal(sig, SIG_DFL);
#else
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	bp_sys_sigaction(sig, &dfl, NULL);
#endif
	if (si->si_code <= 0)
		raise(sig);
}

/*
 * Whether the stack frame at frame (an address in it, taken while it ran)
 * is gone, seen from the stack pointer sp of the same thread: it lies
 * below sp on the same stack (the thread left it, by return or by
 * siglongjmp), or on the alternate signal stack while sp is not (no
 * signal handler runs there any more).  On another stack than sp's
 * otherwise it is not judged: a signal handler on the alternate stack may
 * have interrupted it.
 */
static bool frame_gone(uintptr_t frame, uintptr_t sp)
{
	stack_t ss;
	bool alt = sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE);
	if (alt) {
		uintptr_t lo = (uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
		bool f_alt = frame >= lo && frame < hi, sp_alt = sp >= lo && sp < hi;
		if (f_alt != sp_alt)
			return f_alt;
	}
	return frame < sp;
}

/*
 * The innermost recovery point lives in the frame of the function whose
 * section it covers, so while the section runs the interrupted stack
 * pointer is below it.  One above it was left by siglongjmp (from a
 * signal handler of the program's) without being popped: its memory may
 * hold anything now, and so may the points under it.
 */
static bool record_gone(const struct bp_recover *r, const void *uc)
{
#if defined(__x86_64__)
	uintptr_t sp = (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
	if ((uintptr_t)r >= sp)
		return false;
#ifdef FAULT_ASAN
	/* Locals may live in ASan's fake stack frames, not on the stack. */
	if (__asan_get_current_fake_stack())
		return false;
#endif
	return frame_gone((uintptr_t)r, sp);
#else
	(void)r;
	(void)uc;
	return false;
#endif
}

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	bp_enter();
	for (int i = 0; i < MAX_HOOKS; i++) {
		bp_fault_hook h = atomic_load_explicit(&hooks[i], memory_order_acquire);
		if (h && h(sig, si, uc)) {
			bp_leave();
			errno = saved;
			return;
		}
	}
	bp_leave();
	struct bp_recover *r = bp_recover_top;
	if (r && si->si_code > 0 && record_gone(r, uc)) {
		bp_recover_top = NULL;
		r = NULL;
	}
	if (r && si->si_code > 0) {
		uintptr_t a = (uintptr_t)si->si_addr;
		if ((!r->lo && !r->hi) || (a >= r->lo && a < r->hi)) {
			r->sig = sig;
			r->addr = si->si_addr;
			bp_recover_top = r->prev;
			errno = saved;
			if (r->hook[1]) {
				bp_recover_hook h = atomic_load_explicit(&recover_hook,
									 memory_order_acquire);
				if (h) {
					h(r, uc);
					return;
				}
				goto pass; /* nobody to hand it to: not recovered */
			}
			siglongjmp(r->jb, 1);
		}
	}
pass:
	errno = saved;
	chain(sig, si, uc);
}

int bp_fault_set_recover_hook(bp_recover_hook fn)
{
	if (!fn)
		return -EINVAL;
	bp_recover_hook cur = NULL;
	if (atomic_compare_exchange_strong(&recover_hook, &cur, fn) || cur == fn)
		return 0;
	return -EBUSY;
}

int bp_fault_install(void)
{
	if (atomic_load_explicit(&bp_fault_installed, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&install_lock);
	int r = 0;
	if (!atomic_load(&bp_fault_installed)) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = fault_handler;
		/* NODEFER: recovery longjmps out without restoring the mask. */
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (bp_sys_sigaction(SIGSEGV, &sa, &prev_act[0][0]) < 0 ||
		    bp_sys_sigaction(SIGBUS, &sa, &prev_act[1][0]) < 0)
			r = -errno;
		else
			atomic_store_explicit(&bp_fault_installed, true, memory_order_release);
	}
	pthread_mutex_unlock(&install_lock);
	return r;
}

bool bp_fault_owns(int sig)
{
	return (sig == SIGSEGV || sig == SIGBUS) &&
	       atomic_load_explicit(&bp_fault_installed, memory_order_acquire);
}

int bp_fault_chain_sigaction(int sig, const struct sigaction *act,
			     struct sigaction *old)
{
	if (!bp_fault_owns(sig))
		return 0;
	pthread_mutex_lock(&install_lock);
	int k = sig_idx(sig), cur = atomic_load(&prev_cur[k]);
	struct sigaction prev = prev_act[k][cur];
	if (act) {
		prev_act[k][1 - cur] = *act;
		atomic_store_explicit(&prev_cur[k], 1 - cur, memory_order_release);
	}
	pthread_mutex_unlock(&install_lock);
	if (old)
		*old = prev;
	return 1;
}

int bp_fault_hook_add(bp_fault_hook fn)
{
	if (!fn)
		return -EINVAL;
	int r = bp_fault_install();
	if (r)
		return r;
	for (int i = 0; i < MAX_HOOKS; i++) {
		bp_fault_hook cur = atomic_load(&hooks[i]);
		if (cur == fn)
			return 0;
	}
	for (int i = 0; i < MAX_HOOKS; i++) {
		bp_fault_hook none = NULL;
		if (atomic_compare_exchange_strong(&hooks[i], &none, fn))
			return 0;
	}
	return -ENOSPC;
}

int bp_fault_hook_remove(bp_fault_hook fn)
{
	for (int i = 0; i < MAX_HOOKS; i++) {
		bp_fault_hook cur = fn;
		if (atomic_compare_exchange_strong(&hooks[i], &cur, NULL))
			return 0;
	}
	return -ENOENT;
}

