/* SPDX-License-Identifier: MIT */
/*
 * bypass/syslet.h - syslets: small programs of system calls ("atoms")
 * submitted with one call, with stop conditions, branches, loops and results
 * fed from one atom to the next, run opportunistically: inline while no atom
 * would block, asynchronously from the first one that would.
 *
 * A program is an array of atoms.  Each atom names a system call number and
 * up to six arguments; an argument is a constant (a number or a pointer into
 * the caller's memory), the 64-bit value at a user address read when the
 * atom runs, or the result of an earlier atom.  After an atom runs its
 * result is checked against its stop flags: if none triggers, execution goes
 * on at `next` (by default the following atom; the program ends after the
 * last one); if one does, at `on_stop` (by default the program ends).  A
 * per-program step budget bounds loops.  The pseudo call
 * BYPASS_SYSLET_UMEM_ADD adds to a 64-bit user variable atomically and
 * returns the new value (Syslets' sys_umem_add).
 *
 * Engines.  bypass_syslet_run() first runs atoms in the calling thread:
 * reads and writes as preadv2/pwritev2 with RWF_NOWAIT, path look-ups as
 * openat2 with RESOLVE_CACHED, socket calls with MSG_DONTWAIT, and calls that
 * never block as they are.  At the first atom that would block (the
 * "cachemiss") the rest of the program continues on a small pool of worker
 * threads (which share the file table and credentials, and block every
 * signal: signals go to the program's own threads), or in io_uring when it
 * can express the rest, and the call returns.
 * bypass_syslet_submit() sends linear programs that io_uring can express
 * (openat, read, write, close, fsync with stop-on-error; descriptors opened in
 * the program become io_uring direct descriptors) to io_uring as one linked
 * chain per program, all entered with one system call; other programs run as
 * with bypass_syslet_run().  Where io_uring is refused (kernel.io_uring_disabled,
 * a seccomp filter) the worker engine runs everything.  opts.engine chooses;
 * left at AUTO, BYPASS_SYSLET_ENGINE=auto|uring|workers in the environment
 * may choose instead (an explicit engine always wins).
 *
 * Completions go to a ring in user memory: bypass_syslet_reap() takes them
 * without a system call when they are there, bypass_syslet_wait() waits.
 *
 * Every function returns 0 or a count on success and -errno on failure; a
 * program that fails validation gets -EINVAL and none of it runs.
 *
 * Bad pointers.  Every pointer the library follows for a program is read or
 * written so that a bad one (a small integer, a read-only, PROT_NONE or
 * unmapped page, a file mapping past its end, a non-canonical address) is an
 * error, never a crash, in every engine (NULL is -EINVAL where validation
 * can see it, "none" for ret and done): the program, the program array and the atoms are copied before
 * validation (unreadable: the call returns -EFAULT and nothing runs), and so
 * is the completion a caller passes (unwritable: -EFAULT, nothing runs); a
 * LOAD argument, a umem_add target or a ret that faults ends the program at
 * that atom with -EFAULT in its completion (posted even at a NO_COMPLETE
 * atom).  Pointers passed to the system calls themselves are the kernel's
 * to check (-EFAULT from the call, an ordinary result).
 *
 * The contexts' own descriptors.  A context's io_uring descriptor is moved
 * to the top of the low range (from min(RLIMIT_NOFILE, 1024) - 64 up), and
 * atoms that would close, replace, duplicate or map it (close, close_range
 * over it, dup, dup2, dup3, fcntl, mmap) get -EBADF, on any context.  The
 * worker engine holds no descriptor.  A context whose io_uring the
 * application itself closed or replaced answers -EBADFD from run, submit
 * and wait (destroy it) instead of waiting for chains that cannot complete.
 */
#ifndef BYPASS_SYSLET_H
#define BYPASS_SYSLET_H

#include <bypass/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bypass_syslet bypass_syslet;

/* Limits. */
#define BYPASS_SYSLET_MAX_ATOMS 64

/* The pseudo system call "add to a user variable" (atom.nr). */
#define BYPASS_SYSLET_UMEM_ADD (-1)

/* Atom flags. */
#define BYPASS_SYSLET_ASYNC 0x001u         /* go asynchronous at this atom */
#define BYPASS_SYSLET_SYNC 0x002u          /* run in the caller even if it blocks */
#define BYPASS_SYSLET_NO_COMPLETE 0x004u   /* no completion if the program ends here */
#define BYPASS_SYSLET_STOP_ON_NONZERO 0x010u
#define BYPASS_SYSLET_STOP_ON_ZERO 0x020u
#define BYPASS_SYSLET_STOP_ON_NEGATIVE 0x040u
#define BYPASS_SYSLET_STOP_ON_NON_POSITIVE 0x080u

