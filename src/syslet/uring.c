/* SPDX-License-Identifier: MIT */
/*
 * The io_uring engine: a linear program of atoms io_uring can express
 * becomes one linked chain.  An atom with STOP_ON_NEGATIVE links with
 * IOSQE_IO_LINK (a failure cancels the rest, as the syslet would stop);
 * any other atom links with IOSQE_IO_HARDLINK (the chain goes on whatever
 * the result, as the syslet would; a short read does not stop it).  A
 * descriptor opened in the chain and used by later atoms of it becomes a
 * direct descriptor in a slot of the ring's registered file table that we
 * choose, so the later atoms can name it before it exists.
 *
 * The ring belongs to the context, not to a thread, so that any thread can
 * collect the completions: submission under sqlock, collection under
 * cqlock, from bypass_syslet_reap and bypass_syslet_wait.  A thread that
 * waits while chains are in flight sleeps in io_uring; a worker that posts
 * a completion meanwhile wakes it with a no-op request (the "kick").
 */
#include "syslet/syslet_internal.h"
#include "core/uring.h"
#include "core/uring_link.h"
#include "core/fdhigh.h"

#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

int bp_syslet_uring_setup(bypass_syslet *s)
{
	struct io_uring *ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	unsigned entries = (s->mask + 1) * 4;
	if (entries < 64)
		entries = 64;
	if (entries > 4096)
		entries = 4096;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int r = bp_uring_init(entries, ring, &p);
	if (r < 0) {
		free(ring);
		return r;
	}
	/* out of programs' reach: moved high, and refused to their atoms */
	ring->ring_fd = ring->enter_ring_fd = bp_syslet_fd_reserve(ring->ring_fd);
	atomic_store(&s->broken, 0);
	unsigned nslots = entries;
	r = io_uring_register_files_sparse(ring, nslots);
	if (r < 0) {
		bp_info("bypass syslet: no sparse file table (%s): chains that open "
			"descriptors run on the workers", strerror(-r));
		nslots = 0;
	}
	s->slotmap = nslots ? calloc(nslots / 64 + 1, sizeof(uint64_t)) : NULL;
	if (nslots && !s->slotmap) {
		bp_uring_exit(ring);
		free(ring);
		return -ENOMEM;
	}
	s->nslots = nslots;
	s->ring = ring;
	atomic_store(&s->uring_inflight, 0);
	return 0;
}

void bp_syslet_uring_teardown(bypass_syslet *s, bool forked)
{
	(void)forked; /* in a child, exit unmaps and closes our copy only */
	if (!s->ring)
		return;
	int fd = s->ring->ring_fd;
	/*
	 * A descriptor found closed or replaced is no longer ours to close,
	 * and its number may be another context's by now: it stays marked
	 * (an atom cannot close what is there; a smaller harm than leaving
	 * the other context's descriptor unprotected).  It leaves the
	 * library's list (core/fdhigh.h) though: the list holds one entry per
	 * listing, so another context's entry for the number stays, and ours
	 * would keep the pager preload refusing the program's close() of a
	 * number that is the program's now.
	 */
	bool lost = atomic_load(&s->broken);
	if (lost) {
		bp_fd_unlist(fd);
		s->ring->ring_fd = s->ring->enter_ring_fd = -1;
	}
	bp_uring_exit(s->ring);
	if (!lost)
		bp_syslet_fd_release(fd);
	free(s->ring);
	free((void *)s->slotmap);
	s->ring = NULL;
	s->slotmap = NULL;
	s->nslots = 0;
	atomic_store(&s->uring_inflight, 0);
}

/*
 * io_uring_enter on a descriptor that was closed (-EBADF) or now names
 * another file (-EOPNOTSUPP): the program did not do it (its atoms cannot
 * reach the descriptor), the application did.  Chains queued on it can
 * never complete: the context says so from now on.
 */
static int check_enter(bypass_syslet *s, int r)
{
	if (r == -EBADF || r == -EOPNOTSUPP) {
		int none = 0;
		if (atomic_compare_exchange_strong(&s->broken, &none, -EBADFD))
			bp_warn("bypass syslet: the context's io_uring descriptor %d "
				"was closed or replaced outside the library: %s",
				s->ring->ring_fd, strerror(-r));
	}
	return r;
}

