/* SPDX-License-Identifier: MIT */
/*
 * The public data path: loans, sends, receives, releases, calls, replies.
 *
 * Every entry point that touches the arena runs inside a recovery point
 * covering it: if the arena's memory vanishes (a peer truncates a memfd that
 * was not sealed, a mapping is replaced), the SIGBUS/SIGSEGV becomes -EFAULT
 * and the connection is marked dead instead of killing the process.  With
 * BYPASS_IPC_PKEY, the entry opens this thread's write access to the arena
 * and the exit closes it again (kept open while a loan is outstanding).
 */
#include "ipc/ipc_internal.h"

#include <string.h>

static int fault(bypass_ipc_conn *c, const struct bp_recover *rp)
{
	bp_warn("bypass: ipc: %s at %p in the shared arena: connection dead",
		rp->sig == SIGBUS ? "SIGBUS" : "SIGSEGV", rp->addr);
	c->broken = -EFAULT;
	c->loan = NULL;
	if (c->pkey)
		bp_ipc_pkey_after_fault();
	return -EFAULT;
}

static inline void enter(bypass_ipc_conn *c)
{
	if (bp_unlikely(c->pkey))
		bp_ipc_pkey_open();
}

static inline void leave(bypass_ipc_conn *c)
{
	if (bp_unlikely(c->pkey) && !c->loan)
		bp_ipc_pkey_close();
}

/*
 * GUARDED(c, expr): run expr (an int expression) inside a recovery point
 * over c's arena, with the protection key opened.
 */
#define GUARDED(c, expr)                                                      \
	({                                                                    \
		struct bp_recover rp_;                                        \
		int r_;                                                       \
		if (BP_RECOVER_TRY(&rp_, (void *)(c)->lo, (c)->len)) {        \
			enter(c);                                             \
			r_ = (expr);                                          \
			leave(c);                                             \
			bp_recover_pop(&rp_);                                 \
		} else {                                                      \
			r_ = fault((c), &rp_);                                \
		}                                                             \
		r_;                                                           \
	})

/* ------------------------------------------------------------------- send */

static int send_kind(bypass_ipc_conn *c, const void *buf, size_t len, unsigned kind,
		     uint32_t id, int64_t timeout_ns)
{
	if (c->loan && buf == c->loan) {
		if (len > c->loan_max)
			return -EINVAL;
		int r = bp_ipc_tx_check(c);
		if (r)
			return r;
		return bp_ipc_publish(c, len, kind, id);
	}
	if (!buf && len)
		return -EINVAL;
	void *p;
	int r = bp_ipc_produce(c, len, timeout_ns, &p);
	if (r)
		return r;
	if (len)
		memcpy(p, buf, len);
	return bp_ipc_publish(c, len, kind, id);
}

