/* SPDX-License-Identifier: MIT */
/*
 * The library's one SIGSEGV/SIGBUS handler: module hooks first (the pager
 * resolves userfaultfd faults there), then the faulting thread's recovery
 * point, then whatever handled the signal before bypass.
 */
#include "core/internal.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define MAX_HOOKS 8

static _Atomic(bp_fault_hook) hooks[MAX_HOOKS];
static struct sigaction old_segv, old_bus;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool installed;

static __thread struct bp_recover *recover_top
	__attribute__((tls_model("initial-exec")));

static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction) {
			old->sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/*
	 * Default action: restore it and return; the faulting instruction
	 * runs again and the process dies of the signal, as without bypass.
	 * A fault sent by kill() (not by the CPU) is re-raised instead.
	 */
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	for (int i = 0; i < MAX_HOOKS; i++) {
		bp_fault_hook h = atomic_load_explicit(&hooks[i], memory_order_acquire);
		if (h && h(sig, si, uc)) {
			errno = saved;
			return;
		}
	}
	struct bp_recover *r = recover_top;
	if (r && si->si_code > 0) {
		uintptr_t a = (uintptr_t)si->si_addr;
		if ((!r->lo && !r->hi) || (a >= r->lo && a < r->hi)) {
			r->sig = sig;
			r->addr = si->si_addr;
			recover_top = r->prev;
			errno = saved;
			siglongjmp(r->jb, 1);
		}
	}
	errno = saved;
	chain(sig, si, uc);
}

static int install(void)
{
	if (atomic_load_explicit(&installed, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&install_lock);
	int r = 0;
	if (!atomic_load(&installed)) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = fault_handler;
		/* NODEFER: recovery longjmps out without restoring the mask. */
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSEGV, &sa, &old_segv) < 0 ||
		    sigaction(SIGBUS, &sa, &old_bus) < 0)
			r = -errno;
		else
			atomic_store_explicit(&installed, true, memory_order_release);
	}
	pthread_mutex_unlock(&install_lock);
	return r;
}

int bp_fault_hook_add(bp_fault_hook fn)
{
	if (!fn)
		return -EINVAL;
	int r = install();
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

void bp_recover_push(struct bp_recover *r, const void *lo, size_t len)
{
	if (bp_unlikely(!atomic_load_explicit(&installed, memory_order_acquire)))
		install();
	r->lo = (uintptr_t)lo;
	r->hi = lo ? (uintptr_t)lo + len : 0;
	r->sig = 0;
	r->addr = NULL;
	r->prev = recover_top;
	/* The handler must see a complete record before it sees the link. */
	atomic_signal_fence(memory_order_seq_cst);
	recover_top = r;
}

void bp_recover_pop(struct bp_recover *r)
{
	if (recover_top == r)
		recover_top = r->prev;
}
