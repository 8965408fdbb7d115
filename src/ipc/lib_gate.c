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
 * each write checks the value set (EAX, which WRPKRU wrote to PKRU whole)
 * against memory, trapping (ud2: SIGILL) on a mismatch: ERIM's pattern, so
 * that a jump into the middle of the gate (to a WRPKRU with another value
 * in EAX) gains nothing: after the entry's write our key's bits must be
 * clear, after the exit's the value must be the one the entry computed (in
 * this thread's TLS) and must have our key write-disabled.  Every other
 * key's bits are kept as the thread had them at entry.
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
#include "core/syscall.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#ifndef PKEY_DISABLE_ACCESS
#define PKEY_DISABLE_ACCESS 0x1
#endif
#ifndef PKEY_DISABLE_WRITE
#define PKEY_DISABLE_WRITE 0x2
#endif


/* The gate's key (pkey.c's layer), and what follows from it. */
static struct bp_ipc_key gate_key = BP_IPC_KEY_INIT(PKEY_DISABLE_WRITE);
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int lib_key = -EOPNOTSUPP;
/* PKRU bits of our key outside a call: WD, or AD|WD once NOREAD was asked
 * (read by each entry of the gate); both bits of our key, and its WD bit
 * (the gate's constants, set once by probe). */
static uint32_t closed_bits;
static uint32_t key_mask, wd_bit;

static void probe(void)
{
	int k = bp_ipc_key_get(&gate_key);
	if (k < 0)
		return;
	key_mask = 3u << (2 * k);
	wd_bit = 2u << (2 * k);
	__atomic_store_n(&closed_bits, 2u << (2 * k), __ATOMIC_RELEASE);
	snprintf(gate_key.reason, sizeof(gate_key.reason), "protection key %d", k);
	lib_key = k;
}

bool bp_ipc_lib_pkru_ok(void)
{
	return bp_ipc_pkey_cpu(NULL, 0);
}

int bp_ipc_lib_key(void)
{
	pthread_once(&once, probe);
	return lib_key;
}

const char *bp_ipc_lib_key_reason(void)
{
	pthread_once(&once, probe);
	return gate_key.reason;
}

/*
 * The two checked writes of PKRU.  WRPKRU writes EAX to PKRU whole (or
 * faults), so the EAX it leaves is the PKRU actually set: the check reads
 * no PKRU back (an RDPKRU would wait for the write to complete; ERIM checks
 * EAX too).  What it is compared with is memory read after the write, not
 * a register loaded before it: a jump straight to the WRPKRU with other
 * values in the registers still meets the gate's own constants.  One asm
 * block each: nothing the compiler schedules sits between the write and its
 * check, and the trap is out of line (the hot path falls through), in a
 * section of its own: never the one the code is in (a cold function's
 * .text.unlikely would put it right after the branch).
 *
 * PKRU_OPEN: our key's bits in what was written must be clear (key_mask).
 * PKRU_CLOSE: what was written must equal *out (this thread's closing
 * value, computed by the entry) and have our key write-disabled (wd_bit).
 */
#define PKRU_OPEN(val)                                                                 \
	do {                                                                           \
		uint32_t eax_ = (val), edx_ = 0;                                       \
		__asm__ __volatile__(".byte 0x0f,0x01,0xef\n\t" /* wrpkru */           \
				     "testl %[mask], %%eax\n\t"                        \
				     "jnz 9f\n\t"                                      \
				     ".pushsection .text.bp_pkru_trap,\"ax\"\n"       \
				     "9: ud2\n\t"                                      \
				     ".popsection"                                      \
				     : "+a"(eax_), "+d"(edx_)                          \
				     : "c"(0), [mask] "m"(key_mask)                    \
				     : "memory", "cc");                                \
	} while (0)

