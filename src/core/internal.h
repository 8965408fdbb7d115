/* SPDX-License-Identifier: MIT */
/*
 * Internal core interfaces shared by the modules.  Nothing here is part of
 * the public API; symbols are hidden in libbypass.so (tests and benchmarks
 * link the static archive and may use them).
 */
#ifndef BYPASS_CORE_INTERNAL_H
#define BYPASS_CORE_INTERNAL_H

#include <bypass/core.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define BP_CACHELINE 64

/* BP_TSAN: built with ThreadSanitizer (gcc or clang). */
#if defined(__SANITIZE_THREAD__)
#define BP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BP_TSAN 1
#endif
#endif
#ifndef BP_TSAN
#define BP_TSAN 0
#endif
#define bp_likely(x) __builtin_expect(!!(x), 1)
#define bp_unlikely(x) __builtin_expect(!!(x), 0)
#define BP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void bp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * memcpy() for memory whose writers the kernel orders before this read, in
 * a way ThreadSanitizer cannot see: a page another thread wrote, read after
 * userfaultfd write-protected it (the ioctl flushes the writers' TLBs, and
 * a later write faults and waits).  In TSan builds on x86-64 the copy is an
 * instruction TSan does not instrument; everywhere else it is memcpy().
 */
static inline void bp_copy_kernel_ordered(void *dst, const void *src, size_t n)
{
#if BP_TSAN && defined(__x86_64__)
	__asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
	__builtin_memcpy(dst, src, n);
#endif
}

/* ------------------------------------------------------- inside bypass */

/*
 * One per-thread depth: how deep the calling thread is inside bypass.  It
 * is raised around library code a preload's wrapper calls (and the lock it
 * takes there), around core's fault handler and the hooks it runs, around
 * a program's signal handler a preload runs through its trampoline, and
 * for the whole life of a thread the library starts.  While it is above 0,
 * a preload's wrappers call the real function at once: a call made there
 * must not re-enter the preload's decisions, nor wait for a lock the
 * interrupted code holds.  Both preloads test it (each has its own copy of
 * the library, so the depth is per preload and thread).
 *
 * The library's own I/O and mapping calls need no guard: they are system
 * calls (core/syscall.h) that no preload wraps.
 *
 *   bp_enter(); ... bp_leave();   raise and lower it, paired in one function
 *   bp_inside()                   a wrapper's test: pass straight through
 *   bp_enter_for_good()           a thread of the library's own: inside for
 *                                 its whole life
 */
extern __thread unsigned bp_inside_depth __attribute__((tls_model("initial-exec")));
static inline void bp_enter(void)
{
	bp_inside_depth++;
}
static inline void bp_leave(void)
{
	bp_inside_depth--;
}
static inline bool bp_inside(void)
{
	return bp_inside_depth != 0;
}
static inline void bp_enter_for_good(void)
{
	bp_inside_depth++;
}

/* ------------------------------------------------------------------ log */