static int submit(bypass_syslet *s)
{
	return check_enter(s, io_uring_submit(s->ring));
}

static int slot_alloc(bypass_syslet *s)
{
	for (uint32_t w = 0; w * 64 < s->nslots; w++) {
		uint64_t v = atomic_load_explicit(&s->slotmap[w], memory_order_relaxed);
		while (~v) {
			int b = __builtin_ctzll(~v);
			if (w * 64 + (uint32_t)b >= s->nslots)
				break;
			if (atomic_compare_exchange_weak(&s->slotmap[w], &v, v | 1ull << b))
				return (int)(w * 64 + (uint32_t)b);
		}
	}
	return -1;
}

static void slot_free(bypass_syslet *s, int slot)
{
	atomic_fetch_and(&s->slotmap[slot / 64], ~(1ull << (slot % 64)));
}

/* The direct descriptor an atom's fd argument names, or -1. */
static int slot_of(const struct bp_syslet_req *rq, const struct bypass_syslet_arg *g)
{
	if (g->kind != BYPASS_SYSLET_ARG_RESULT)
		return -1;
	for (uint32_t k = 0; k < rq->nslots; k++)
		if (rq->slot_atom[k] == g->val)
			return rq->slot[k];
	return -1;
}

/*
 * A read or write at atom i on direct descriptor slot, opened in this chain
 * and not read or written before: its file position is 0, so it can name
 * offset 0 rather than the position (which io_uring must then track).  Not
 * with O_APPEND, whose writes go to the end whatever the offset.
 */
static bool fresh(const struct bp_syslet_req *rq, uint32_t i, int slot)
{
	if (slot < 0)
		return false;
	for (uint32_t k = 0; k < rq->nslots; k++)
		if (rq->slot[k] == slot &&
		    (rq->atoms[rq->slot_atom[k]].arg[2].val & O_APPEND))
			return false;
	for (uint32_t j = 0; j < i; j++) {
		uint32_t nr = (uint32_t)rq->atoms[j].nr;
		if ((nr == SYS_read || nr == SYS_write) && slot_of(rq, &rq->atoms[j].arg[0]) == slot)
			return false;
	}
	return true;
}

static void prep(const struct bp_syslet_req *rq, uint32_t i, struct io_uring_sqe *sqe)
{
	const struct bypass_syslet_atom *at = &rq->atoms[i];
	uint64_t a[6];
	for (int k = 0; k < 6; k++)
		a[k] = at->arg[k].val;
	int slot = slot_of(rq, &at->arg[0]);
	int fd = slot >= 0 ? slot : (int)a[0];
	switch (at->nr) {
	case SYS_openat: {
		int own = -1;
		for (uint32_t k = 0; k < rq->nslots; k++)
			if (rq->slot_atom[k] == i)
				own = rq->slot[k];
		if (own >= 0)
			io_uring_prep_openat_direct(sqe, (int)a[0], (const char *)a[1],
						    (int)a[2], (mode_t)a[3], (unsigned)own);
		else
			io_uring_prep_openat(sqe, (int)a[0], (const char *)a[1],
					     (int)a[2], (mode_t)a[3]);
		break;
	}
	case SYS_read: case SYS_pread64:
		io_uring_prep_read(sqe, fd, (void *)a[1], (unsigned)a[2],
				   at->nr == SYS_pread64 ? a[3] : fresh(rq, i, slot) ? 0 : (uint64_t)-1);
		break;
	case SYS_write: case SYS_pwrite64:
		io_uring_prep_write(sqe, fd, (const void *)a[1], (unsigned)a[2],
				    at->nr == SYS_pwrite64 ? a[3] : fresh(rq, i, slot) ? 0 : (uint64_t)-1);
		break;
	case SYS_close:
		if (slot >= 0)
			io_uring_prep_close_direct(sqe, (unsigned)slot);
		else /* -EBADF for one of the contexts' own descriptors */
			io_uring_prep_close(sqe, bp_syslet_fd_reserved(fd) ? -1 : fd);
		slot = -1; /* close_direct takes no IOSQE_FIXED_FILE */
		break;
	case SYS_fsync: case SYS_fdatasync:
		io_uring_prep_fsync(sqe, fd, at->nr == SYS_fdatasync ? IORING_FSYNC_DATASYNC : 0);
		break;
	}
	if (slot >= 0)
		sqe->flags |= IOSQE_FIXED_FILE;
	if (at->flags & BYPASS_SYSLET_ASYNC)
		sqe->flags |= IOSQE_ASYNC;
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)rq | i);
}