#define PKRU_CLOSE(val, out)                                                           \
	do {                                                                           \
		uint32_t eax_ = (val), edx_ = 0;                                       \
		__asm__ __volatile__(".byte 0x0f,0x01,0xef\n\t" /* wrpkru */           \
				     "cmpl %[want], %%eax\n\t"                         \
				     "jne 9f\n\t"                                      \
				     "testl %[wd], %%eax\n\t"                          \
				     "jz 9f\n\t"                                       \
				     ".pushsection .text.bp_pkru_trap,\"ax\"\n"       \
				     "9: ud2\n\t"                                      \
				     ".popsection"                                      \
				     : "+a"(eax_), "+d"(edx_)                          \
				     : "c"(0), [want] "m"(out), [wd] "m"(wd_bit)       \
				     : "memory", "cc");                                \
	} while (0)

/* Per thread: inside a call; the PKRU the exit of the gate writes (the
 * thread's own at entry, our key closed). */
static __thread unsigned depth __attribute__((tls_model("initial-exec")));
/* The call depth marks: its core, its gate's frame (the CFA of the gate's
 * function), the recovery point outside it, and the recovery lock a
 * recover hook's caller holds.  A call left by siglongjmp keeps depth
 * set; the next call tells it from a nested one by that frame
 * (bp_ipc_lib_frame_gone) and repairs. */
static __thread struct lib_core *call_lc __attribute__((tls_model("initial-exec")));
static __thread uintptr_t call_cfa __attribute__((tls_model("initial-exec")));
static __thread struct bp_recover *call_outer __attribute__((tls_model("initial-exec")));
static __thread _Atomic uint32_t *recover_held __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) void mark_call(struct lib_core *lc, uintptr_t fr)
{
	call_lc = lc;
	call_cfa = fr;
	call_outer = bp_recover_top;
	depth = 1;
}
/* Calls this thread made: every 1024th looks at the server (look()). */
static __thread unsigned ncalls __attribute__((tls_model("initial-exec")));
static __thread uint32_t pkru_out __attribute__((tls_model("initial-exec")));

/* Close our key in this thread (outside a call), keeping the others. */
static void close_here(void)
{
	pkru_out = (bp_ipc_rdpkru() & ~key_mask) | __atomic_load_n(&closed_bits, __ATOMIC_ACQUIRE);
	PKRU_CLOSE(pkru_out, pkru_out);
}

void bp_ipc_lib_noread(void)
{
	int k = bp_ipc_lib_key();
	if (k < 0)
		return;
	__atomic_fetch_or(&closed_bits, 1u << (2 * k), __ATOMIC_SEQ_CST);
	close_here();
}

int bp_ipc_lib_guard(void *addr, size_t len)
{
	int k = bp_ipc_lib_key();
	if (k < 0)
		return -EOPNOTSUPP;
	if (bp_sys_pkey_mprotect(addr, len, PROT_READ | PROT_WRITE, (int)k) < 0)
		return -errno;
	close_here();
	return 0;
}

/* ------------------------------------------------------------- the gate */

enum { RUN_OP, RUN_INIT, RUN_RECOVER };

/*
 * The call's recovery point without sigsetjmp (x86-64; not under ASan or
 * TSan, whose bookkeeping follows longjmp only, nor with a shadow stack):
 * bp_ipc_lib_enter saves the callee-saved registers on its stack, fills
 * the record's landing (that stack pointer, bp_ipc_lib_land), links it as
 * the thread's innermost recovery point, calls the handler and unlinks it.
 * A fault in the handler comes back from core's signal handler at
 * bp_ipc_lib_land with that stack: it restores the registers and returns
 * to the caller of bp_ipc_lib_enter, whose record then has sig set.  The
 * fast path thus costs 6 pushes and pops, no jmp_buf; core's order holds
 * (hooks first, then the innermost point: a recovery point that code inside
 * the handler pushed is still innermost).  The signal's return also puts
 * back the PKRU and signal mask of the interrupted handler.
 */
#if defined(__x86_64__) && !BP_TSAN && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if !__has_feature(address_sanitizer)
#define LIB_LANDING 1
#endif
#else
#define LIB_LANDING 1
#endif
#endif