/* atom.next / atom.on_stop: 0 is the default, BYPASS_SYSLET_GOTO(i) jumps. */
#define BYPASS_SYSLET_GOTO(i) ((uint16_t)((i) + 1))
#define BYPASS_SYSLET_END ((uint16_t)0xffff)

/* Argument kinds. */
enum bypass_syslet_arg_kind {
	BYPASS_SYSLET_ARG_NONE = 0,   /* 0 */
	BYPASS_SYSLET_ARG_CONST = 1,  /* val */
	BYPASS_SYSLET_ARG_LOAD = 2,   /* *(int64_t *)val, read when the atom runs */
	BYPASS_SYSLET_ARG_RESULT = 3, /* the result of atom val (earlier on every path) */
};

struct bypass_syslet_arg {
	uint32_t kind;     /* enum bypass_syslet_arg_kind */
	uint32_t reserved; /* must be 0 */
	uint64_t val;
};

#define BYPASS_SYSLET_C(x) { BYPASS_SYSLET_ARG_CONST, 0, (uint64_t)(x) }
#define BYPASS_SYSLET_P(p) { BYPASS_SYSLET_ARG_CONST, 0, (uint64_t)(uintptr_t)(p) }
#define BYPASS_SYSLET_LOAD(p) { BYPASS_SYSLET_ARG_LOAD, 0, (uint64_t)(uintptr_t)(p) }
#define BYPASS_SYSLET_R(i) { BYPASS_SYSLET_ARG_RESULT, 0, (uint64_t)(i) }

struct bypass_syslet_atom {
	int32_t nr;        /* system call number, or BYPASS_SYSLET_UMEM_ADD */
	uint32_t flags;    /* BYPASS_SYSLET_* atom flags */
	uint16_t next;     /* 0: the following atom (end after the last) */
	uint16_t on_stop;  /* 0: end the program when a stop flag triggers */
	uint32_t reserved; /* must be 0 */
	int64_t *ret;      /* if non-NULL, the result is stored here too */
	struct bypass_syslet_arg arg[6];
};

struct bypass_syslet_prog {
	const struct bypass_syslet_atom *atoms;
	uint32_t natoms;    /* 1 .. BYPASS_SYSLET_MAX_ATOMS */
	uint32_t max_steps; /* atoms executed at most; 0 = natoms, and a program
			       that can loop must set it */
	uint64_t tag;       /* returned in the completion */
	uint64_t reserved[2]; /* must be 0 */
};

/* Which engine ran an atom or ended a program. */
enum bypass_syslet_engine {
	BYPASS_SYSLET_ENGINE_AUTO = 0,    /* opts: io_uring where it works */
	BYPASS_SYSLET_ENGINE_INLINE = 1,  /* completions: the calling thread */
	BYPASS_SYSLET_ENGINE_WORKERS = 2,
	BYPASS_SYSLET_ENGINE_URING = 3,
};

struct bypass_syslet_completion {
	uint64_t tag;     /* the program's tag */
	int64_t result;   /* the result of the atom that ended the program;
			     -ELOOP if the step budget ran out */
	uint16_t atom;    /* that atom's index */
	uint16_t engine;  /* enum bypass_syslet_engine that ended it */
	uint32_t steps;   /* atoms executed */
};

struct bypass_syslet_opts {
	uint32_t entries;   /* completion ring size = programs in flight at most;
			       rounded up to a power of two; 0 = 256, max 65536 */
	uint32_t workers;   /* worker threads at most; 0 = BYPASS_SYSLET_WORKERS
			       from the environment, else 8 */
	uint32_t engine;    /* enum bypass_syslet_engine: AUTO, WORKERS or URING;
			       AUTO: BYPASS_SYSLET_ENGINE from the environment
			       if set, else io_uring where it works */
	uint32_t flags;     /* must be 0 */
	uint64_t reserved[4]; /* must be 0 */
};

struct bypass_syslet_stats {
	uint64_t programs;          /* accepted */
	uint64_t programs_inline;   /* ended in the calling thread */
	uint64_t programs_workers;  /* ended on a worker */
	uint64_t programs_uring;    /* ran as an io_uring chain */
	uint64_t cachemiss;         /* went asynchronous after starting inline */
	uint64_t atoms_inline;
	uint64_t atoms_workers;
	uint64_t atoms_uring;
	uint64_t syscalls;          /* system calls the library made, in any
				       thread (atoms, io_uring_enter, futex) */
	uint32_t engine;            /* WORKERS or URING: what this context uses */
	uint32_t workers;           /* worker threads running now */
	uint64_t reserved[6];
};

