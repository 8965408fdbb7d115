/* SPDX-License-Identifier: MIT */
/*
 * Library mode's call gate: the protection key that guards every service
 * heap mapped in this process, and the one path through which handlers,
 * the init hook and the recover hook run.
 *
 * PKRU has two bits per key k: access-disable (bit 2k) and write-disable
 * (bit 2k+1).  Outside a call the key is write-disabled (access-disabled
 * too once a handle asked for BYPASS_IPC_LIB_NOREAD); inside, both bits are
 * clear.  The gate writes PKRU with WRPKRU on entry and on exit, and after
 * each write reads PKRU back and compares our key's bits with the value it
 * meant to set, trapping (ud2: SIGILL) on a mismatch: ERIM's pattern, so
 * that a jump into the middle of the gate (to a WRPKRU with another value
 * in EAX) gains nothing.  Every other key's bits are kept as the thread had
 * them at entry.
 *
 * PKRU facts the gate relies on (Intel SDM vol. 3 "protection keys", the
 * kernel's arch/x86/kernel/fpu and signal code):
 *  - WRPKRU needs ECX = EDX = 0 and writes EAX; RDPKRU needs ECX = 0 and
 *    sets EDX to 0.  Both fault (#UD) where CR4.PKE is off: they run only
 *    after pkey_alloc succeeded (which needs OSPKE).
 *  - pkey_alloc(flags, rights) sets the rights in the calling thread's
 *    PKRU only; other threads keep theirs, and a thread that existed before
 *    runs with the value it was started with (the kernel's default at
 *    execve denies access to every key but 0), until its first call here
 *    sets the key's bits.
 *  - A new thread inherits its creator's PKRU (clone copies the FPU
 *    state): one started inside a call starts with the key open.
 *  - A signal handler runs with the kernel's default PKRU (every key but 0
 *    access-disabled), so a handler interrupting a call cannot touch the
 *    state; the interrupted PKRU is in the signal frame and sigreturn puts
 *    it back.  A fault in a handler leaves through core's recovery point
 *    (siglongjmp, which restores no PKRU): the gate then writes the
 *    thread's value from entry, with the key closed, and checks it.
 *  - The kernel's accesses to user memory honour the current PKRU: a
 *    system call inside a handler may read and write the state, one made
 *    outside a call may not (and robust-lock words the kernel must write
 *    when a thread dies are kept outside the guarded heap: see lib.h).
 */
#include "ipc/lib.h"

#include <cpuid.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PKEY_DISABLE_ACCESS
#define PKEY_DISABLE_ACCESS 0x1
#endif
#ifndef PKEY_DISABLE_WRITE
#define PKEY_DISABLE_WRITE 0x2
#endif

_Static_assert(__builtin_offsetof(pthread_mutex_t, __data.__lock) == 0,
	       "the robust futex word is the mutex's first word");

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int lib_key = -EOPNOTSUPP;
static char reason[160] = "not checked";
/* PKRU bits of our key outside a call: WD, or AD|WD once NOREAD was asked. */
static _Atomic uint32_t closed_bits;
static uint32_t key_mask;

static void probe(void)
{
	int k = bp_ipc_pkey_alloc(PKEY_DISABLE_WRITE, reason, sizeof(reason));
	if (k < 0)
		return;
	lib_key = k;
	key_mask = 3u << (2 * lib_key);
	atomic_store(&closed_bits, 2u << (2 * lib_key));
	snprintf(reason, sizeof(reason), "protection key %d", lib_key);
}

bool bp_ipc_lib_pkru_ok(void)
{
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((c >> 3) & 1) && ((c >> 4) & 1);
}

int bp_ipc_lib_key(void)
{
	pthread_once(&once, probe);
	return lib_key;
}

const char *bp_ipc_lib_key_reason(void)
{
	pthread_once(&once, probe);
	return reason;
}

static inline uint32_t rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

/*
 * Write val to PKRU, read PKRU back and trap unless (PKRU & mask) == want.
 * One asm block: nothing the compiler schedules can sit between the write
 * and its check.
 */
static inline __attribute__((always_inline)) void pkru_set_checked(uint32_t val, uint32_t mask,
								   uint32_t want)
{
	uint32_t eax = val, edx = 0;
	__asm__ __volatile__(".byte 0x0f,0x01,0xef\n\t" /* wrpkru */
			     ".byte 0x0f,0x01,0xee\n\t" /* rdpkru */
			     "andl %[mask], %%eax\n\t"
			     "cmpl %[want], %%eax\n\t"
			     "je 1f\n\t"
			     "ud2\n"
			     "1:"
			     : "+a"(eax), "+d"(edx)
			     : "c"(0), [mask] "r"(mask), [want] "r"(want)
			     : "memory", "cc");
}