#ifdef LIB_LANDING
_Static_assert(__builtin_offsetof(struct bp_recover, prev) == 0, "lib_gate asm");
_Static_assert(__builtin_offsetof(struct bp_recover, hook) == 8, "lib_gate asm");
_Static_assert(sizeof(((struct bp_recover *)0)->hook[0]) == 8, "lib_gate asm");

__attribute__((visibility("hidden"))) int
bp_ipc_lib_enter(const struct bypass_ipc_env *env, void *state, const void *req, size_t len,
		 void *resp, size_t cap, bypass_ipc_handler fn, struct bp_recover *rp);
__attribute__((visibility("hidden"))) void bp_ipc_lib_land(void);

/* On entry the stack holds the return address, fn (8(%rsp)) and rp
 * (16(%rsp)); after the six pushes and the alignment, 64 and 72. */
__asm__(".text\n"
	".p2align 4\n"
	".globl bp_ipc_lib_enter\n"
	".hidden bp_ipc_lib_enter\n"
	".type bp_ipc_lib_enter, @function\n"
	"bp_ipc_lib_enter:\n"
	".cfi_startproc\n"
	"	pushq %rbp\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %r12\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %r13\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %r14\n"
	".cfi_adjust_cfa_offset 8\n"
	"	pushq %r15\n"
	".cfi_adjust_cfa_offset 8\n"
	"	subq $8, %rsp\n"
	".cfi_adjust_cfa_offset 8\n"
	"	movq 72(%rsp), %rbx\n"              /* rp */
	"	movq 64(%rsp), %rax\n"              /* fn */
	"	movq %rsp, 8(%rbx)\n"               /* rp->hook[0]: the stack */
	"	leaq bp_ipc_lib_land(%rip), %r11\n"
	"	movq %r11, 16(%rbx)\n"              /* rp->hook[1]: the landing */
	"	movq bp_recover_top@gottpoff(%rip), %r11\n"
	"	movq %rbx, %fs:(%r11)\n"            /* linked: a fault lands now */
	"	call *%rax\n"
	"	movq (%rbx), %rcx\n"                /* unlinked: rp->prev */
	"	movq bp_recover_top@gottpoff(%rip), %r11\n"
	"	movq %rcx, %fs:(%r11)\n"
	"	addq $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %r15\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %r14\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %r13\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %r12\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	"	popq %rbp\n"
	".cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size bp_ipc_lib_enter, .-bp_ipc_lib_enter\n"
	".p2align 4\n"
	".globl bp_ipc_lib_land\n"
	".hidden bp_ipc_lib_land\n"
	".type bp_ipc_lib_land, @function\n"
	"bp_ipc_lib_land:\n"                    /* %rsp = rp->hook[0]; core popped rp */
	"	addq $8, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	movl $-14, %eax\n"                  /* -EFAULT; the caller reads rp->sig */
	"	ret\n"
	".size bp_ipc_lib_land, .-bp_ipc_lib_land\n");

/* Core's recovery hook for the records bp_ipc_lib_enter fills in: the
 * signal returns to the landing, on the stack saved at entry (the landing
 * restores the registers pushed there and returns -EFAULT from
 * bp_ipc_lib_enter). */
static void land_hook(const struct bp_recover *r, void *uctx)
{
	ucontext_t *u = uctx;
	u->uc_mcontext.gregs[REG_RSP] = (greg_t)r->hook[0];
	u->uc_mcontext.gregs[REG_RIP] = (greg_t)r->hook[1];
}

/* With a shadow stack (CET) the landing's return would not match it:
 * RDSSP reads 0 where none is enabled (a no-op on CPUs without CET). */