int bp_syslet_uring_queue(bypass_syslet *s, const struct bypass_syslet_prog *p,
			  const struct bp_syslet_info *info)
{
	return bp_syslet_uring_queue_at(s, p, info, 0, 0);
}

int bp_syslet_uring_queue_at(bypass_syslet *s, const struct bypass_syslet_prog *p,
			     const struct bp_syslet_info *info, uint32_t base_atom,
			     uint32_t base_steps)
{
	if (!s->ring)
		return -EOPNOTSUPP;
	if (info->chain_open && !s->nslots)
		return -EOPNOTSUPP;
	struct bp_syslet_req *rq = bp_syslet_req_new(s, p, NULL, 0, 0, p->natoms);
	if (!rq)
		return -ENOMEM;
	/* The atom index rides in the low 6 bits of user_data (rq is
	 * 64-byte aligned). */
	for (uint64_t m = info->chain_open; m; m &= m - 1) {
		int slot = slot_alloc(s);
		if (slot < 0) {
			for (uint32_t k = 0; k < rq->nslots; k++)
				slot_free(s, rq->slot[k]);
			bp_syslet_req_free(s, rq);
			return -EAGAIN;
		}
		rq->slot[rq->nslots] = slot;
		rq->slot_atom[rq->nslots++] = (uint8_t)__builtin_ctzll(m);
	}
	rq->pending = (uint16_t)p->natoms;
	rq->base_atom = (uint16_t)base_atom;
	rq->steps = base_steps;
	atomic_fetch_add(&s->uring_inflight, 1);

	pthread_mutex_lock(&s->sqlock);
	int room = bp_link_room(s->ring, p->natoms);
	if (room == 0) {
		int r = submit(s);
		atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
		room = r < 0 ? r : bp_link_room(s->ring, p->natoms);
	}
	if (room <= 0) {
		pthread_mutex_unlock(&s->sqlock);
		atomic_fetch_sub(&s->uring_inflight, 1);
		for (uint32_t k = 0; k < rq->nslots; k++)
			slot_free(s, rq->slot[k]);
		bp_syslet_req_free(s, rq);
		return room < 0 ? room : -EAGAIN;
	}
	struct bp_link l;
	bp_link_begin(&l, s->ring);
	for (uint32_t i = 0; i < p->natoms; i++) {
		uint32_t prevf = i ? rq->atoms[i - 1].flags : 0;
		struct io_uring_sqe *sqe = bp_link_next(
			&l, (prevf & BYPASS_SYSLET_STOP_ON_NEGATIVE) ? IOSQE_IO_LINK
								     : IOSQE_IO_HARDLINK);
		prep(rq, i, sqe);
	}
	/* After prep(), which reads rq: the chain is not submitted before
	 * sqlock is released, and its completion may free rq at once. */
	atomic_store_explicit(&rq->armed, 1, memory_order_release);
	pthread_mutex_unlock(&s->sqlock);
	return 0;
}

int bp_syslet_uring_enter(bypass_syslet *s)
{
	pthread_mutex_lock(&s->sqlock);
	int r = submit(s);
	pthread_mutex_unlock(&s->sqlock);
	atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
	/* A waiter asleep on the futex must move to io_uring: wake it. */
	atomic_fetch_add_explicit(&s->ev.value, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&s->ev.sleepers, memory_order_seq_cst))
		bp_futex_wake(&s->ev.value, INT32_MAX, false);
	return r;
}

