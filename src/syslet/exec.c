/* SPDX-License-Identifier: MIT */
/*
 * The atom interpreter, shared by the inline path and the workers.
 *
 * Inline, an atom runs only in a form that cannot block: reads and writes
 * as preadv2/pwritev2 with RWF_NOWAIT, openat as openat2 with
 * RESOLVE_CACHED, socket transfers with MSG_DONTWAIT, and the calls listed
 * in never_blocks() as they are.  Anything else, an -EAGAIN from one of
 * those forms (which has no side effect), or an ASYNC atom stops the inline
 * run before that atom: the "cachemiss", after which a worker resumes the
 * program at the same atom and runs it as the plain, blocking call.
 *
 * In both, the pointers the interpreter follows for the program (LOAD
 * arguments, umem_add targets, ret) go through umem.c, where a bad one is
 * -EFAULT, and it ends the program (fault_end); an atom that would close,
 * replace, duplicate or map a context's own descriptor gets -EBADF (fds.c),
 * and a close_range that would unshare the file table -EINVAL
 * (bp_syslet_unshares).
 */
#include "syslet/syslet_internal.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif
#ifndef RESOLVE_CACHED
#define RESOLVE_CACHED 0x20
#endif

/* Calls that do not wait for I/O or for another party. */
static bool never_blocks(long nr, const long *a)
{
	switch (nr) {
	case SYS_close: case SYS_lseek: case SYS_fstat: case SYS_dup:
	case SYS_dup2: case SYS_dup3: case SYS_getpid: case SYS_getppid:
	case SYS_gettid: case SYS_getuid: case SYS_geteuid: case SYS_getgid:
	case SYS_getegid: case SYS_socket: case SYS_socketpair: case SYS_bind:
	case SYS_listen: case SYS_setsockopt: case SYS_getsockopt:
	case SYS_shutdown: case SYS_getsockname: case SYS_getpeername:
	case SYS_pipe: case SYS_pipe2: case SYS_eventfd2: case SYS_epoll_create1:
	case SYS_epoll_ctl: case SYS_kill: case SYS_tgkill: case SYS_tkill:
	case SYS_umask: case SYS_uname: case SYS_time: case SYS_clock_gettime:
	case SYS_gettimeofday: case SYS_madvise: case SYS_munmap:
	case SYS_mprotect: case SYS_sched_yield: case SYS_getcwd:
	case SYS_getrusage: case SYS_sysinfo: case SYS_memfd_create:
	case SYS_timerfd_create: case SYS_timerfd_settime: case SYS_fchmod:
	case SYS_getrlimit: case SYS_prlimit64: case SYS_mmap:
#ifdef SYS_close_range
	case SYS_close_range:
#endif
		return true;
	case SYS_fcntl:
		return a[1] != F_SETLKW && a[1] != F_OFD_SETLKW;
	default:
		return false;
	}
}

/*
 * Try atom nr(a) without blocking.  Returns true and *res when it ran
 * (whatever its result), false when it would block or cannot be tried
 * without blocking (nothing happened).  *calls counts system calls made.
 */
static bool try_nowait(long nr, const long *a, int64_t *res, uint32_t *calls,
		       bool *not_uring)
{
	struct iovec iov;
	long r;
	switch (nr) {
	case SYS_read: case SYS_pread64: case SYS_write: case SYS_pwrite64: {
		bool rd = nr == SYS_read || nr == SYS_pread64;
		bool pos = nr == SYS_pread64 || nr == SYS_pwrite64;
		iov.iov_base = (void *)a[1];
		iov.iov_len = (size_t)a[2];
		r = bp_syscall6(rd ? SYS_preadv2 : SYS_pwritev2, a[0], (long)&iov, 1,
			 pos ? a[3] : -1, 0, RWF_NOWAIT);
		break;
	}
	case SYS_readv: case SYS_preadv: case SYS_writev: case SYS_pwritev: {
		bool rd = nr == SYS_readv || nr == SYS_preadv;
		bool pos = nr == SYS_preadv || nr == SYS_pwritev;
		r = bp_syscall6(rd ? SYS_preadv2 : SYS_pwritev2, a[0], a[1], a[2],
			 pos ? a[3] : -1, 0, RWF_NOWAIT);
		break;
	}
	case SYS_openat: case SYS_open: {
		long dfd = nr == SYS_open ? AT_FDCWD : a[0];
		const long *p = nr == SYS_open ? a : a + 1;
		uint64_t fl = (uint64_t)(unsigned)p[1];
		/* Creating or truncating is never done from the cache alone. */
		if (fl & (O_CREAT | O_TRUNC | __O_TMPFILE))
			return false;
		/*
		 * Like io_uring's first, non-blocking try: RESOLVE_CACHED for
		 * the look-up and O_NONBLOCK for the open itself (a FIFO or a
		 * device would wait for its other end), cleared afterwards.
		 */
		bool added = !(fl & O_NONBLOCK);
		struct open_how how = { .flags = fl | O_NONBLOCK, .mode = 0,
					.resolve = RESOLVE_CACHED };
		r = bp_syscall4(SYS_openat2, dfd, p[0], &how, sizeof(how));
		(*calls)++;
		/* openat2 refuses flags openat ignores: let the plain call run;
		 * ENXIO: a FIFO opened for writing has no reader yet. */
		if (r == -ENXIO) {
			/* io_uring's openat would return the -ENXIO too */
			*not_uring = true;
			return false;
		}
		if (r == -EAGAIN || r == -EINVAL || r == -ENOSYS || r == -E2BIG)
			return false;
		if (r >= 0 && added) {
			(*calls)++;
			if (bp_syscall3(SYS_fcntl, r, F_SETFL, fl) < 0) {
				bp_syscall1(SYS_close, r);
				(*calls)++;
				return false;
			}
		}
		*res = r;
		return true;
	}
	case SYS_recvfrom: case SYS_sendto:
		r = bp_syscall6(nr, a[0], a[1], a[2], a[3] | MSG_DONTWAIT, a[4], a[5]);
		break;
	case SYS_recvmsg: case SYS_sendmsg:
		r = bp_syscall3(nr, a[0], a[1], a[2] | MSG_DONTWAIT);
		break;
	default:
		if (!never_blocks(nr, a))
			return false;
		r = bp_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		(*calls)++;
		*res = r;
		return true;
	}
	(*calls)++;
	/* -EOPNOTSUPP: the file does not support RWF_NOWAIT. */
	if (r == -EAGAIN || r == -EOPNOTSUPP)
		return false;
	*res = r;
	return true;
}

