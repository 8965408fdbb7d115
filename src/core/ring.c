/* SPDX-License-Identifier: MIT */
/* Per-thread io_uring rings, one per bypass user. */
#include "core/internal.h"

#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct thread_rings {
	struct io_uring ring[BP_RING_USERS];
	bool live[BP_RING_USERS];
	unsigned gen[BP_RING_USERS];
};

static __thread struct thread_rings *tr
	__attribute__((tls_model("initial-exec")));
static pthread_key_t tr_key;
static pthread_once_t tr_once = PTHREAD_ONCE_INIT;

static void tr_destroy(void *p)
{
	struct thread_rings *t = p;
	for (int i = 0; i < BP_RING_USERS; i++)
		if (t->live[i] && t->gen[i] == bp_fork_gen())
			io_uring_queue_exit(&t->ring[i]);
	free(t);
	tr = NULL;
}

static void tr_key_init(void)
{
	pthread_key_create(&tr_key, tr_destroy);
}

static struct thread_rings *tr_get(void)
{
	if (bp_likely(tr))
		return tr;
	pthread_once(&tr_once, tr_key_init);
	tr = calloc(1, sizeof(*tr));
	if (tr)
		pthread_setspecific(tr_key, tr);
	return tr;
}

/*
 * After fork the child holds a copy of the parent's ring descriptor and a
 * shared mapping of its queues: using it would race with the parent.  Drop
 * the child's mapping and descriptor (the parent's ring is unaffected).
 */
static void drop_inherited(struct thread_rings *t, int u)
{
	if (t->live[u] && t->gen[u] != bp_fork_gen_fast()) {
		io_uring_queue_exit(&t->ring[u]);
		t->live[u] = false;
	}
}

int bp_thread_ring(enum bp_ring_user u, const struct bp_ring_params *p,
		   struct io_uring **out)
{
	if ((unsigned)u >= BP_RING_USERS || !out)
		return -EINVAL;
	struct thread_rings *t = tr_get();
	if (!t)
		return -ENOMEM;
	drop_inherited(t, u);
	if (bp_likely(t->live[u])) {
		*out = &t->ring[u];
		return 0;
	}
	struct io_uring_params ip;
	memset(&ip, 0, sizeof(ip));
	unsigned entries = p && p->entries ? p->entries : 256;
	if (p) {
		ip.flags = p->flags;
		if (p->sqpoll) {
			ip.flags |= IORING_SETUP_SQPOLL;
			ip.sq_thread_idle = p->sqpoll_idle_ms ? p->sqpoll_idle_ms : 50;
		}
	}
	int r = io_uring_queue_init_params(entries, &t->ring[u], &ip);
	if (r < 0) {
		bp_warn("bypass: io_uring_queue_init(%u, flags %#x): %s", entries,
			ip.flags, strerror(-r));
		return r;
	}
	t->live[u] = true;
	t->gen[u] = bp_fork_gen();
	*out = &t->ring[u];
	return 0;
}

struct io_uring *bp_thread_ring_peek(enum bp_ring_user u)
{
	if ((unsigned)u >= BP_RING_USERS || !tr)
		return NULL;
	drop_inherited(tr, u);
	return tr->live[u] ? &tr->ring[u] : NULL;
}

void bp_thread_ring_close(enum bp_ring_user u)
{
	if ((unsigned)u >= BP_RING_USERS || !tr)
		return;
	drop_inherited(tr, u);
	if (tr->live[u]) {
		io_uring_queue_exit(&tr->ring[u]);
		tr->live[u] = false;
	}
}