void bp_syslet_uring_kick(bypass_syslet *s)
{
	if (!s->ring)
		return;
	pthread_mutex_lock(&s->sqlock);
	struct io_uring_sqe *sqe = io_uring_get_sqe(s->ring);
	if (!sqe) {
		submit(s);
		sqe = io_uring_get_sqe(s->ring);
	}
	if (sqe) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, 0);
		submit(s);
		atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->sqlock);
}

/* Does atom j's descriptor get closed by an atom that ran and succeeded? */
static bool closed_in_chain(const struct bp_syslet_req *rq, uint32_t j)
{
	for (uint32_t i = j + 1; i < rq->natoms; i++)
		if (rq->atoms[i].nr == SYS_close &&
		    rq->atoms[i].arg[0].kind == BYPASS_SYSLET_ARG_RESULT &&
		    rq->atoms[i].arg[0].val == j && rq->res[i] == 0)
			return true;
	return false;
}

/*
 * io_uring's openat tries O_NONBLOCK first and, unlike for -EAGAIN, returns
 * the -ENXIO a FIFO opened for writing without a reader gives: the blocking
 * open would have waited for one.  If nothing after such an atom had an
 * effect (cancelled, or given -EBADF on its empty slot), the worker engine
 * runs the program again from that atom.  Returns the atom, or -1.
 */
static int fifo_redo(const struct bp_syslet_req *rq)
{
	for (uint32_t i = 0; i < rq->natoms; i++) {
		const struct bypass_syslet_atom *at = &rq->atoms[i];
		if (at->nr != SYS_openat || rq->res[i] != -ENXIO ||
		    (at->arg[2].val & O_ACCMODE) == O_RDONLY)
			continue;
		for (uint32_t j = i + 1; j < rq->natoms; j++) {
			const struct bypass_syslet_arg *g = &rq->atoms[j].arg[0];
			bool on_slot = g->kind == BYPASS_SYSLET_ARG_RESULT && g->val == i;
			if (rq->res[j] != -ECANCELED && !(on_slot && rq->res[j] == -EBADF))
				return -1;
		}
		return (int)i;
	}
	return -1;
}

static void finish(bypass_syslet *s, struct bp_syslet_req *rq)
{
	int redo = fifo_redo(rq);
	for (uint32_t i = 0; redo >= 0 && i < (uint32_t)redo; i++)
		if (rq->atoms[i].ret && bp_syslet_store(rq->atoms[i].ret, rq->res[i]))
			redo = -1; /* ends at atom i, below */
	if (redo >= 0) {
		for (uint32_t k = 0; k < rq->nslots; k++)
			if ((int)rq->slot_atom[k] < redo && rq->res[rq->slot_atom[k]] >= 0) {
				int none = -1;
				io_uring_register_files_update(s->ring, (unsigned)rq->slot[k],
							       &none, 1);
			}
		for (uint32_t k = 0; k < rq->nslots; k++)
			slot_free(s, rq->slot[k]);
		rq->nslots = 0;
		rq->pc = (uint16_t)redo;
		rq->steps += (uint32_t)redo;
		rq->max_steps = rq->steps + rq->natoms;
		atomic_fetch_add_explicit(&s->n.atoms_uring, (uint64_t)redo, memory_order_relaxed);
		atomic_fetch_sub(&s->uring_inflight, 1);
		if (bp_syslet_workers_queue(s, rq) == 0)
			return;
		rq->res[redo] = -ENXIO; /* no worker: report what io_uring said */
		struct bypass_syslet_completion c = {
			.tag = rq->tag, .result = -ENXIO,
			.atom = (uint16_t)(rq->base_atom + (uint32_t)redo),
			.engine = BYPASS_SYSLET_ENGINE_URING, .steps = rq->steps + 1,
		};
		bp_syslet_req_free(s, rq);
		bp_syslet_post(s, &c, true, false);
		return;
	}
	/*
	 * A ret that cannot be written ends the program there with -EFAULT, as
	 * in the other engines; but the atoms after it ran already (rets are
	 * checked before a chain is sent, so only memory unmapped while the
	 * chain ran gets here).
	 */
	uint32_t end = rq->natoms - 1, steps = 0;
	bool faulted = false;
	for (uint32_t i = 0; i < rq->natoms; i++) {
		steps++;
		if (rq->atoms[i].ret && bp_syslet_store(rq->atoms[i].ret, rq->res[i])) {
			end = i;
			faulted = true;
			break;
		}
		if (bp_syslet_stops(rq->atoms[i].flags, rq->res[i])) {
			end = i;
			break;
		}
	}
	for (uint32_t k = 0; k < rq->nslots; k++) {
		uint32_t j = rq->slot_atom[k];
		if (rq->res[j] >= 0 && !closed_in_chain(rq, j)) {
			/* The chain stopped before its close: close the slot. */
			int none = -1;
			io_uring_register_files_update(s->ring, (unsigned)rq->slot[k], &none, 1);
			atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
		}
		slot_free(s, rq->slot[k]);
	}
	struct bypass_syslet_completion c = {
		.tag = rq->tag, .result = faulted ? -EFAULT : rq->res[end],
		.atom = (uint16_t)(rq->base_atom + end),
		.engine = BYPASS_SYSLET_ENGINE_URING, .steps = rq->steps + steps,
	};
	bool silent = !faulted && (rq->atoms[end].flags & BYPASS_SYSLET_NO_COMPLETE);
	atomic_fetch_add_explicit(&s->n.programs_uring, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->n.atoms_uring, steps, memory_order_relaxed);
	bp_syslet_req_free(s, rq);
	atomic_fetch_sub(&s->uring_inflight, 1);
	bp_syslet_post(s, &c, !silent, false);
}