bool bp_ipc_lib_landing_ok(void)
{
	uint64_t ssp = 0;
	__asm__ __volatile__("rdsspq %0" : "+r"(ssp));
	return ssp == 0 && bp_fault_install() == 0 && bp_fault_set_recover_hook(land_hook) == 0;
}
#else
bool bp_ipc_lib_landing_ok(void)
{
	return false;
}
#endif

/* Entry: where the heap is guarded, the closing value for the exit (the
 * thread's PKRU with our key closed), then our key opened; where it is
 * not but PKRU exists, the thread's PKRU (a fault's recovery puts it
 * back: the signal handler's is still in place then). */
static inline __attribute__((always_inline)) void gate_open(const struct lib_core *lc)
{
	if (bp_likely(lc->guarded)) {
		uint32_t cur = bp_ipc_rdpkru() & ~key_mask;
		pkru_out = cur | __atomic_load_n(&closed_bits, __ATOMIC_RELAXED);
		PKRU_OPEN(cur);
	} else if (lc->pkru_ok) {
		pkru_out = bp_ipc_rdpkru();
	}
}

static inline __attribute__((always_inline)) void gate_close(const struct lib_core *lc)
{
	if (bp_likely(lc->guarded))
		PKRU_CLOSE(pkru_out, pkru_out);
}

/*
 * A fault left a handler through the recovery point: the signal handler's
 * PKRU (the kernel's default) is still in place after siglongjmp, the
 * handler's (our key open) after the landing.  Put the thread's own back,
 * with our key closed, release what the handler held, and mark the
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
		PKRU_OPEN(pkru_out & ~key_mask);
	bp_ipc_lib_release_held();
	bp_ipc_lib_take_owner_dead();
	if (lc->guarded) {
		gate_close(lc);
	} else if (lc->pkru_ok) {
		uint32_t v = pkru_out, edx = 0;
		__asm__ __volatile__(".byte 0x0f,0x01,0xef" : "+a"(v), "+d"(edx) : "c"(0) : "memory");
	}
	bp_warn("bypass: ipc: service %s: %s at %p in its %s: the service is broken",
		lc->name, rp->sig == SIGBUS ? "SIGBUS" : "SIGSEGV", rp->addr,
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
		"the service is broken", lc->name, n);
}

/* A handler returned with locks held or having met a dead owner's lock. */
static __attribute__((noinline, cold)) int after_call(struct lib_core *lc, int r)
{
	if (bp_ipc_lib_nheld)
		leaked(lc);
	if (bp_ipc_lib_take_owner_dead())
		r = -EOWNERDEAD;
	return r;
}

static int run_hook(struct lib_core *lc, int what)
{
	uintptr_t fr = (uintptr_t)__builtin_dwarf_cfa();
	int r;
	if (depth && (r = bp_ipc_lib_depth_check(fr)))
		return r;
	struct bp_recover rp;
	if (BP_RECOVER_TRY(&rp, NULL, 0)) {
		gate_open(lc);
		mark_call(lc, fr);
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
	st->arena_size = lc->heap_end - lc->heap_off;
	st->arena_base = (uint64_t)lc->base;
}

/* ------------------------------------------------------ calls and recovery */

/* The call's recovery point by sigsetjmp (where the landing is not used):
 * a function of its own, so that the fast path's registers are not spilled
 * around a setjmp. */
static __attribute__((noinline)) int run_jmp(struct lib_core *lc, uint32_t op, const void *req,
					     size_t len, void *resp, size_t cap, uintptr_t fr)
{
	struct bp_recover rp;
	int r;
	if (BP_RECOVER_TRY(&rp, NULL, 0)) {
		gate_open(lc);
		mark_call(lc, fr);
		r = lc->ops[op](&lc->env, lc->state, req, len, resp, cap);
		depth = 0;
		if (bp_unlikely(bp_ipc_lib_nheld | bp_ipc_lib_odead))
			r = after_call(lc, r);
		gate_close(lc);
		bp_recover_pop(&rp);
	} else {
		r = after_fault(lc, &rp, RUN_OP);
	}
	return r;
}

/* Why a call may not run, in the order of the checks: -EPIPE or
 * -ENOTRECOVERABLE, -EINVAL, -EDEADLK (a call from inside a handler). */
/*
 * A client's look at the server process, at most once a millisecond of
 * calls: its liveness word is in memory every client can write, so a word
 * that a peer rewrote could hide the server's death for ever.  The kernel
 * says (a poll of the server's pidfd, without waiting); once gone, every
 * call answers -EPIPE.
 */
static bool server_alive(const struct lib_core *lc)
{
	if (lc->srv_pidfd >= 0) {
		/* A pidfd polls readable once the process has exited; a poll
		 * that a signal interrupted says nothing. */
		struct pollfd p = { .fd = lc->srv_pidfd, .events = POLLIN };
		int r;
		do
			r = bp_sys_poll(&p, 1, 0);
		while (r < 0 && errno == EINTR);
		return !(r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)));
	}
	return kill(lc->srv_pid, 0) == 0 || errno != ESRCH;
}

