/* SPDX-License-Identifier: MIT */
/*
 * Interrupt mode: a ring interrupts the receiver thread with a queued
 * real-time signal whose handler consumes the rings and runs the user's
 * callback.  One signal is in flight at a time per doorbell (intr_posted),
 * so a burst of rings costs one signal: the stock-kernel stand-in for a
 * user interrupt (bypass has no uintr data path; bypass doctor reports
 * the CPU's bit, src/core/probe.c).
 */
#include "notify/notify_internal.h"
#include "core/syscall.h"

#include <signal.h>
#include <string.h>

#define INTR_SLOTS 64

struct intr_slot {
	_Atomic(struct bypass_doorbell *) db;
	bypass_notify_cb cb;
	void *arg;
	_Atomic unsigned gen;
};

static struct intr_slot slots[INTR_SLOTS];
static pthread_once_t sig_once = PTHREAD_ONCE_INIT;
static int sig_installed_err;

/* The signal: SIGRTMIN+4 unless bypass_notify_set_signal chose another
 * before the handler was installed (sig_lock orders the two). */
static _Atomic int signo;
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;
static bool sig_fixed;

int bypass_notify_signal(void)
{
	int s = atomic_load_explicit(&signo, memory_order_relaxed);
	if (bp_likely(s))
		return s;
	int def = 0;
	atomic_compare_exchange_strong(&signo, &def, SIGRTMIN + 4);
	return atomic_load(&signo);
}

int bypass_notify_set_signal(int sig)
{
	if (sig < SIGRTMIN || sig > SIGRTMAX)
		return -EINVAL;
	pthread_mutex_lock(&sig_lock);
	int r = 0;
	if (!sig_fixed)
		atomic_store(&signo, sig);
	else if (sig != bypass_notify_signal())
		r = -EBUSY;
	pthread_mutex_unlock(&sig_lock);
	return r;
}

static void intr_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	int saved = errno;
	unsigned cookie = (unsigned)si->si_value.sival_int;
	unsigned idx = cookie & (INTR_SLOTS - 1);
	struct intr_slot *s = &slots[idx];
	struct bypass_doorbell *h = atomic_load(&s->db);
	/* The cookie holds the generation's low 24 bits. */
	if (h && (atomic_load(&s->gen) & 0xffffffu) == cookie >> 8) {
		/* Clear first: a ring after this point posts a new signal. */
		atomic_store(&h->sh->intr_posted, 0);
		int n = bp_db_consume(h);
		if (n > 0 && s->cb && db_live(h)) /* destroy's wake-up is no ring */
			s->cb(h, (unsigned)n, s->arg);
	}
	errno = saved;
}

static void install_handler(void)
{
	pthread_mutex_lock(&sig_lock);
	sig_fixed = true;
	pthread_mutex_unlock(&sig_lock);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = intr_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	/* libc's sigaction, not bp_sys_sigaction: the handler runs the user's
	 * callback, so a preload that runs the program's handlers through a
	 * trampoline runs this one too (core/syscall.h says why) */
	if (sigaction(bypass_notify_signal(), &sa, NULL) < 0)
		sig_installed_err = -errno;
}

int bp_db_intr_post(struct bypass_doorbell *h)
{
	struct db_shared *sh = h->sh;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	/* Our own signal number, not one read from shared memory: a peer that
	 * writes the doorbell must not pick which signal we send. */
	si.si_signo = bypass_notify_signal();
	si.si_code = SI_QUEUE;
	si.si_pid = bp_pid();
	si.si_uid = bp_sys_getuid();
	si.si_value.sival_int = (int)atomic_load(&sh->intr_cookie);
	pid_t pid = atomic_load(&sh->intr_pid);
	pid_t tid = (pid_t)atomic_load(&sh->intr_tid);
	if (!tid) { /* unregistered meanwhile */
		atomic_store(&sh->intr_posted, 0);
		return 0;
	}
	if (bp_sys_rt_tgsigqueueinfo(pid, tid, si.si_signo, &si) == 0)
		return 0;
	int e = errno;
	atomic_store(&sh->intr_posted, 0);
	if (e == ESRCH) /* the receiver thread is gone: nobody to interrupt */
		return 0;
	bp_warn("bypass: doorbell %p: cannot signal %d/%d: %s", (void *)sh,
		(int)pid, (int)tid, strerror(e));
	return e == EAGAIN ? -EAGAIN : -EPERM;
}

