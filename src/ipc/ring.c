/* SPDX-License-Identifier: MIT */
/*
 * The rings: producing, consuming and waiting (see ipc_internal.h for the
 * layout and the rules about trusting the peer).
 *
 * Sleeping without lost wake-ups, in both directions (Dekker, every
 * operation sequentially consistent):
 *   sleeper: x = wake word; sleepers++; recheck the condition; futex_wait(x)
 *   waker:   make the condition true; if (sleepers) { wake word++; futex_wake }
 * Either the waker sees the sleeper, or the sleeper's recheck sees the
 * condition.  A waker that finds nobody asleep makes no system call.
 */
#include "ipc/ipc_internal.h"

#include <sched.h>
#include <string.h>
#include <sys/socket.h>

#define SLICE_NS 10000000ull  /* a sleeper checks the peer this often */
#define CHECK_NS 1000000ull   /* a busy side checks the peer this often */

static inline uint64_t align_rec(uint64_t len)
{
	return (IPC_HDR + len + IPC_ALIGN - 1) & ~(uint64_t)(IPC_ALIGN - 1);
}

static inline struct ipc_rec *rec_at(const struct ipc_ring *r, uint64_t pos)
{
	return (struct ipc_rec *)(r->data + (pos & r->mask));
}

/* A rate-limited liveness check for sides that are busy (no sleep slices). */
enum { TX, RX };

static int lazy_check(bypass_ipc_conn *c, int side)
{
	if (c->peer_gone)
		return -ECONNRESET;
	if (bp_likely(++c->ops[side] & 255)) /* read the clock every 256 calls */
		return 0;
	uint64_t now = bypass_rdtscp(NULL);
	if (bp_likely(now < c->next_check[side]))
		return 0;
	c->next_check[side] = now + bp_ns_to_cycles(CHECK_NS);
	if (side == RX && c->armed)
		bp_ipc_drain_socket(c);
	return bp_ipc_peer_check(c);
}

/* ---------------------------------------------------------------- producer */

int bp_ipc_tx_check(bypass_ipc_conn *c)
{
	if (c->peer_gone ||
	    atomic_load_explicit(&c->tx.ctl->rx_closed, memory_order_relaxed))
		return -EPIPE;
	return 0;
}

/* 1 if need bytes (plus the spare line) are free, 0 if not, -EPROTO. */
static int tx_room(bypass_ipc_conn *c, uint64_t need)
{
	if (c->tx.cap - (c->head - c->tail_seen) >= need + IPC_SPARE)
		return 1;
	uint64_t t = atomic_load_explicit(&c->tx.ctl->tail, memory_order_seq_cst);
	/* The consumer's tail only moves forward, never past what we wrote. */
	if (t < c->tail_seen || t > c->head || (t & (IPC_ALIGN - 1))) {
		bp_warn("bypass: ipc: peer wrote an impossible tail %#llx (head %#llx)",
			(unsigned long long)t, (unsigned long long)c->head);
		return -EPROTO;
	}
	c->tail_seen = t;
	return c->tx.cap - (c->head - t) >= need + IPC_SPARE;
}

static int wait_room(bypass_ipc_conn *c, uint64_t need, uint64_t deadline)
{
	struct ipc_ctl *ctl = c->tx.ctl;
	int r;
	if (c->mode != BYPASS_WAIT_SLEEP) {
		uint64_t c0 = bypass_rdtscp(NULL);
		for (;;) {
			for (int i = 0; i < 16; i++) {
				if ((r = tx_room(c, need)))
					return r < 0 ? r : 0;
				bp_cpu_relax();
			}
			if ((r = bp_ipc_tx_check(c)) || (r = lazy_check(c, TX) ? -EPIPE : 0))
				return r;
			uint64_t now = bypass_rdtscp(NULL);
			if (c->mode == BYPASS_WAIT_ADAPTIVE && now - c0 >= c->spin_cycles)
				break;
			if (bp_deadline_passed(deadline))
				return -ETIMEDOUT;
		}
	}
	uint64_t last_check = bypass_now_ns();
	for (;;) {
		uint32_t v = atomic_load_explicit(&ctl->tx_wake, memory_order_seq_cst);
		atomic_fetch_add_explicit(&ctl->tx_sleepers, 1, memory_order_seq_cst);
		r = tx_room(c, need);
		uint64_t now = bypass_now_ns();
		if (!r && now < deadline && !bp_ipc_tx_check(c)) {
			uint64_t nap = deadline - now;
			if (nap > SLICE_NS)
				nap = SLICE_NS;
			bp_futex_wait(&ctl->tx_wake, v, (int64_t)nap, true);
		}
		atomic_fetch_sub_explicit(&ctl->tx_sleepers, 1, memory_order_seq_cst);
		if (r || (r = tx_room(c, need)))
			return r < 0 ? r : 0;
		if ((r = bp_ipc_tx_check(c)))
			return r;
		now = bypass_now_ns();
		if (now - last_check >= SLICE_NS || now >= deadline) {
			last_check = now;
			if (bp_ipc_peer_check(c))
				return -EPIPE;
		}
		if (now >= deadline)
			return -ETIMEDOUT;
	}
}

