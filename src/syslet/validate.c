/* SPDX-License-Identifier: MIT */
/*
 * Program validation: nothing of a program runs before all of it passed.
 * Bounds, flags, jumps, argument kinds, forbidden calls (and close_range
 * with a constant CLOSE_RANGE_UNSHARE, which is unshare); references to the
 * result of an atom must name an atom that runs before on every path (it
 * dominates the referencing atom in the control-flow graph); a program whose
 * graph has a cycle must carry a step budget.  Also decides whether the
 * program is a linear chain that io_uring can express.
 */
#include "syslet/syslet_internal.h"

#include <linux/close_range.h>
#include <stdint.h>
#include <sys/syscall.h>

_Static_assert(SYS_close_range == 436 && CLOSE_RANGE_UNSHARE == BP_SYSLET_CLOSE_RANGE_UNSHARE,
	       "bp_syslet_unshares' numbers");

#define NR_MAX 512 /* x86-64 system call numbers we accept: 0 .. 511 */

bool bp_syslet_forbidden(long nr)
{
	if (nr == BYPASS_SYSLET_UMEM_ADD)
		return false;
	if (nr < 0 || nr >= NR_MAX)
		return true;
	switch (nr) {
	case SYS_fork: case SYS_vfork: case SYS_clone: case SYS_clone3:
	case SYS_execve: case SYS_execveat: case SYS_exit: case SYS_exit_group:
	case SYS_rt_sigreturn: case SYS_unshare: case SYS_setns: case SYS_arch_prctl:
	case SYS_prctl: case SYS_set_tid_address: case SYS_set_robust_list:
	case SYS_rt_sigprocmask: case SYS_sigaltstack: case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait: case SYS_pause: case SYS_setuid: case SYS_setgid:
	case SYS_setreuid: case SYS_setregid: case SYS_setresuid: case SYS_setresgid:
	case SYS_setfsuid: case SYS_setfsgid: case SYS_setgroups: case SYS_capset:
	case SYS_personality: case SYS_seccomp: case SYS_io_uring_setup:
	case SYS_io_uring_enter: case SYS_io_uring_register:
#ifdef SYS_map_shadow_stack
	case SYS_map_shadow_stack:
#endif
		return true;
	default:
		return false;
	}
}

#define ATOM_FLAGS                                                            \
	(BYPASS_SYSLET_ASYNC | BYPASS_SYSLET_SYNC | BYPASS_SYSLET_NO_COMPLETE | \
	 BYPASS_SYSLET_STOP_ON_NONZERO | BYPASS_SYSLET_STOP_ON_ZERO |        \
	 BYPASS_SYSLET_STOP_ON_NEGATIVE | BYPASS_SYSLET_STOP_ON_NON_POSITIVE)
#define STOP_FLAGS                                                            \
	(BYPASS_SYSLET_STOP_ON_NONZERO | BYPASS_SYSLET_STOP_ON_ZERO |          \
	 BYPASS_SYSLET_STOP_ON_NEGATIVE | BYPASS_SYSLET_STOP_ON_NON_POSITIVE)

/* Successors of atom i: up to two, -1 for "the program ends". */
static void succ(const struct bypass_syslet_atom *a, uint32_t i, uint32_t n,
		 int out[2])
{
	uint16_t nx = a[i].next;
	if (nx == 0)
		out[0] = i + 1 < n ? (int)i + 1 : -1;
	else if (nx == BYPASS_SYSLET_END)
		out[0] = -1;
	else
		out[0] = nx - 1;
	out[1] = -1;
	if (a[i].flags & STOP_FLAGS) {
		uint16_t os = a[i].on_stop;
		out[1] = os == 0 || os == BYPASS_SYSLET_END ? -1 : os - 1;
	}
}

/* Iterative DFS from atom 0: reachable set, and whether a cycle exists. */
static uint64_t explore(const struct bypass_syslet_atom *a, uint32_t n,
			bool *cycle)
{
	uint64_t seen = 1, onstack = 1;
	uint8_t stack[BYPASS_SYSLET_MAX_ATOMS], edge[BYPASS_SYSLET_MAX_ATOMS];
	int sp = 0;
	stack[0] = 0;
	edge[0] = 0;
	*cycle = false;
	while (sp >= 0) {
		uint32_t v = stack[sp];
		if (edge[sp] >= 2) {
			onstack &= ~(1ull << v);
			sp--;
			continue;
		}
		int s[2];
		succ(a, v, n, s);
		int w = s[edge[sp]++];
		if (w < 0)
			continue;
		if (onstack >> w & 1) {
			*cycle = true;
			continue;
		}
		if (seen >> w & 1)
			continue;
		seen |= 1ull << w;
		onstack |= 1ull << w;
		stack[++sp] = (uint8_t)w;
		edge[sp] = 0;
	}
	return seen;
}