void bp_db_intr_unregister(struct bypass_doorbell *h)
{
	struct db_shared *sh = h->sh;
	if (h->intr_slot < 0)
		return;
	struct intr_slot *s = &slots[h->intr_slot];
	/*
	 * Withdraw the registration if it is still this handle's, whichever
	 * thread of this process calls (close often runs on another thread
	 * than the receiver, after it ended); not one that another handle or
	 * process has made since, nor the parent's in a forked child.
	 */
	unsigned cookie = (atomic_load(&s->gen) << 8) | (unsigned)h->intr_slot;
	if (atomic_load(&sh->intr_pid) == bp_pid() &&
	    atomic_load(&sh->intr_cookie) == cookie) {
		uint32_t tid = atomic_load(&sh->intr_tid);
		if (tid)
			atomic_compare_exchange_strong(&sh->intr_tid, &tid, 0);
	}
	atomic_fetch_add(&s->gen, 1);
	atomic_store(&s->db, NULL);
	h->intr_slot = -1;
}

bool bp_db_intr_busy(struct db_shared *sh)
{
	uint32_t tid = atomic_load(&sh->intr_tid);
	if (!tid)
		return false;
	pid_t pid = atomic_load(&sh->intr_pid);
	int saved = errno;
	bool alive = bp_sys_tgkill(pid, (pid_t)tid, 0) == 0 || errno == EPERM;
	errno = saved;
	if (alive)
		return true;
	/* The receiver thread ended without unregistering: nobody consumes. */
	atomic_compare_exchange_strong(&sh->intr_tid, &tid, 0);
	return false;
}

/* A live thread other than the caller (of this or another process) is the
 * doorbell's receiver. */
static bool other_receiver(struct db_shared *sh)
{
	uint32_t cur = atomic_load(&sh->intr_tid);
	return cur && (cur != (uint32_t)bp_tid() || atomic_load(&sh->intr_pid) != bp_pid()) &&
	       bp_db_intr_busy(sh);
}

int bypass_notify_set_handler(bypass_doorbell *h, bypass_notify_cb cb, void *arg)
{
	if (!h || !db_live(h))
		return -EINVAL;
	db_check_fork(h);
	struct db_shared *sh = h->sh;
	if (!cb) {
		if (h->intr_slot < 0)
			return 0;
		if (other_receiver(sh))
			return -EBUSY;
		bp_db_intr_unregister(h);
		return 0;
	}
	pthread_once(&sig_once, install_handler);
	if (sig_installed_err)
		return sig_installed_err;
	/* Another receiver: taking over is allowed only if it is gone. */
	if (other_receiver(sh))
		return -EBUSY;
	int idx = h->intr_slot;
	if (idx < 0) {
		for (int i = 0; i < INTR_SLOTS; i++) {
			struct bypass_doorbell *none = NULL;
			if (atomic_compare_exchange_strong(&slots[i].db, &none, h)) {
				idx = i;
				break;
			}
		}
		if (idx < 0)
			return -EAGAIN;
	}
	struct intr_slot *s = &slots[idx];
	/* Bump the generation so an old in-flight signal is ignored. */
	unsigned gen = atomic_fetch_add(&s->gen, 1) + 1;
	s->cb = cb;
	s->arg = arg;
	atomic_store(&s->db, h);
	h->intr_slot = idx;
	atomic_store(&sh->intr_cookie, (gen << 8) | (unsigned)idx);
	atomic_store(&sh->intr_pid, bp_pid());
	atomic_store(&sh->intr_posted, 0);
	atomic_store_explicit(&sh->intr_tid, (uint32_t)bp_tid(), memory_order_seq_cst);
	/* Rings that came before we registered: deliver them now. */
	if (db_pending(sh) && !atomic_exchange(&sh->intr_posted, 1))
		return bp_db_intr_post(h);
	return 0;
}