/*
 * bypass_syslet_create - a syslet context: a completion ring, a worker pool
 * (threads started when first needed) and, unless the engine is WORKERS or
 * io_uring is refused here, an io_uring (its descriptor out of programs'
 * reach).  opts may be NULL.  Returns 0 and *out, -EINVAL (bad options, or
 * a bad BYPASS_SYSLET_ENGINE value when opts leave the engine at AUTO),
 * -EOPNOTSUPP (the io_uring engine was required and is refused here),
 * -ENOMEM.
 */
BYPASS_API int bypass_syslet_create(const struct bypass_syslet_opts *opts,
				    bypass_syslet **out);

/*
 * bypass_syslet_destroy - end the context: programs not yet started are
 * dropped (no completion), programs running on workers finish their current
 * atom chain first (destroy waits for them: a program blocked forever blocks
 * destroy), io_uring chains are cancelled.  Returns 0 or -EINVAL.
 */
BYPASS_API int bypass_syslet_destroy(bypass_syslet *s);

/*
 * bypass_syslet_validate - check a program without running it.  Returns 0,
 * -EFAULT (the program or its atoms unreadable), or -EINVAL (bad bounds, flags, jump or argument, a reference to an atom
 * that does not run before on every path, a loop without a step budget, a
 * forbidden call: fork, vfork, clone, clone3, execve, execveat, exit,
 * exit_group, io_uring_*, and calls that change the running thread's state
 * such as unshare, setns, set*id, rt_sigprocmask, arch_prctl, prctl, and
 * close_range with CLOSE_RANGE_UNSHARE, which is unshare; when its flags
 * are loaded or an earlier result, the atom gets -EINVAL when it runs).
 */
BYPASS_API int bypass_syslet_validate(const struct bypass_syslet_prog *prog);

/*
 * bypass_syslet_run - run one program opportunistically.  Returns 1 when it
 * ended in the calling thread (*done filled, nothing goes to the ring; a
 * program that ends at a NO_COMPLETE atom fills *done too), 0 when it went
 * asynchronous at the first atom that would block (the rest runs on a
 * worker, or with the io_uring engine as one chain when io_uring can express
 * it; its completion will be in the ring), -EINVAL (bad program:
 * nothing ran), -EFAULT (prog, its atoms or done unreadable or unwritable:
 * nothing ran), -EBUSY (the ring holds as many programs as it has entries:
 * reap first; nothing ran), -EBADFD (the context's io_uring was closed
 * behind its back; part of the program may have run).  A bad pointer met
 * while it runs ends it with -EFAULT in *done or its completion.  Atoms
 * flagged ASYNC go asynchronous at once;
 * SYNC atoms run in the caller even when they block.  If the ring fills
 * while the program runs, the rest runs in the caller.  done may be NULL.
 */
BYPASS_API int bypass_syslet_run(bypass_syslet *s,
				 const struct bypass_syslet_prog *prog,
				 struct bypass_syslet_completion *done);

/*
 * bypass_syslet_submit - submit n programs; each one's completion goes to
 * the ring.  All are validated first: if any is invalid, -EINVAL and none
 * runs.  Linear programs that io_uring can express are sent as linked
 * chains, all in one system call; the others run as bypass_syslet_run()
 * runs them.  Returns n, -EINVAL, -EFAULT (progs or the atoms of one of
 * them unreadable: none runs), -EBUSY (not room in the ring for n more
 * programs: none was submitted), -ENOMEM, or -EBADFD (the context's
 * io_uring was closed behind its back: destroy it; programs of this call
 * may have run).
 */
BYPASS_API int bypass_syslet_submit(bypass_syslet *s,
				    const struct bypass_syslet_prog *progs,
				    unsigned n);

/*
 * bypass_syslet_reap - take up to n completions from the ring, without a
 * system call when they are there (io_uring completions are collected from
 * io_uring's own ring, also without one).  Returns how many (0 if none), or
 * -EFAULT when out cannot be written (no completion is taken then).
 */
BYPASS_API int bypass_syslet_reap(bypass_syslet *s,
				  struct bypass_syslet_completion *out,
				  unsigned n);

/*
 * bypass_syslet_wait - wait until at least min completions are in the ring
 * (spin briefly, then sleep), at most timeout_ns (BYPASS_FOREVER: no limit,
 * 0: do not wait).  Returns how many are there, -ETIMEDOUT, -EINVAL (min is
 * 0 or larger than the ring), -EBADFD (fewer are there and the context's
 * io_uring was closed behind its back: they may never come).
 */
BYPASS_API int bypass_syslet_wait(bypass_syslet *s, unsigned min,
				  int64_t timeout_ns);

/*
 * bypass_syslet_stats - counters (which engine ran how many atoms) and the
 * engine in use.  Returns 0 or -EINVAL.
 */
BYPASS_API int bypass_syslet_stats(bypass_syslet *s,
				   struct bypass_syslet_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BYPASS_SYSLET_H */