/* dom[i]: the atoms that run before i on every path from atom 0 (and i). */
static void dominators(const struct bypass_syslet_atom *a, uint32_t n,
		       uint64_t reach, uint64_t *dom)
{
	uint64_t all = n == 64 ? ~0ull : (1ull << n) - 1;
	uint64_t preds[BYPASS_SYSLET_MAX_ATOMS] = { 0 };
	for (uint32_t i = 0; i < n; i++) {
		if (!(reach >> i & 1))
			continue;
		int s[2];
		succ(a, i, n, s);
		for (int k = 0; k < 2; k++)
			if (s[k] >= 0)
				preds[s[k]] |= 1ull << i;
	}
	for (uint32_t i = 0; i < n; i++)
		dom[i] = i == 0 ? 1 : all;
	for (bool changed = true; changed;) {
		changed = false;
		for (uint32_t i = 1; i < n; i++) {
			if (!(reach >> i & 1))
				continue;
			uint64_t d = all;
			for (uint64_t p = preds[i]; p; p &= p - 1)
				d &= dom[__builtin_ctzll(p)];
			d |= 1ull << i;
			if (d != dom[i]) {
				dom[i] = d;
				changed = true;
			}
		}
	}
}

/* Which argument carries a descriptor in the atoms io_uring can run. */
static bool uring_op(long nr, bool *rw)
{
	*rw = false;
	switch (nr) {
	case SYS_read: case SYS_pread64: case SYS_write: case SYS_pwrite64:
		*rw = true;
		return true;
	case SYS_openat: case SYS_close: case SYS_fsync: case SYS_fdatasync:
		return true;
	default:
		return false;
	}
}

/*
 * A linear program of io_uring-expressible atoms whose only non-constant
 * arguments are descriptors opened earlier in the same chain (which become
 * direct descriptors, so each such openat must be closed in the chain and
 * must not hand its number to the user).
 */
static bool uring_expressible(const struct bypass_syslet_atom *a, uint32_t n,
			      struct bp_syslet_info *info)
{
	uint64_t used_as_fd = 0, closed = 0;
	for (uint32_t i = 0; i < n; i++) {
		bool rw;
		if (!uring_op(a[i].nr, &rw))
			return false;
		uint32_t f = a[i].flags;
		if (f & BYPASS_SYSLET_SYNC)
			return false;
		if (f & STOP_FLAGS & ~BYPASS_SYSLET_STOP_ON_NEGATIVE)
			return false;
		/* A short read or write breaks an io_uring link; syslets go on. */
		if (rw && (f & BYPASS_SYSLET_STOP_ON_NEGATIVE) && i + 1 < n)
			return false;
		bool last = i + 1 == n;
		if (!(a[i].next == 0 || a[i].next == BYPASS_SYSLET_GOTO(i + 1) ||
		      (last && a[i].next == BYPASS_SYSLET_END)))
			return false;
		if ((f & STOP_FLAGS) && a[i].on_stop != 0 &&
		    a[i].on_stop != BYPASS_SYSLET_END)
			return false;
		for (int k = 0; k < 6; k++) {
			uint32_t kind = a[i].arg[k].kind;
			if (kind == BYPASS_SYSLET_ARG_LOAD)
				return false;
			if (kind != BYPASS_SYSLET_ARG_RESULT)
				continue;
			uint32_t j = (uint32_t)a[i].arg[k].val;
			if (k != 0 || a[i].nr == SYS_openat || a[j].nr != SYS_openat)
				return false;
			used_as_fd |= 1ull << j;
			if (a[i].nr == SYS_close)
				closed |= 1ull << j;
		}
	}
	if (used_as_fd & ~closed)
		return false;
	if (__builtin_popcountll(used_as_fd) > BP_SYSLET_MAX_SLOTS)
		return false;
	for (uint64_t m = used_as_fd; m; m &= m - 1)
		if (a[__builtin_ctzll(m)].ret)
			return false;
	info->chain_open = used_as_fd;
	return true;
}