void bp_ipc_lib_noread(void)
{
	int k = bp_ipc_lib_key();
	if (k < 0)
		return;
	uint32_t cl = atomic_fetch_or(&closed_bits, 1u << (2 * k)) | (1u << (2 * k));
	pkru_set_checked((rdpkru() & ~key_mask) | cl, key_mask, cl);
}

int bp_ipc_lib_guard(void *addr, size_t len)
{
	int k = bp_ipc_lib_key();
	if (k < 0)
		return -EOPNOTSUPP;
	if (syscall(SYS_pkey_mprotect, addr, len, PROT_READ | PROT_WRITE, k) < 0)
		return -errno;
	uint32_t cl = atomic_load(&closed_bits);
	pkru_set_checked((rdpkru() & ~key_mask) | cl, key_mask, cl);
	return 0;
}

/* ------------------------------------------------------------- the gate */

/* Per thread: inside a call, and PKRU as it was at entry. */
static __thread unsigned depth __attribute__((tls_model("initial-exec")));
static __thread uint32_t pkru_in __attribute__((tls_model("initial-exec")));

extern __thread unsigned bp_ipc_lib_nheld; /* lib_env.c */

enum { RUN_OP, RUN_INIT, RUN_RECOVER };

static inline __attribute__((always_inline)) void gate_open(const struct lib_core *lc)
{
	if (lc->guarded) {
		uint32_t cur = rdpkru();
		pkru_in = cur;
		pkru_set_checked(cur & ~key_mask, key_mask, 0);
	} else if (lc->pkru_ok) {
		pkru_in = rdpkru();
	}
}

static inline __attribute__((always_inline)) void gate_close(const struct lib_core *lc)
{
	if (lc->guarded) {
		uint32_t cl = atomic_load_explicit(&closed_bits, memory_order_relaxed);
		pkru_set_checked((pkru_in & ~key_mask) | cl, key_mask, cl);
	}
}

/*
 * A fault left a handler through the recovery point: the signal handler's
 * PKRU (the kernel's default) is still in place.  Put the thread's own
 * back, with our key closed, release what the handler held, and mark the
 * service broken.
 */
static __attribute__((noinline, cold)) int after_fault(struct lib_core *lc,
							const struct bp_recover *rp, int what)
{
	/* Broken first: a thread waiting for a lock the handler held sees
	 * the mark as soon as it gets the lock (env->lock checks it). */
	atomic_fetch_add(&lc->ctl->faults, 1);
	atomic_fetch_or(&lc->ctl->broken, LIB_BROKEN);
	depth = 0;
	/* The locks live in the guarded heap: open it to release them (the
	 * signal handler's PKRU, still in place, has the key access-disabled),
	 * then close it. */
	if (lc->guarded)
		pkru_set_checked(pkru_in & ~key_mask, key_mask, 0);
	bp_ipc_lib_release_held();
	bp_ipc_lib_take_owner_dead();
	if (lc->guarded) {
		gate_close(lc);
	} else if (lc->pkru_ok) {
		uint32_t v = pkru_in, edx = 0;
		__asm__ __volatile__(".byte 0x0f,0x01,0xef" : "+a"(v), "+d"(edx) : "c"(0) : "memory");
	}
	bp_warn("bypass: ipc: service %s: %s at %p in its %s: the service is broken",
		lc->ctl->name, rp->sig == SIGBUS ? "SIGBUS" : "SIGSEGV", rp->addr,
		what == RUN_OP ? "handler" : what == RUN_INIT ? "init hook" : "recover hook");
	return -EFAULT;
}

/* After a handler returned (the gate still open): locks it left held are
 * released, and the state they guard may be half-changed. */
static __attribute__((noinline, cold)) void leaked(struct lib_core *lc)
{
	atomic_fetch_add(&lc->ctl->leaked, 1);
	atomic_fetch_or(&lc->ctl->broken, LIB_BROKEN); /* before the release */
	unsigned n = bp_ipc_lib_release_held();
	bp_warn("bypass: ipc: service %s: a handler returned holding %u lock(s): "
		"the service is broken", lc->ctl->name, n);
}