static bool short_write(long nr, const long *a, int64_t res)
{
	switch (nr) {
	case SYS_write: case SYS_pwrite64:
		return res > 0 && res < a[2];
	case SYS_sendto:
		return res > 0 && res < a[2] && !(a[3] & MSG_DONTWAIT);
	default:
		return false;
	}
}

/*
 * A bad pointer the library met on the program's behalf (a LOAD argument,
 * a umem_add target, ret) ends the program at atom pc with -EFAULT, always
 * with a completion (NO_COMPLETE does not hide the error).  The atom counts
 * as a step; its ret, if it can be written, gets -EFAULT.
 */
static int fault_end(struct bp_syslet_run *r, uint32_t pc, bool store_ret)
{
	const struct bypass_syslet_atom *at = &r->atoms[pc];
	r->res[pc] = -EFAULT;
	r->steps++;
	r->executed++;
	if (store_ret && at->ret)
		bp_syslet_store(at->ret, -EFAULT);
	r->pc = pc;
	r->result = -EFAULT;
	r->faulted = true;
	return BP_SYSLET_DONE;
}

int bp_syslet_exec(struct bp_syslet_run *r, enum bp_syslet_mode mode)
{
	const struct bypass_syslet_atom *atoms = r->atoms;
	uint32_t pc = r->pc;
	for (;;) {
		const struct bypass_syslet_atom *at = &atoms[pc];
		if (r->steps >= r->max_steps) {
			r->pc = pc;
			r->result = -ELOOP;
			r->out_of_steps = true;
			return BP_SYSLET_DONE;
		}
		if (mode == BP_SYSLET_INLINE && (at->flags & BYPASS_SYSLET_ASYNC)) {
			r->pc = pc;
			return BP_SYSLET_WOULDBLOCK;
		}
		long a[6];
		int64_t res = 0;
		for (int k = 0; k < 6; k++) {
			const struct bypass_syslet_arg *g = &at->arg[k];
			switch (g->kind) {
			case BYPASS_SYSLET_ARG_RESULT:
				a[k] = (long)r->res[g->val];
				break;
			case BYPASS_SYSLET_ARG_LOAD: {
				int64_t v;
				if (bp_syslet_load((const int64_t *)(uintptr_t)g->val, &v))
					return fault_end(r, pc, true);
				a[k] = (long)v;
				break;
			}
			default:
				a[k] = (long)g->val;
			}
		}
		if (at->nr == BYPASS_SYSLET_UMEM_ADD) {
			/* a target computed at run time may be misaligned: a
			 * locked add across two cache lines is refused too */
			if (a[0] % 8 ||
			    bp_syslet_umem_add((int64_t *)a[0], a[1], &res))
				return fault_end(r, pc, true);
		} else if (bp_syslet_unshares(at->nr, a)) {
			res = -EINVAL; /* a file table of its own: see there */
		} else if (bp_syslet_fd_refused(at->nr, a)) {
			res = -EBADF; /* one of the contexts' own descriptors */
		} else if (mode == BP_SYSLET_WORKER || (at->flags & BYPASS_SYSLET_SYNC)) {
			int64_t done = r->partial;
			r->partial = 0;
			if (done > 0) {
				/* finish a write the inline try began */
				a[1] += done;
				a[2] -= done;
				if (at->nr == SYS_pwrite64)
					a[3] += done;
			}
			res = bp_syscall6(at->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
			r->syscalls++;
			if (done > 0)
				res = res < 0 ? done : res + done;
		} else if (!try_nowait(at->nr, a, &res, &r->syscalls, &r->not_uring)) {
			r->pc = pc;
			return BP_SYSLET_WOULDBLOCK;
		} else if (short_write(at->nr, a, res)) {
			/*
			 * A blocking write to a pipe or socket writes it all; the
			 * non-blocking try wrote part: a worker writes the rest
			 * and the atom's result is the whole count.
			 */
			r->partial = res;
			r->pc = pc;
			return BP_SYSLET_WOULDBLOCK;
		}
		if (at->ret && bp_syslet_store(at->ret, res)) {
			/* the atom ran; its result could not be stored */
			fault_end(r, pc, false);
			r->res[pc] = res;
			return BP_SYSLET_DONE;
		}
		r->res[pc] = res;
		r->steps++;
		r->executed++;
		uint16_t to;
		if (bp_syslet_stops(at->flags, res)) {
			to = at->on_stop;
			if (to == 0)
				to = BYPASS_SYSLET_END;
		} else {
			to = at->next;
			if (to == 0)
				to = pc + 1 < r->natoms ? BYPASS_SYSLET_GOTO(pc + 1)
							: BYPASS_SYSLET_END;
		}
		if (to == BYPASS_SYSLET_END) {
			r->pc = pc;
			r->result = res;
			return BP_SYSLET_DONE;
		}
		pc = to - 1u;
	}
}