int bp_syslet_check(const struct bypass_syslet_prog *p,
		    struct bp_syslet_info *info, bool uring)
{
	if (!p || !p->atoms || p->natoms == 0 || p->natoms > BYPASS_SYSLET_MAX_ATOMS)
		return -EINVAL;
	if (p->reserved[0] || p->reserved[1])
		return -EINVAL;
	const struct bypass_syslet_atom *a = p->atoms;
	uint32_t n = p->natoms;
	/*
	 * One pass also learns whether the program is a straight line (every
	 * atom falls through or ends, stops only end it) and, if so, whether
	 * a reachable atom (one before the first END) refers to itself or a
	 * later atom: in a straight line atom j runs before atom i on every
	 * path exactly when j < i, so no graph work is needed.
	 */
	bool any_result = false, linear = true, fwd_ref = false;
	uint32_t live_end = n;
	for (uint32_t i = 0; i < n; i++) {
		if (a[i].flags & ~ATOM_FLAGS || a[i].reserved)
			return -EINVAL;
		if ((a[i].flags & BYPASS_SYSLET_ASYNC) && (a[i].flags & BYPASS_SYSLET_SYNC))
			return -EINVAL;
		if (bp_syslet_forbidden(a[i].nr))
			return -EINVAL;
		if (a[i].arg[2].kind == BYPASS_SYSLET_ARG_CONST) {
			const long args[6] = { 0, 0, (long)a[i].arg[2].val };
			if (bp_syslet_unshares(a[i].nr, args))
				return -EINVAL;
		}
		if (a[i].next != 0 && a[i].next != BYPASS_SYSLET_END &&
		    a[i].next > n)
			return -EINVAL;
		if (a[i].on_stop != 0 && a[i].on_stop != BYPASS_SYSLET_END &&
		    a[i].on_stop > n)
			return -EINVAL;
		if ((uintptr_t)a[i].ret % 8)
			return -EINVAL;
		for (int k = 0; k < 6; k++) {
			const struct bypass_syslet_arg *g = &a[i].arg[k];
			if (g->reserved)
				return -EINVAL;
			switch (g->kind) {
			case BYPASS_SYSLET_ARG_NONE:
				if (g->val)
					return -EINVAL;
				break;
			case BYPASS_SYSLET_ARG_CONST:
				break;
			case BYPASS_SYSLET_ARG_LOAD:
				if (!g->val || g->val % 8)
					return -EINVAL;
				break;
			case BYPASS_SYSLET_ARG_RESULT:
				if (g->val >= n)
					return -EINVAL;
				any_result = true;
				if (g->val >= i && i < live_end)
					fwd_ref = true;
				break;
			default:
				return -EINVAL;
			}
		}
		if (a[i].nr == BYPASS_SYSLET_UMEM_ADD) {
			/* umem_add(int64_t *addr, int64_t delta) */
			const struct bypass_syslet_arg *g = &a[i].arg[0];
			if (g->kind == BYPASS_SYSLET_ARG_NONE ||
			    (g->kind == BYPASS_SYSLET_ARG_CONST && (!g->val || g->val % 8)))
				return -EINVAL;
			for (int k = 2; k < 6; k++)
				if (a[i].arg[k].kind != BYPASS_SYSLET_ARG_NONE)
					return -EINVAL;
		}
		linear = linear && (a[i].next == 0 || a[i].next == BYPASS_SYSLET_END) &&
			 (a[i].on_stop == 0 || a[i].on_stop == BYPASS_SYSLET_END ||
			  !(a[i].flags & STOP_FLAGS));
		if (a[i].next == BYPASS_SYSLET_END && live_end == n)
			live_end = i + 1;
	}

	bool cycle = false;
	if (linear) {
		if (fwd_ref)
			return -EINVAL;
	} else {
		uint64_t reach = explore(a, n, &cycle);
		if (any_result) {
			uint64_t dom[BYPASS_SYSLET_MAX_ATOMS];
			dominators(a, n, reach, dom);
			for (uint32_t i = 0; i < n; i++) {
				if (!(reach >> i & 1))
					continue;
				for (int k = 0; k < 6; k++) {
					if (a[i].arg[k].kind != BYPASS_SYSLET_ARG_RESULT)
						continue;
					uint32_t j = (uint32_t)a[i].arg[k].val;
					if (j == i || !(dom[i] >> j & 1))
						return -EINVAL;
				}
			}
		}
	}
	if (cycle && p->max_steps == 0)
		return -EINVAL;
	if (info) {
		info->max_steps = p->max_steps ? p->max_steps : n;
		info->chain_open = 0;
		info->uring_ok = uring && !cycle && uring_expressible(a, n, info);
	}
	return 0;
}