/* The call path: kept apart from the hooks' so that it stays short. */
int bp_ipc_lib_run(struct lib_core *lc, uint32_t op, const void *req, size_t len, void *resp,
		   size_t cap)
{
	if (bp_unlikely(depth))
		return -EDEADLK;
	struct bp_recover rp;
	int r;
	if (BP_RECOVER_TRY(&rp, NULL, 0)) {
		gate_open(lc);
		depth = 1;
		r = lc->ops[op](&lc->env, lc->state, req, len, resp, cap);
		depth = 0;
		if (bp_unlikely(bp_ipc_lib_nheld))
			leaked(lc);
		if (bp_unlikely(bp_ipc_lib_take_owner_dead()))
			r = -EOWNERDEAD;
		gate_close(lc);
		bp_recover_pop(&rp);
	} else {
		r = after_fault(lc, &rp, RUN_OP);
	}
	return r;
}

static int run_hook(struct lib_core *lc, int what)
{
	if (depth)
		return -EDEADLK;
	struct bp_recover rp;
	int r;
	if (BP_RECOVER_TRY(&rp, NULL, 0)) {
		gate_open(lc);
		depth = 1;
		if (what == RUN_INIT)
			r = lc->desc->init(&lc->env, &lc->state);
		else
			r = lc->desc->recover(&lc->env, lc->state);
		depth = 0;
		if (bp_ipc_lib_nheld) {
			leaked(lc);
			if (what == RUN_RECOVER)
				r = -ENOTRECOVERABLE; /* it did not finish its repair */
		}
		gate_close(lc);
		bp_recover_pop(&rp);
	} else {
		r = after_fault(lc, &rp, what);
	}
	return r;
}

int bp_ipc_lib_run_init(struct lib_core *lc)
{
	if (!lc->desc->init)
		return 0;
	return run_hook(lc, RUN_INIT);
}

int bp_ipc_lib_run_recover(struct lib_core *lc)
{
	bp_ipc_lib_set_recovering(true);
	int r = run_hook(lc, RUN_RECOVER);
	bp_ipc_lib_set_recovering(false);
	return r;
}

bool bp_ipc_lib_in_call(void)
{
	return depth != 0;
}

void bp_ipc_lib_stats_fill(const struct lib_core *lc, struct bypass_ipc_lib_stats *st)
{
	struct lib_ctl *c = lc->ctl;
	st->guarded = lc->guarded;
	st->broken = atomic_load(&c->broken) & LIB_BROKEN ? 1 : 0;
	st->faults = atomic_load(&c->faults);
	st->owner_dead = atomic_load(&c->owner_dead);
	st->leaked_locks = atomic_load(&c->leaked);
	st->recoveries = atomic_load(&c->recoveries);
	st->events = atomic_load(&c->events);
	st->events_dropped = atomic_load(&c->dropped);
	st->arena_used = atomic_load(&c->used);
	st->arena_size = c->heap_end - c->heap_off;
	st->arena_base = (uint64_t)lc->base;
}

/* ------------------------------------------------------ calls and recovery */

int bp_ipc_lib_invoke(struct lib_core *lc, uint32_t op, const void *req, size_t len,
		      void *resp, size_t cap)
{
	int r = bp_ipc_lib_alive(lc);
	if (bp_unlikely(r))
		return r;
	if (bp_unlikely(op >= lc->nops || (len && !req) || (cap && !resp)))
		return -EINVAL;
	r = bp_ipc_lib_run(lc, op, req, len, resp, cap);
	if (bp_unlikely(r > 0 && (size_t)r > cap))
		r = -EOVERFLOW; /* the handler wrote past the response buffer */
	return r;
}

int bp_ipc_lib_do_recover(struct lib_core *lc)
{
	struct lib_ctl *c = lc->ctl;
	int r = bp_ipc_lib_alive(lc);
	if (r != -ENOTRECOVERABLE)
		return r;
	if (depth)
		return -EDEADLK;
	if (bp_ipc_lib_mutex_take(&c->recover_lock) < 0)
		return -ENOLCK;
	r = 0;
	if (atomic_load(&c->broken) & LIB_BROKEN) {
		if (!lc->desc->recover) {
			r = -ENOTRECOVERABLE;
		} else {
			r = bp_ipc_lib_run_recover(lc);
			if (r == 0) {
				atomic_fetch_and(&c->broken, ~LIB_BROKEN);
				atomic_fetch_add(&c->recoveries, 1);
				bp_info("bypass: ipc: service %s recovered", c->name);
			} else if (r != -EFAULT) {
				r = -ENOTRECOVERABLE;
			}
		}
	}
	pthread_mutex_unlock(&c->recover_lock);
	return r;
}