static __attribute__((noinline, cold)) int look(struct lib_core *lc)
{
	if (atomic_load_explicit(&lc->gone, memory_order_relaxed))
		return -EPIPE;
	if (lc->srv_pid <= 0 && lc->srv_pidfd < 0)
		return 0;
	uint64_t now = bypass_rdtscp(NULL);
	if (now < atomic_load_explicit(&lc->next_look, memory_order_relaxed))
		return 0;
	atomic_store_explicit(&lc->next_look, now + bp_ns_to_cycles(1000000),
			      memory_order_relaxed);
	if (server_alive(lc))
		return 0;
	atomic_store(&lc->gone, true);
	/* Every later call then leaves the fast path (op >= nops) for
	 * refuse(), which says -EPIPE: no test more on the fast path. */
	__atomic_store_n(&lc->nops, 0, __ATOMIC_RELAXED);
	bp_info("bypass: ipc: service %s: the server process is gone", lc->name);
	return -EPIPE;
}

/* Why a call may not run, in the order of the checks: -EDEADLK (a call
 * from inside a handler, or from a signal handler that interrupted one;
 * a call left by siglongjmp is repaired first), -EPIPE or
 * -ENOTRECOVERABLE, -EINVAL.  fr: the gate's frame. */
static __attribute__((noinline, cold)) int refuse(struct lib_core *lc, uint32_t op,
						  const void *req, size_t len, void *resp,
						  size_t cap, uintptr_t fr)
{
	int r;
	if (depth && (r = bp_ipc_lib_depth_check(fr)))
		return r;
	if (!lc->server) {
		r = bp_ipc_lib_alive(lc);
		if (!r && (!(ncalls & 1023) ||
			   atomic_load_explicit(&lc->gone, memory_order_relaxed)))
			r = look(lc);
	} else { /* the server knows it lives: a peer's write to the word is no news */
		r = atomic_load(&lc->ctl->broken) & LIB_BROKEN ? -ENOTRECOVERABLE : 0;
	}
	if (r)
		return r;
	if (op >= __atomic_load_n(&lc->nops, __ATOMIC_RELAXED) || (len && !req) || (cap && !resp))
		return -EINVAL;
	return 0;
}

/*
 * One call (a client's, or the server's thread for a message-mode call).
 * The hot path is straight: every check that can refuse the call is one
 * test of values already in registers or in the control block's first
 * line (the live word and the broken mark share it), its reason worked
 * out out of line; the two per-thread marks a handler can leave (locks
 * held, a dead owner met) are one more test after it returns.
 */