/* Under cqlock: take every CQE there is. */
static int collect(bypass_syslet *s)
{
	int total = 0;
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		struct bp_syslet_req *done[64];
		unsigned ndone = 0;
		io_uring_for_each_cqe(s->ring, head, cqe) {
			if (ndone == BP_ARRAY_SIZE(done))
				break;
			n++;
			uint64_t ud = io_uring_cqe_get_data64(cqe);
			if (!ud)
				continue; /* a kick */
			struct bp_syslet_req *rq =
				(struct bp_syslet_req *)(uintptr_t)(ud & ~(uint64_t)63);
			(void)atomic_load_explicit(&rq->armed, memory_order_acquire);
			rq->res[ud & 63] = cqe->res;
			if (--rq->pending == 0)
				done[ndone++] = rq;
		}
		io_uring_cq_advance(s->ring, n);
		/* No kick: the only thread that may sleep in io_uring holds
		 * cqlock, and that is us. */
		for (unsigned i = 0; i < ndone; i++)
			finish(s, done[i]);
		total += (int)ndone;
		if (ndone < BP_ARRAY_SIZE(done))
			return total;
	}
}

int bp_syslet_uring_drain(bypass_syslet *s)
{
	if (!s->ring || pthread_mutex_trylock(&s->cqlock))
		return 0;
	int r = collect(s);
	pthread_mutex_unlock(&s->cqlock);
	return r;
}

void bp_syslet_uring_sleep(bypass_syslet *s, unsigned min, int64_t timeout_ns)
{
	if (!s->ring)
		return;
	pthread_mutex_lock(&s->cqlock);
	atomic_fetch_add_explicit(&s->uring_waiter, 1, memory_order_seq_cst);
	if (bp_syslet_avail(s) < min &&
	    atomic_load_explicit(&s->uring_inflight, memory_order_seq_cst)) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts, *tp = NULL;
		if (timeout_ns >= 0) {
			ts.tv_sec = timeout_ns / 1000000000;
			ts.tv_nsec = timeout_ns % 1000000000;
			tp = &ts;
		}
		if (io_uring_cq_ready(s->ring) == 0) {
			check_enter(s, io_uring_wait_cqe_timeout(s->ring, &cqe, tp));
			atomic_fetch_add_explicit(&s->n.syscalls, 1, memory_order_relaxed);
		}
		collect(s);
	}
	atomic_fetch_sub_explicit(&s->uring_waiter, 1, memory_order_seq_cst);
	pthread_mutex_unlock(&s->cqlock);
}
