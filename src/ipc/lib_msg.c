/* SPDX-License-Identifier: MIT */
/*
 * Library mode's message mode, the client: the same calls through a
 * connection's rings to the server's threads (bypass_ipc_lib_serve), for a
 * peer not trusted with the state, or where library mode is refused.
 *
 * Calls on one handle take turns under the handle's lock, a word holding
 * the calling thread's id.  A thread inside a call (this handle's or any
 * other, or a library-mode handler) that calls again, from a signal
 * handler or from a handler, gets -EDEADLK instead of waiting for itself.
 * A call the thread left by siglongjmp (its frame gone when it calls next:
 * bp_ipc_lib_frame_gone) is repaired then: its recovery points unlinked, the handle's lock
 * released, and the connection, whose state the jump cut anywhere
 * (between a record's stamp and the head that follows it, say), replaced
 * by a new one at the next call.  The caller's buffers are copied inside
 * recovery points: a wild request or a read-only response is -EFAULT, and
 * a request longer than the ring allows is -EMSGSIZE (its header would
 * otherwise overflow the length).
 */
#include "ipc/lib.h"

#include <stdlib.h>
#include <string.h>

/* The handle this thread is calling on, and the call's frame. */
static __thread struct bypass_ipc_lib *msg_h __attribute__((tls_model("initial-exec")));
static __thread uintptr_t msg_frame __attribute__((tls_model("initial-exec")));
static __thread struct bp_recover *msg_outer __attribute__((tls_model("initial-exec")));

static int connect_now(struct bypass_ipc_lib *h)
{
	int r = bypass_ipc_connect(h->name, &h->mopts, &h->conn);
	if (r) {
		h->conn = NULL;
		return r;
	}
	size_t max = 0;
	bypass_ipc_max_msg(h->conn, &max);
	h->max_req = max > sizeof(struct lib_wire) ? max - sizeof(struct lib_wire) : 0;
	return 0;
}

int bp_ipc_lib_msg_open(struct bypass_ipc_lib *h, const char *name,
			const struct bypass_ipc_lib_opts *o)
{
	struct bypass_ipc_opts mo = { 0 };
	if (o && o->msg) {
		mo = *o->msg;
	} else if (o) {
		mo.allow_uids = o->allow_uids;
		mo.nallow = o->nallow;
		mo.flags = o->flags & BYPASS_IPC_ANY_UID;
		mo.handshake_timeout_ns = o->handshake_timeout_ns;
	}
	/* Kept for a reconnection: the caller's arrays may be gone by then. */
	if (!(h->name = strdup(name)))
		return -ENOMEM;
	if (mo.nallow) {
		if (!mo.allow_uids)
			return -EINVAL;
		if (!(h->allow = malloc(mo.nallow * sizeof(uid_t))))
			return -ENOMEM;
		memcpy(h->allow, mo.allow_uids, mo.nallow * sizeof(uid_t));
		mo.allow_uids = h->allow;
	}
	h->mopts = mo;
	int r = connect_now(h);
	if (r)
		return r;
	h->call_timeout = o && o->call_timeout_ns ? o->call_timeout_ns : BYPASS_FOREVER;
	h->fork_gen = bp_fork_gen();
	h->mode = BYPASS_IPC_LIB_MODE_MESSAGE;
	return 0;
}

void bp_ipc_lib_msg_close(struct bypass_ipc_lib *h)
{
	if (h->conn)
		bypass_ipc_close(h->conn);
	h->conn = NULL;
	free(h->name);
	free(h->allow);
}

/* ------------------------------------------------------- the handle's lock */

static int conn_take(struct bypass_ipc_lib *h)
{
	uint32_t me = (uint32_t)bp_tid() & LIB_LK_ID;
	uint32_t v = 0;
	if (bp_likely(atomic_compare_exchange_strong(&h->conn_lock, &v, me)))
		return 0;
	uint64_t deadline = bp_deadline(h->call_timeout);
	for (;;) {
		v = atomic_load(&h->conn_lock);
		if (!(v & LIB_LK_ID)) {
			if (atomic_compare_exchange_weak(&h->conn_lock, &v, me | LIB_LK_WAITERS))
				return 0;
			continue;
		}
		if (!(v & LIB_LK_WAITERS)) {
			uint32_t nv = v | LIB_LK_WAITERS;
			if (!atomic_compare_exchange_weak(&h->conn_lock, &v, nv))
				continue;
			v = nv;
		}
		int64_t nap = -1;
		if (deadline != UINT64_MAX) {
			uint64_t now = bypass_now_ns();
			if (now >= deadline)
				return -ETIMEDOUT;
			nap = (int64_t)(deadline - now);
		}
		bp_futex_wait(&h->conn_lock, v, nap, false);
	}
}