int bp_ipc_lib_invoke(struct lib_core *lc, uint32_t op, const void *req, size_t len,
		      void *resp, size_t cap)
{
	const struct lib_ctl *c = lc->ctl;
	uintptr_t fr = (uintptr_t)__builtin_dwarf_cfa();
	uint32_t w = __atomic_load_n((const uint32_t *)&c->live, __ATOMIC_ACQUIRE);
	uint32_t b = atomic_load_explicit(&c->broken, memory_order_acquire);
	/* Never-taken branches: each a fused compare-and-jump.  A NULL req
	 * or resp is legal with a zero length: refuse() tells. */
	if (bp_unlikely(!(w & LIB_FUTEX_TID_MASK)) || bp_unlikely((w & LIB_FUTEX_OWNER_DIED) | b) ||
	    bp_unlikely(op >= __atomic_load_n(&lc->nops, __ATOMIC_RELAXED)) ||
	    bp_unlikely(!req) || bp_unlikely(!resp) || bp_unlikely(depth) ||
	    bp_unlikely(!(++ncalls & 1023))) {
		int e = refuse(lc, op, req, len, resp, cap, fr);
		if (e)
			return e;
	}
	int r;
#ifdef LIB_LANDING
	if (bp_likely(lc->landing)) {
		struct bp_recover rp;
		rp.prev = bp_recover_top;
		rp.lo = rp.hi = 0;
		rp.sig = 0;
		rp.addr = NULL;
		gate_open(lc);
		mark_call(lc, fr);
		r = bp_ipc_lib_enter(&lc->env, lc->state, req, len, resp, cap, lc->ops[op], &rp);
		depth = 0;
		if (bp_unlikely(rp.sig))
			return after_fault(lc, &rp, RUN_OP);
		if (bp_unlikely(bp_ipc_lib_nheld | bp_ipc_lib_odead))
			r = after_call(lc, r);
		gate_close(lc);
	} else
#endif
	{
		r = run_jmp(lc, op, req, len, resp, cap, fr);
	}
	if (bp_unlikely(r > 0 && (size_t)r > cap))
		r = -EOVERFLOW; /* the handler wrote past the response buffer */
	return r;
}

int bp_ipc_lib_do_recover(struct lib_core *lc)
{
	struct lib_ctl *c = lc->ctl;
	int r = lc->server ? (atomic_load(&c->broken) & LIB_BROKEN ? -ENOTRECOVERABLE : 0)
			   : bp_ipc_lib_alive(lc);
	if (r != -ENOTRECOVERABLE)
		return r;
	if (depth && (r = bp_ipc_lib_depth_check((uintptr_t)__builtin_dwarf_cfa())))
		return r;
	r = bp_ipc_lib_lock(lc->owner, &c->recover_lock, LIB_LOCK_BOUND_NS);
	if (r < 0)
		return -ENOLCK; /* another process's recovery stalls, or a stray write */
	recover_held = &c->recover_lock;
	r = 0;
	if (atomic_load(&c->broken) & LIB_BROKEN) {
		if (!lc->desc->recover) {
			r = -ENOTRECOVERABLE;
		} else {
			r = bp_ipc_lib_run_recover(lc);
			if (r == 0) {
				atomic_fetch_and(&c->broken, ~LIB_BROKEN);
				atomic_fetch_add(&c->recoveries, 1);
				bp_info("bypass: ipc: service %s recovered", lc->name);
			} else if (r != -EFAULT) {
				r = -ENOTRECOVERABLE;
			}
		}
	}
	recover_held = NULL;
	bp_ipc_lib_unlock(&c->recover_lock);
	return r;
}

/*
 * A call left by siglongjmp (from a signal handler of the program's that
 * interrupted it): depth stayed set, its recovery point stayed linked
 * (pointing into a dead frame), the locks it held stayed held, PKRU is the
 * signal handler's.  Undo what the gate's exit and a fault's path would
 * have: the thread's records, PKRU as the exit leaves it, the locks
 * released, and the service marked broken (the handler stopped anywhere).
 * Its core may have been closed since: then only this thread's records
 * are cleared.
 */
