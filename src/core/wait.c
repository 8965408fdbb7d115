/* SPDX-License-Identifier: MIT */
/*
 * Waiting: spin with pause for a bounded time, then sleep on a futex.  The
 * waiter announces itself in a sleeper count before it sleeps, so a waker
 * that finds no sleeper makes no system call.
 *
 * Ordering argument (both sides use sequentially consistent operations):
 *   waiter: sleepers++ ; reload value ; futex_wait(value, val)
 *   waker:  value = new ; load sleepers ; if > 0 futex_wake
 * Either the waker sees the sleeper and wakes it, or the waiter's reload sees
 * the new value and does not sleep; futex_wait itself rechecks the value
 * under the kernel's lock, which closes the window between reload and sleep.
 */
#include "core/deadline.h"
#include "core/internal.h"
#include "core/syscall.h"

#include <linux/futex.h>
#include <limits.h>

int bp_futex_wait(_Atomic uint32_t *word, uint32_t val, int64_t timeout_ns,
		  bool shared)
{
	struct timespec ts, *tp = NULL;
	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tp = &ts;
	}
	int op = FUTEX_WAIT | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	long r = bp_syscall4(SYS_futex, word, op, val, tp);
	/* 0, or -EAGAIN: the word was not val (any more); -ETIMEDOUT, -EINTR */
	return r == -EAGAIN ? 0 : (int)r;
}

int bp_futex_wake(_Atomic uint32_t *word, int n, bool shared)
{
	int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	return (int)bp_syscall3(SYS_futex, word, op, n);
}

int bp_wait_while(struct bp_waitword *ww, uint32_t val,
		  const struct bp_wait_opts *o)
{
	if (atomic_load_explicit(&ww->value, memory_order_acquire) != val)
		return 0;
	if (o->timeout_ns == 0)
		return -ETIMEDOUT;

	uint64_t deadline = bp_deadline(o->timeout_ns); /* not 0: returned above */

	/* Spin phase, timed with the TSC (cheaper than clock_gettime). */
	if (o->spin_ns) {
		uint64_t spin = o->spin_ns;
		if (o->timeout_ns >= 0 && (uint64_t)o->timeout_ns < spin)
			spin = (uint64_t)o->timeout_ns;
		uint64_t c0 = bypass_rdtscp(NULL);
		uint64_t limit = bp_ns_to_cycles(spin);
		for (;;) {
			for (int i = 0; i < 16; i++) {
				if (atomic_load_explicit(&ww->value,
							 memory_order_acquire) != val)
					return 0;
				bp_cpu_relax();
			}
			if (bypass_rdtscp(NULL) - c0 >= limit)
				break;
		}
	}

	uint64_t slice = o->slice_ns ? o->slice_ns : 20000000ull;
	for (bool slept = false;; slept = true) {
		if (o->check && slept) {
			int c = o->check(o->check_arg);
			if (c)
				return c;
		}
		uint64_t now = bypass_now_ns();
		if (now >= deadline)
			return atomic_load(&ww->value) != val ? 0 : -ETIMEDOUT;
		uint64_t left = deadline - now;
		int64_t nap = -1;
		if (o->check && left > slice)
			nap = (int64_t)slice;
		else if (deadline != UINT64_MAX)
			nap = (int64_t)left;

		atomic_fetch_add_explicit(&ww->sleepers, 1, memory_order_seq_cst);
		int r = 0;
		if (atomic_load_explicit(&ww->value, memory_order_seq_cst) == val)
			r = bp_futex_wait(&ww->value, val, nap, o->shared);
		atomic_fetch_sub_explicit(&ww->sleepers, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&ww->value, memory_order_acquire) != val)
			return 0;
		if (r < 0 && r != -ETIMEDOUT && r != -EINTR)
			return r;
	}
}
