/* SPDX-License-Identifier: MIT */
/*
 * The completion ring: a bounded MPMC queue in user memory (Vyukov's, a
 * sequence number per cell) that workers, the io_uring collector and the
 * inline path publish to and any thread reaps without a system call; and
 * waiting for it (spin, then the futex, or io_uring while chains are in
 * flight).
 */
#include "syslet/syslet_internal.h"
#include "core/deadline.h"

void bp_syslet_post(bypass_syslet *s, const struct bypass_syslet_completion *c,
		    bool complete, bool kick)
{
	if (!complete) {
		atomic_fetch_sub(&s->inflight, 1);
		return;
	}
	uint64_t pos = atomic_load_explicit(&s->ctail, memory_order_relaxed);
	struct bp_syslet_cell *cell;
	for (;;) {
		cell = &s->cells[pos & s->mask];
		uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
		int64_t diff = (int64_t)(seq - pos);
		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &s->ctail, &pos, pos + 1, memory_order_relaxed,
				    memory_order_relaxed))
				break;
		} else {
			/* diff < 0: a consumer is still reading this cell
			 * (the in-flight bound keeps the ring from filling). */
			if (diff < 0)
				bp_cpu_relax();
			pos = atomic_load_explicit(&s->ctail, memory_order_relaxed);
		}
	}
	cell->c = *c;
	atomic_store_explicit(&cell->seq, pos + 1, memory_order_release);
	atomic_fetch_add_explicit(&s->npub, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&s->ev.value, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&s->ev.sleepers, memory_order_seq_cst)) {
		bp_futex_wake(&s->ev.value, INT32_MAX, false);
		atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
	}
	if (kick && atomic_load_explicit(&s->uring_waiter, memory_order_seq_cst))
		bp_syslet_uring_kick(s);
}

static unsigned take(bypass_syslet *s, struct bypass_syslet_completion *out,
		     unsigned n)
{
	unsigned got = 0;
	while (got < n) {
		uint64_t pos = atomic_load_explicit(&s->chead, memory_order_relaxed);
		struct bp_syslet_cell *cell = &s->cells[pos & s->mask];
		uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
		int64_t diff = (int64_t)(seq - (pos + 1));
		if (diff < 0)
			break; /* empty */
		if (diff > 0)
			continue; /* another consumer took it: reload */
		if (!atomic_compare_exchange_weak_explicit(&s->chead, &pos, pos + 1,
							   memory_order_relaxed,
							   memory_order_relaxed))
			continue;
		out[got++] = cell->c;
		atomic_store_explicit(&cell->seq, pos + s->mask + 1,
				      memory_order_release);
	}
	if (got) {
		atomic_fetch_add_explicit(&s->reaped, got, memory_order_seq_cst);
		atomic_fetch_sub_explicit(&s->inflight, got, memory_order_relaxed);
	}
	return got;
}

void bp_syslet_ring_reset(bypass_syslet *s)
{
	for (uint32_t i = 0; i <= s->mask; i++)
		atomic_store_explicit(&s->cells[i].seq, i, memory_order_relaxed);
	atomic_store(&s->ctail, 0);
	atomic_store(&s->chead, 0);
	atomic_store(&s->npub, 0);
	atomic_store(&s->reaped, 0);
	atomic_store(&s->inflight, 0);
	atomic_store(&s->ev.sleepers, 0);
}


int bypass_syslet_reap(bypass_syslet *s, struct bypass_syslet_completion *out,
		       unsigned n)
{
	if (!s || (!out && n))
		return -EINVAL;
	bp_syslet_fork_check(s);
	if (atomic_load_explicit(&s->uring_inflight, memory_order_relaxed))
		bp_syslet_uring_drain(s);
	/*
	 * out is checked (written with zeros) for as many completions as there
	 * are before any is taken: a bad buffer gets -EFAULT and loses none.
	 */
	unsigned got = 0;
	while (got < n) {
		uint32_t avail = bp_syslet_avail(s);
		unsigned k = n - got < avail ? n - got : avail;
		if (k == 0)
			break;
		if (bp_syslet_probe_out(out + got, k * sizeof(*out)))
			return got ? (int)got : -EFAULT;
		unsigned t = take(s, out + got, k);
		got += t;
		if (t < k)
			break;
	}
	return (int)got;
}

int bypass_syslet_wait(bypass_syslet *s, unsigned min, int64_t timeout_ns)
{
	if (!s || min == 0 || min > s->mask + 1 || timeout_ns < -1)
		return -EINVAL;
	bp_syslet_fork_check(s);
	uint64_t deadline = bp_deadline(timeout_ns);
	for (bool first = true;; first = false) {
		uint32_t val = atomic_load_explicit(&s->ev.value, memory_order_seq_cst);
		bool uring = atomic_load_explicit(&s->uring_inflight, memory_order_seq_cst);
		if (uring)
			bp_syslet_uring_drain(s);
		uint32_t avail = bp_syslet_avail(s);
		if (avail >= min)
			return (int)avail;
		if (bp_unlikely(bp_syslet_broken(s)))
			return bp_syslet_broken(s); /* what it waits for may never come */
		if (!first && bp_deadline_passed(deadline))
			return -ETIMEDOUT;
		if (first && timeout_ns == 0)
			return -ETIMEDOUT;
		int64_t left = -1;
		if (deadline != UINT64_MAX) {
			uint64_t now = bypass_now_ns();
			left = deadline > now ? (int64_t)(deadline - now) : 0;
			if (!left)
				continue;
		}
		if (uring) {
			bp_syslet_uring_sleep(s, min, left);
			continue;
		}
		struct bp_wait_opts o = {
			.spin_ns = s->spin_ns, .timeout_ns = left, .shared = false,
		};
		/* counted as one system call (it may have slept on the futex) */
		atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
		bp_wait_while(&s->ev, val, &o);
	}
}