int bp_log_level(void);
void bp_log_emit(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define bp_log(level, ...)                                                    \
	do {                                                                  \
		if (bp_unlikely(bp_log_level() >= (level)))                   \
			bp_log_emit((level), __VA_ARGS__);                    \
	} while (0)
#define bp_err(...) bp_log(BYPASS_LOG_ERROR, __VA_ARGS__)
#define bp_warn(...) bp_log(BYPASS_LOG_WARN, __VA_ARGS__)
#define bp_info(...) bp_log(BYPASS_LOG_INFO, __VA_ARGS__)
#define bp_debug(...) bp_log(BYPASS_LOG_DEBUG, __VA_ARGS__)

/* ------------------------------------------------------------- threads */

/*
 * A thread of the library's own, on a stack this file maps (a raw mmap, no
 * preload sees it) and with every signal blocked (the application's go to
 * its own threads).  Not glibc's stack cache: in a forked child that cache
 * holds the stacks of the parent's other threads, and pthread_create()
 * clears the TLS vector of the one it reuses, memory the program's
 * allocator made; under the pager preload it may be a page evicted in the
 * parent, which nobody serves until the child's handler threads run (the
 * child hung there: Redis's BGSAVE child, issue 32).  With a stack of its
 * own glibc takes a new vector from calloc, which serves bypass's threads
 * outside the pager (preload/pager/alloc.c).
 *
 *   bp_thread_start(t, fn, arg)  0 or -errno; t->live set on success.
 *                                Returns once the thread runs (its
 *                                sanitizer's start-up done: a fork right
 *                                after must not catch the new thread
 *                                inside ASan's allocator, whose locks a
 *                                child would inherit held).
 *   bp_thread_join(t)            joins it and unmaps the stack (no-op when
 *                                not live).
 *   bp_thread_forget(t)          in a forked child: the thread is not
 *                                there; only its stack is unmapped.
 */
#include <pthread.h>
struct bp_thread {
	pthread_t id;
	void *stack; /* the mapping, guard page first */
	size_t len;
	bool live;
	void *(*fn)(void *); /* the entry, run by bp_thread_main */
	void *arg;
	_Atomic uint32_t started;
};
int bp_thread_start(struct bp_thread *t, void *(*fn)(void *), void *arg);
void bp_thread_join(struct bp_thread *t);
void bp_thread_forget(struct bp_thread *t);

/* -------------------------------------------------------- process identity */

/*
 * The calling process's pid and thread id, cached (glibc's getpid() is a
 * system call).  The pid cache and bp_fork_gen() are refreshed in the child
 * after fork(); objects that register a process compare generations to learn
 * that they must register again.
 */
pid_t bp_pid(void);
pid_t bp_tid(void);
unsigned bp_fork_gen(void);
/* The CPUs the calling thread may run on (its affinity mask; 1 if it
 * cannot be read). */
unsigned bp_cpus_allowed(void);
/* Cheap read of the fork generation, valid once bp_pid() has been called. */
extern _Atomic unsigned bp__fork_gen;
static inline unsigned bp_fork_gen_fast(void)
{
	return atomic_load_explicit(&bp__fork_gen, memory_order_relaxed);
}

/*
 * bp_proc_alive - 1 if the process exists (and is not a zombie we reaped),
 * 0 if it is gone.  Uses a pidfd when *pidfd_cache is a valid descriptor or
 * can be opened (it is then kept there), kill(pid, 0) otherwise.
 */
int bp_proc_alive(pid_t pid, int *pidfd_cache);

/* ------------------------------------------------------------------ futex */

/*
 * bp_futex_wait - sleep while *word == val, at most timeout_ns (< 0: no
 * limit).  shared selects a process-shared futex (memory that other
 * processes map).  Returns 0 (woken or value changed), -ETIMEDOUT, -EINTR.
 */
int bp_futex_wait(_Atomic uint32_t *word, uint32_t val, int64_t timeout_ns,
		  bool shared);
/* bp_futex_wake - wake up to n sleepers; returns how many were woken. */
int bp_futex_wake(_Atomic uint32_t *word, int n, bool shared);

/* ------------------------------------------------------------------ waiting */

/*
 * A wait word: a 32-bit value that changes when there is something to see,
 * and a count of sleepers, so that a waker makes a system call only when
 * someone sleeps.  Both may live in shared memory.
 */
struct bp_waitword {
	_Atomic uint32_t value;
	_Atomic uint32_t sleepers;
};

struct bp_wait_opts {
	uint64_t spin_ns;     /* spin (with pause) this long before sleeping */
	int64_t timeout_ns;   /* < 0: wait forever */
	bool shared;          /* process-shared futex */
	/*
	 * If set, called each time a sleep of slice_ns ends without a wake-up
	 * (never on the fast path); a non-zero return ends the wait with that
	 * value.  Used to notice a peer process that died.
	 */
	int (*check)(void *arg);
	void *check_arg;
	uint64_t slice_ns;    /* 0 = 20 ms */
};

/*
 * bp_wait_while - wait until ww->value != val.  Returns 0 once it differs,
 * -ETIMEDOUT, or the non-zero value check() returned.
 */
int bp_wait_while(struct bp_waitword *ww, uint32_t val,
		  const struct bp_wait_opts *opts);

/* bp_wake - after changing ww->value: wake sleepers, if there are any. */
static inline void bp_wake(struct bp_waitword *ww, bool shared)
{
	if (atomic_load_explicit(&ww->sleepers, memory_order_seq_cst))
		bp_futex_wake(&ww->value, INT32_MAX, shared);
}

/* ------------------------------------------------------------------ misc */

/*
 * bp_tsc_set_hz - the TSC frequency bypass_tsc_hz() will report instead of
 * calibrating, if called before its first call (tests).
 */
void bp_tsc_set_hz(uint64_t hz);

/* bp_ns_to_cycles - how many TSC cycles ns is (0 if the TSC is unusable). */
uint64_t bp_ns_to_cycles(uint64_t ns);

/*
 * Environment parsing, for the preloads and the command only (env.c): the
 * library reads no environment behind an explicit option (BYPASS_LOG, the
 * default log level, is the one variable it reads).
 * bp_env_u64 - read an unsigned number from the environment, or def (unset,
 * empty, or a malformed, negative or out-of-range value: a warning).
 */
uint64_t bp_env_u64(const char *name, uint64_t def);
/* bp_env_bool - 0/off/no/false or 1/on/yes/true from the environment, or
 * def (unset, empty, or another value: a warning). */
bool bp_env_bool(const char *name, bool def);
/* bp_env_switch - the grammar of both: 0 for 0/off/no/false, 1 for
 * 1/on/yes/true (case aside), -1 for anything else or NULL. */
int bp_env_switch(const char *s);

/* ------------------------------------------------------------ probes */

/*
 * What the CPU and kernel offer, as far as bypass can use it (probe.c).
 * bp_cpu_has_uintr: the CPUID bit alone.  bp_uintr_available: 1 only where
 * a uintr doorbell would work (never today: see probe.c); otherwise
 * bp_uintr_absent_reason says why, in one line.
 */
int bp_cpu_has_uintr(void);
int bp_uintr_available(void);
const char *bp_uintr_absent_reason(void);

/* ------------------------------------------------- faults and recovery */

#include <setjmp.h>
#include <signal.h>

/*
 * One SIGSEGV/SIGBUS handler for the whole library.  Modules add hooks that
 * may resolve a fault (the pager serves userfaultfd faults in its regions);
 * when no hook does, a recovery point armed by the faulting thread turns the
 * fault into an error return; otherwise the fault goes to the handler that
 * was installed before bypass (or the default action: the process dies as
 * it would have without bypass).
 *
 * A hook returns 1 when it resolved the fault (the instruction is retried),
 * 0 to pass.  It runs in signal context.
 */
typedef int (*bp_fault_hook)(int sig, siginfo_t *si, void *uctx);
int bp_fault_hook_add(bp_fault_hook fn);
int bp_fault_hook_remove(bp_fault_hook fn);

/* Core's fault handler runs its hooks inside bypass (bp_enter, below):
 * a preload's wrappers pass the system calls a hook makes straight through. */

/*
 * Programs that install their own SIGSEGV/SIGBUS handlers.  Core's handler,
 * once installed, stays installed; bp_fault_chain_sigaction() is what a
 * sigaction() wrapper calls instead: when the handler is installed and sig
 * is SIGSEGV or SIGBUS it stores act (if not NULL) as the handler that
 * unresolved faults are passed to, returns the one stored before in old (if
 * not NULL; at first, the one installed before bypass), and returns 1; it
 * returns 0 (and does nothing) otherwise, and the caller makes the real
 * call.  The program's handler then runs inside core's, with core's signal
 * mask (its sa_mask is not applied; SA_RESETHAND is).  Without a wrapper, a
 * program that installs a handler after bypass must pass the faults it does
 * not own to the handler sigaction() returned as the old one.
 *
 * Core installs its handler (and restores the default action) with
 * bp_sys_sigaction, never through a preload's sigaction wrapper.
 */
bool bp_fault_owns(int sig);
int bp_fault_chain_sigaction(int sig, const struct sigaction *act,
			     struct sigaction *old);

struct bp_recover {
	/* The first three at fixed offsets: assembly may fill them (ipc's
	 * library-mode gate, src/ipc/lib_gate.c). */
	struct bp_recover *prev;
	/* Two words that core does not read: hook[1] != 0 hands the recovery
	 * to the registered recovery hook (bp_fault_set_recover_hook), which
	 * reads both; 0 (bp_recover_push's value): siglongjmp to jb. */
	uintptr_t hook[2];
	uintptr_t lo, hi;          /* faults in [lo, hi) recover; 0,0 = any */
	int sig;                   /* filled in on recovery */
	void *addr;                /* the faulting address */
	sigjmp_buf jb;
};

/* The thread's innermost recovery point, and whether the handler is in
 * place (fault.c; inline below: ipc's library-mode call pushes one per
 * call, where a function call and back is a tenth of its cost).  A point
 * whose frame is gone when a fault comes (the thread left its section by
 * siglongjmp without popping it) is dropped with every point under it,
 * and the fault goes on as if there were none. */
extern __thread struct bp_recover *bp_recover_top __attribute__((tls_model("initial-exec")));
extern _Atomic bool bp_fault_installed;
int bp_fault_install(void);

/*
 * A recovery hook: for a record whose hook[1] is not 0, core's handler
 * (after popping the record and filling in sig and addr) calls it with the
 * record and the signal's ucontext, then returns from the signal; the hook
 * decides where the thread resumes (ipc's library-mode gate sets the stack
 * and instruction pointers of the ucontext from the record's two words).
 * One hook per process: registering the one already set is 0, another
 * -EBUSY, NULL -EINVAL.  A record asking for a hook when none is set is
 * not recovered (the fault goes on as if there were no record).
 */
typedef void (*bp_recover_hook)(const struct bp_recover *r, void *uctx);
int bp_fault_set_recover_hook(bp_recover_hook fn);

static inline void bp_recover_push(struct bp_recover *r, const void *lo, size_t len)
{
	if (bp_unlikely(!atomic_load_explicit(&bp_fault_installed, memory_order_acquire)))
		bp_fault_install();
	r->lo = (uintptr_t)lo;
	r->hi = lo ? (uintptr_t)lo + len : 0;
	r->sig = 0;
	r->addr = NULL;
	r->hook[1] = 0;
	r->prev = bp_recover_top;
	/* The handler must see a complete record before it sees the link. */
	atomic_signal_fence(memory_order_seq_cst);
	bp_recover_top = r;
}

static inline void bp_recover_pop(struct bp_recover *r)
{
	if (bp_recover_top == r)
		bp_recover_top = r->prev;
}
/*
 * Usage, in the frame that stays alive for the whole section:
 *
 *   struct bp_recover rp;
 *   if (BP_RECOVER_TRY(&rp, base, len)) {
 *           ... touch the peer's memory ...
 *           bp_recover_pop(&rp);
 *   } else {
 *           // rp.sig and rp.addr say what happened; rp is already popped
 *           return -EFAULT;
 *   }
 *
 * The mask is not saved (no system call): the handler runs with SA_NODEFER.
 * Under ThreadSanitizer it is: TSan's wrapper blocks the signal while the
 * handler runs, and a second fault while blocked would kill the process.
 */
#define BP_RECOVER_TRY(r, lo, len) \
	(bp_recover_push((r), (lo), (len)), sigsetjmp((r)->jb, BP_TSAN) == 0)

#endif