static void conn_give(struct bypass_ipc_lib *h)
{
	uint32_t v = atomic_exchange(&h->conn_lock, 0);
	if (v & LIB_LK_WAITERS)
		bp_futex_wake(&h->conn_lock, 1, false);
}

/*
 * This thread is inside a message-mode call already: from a signal handler
 * or a handler (-EDEADLK), or it left one by siglongjmp (its frame is gone
 * from here): repair that one and go on (0).
 */
static __attribute__((noinline, cold)) int msg_reentered(uintptr_t here)
{
	if (!bp_ipc_lib_frame_gone(msg_frame, here))
		return -EDEADLK;
	struct bypass_ipc_lib *old = msg_h;
	msg_h = NULL;
	bp_ipc_lib_drop_dead_records(here, msg_outer);
	if (bp_ipc_lib_core_hold(&old->lc)) {
		uint32_t v = atomic_load(&old->conn_lock);
		if ((v & LIB_LK_ID) == ((uint32_t)bp_tid() & LIB_LK_ID)) {
			old->reconnect = true;
			if (old->conn && old->conn->pkey)
				bp_ipc_pkey_close(); /* a loan may have left it open */
			conn_give(old);
		}
		bp_ipc_lib_core_release();
		bp_warn("bypass: ipc: a message-mode call was left by siglongjmp: its "
			"connection is replaced at the next call");
	}
	return 0;
}

/* ------------------------------------------------------------------ calls */

/* Copy n bytes, a fault on either side being -EFAULT (the caller's
 * buffers may be wild; the ring may vanish). */
static int copy_checked(void *dst, const void *src, size_t n)
{
	struct bp_recover rp;
	if (BP_RECOVER_TRY(&rp, NULL, 0)) {
		memcpy(dst, src, n);
		bp_recover_pop(&rp);
		return 0;
	}
	return -EFAULT;
}

static int call_locked(struct bypass_ipc_lib *h, unsigned op, const void *req, size_t len,
		       void *resp, size_t cap)
{
	int r;
	if (bp_unlikely(h->reconnect || !h->conn)) {
		if (h->conn)
			bypass_ipc_close(h->conn);
		h->conn = NULL;
		if ((r = connect_now(h)))
			return r;
		h->reconnect = false;
	}
	if (len > h->max_req)
		return -EMSGSIZE;
	void *loan;
	r = bypass_ipc_loan(h->conn, sizeof(struct lib_wire) + len, &loan, h->call_timeout);
	if (r)
		return r;
	struct lib_wire w = { .v = (int32_t)op, .pad = (uint32_t)cap };
	memcpy(loan, &w, sizeof(w));
	if (len && copy_checked((unsigned char *)loan + sizeof(w), req, len)) {
		bypass_ipc_loan_cancel(h->conn, loan);
		return -EFAULT;
	}
	struct bypass_ipc_msg m;
	r = bypass_ipc_call(h->conn, loan, sizeof(w) + len, &m, h->call_timeout);
	if (r)
		return r;
	if (m.len < sizeof(w)) {
		r = -EPROTO;
	} else {
		memcpy(&w, m.data, sizeof(w));
		r = w.v;
		if (r > 0 && ((size_t)r > cap || (size_t)r > m.len - sizeof(w)))
			r = -EPROTO;
		else if (r > 0 && copy_checked(resp, (unsigned char *)m.data + sizeof(w), (size_t)r))
			r = -EFAULT;
	}
	bypass_ipc_release(h->conn, &m);
	return r;
}

int bp_ipc_lib_msg_call(struct bypass_ipc_lib *h, unsigned op, const void *req, size_t len,
			void *resp, size_t cap)
{
	uintptr_t here = (uintptr_t)__builtin_dwarf_cfa();
	if ((len && !req) || (cap && !resp) || cap > UINT32_MAX || op > INT32_MAX)
		return -EINVAL;
	/* A connection belongs to the process that opened it (and the
	 * handle's lock may be held by a thread the child does not have). */
	if (h->fork_gen != bp_fork_gen_fast())
		return -EBADF;
	int r;
	if (bp_unlikely(msg_h) && (r = msg_reentered(here)))
		return r;
	if (bp_unlikely(bp_ipc_lib_in_call()) && (r = bp_ipc_lib_depth_check(here)))
		return r;
	msg_h = h;
	msg_frame = here;
	msg_outer = bp_recover_top;
	if (!(r = conn_take(h))) {
		r = call_locked(h, op, req, len, resp, cap);
		conn_give(h);
	}
	msg_h = NULL;
	/* The server is gone: the same answer as library mode's. */
	return r == -ECONNRESET ? -EPIPE : r;
}