int bypass_ipc_loan(bypass_ipc_conn *c, size_t size, void **buf, int64_t timeout_ns)
{
	int r = ipc_usable(c);
	if (r)
		return r;
	if (!buf || timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	return GUARDED(c, bp_ipc_produce(c, size, timeout_ns, buf));
}

int bypass_ipc_loan_cancel(bypass_ipc_conn *c, void *buf)
{
	int r = ipc_usable(c);
	if (r)
		return r;
	if (!buf || buf != c->loan)
		return -EINVAL;
	bp_ipc_unloan(c);
	if (c->pkey)
		bp_ipc_pkey_close();
	return 0;
}

int bypass_ipc_send(bypass_ipc_conn *c, const void *buf, size_t len, int64_t timeout_ns)
{
	int r = ipc_usable(c);
	if (r)
		return r;
	if (timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	return GUARDED(c, send_kind(c, buf, len, IPC_K_MSG, 0, timeout_ns));
}

/* ---------------------------------------------------------------- receive */

/* Move rd to end; a jump over the detached response is a corruption. */
static int advance_rd(bypass_ipc_conn *c, uint64_t end)
{
	if (c->det && c->rd < c->det_pos && end > c->det_pos)
		return -EPROTO;
	c->rd = end;
	return 0;
}

static int do_recv(bypass_ipc_conn *c, struct bypass_ipc_msg *m, int64_t timeout_ns)
{
	if (c->held)
		return -EBUSY;
	if (c->armed) {
		c->armed = false;
		atomic_store(&c->rx.ctl->rx_armed, 0);
		bp_ipc_drain_socket(c);
	}
	uint64_t deadline = bp_deadline(timeout_ns);
	unsigned skipped = 0;
	for (;;) {
		if (c->det && c->rd == c->det_pos) {
			c->rd = c->det_end;
			bp_ipc_update_tail(c);
			continue;
		}
		unsigned kind;
		uint32_t len, id;
		uint64_t end;
		int r = bp_ipc_peek(c, c->rd, &kind, &len, &id, &end);
		if (r < 0)
			return ipc_set_broken(c, r);
		if (r == 0) {
			r = bp_ipc_wait_record(c, c->rd, deadline);
			if (r == 1)
				continue;
			if (r == 0)
				return deadline ? -ETIMEDOUT : -EAGAIN;
			return r;
		}
		uint64_t pos = c->rd;
		if ((r = advance_rd(c, end)))
			return ipc_set_broken(c, r);
		if (kind == IPC_K_PAD || kind == IPC_K_RESP) {
			/* A pad, or the response to a call that gave up. */
			bp_ipc_update_tail(c);
			/* A peer that keeps such records coming must not keep
			 * us here past the timeout. */
			if (!(++skipped & 63) && bp_deadline_passed(deadline))
				return deadline ? -ETIMEDOUT : -EAGAIN;
			continue;
		}
		c->held = true;
		c->held_pos = pos;
		c->held_end = end;
		m->data = (unsigned char *)c->rx.data + (pos & c->rx.mask) + IPC_HDR;
		m->len = len;
		m->flags = kind == IPC_K_REQ ? BYPASS_IPC_MSG_CALL : 0;
		m->priv_id = id;
		m->priv_pos = pos;
		m->priv_end = end;
		return 0;
	}
}

int bypass_ipc_recv(bypass_ipc_conn *c, struct bypass_ipc_msg *m, int64_t timeout_ns)
{
	int r = ipc_usable(c);
	if (r)
		return r;
	if (!m || timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	return GUARDED(c, do_recv(c, m, timeout_ns));
}

static int do_release(bypass_ipc_conn *c, struct bypass_ipc_msg *m)
{
	if (c->held && m->priv_pos == c->held_pos && m->priv_end == c->held_end) {
		c->held = false;
	} else if (c->det && !c->det_released && m->priv_pos == c->det_pos &&
		   m->priv_end == c->det_end) {
		c->det_released = true;
	} else {
		return -EINVAL;
	}
	m->data = NULL;
	m->len = 0;
	bp_ipc_update_tail(c);
	return 0;
}

int bypass_ipc_release(bypass_ipc_conn *c, struct bypass_ipc_msg *m)
{
	if (!c || !m)
		return -EINVAL;
	int r = ipc_usable(c);
	if (r && r != -EPROTO && r != -EFAULT)
		return r;
	if (r) {
		/* The connection is dead: just forget the message. */
		if (c->held && m->priv_pos == c->held_pos)
			c->held = false;
		return 0;
	}
	return GUARDED(c, do_release(c, m));
}

/* ------------------------------------------------------------------ calls */

static int do_call(bypass_ipc_conn *c, const void *req, size_t len,
		   struct bypass_ipc_msg *resp, int64_t timeout_ns)
{
	if (c->det)
		return -EBUSY; /* the previous response is still held */
	uint64_t deadline = bp_deadline(timeout_ns);
	uint32_t id = ++c->call_id;
	if (!id)
		id = ++c->call_id;
	int r = send_kind(c, req, len, IPC_K_REQ, id, timeout_ns);
	if (r)
		return r;
	/* Look for our response past whatever else the server sent. */
	uint64_t scan = c->rd;
	for (;;) {
		unsigned kind;
		uint32_t rlen, rid;
		uint64_t end;
		r = bp_ipc_peek(c, scan, &kind, &rlen, &rid, &end);
		if (r < 0)
			return ipc_set_broken(c, r);
		if (r == 0) {
			/* never 0: bypass_ipc_call refuses a zero timeout */
			r = bp_ipc_wait_record(c, scan, deadline);
			if (r == 1)
				continue;
			if (r == 0)
				return -ETIMEDOUT;
			return r;
		}
		if (kind != IPC_K_RESP || rid != id) {
			/*
			 * What recv would skip (a pad, a response to a call
			 * that gave up) needs no one: at rd, move past it and
			 * release its room.  Else a pad before a response
			 * (the ring's end) would hold rd, and the tail, there
			 * for ever: the peer would find no room a lap later.
			 * Messages and requests stay queued for recv.
			 */
			if (scan == c->rd && (kind == IPC_K_PAD || kind == IPC_K_RESP)) {
				c->rd = end;
				bp_ipc_update_tail(c);
			}
			scan = end;
			continue;
		}
		c->det = true;
		c->det_released = false;
		c->det_pos = scan;
		c->det_end = end;
		if (scan == c->rd)
			c->rd = end;
		resp->data = (unsigned char *)c->rx.data + (scan & c->rx.mask) + IPC_HDR;
		resp->len = rlen;
		resp->flags = 0;
		resp->priv_id = rid;
		resp->priv_pos = scan;
		resp->priv_end = end;
		return 0;
	}
}

int bypass_ipc_call(bypass_ipc_conn *c, const void *req, size_t len,
		    struct bypass_ipc_msg *resp, int64_t timeout_ns)
{
	int r = ipc_usable(c);
	if (r)
		return r;
	if (!resp || timeout_ns < BYPASS_FOREVER || timeout_ns == 0)
		return -EINVAL;
	return GUARDED(c, do_call(c, req, len, resp, timeout_ns));
}

int bypass_ipc_reply(bypass_ipc_conn *c, const struct bypass_ipc_msg *req,
		     const void *buf, size_t len, int64_t timeout_ns)
{
	int r = ipc_usable(c);
	if (r)
		return r;
	if (!req || !(req->flags & BYPASS_IPC_MSG_CALL) || timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	return GUARDED(c, send_kind(c, buf, len, IPC_K_RESP, req->priv_id, timeout_ns));
}

/* ------------------------------------------------------------------ epoll */

static int poll_ready(bypass_ipc_conn *c)
{
	if (bp_ipc_rx_ready(c))
		return 1;
	if (atomic_load_explicit(&c->rx.ctl->tx_closed, memory_order_relaxed)) {
		c->peer_gone = true; /* it closed: report the hang-up now */
		return 1;
	}
	return 0;
}

static int do_arm(bypass_ipc_conn *c)
{
	c->armed = true;
	atomic_store_explicit(&c->rx.ctl->rx_armed, 1, memory_order_seq_cst);
	if (c->peer_gone || poll_ready(c)) {
		atomic_store(&c->rx.ctl->rx_armed, 0);
		return 1;
	}
	return 0;
}

int bypass_ipc_arm(bypass_ipc_conn *c)
{
	int r = ipc_usable(c);
	if (r)
		return r;
	return GUARDED(c, do_arm(c));
}

/* For epoll.c: ready (1), not (0), within a recovery point. */
int bp_ipc_poll_ready(bypass_ipc_conn *c, bool arm)
{
	if (c->broken || c->peer_gone)
		return 1;
	if (c->fork_gen != bp_fork_gen_fast())
		return 0;
	return GUARDED(c, arm ? do_arm(c) : poll_ready(c));
}

int bp_ipc_poll_peer_elsewhere(bypass_ipc_conn *c)
{
	if (c->broken || c->fork_gen != bp_fork_gen_fast())
		return 0;
	return GUARDED(c, !bp_ipc_peer_on_my_cpu(c));
}

int bp_ipc_disarm(bypass_ipc_conn *c)
{
	if (!c->armed || c->broken || c->fork_gen != bp_fork_gen_fast())
		return 0;
	c->armed = false;
	return GUARDED(c, (atomic_store(&c->rx.ctl->rx_armed, 0), 0));
}