static __attribute__((noinline, cold)) void repair(uintptr_t here)
{
	struct lib_core *old = call_lc;
	depth = 0;
	call_lc = NULL;
	bp_ipc_lib_set_recovering(false);
	bp_ipc_lib_take_owner_dead();
	bp_ipc_lib_drop_dead_records(here, call_outer);
	bool open = bp_ipc_lib_core_hold(old);
	if (open) {
		atomic_fetch_add(&old->ctl->faults, 1);
		atomic_fetch_or(&old->ctl->broken, LIB_BROKEN);
		if (old->guarded)
			PKRU_OPEN(pkru_out & ~key_mask);
		bp_ipc_lib_release_held();
		if (recover_held)
			bp_ipc_lib_unlock(recover_held);
	} else {
		bp_ipc_lib_forget_held();
	}
	recover_held = NULL;
	/* PKRU as the gate's exit leaves it: the thread's at entry, our key
	 * closed (siglongjmp left the signal handler's). */
	if (bp_ipc_lib_key() >= 0) {
		pkru_out = (pkru_out & ~key_mask) | __atomic_load_n(&closed_bits, __ATOMIC_ACQUIRE);
		PKRU_CLOSE(pkru_out, pkru_out);
	} else if (bp_ipc_lib_pkru_ok()) {
		bp_ipc_wrpkru(pkru_out);
	}
	if (open) {
		bp_warn("bypass: ipc: service %s: a call was left by siglongjmp: its locks "
			"are released, the service is broken", old->name);
		bp_ipc_lib_core_release();
	}
}

/*
 * Whether the gate frame whose CFA was rec is gone, seen from a new call
 * whose gate's CFA is here.  Gone for sure when here is at or above it on
 * the same stack.  Else this thread's live frames are walked from here up
 * (the unwinder, through signal frames): meeting a frame whose CFA is
 * rec, the call still runs below (a nested call, or a signal handler's:
 * not gone); passing above rec on its stack without meeting it, it is
 * gone.  A walk that cannot tell (no unwind information on the way) says
 * "not gone": the caller then refuses with -EDEADLK rather than release a
 * running call's locks.  A dead frame whose CFA a live frame happens to
 * share errs the same way (until a call from elsewhere repairs).
 */
struct walk {
	uintptr_t rec, alo, ahi;
	bool rec_alt;
	int verdict;                /* 0 cannot tell, 1 running, 2 gone */
};

static bool on_alt(const struct walk *w, uintptr_t a)
{
	return a >= w->alo && a < w->ahi;
}

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t cfa = _Unwind_GetCFA(ctx);
	if (on_alt(w, cfa) != w->rec_alt)
		return _URC_NO_REASON; /* another stack: go on */
	if (cfa == w->rec) {
		w->verdict = 1;
		return _URC_NORMAL_STOP;
	}
	if (cfa > w->rec) {
		w->verdict = 2;
		return _URC_NORMAL_STOP;
	}
	return _URC_NO_REASON;
}

bool bp_ipc_lib_frame_gone(uintptr_t rec, uintptr_t here)
{
	struct walk w = { .rec = rec };
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
		w.alo = (uintptr_t)ss.ss_sp;
		w.ahi = w.alo + ss.ss_size;
	}
	w.rec_alt = on_alt(&w, rec);
	if (on_alt(&w, here) == w.rec_alt && here >= rec)
		return true;
	_Unwind_Backtrace(walk_frame, &w);
	return w.verdict == 2;
}

int bp_ipc_lib_depth_check(uintptr_t here)
{
	if (!depth)
		return 0;
	if (!bp_ipc_lib_frame_gone(call_cfa, here))
		return -EDEADLK; /* a nested call, or a signal handler's */
	repair(here);
	return 0;
}

void bp_ipc_lib_drop_dead_records(uintptr_t here, struct bp_recover *outer)
{
	struct bp_recover *t = bp_recover_top;
	if (!t || !bp_ipc_lib_frame_gone((uintptr_t)t, here))
		return;
	bp_recover_top = outer && !bp_ipc_lib_frame_gone((uintptr_t)outer, here) ? outer : NULL;
}