int bp_ipc_produce(bypass_ipc_conn *c, size_t size, int64_t timeout_ns, void **payload)
{
	if (c->loan)
		return -EBUSY;
	if (size > c->max_msg)
		return -EMSGSIZE;
	int r = bp_ipc_tx_check(c);
	if (r || (r = lazy_check(c, TX) ? -EPIPE : 0))
		return r;
	uint64_t cap = c->tx.cap;
	uint64_t rsize = align_rec(size);
	uint64_t off = c->head & c->tx.mask;
	uint64_t pad = rsize <= cap - off ? 0 : cap - off;
	r = tx_room(c, pad + rsize);
	if (!r) {
		if (timeout_ns == 0)
			return -EAGAIN;
		r = wait_room(c, pad + rsize, bp_deadline(timeout_ns));
		if (r == 0)
			r = 1;
	}
	if (r < 0) {
		if (r == -EPROTO)
			ipc_set_broken(c, r);
		return r;
	}
	if (pad) {
		/* Clear the stamp at the ring's start, then publish the pad. */
		struct ipc_rec *first = (struct ipc_rec *)c->tx.data;
		struct ipc_rec *p = rec_at(&c->tx, c->head);
		atomic_store_explicit(&first->stamp, 0, memory_order_relaxed);
		p->len = 0;
		p->id = 0;
		atomic_store_explicit(&p->stamp, c->head | IPC_K_PAD, memory_order_release);
		c->head += pad;
	}
	c->loan_pos = c->head;
	c->loan_max = size;
	c->loan = c->tx.data + (c->head & c->tx.mask) + IPC_HDR;
	*payload = c->loan;
	return 0;
}

int bp_ipc_publish(bypass_ipc_conn *c, size_t len, unsigned kind, uint32_t id)
{
	struct ipc_ctl *ctl = c->tx.ctl;
	uint64_t pos = c->loan_pos, end = pos + align_rec(len);
	struct ipc_rec *rec = rec_at(&c->tx, pos);
	/* The next record's stamp first: a stale pattern there is never valid. */
	atomic_store_explicit(&rec_at(&c->tx, end)->stamp, 0, memory_order_relaxed);
	rec->len = (uint32_t)len;
	rec->id = id;
	atomic_exchange_explicit(&rec->stamp, pos | kind, memory_order_seq_cst);
	c->head = end;
	c->loan = NULL;
	/*
	 * The next publish clears the stamp one line past its record: take
	 * that line for writing now, after this record is visible.  The
	 * consumer read it a lap ago, and invalidating its copy then would
	 * hold up the next record (TSO commits the clear before the stamp):
	 * a second cross-core transaction on the critical path of every
	 * one-line message.  PREFETCHW is a hint (a NOP where absent) and
	 * never faults, so the address needs no room check.
	 */
	__asm__ __volatile__("prefetchw (%0)" : : "r"(rec_at(&c->tx, end + IPC_ALIGN)));
	/* Where we run, so that a receiver on the same CPU does not spin
	 * (glibc reads it from rseq: no system call). */
	int cpu = sched_getcpu();
	if (bp_unlikely(cpu != c->tx_cpu)) {
		c->tx_cpu = cpu;
		atomic_store_explicit(&ctl->tx_cpu, cpu, memory_order_relaxed);
	}
	if (atomic_load_explicit(&ctl->rx_sleepers, memory_order_seq_cst)) {
		atomic_fetch_add_explicit(&ctl->rx_wake, 1, memory_order_seq_cst);
		bp_futex_wake(&ctl->rx_wake, 1, true);
	}
	/*
	 * A consumer that has already released this record (it was quick:
	 * we are still here) armed for a later one: leave that arming for
	 * the record it waits for, else the byte sent now would wake it for
	 * nothing and use its arming up.  It stored its tail before it armed
	 * (both sequentially consistent), so seeing the arming we see the
	 * tail.  A tail the peer forged only costs it its own wake-ups.
	 */
	if (atomic_load_explicit(&ctl->rx_armed, memory_order_seq_cst) &&
	    atomic_load_explicit(&ctl->tail, memory_order_seq_cst) - end > c->tx.cap &&
	    atomic_exchange(&ctl->rx_armed, 0)) {
		/* The peer sleeps in epoll: one byte makes its socket readable.
		 * Non-blocking: a full socket is readable already. */
		ssize_t n = bp_sys_send(c->sock, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		(void)n;
	}
	return 0;
}

void bp_ipc_unloan(bypass_ipc_conn *c)
{
	c->loan = NULL;
}

/* ---------------------------------------------------------------- consumer */

int bp_ipc_peek(bypass_ipc_conn *c, uint64_t pos, unsigned *kind, uint32_t *len,
	     uint32_t *id, uint64_t *end)
{
	const struct ipc_ring *rg = &c->rx;
	uint64_t off = pos & rg->mask;
	struct ipc_rec *rec = (struct ipc_rec *)(rg->data + off);
	uint64_t s = atomic_load_explicit(&rec->stamp, memory_order_acquire);
	unsigned k = (unsigned)(s & IPC_KIND_MASK);
	uint64_t at = s & ~(uint64_t)IPC_KIND_MASK;
	if (at != pos || !k) {
		/* A record of a later lap here: the producer wrote past the room
		 * we released (it never may), overwriting what we have not read. */
		if (k && at > pos && !((at - pos) & rg->mask)) {
			bp_debug("bypass: ipc: record of a later lap %#llx at %#llx",
				 (unsigned long long)at, (unsigned long long)pos);
			return -EPROTO;
		}
		return 0;
	}
	uint64_t e;
	if (k == IPC_K_PAD) {
		if (off == 0)
			return -EPROTO;
		e = pos + (rg->cap - off);
		if (e - c->tail > rg->cap)
			return -EPROTO;
		*kind = k;
		*len = 0;
		*id = 0;
		*end = e;
		return 1;
	}
	if (k < IPC_K_MSG || k > IPC_K_RESP) {
		bp_debug("bypass: ipc: bad record kind %u at %#llx", k, (unsigned long long)pos);
		return -EPROTO;
	}
	/* Read each field once: the peer may change them under us. */
	uint32_t l = *(volatile uint32_t *)&rec->len;
	uint32_t i = *(volatile uint32_t *)&rec->id;
	if (l > c->max_msg || IPC_HDR + (uint64_t)l > rg->cap - off) {
		bp_debug("bypass: ipc: bad record at %#llx: len %u (max %llu, room %llu)",
			 (unsigned long long)pos, l, (unsigned long long)c->max_msg,
			 (unsigned long long)(rg->cap - off));
		return -EPROTO;
	}
	/* The producer never writes past the room we released. */
	e = pos + align_rec(l);
	if (e - c->tail > rg->cap) {
		bp_debug("bypass: ipc: record at %#llx ends past the released room (tail %#llx)",
			 (unsigned long long)pos, (unsigned long long)c->tail);
		return -EPROTO;
	}
	*kind = k;
	*len = l;
	*id = i;
	*end = e;
	return 1;
}

static inline bool stamp_here(const struct ipc_ring *rg, uint64_t pos)
{
	const struct ipc_rec *rec = (const struct ipc_rec *)(rg->data + (pos & rg->mask));
	uint64_t s = atomic_load_explicit(&rec->stamp, memory_order_seq_cst);
	return (s & ~(uint64_t)IPC_KIND_MASK) == pos && (s & IPC_KIND_MASK);
}

static int rx_closed_by_peer(bypass_ipc_conn *c)
{
	if (c->peer_gone ||
	    atomic_load_explicit(&c->rx.ctl->tx_closed, memory_order_relaxed))
		return -ECONNRESET;
	return 0;
}

/*
 * Spinning for a peer that last ran on our own CPU only burns the time it
 * needs to run: sleep at once instead.  (The peer writes the hint; a wrong
 * one costs only a spin or a sleep.)
 */
bool bp_ipc_peer_on_my_cpu(bypass_ipc_conn *c)
{
	int peer = atomic_load_explicit(&c->rx.ctl->tx_cpu, memory_order_relaxed);
	return peer >= 0 && peer == sched_getcpu();
}

bool bp_ipc_rx_ready(bypass_ipc_conn *c)
{
	uint64_t pos = c->rd;
	if (c->det && pos == c->det_pos)
		pos = c->det_end;
	return stamp_here(&c->rx, pos);
}

/* 1 when a record is at pos, 0 when the deadline passed, or -errno. */
int bp_ipc_wait_record(bypass_ipc_conn *c, uint64_t pos, uint64_t deadline)
{
	struct ipc_ctl *ctl = c->rx.ctl;
	const struct ipc_ring *rg = &c->rx;
	int r;
	if (stamp_here(rg, pos))
		return 1;
	if (!deadline) {
		if ((r = rx_closed_by_peer(c)) || (r = lazy_check(c, RX)))
			return stamp_here(rg, pos) ? 1 : r;
		return 0;
	}
	if (c->mode == BYPASS_WAIT_SPIN ||
	    (c->mode == BYPASS_WAIT_ADAPTIVE && !bp_ipc_peer_on_my_cpu(c))) {
		uint64_t c0 = bypass_rdtscp(NULL);
		for (;;) {
			for (int i = 0; i < 64; i++) {
				if (stamp_here(rg, pos))
					return 1;
				bp_cpu_relax();
			}
			if ((r = rx_closed_by_peer(c)) || (r = lazy_check(c, RX)))
				return stamp_here(rg, pos) ? 1 : r;
			uint64_t now = bypass_rdtscp(NULL);
			if (c->mode == BYPASS_WAIT_ADAPTIVE && now - c0 >= c->spin_cycles)
				break;
			if (bp_deadline_passed(deadline))
				return 0;
		}
	}
	uint64_t last_check = bypass_now_ns();
	for (;;) {
		uint32_t v = atomic_load_explicit(&ctl->rx_wake, memory_order_seq_cst);
		atomic_fetch_add_explicit(&ctl->rx_sleepers, 1, memory_order_seq_cst);
		bool ready = stamp_here(rg, pos);
		uint64_t now = bypass_now_ns();
		if (!ready && !rx_closed_by_peer(c) && now < deadline) {
			uint64_t nap = deadline - now;
			if (nap > SLICE_NS)
				nap = SLICE_NS;
			bp_futex_wait(&ctl->rx_wake, v, (int64_t)nap, true);
		}
		atomic_fetch_sub_explicit(&ctl->rx_sleepers, 1, memory_order_seq_cst);
		if (ready || stamp_here(rg, pos))
			return 1;
		if ((r = rx_closed_by_peer(c)))
			return r;
		now = bypass_now_ns();
		if (now - last_check >= SLICE_NS || now >= deadline) {
			last_check = now;
			if ((r = bp_ipc_peer_check(c)))
				return stamp_here(rg, pos) ? 1 : r;
		}
		if (now >= deadline)
			return 0;
	}
}

void bp_ipc_update_tail(bypass_ipc_conn *c)
{
	uint64_t t = c->rd;
	if (c->held && c->held_pos < t)
		t = c->held_pos;
	if (c->det) {
		/* A released response needs no more care: recv skips responses. */
		if (c->det_released)
			c->det = false;
		else if (c->det_pos < t)
			t = c->det_pos;
	}
	if (t == c->tail)
		return;
	c->tail = t;
	struct ipc_ctl *ctl = c->rx.ctl;
	atomic_exchange_explicit(&ctl->tail, t, memory_order_seq_cst);
	if (atomic_load_explicit(&ctl->tx_sleepers, memory_order_seq_cst)) {
		atomic_fetch_add_explicit(&ctl->tx_wake, 1, memory_order_seq_cst);
		bp_futex_wake(&ctl->tx_wake, 1, true);
	}
}
