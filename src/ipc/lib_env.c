/* SPDX-License-Identifier: MIT */
/*
 * What a handler may use (struct bypass_ipc_env): the arena's allocator,
 * robust locks, and posting an event to the server's loop.
 *
 * Robustness: a process may be killed at any instruction of a handler.
 * The allocator and the event queue change their shared state with one
 * store each, under a robust lock, so whatever point a process dies at
 * leaves them consistent (a block or an event slot lost at most); the next
 * taker of the lock finds it EOWNERDEAD, makes it consistent and goes on.
 * The service's own locks cannot know what their owner was doing: the next
 * taker gets -EOWNERDEAD and the service is marked broken until its recover
 * hook has run.
 *
 * The env functions work only inside a call (a handler, the init or the
 * recover hook), where this thread's PKRU opens the heap: -EPERM outside.
 */
#include "ipc/lib.h"

#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(bypass_ipc_lock), "bypass_ipc_lock");
_Static_assert(sizeof(struct lib_block) == LIB_BLOCK_HDR, "block header");
_Static_assert(sizeof(struct bypass_ipc_event) == 64, "event");

/* The locks this thread holds (taken through env->lock). */
__thread unsigned bp_ipc_lib_nheld __attribute__((tls_model("initial-exec")));
static __thread bypass_ipc_lock *held[LIB_MAX_HELD] __attribute__((tls_model("initial-exec")));
static __thread bool recovering __attribute__((tls_model("initial-exec")));
__thread bool bp_ipc_lib_odead __attribute__((tls_model("initial-exec")));

static inline struct lib_core *core_of(const struct bypass_ipc_env *env)
{
	return (struct lib_core *)(uintptr_t)env; /* env is the core's first member */
}

void bp_ipc_lib_set_recovering(bool on)
{
	recovering = on;
}

bool bp_ipc_lib_take_owner_dead(void)
{
	bool r = bp_ipc_lib_odead;
	bp_ipc_lib_odead = false;
	return r;
}

int bp_ipc_lib_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int r = pthread_mutexattr_init(&a);
	if (!r)
		r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!r)
		r = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!r)
		r = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	if (!r)
		r = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -r;
}

int bp_ipc_lib_mutex_take(pthread_mutex_t *m)
{
	int r = pthread_mutex_lock(m);
	if (r == EOWNERDEAD) {
		pthread_mutex_consistent(m);
		return 1;
	}
	return -r;
}

/* --------------------------------------------------------------- locks */

static int env_lock_init(const struct bypass_ipc_env *env, bypass_ipc_lock *l)
{
	(void)env;
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	if (!l || ((uintptr_t)l & 7))
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	return bp_ipc_lib_mutex_init((pthread_mutex_t *)l);
}

static int env_lock(const struct bypass_ipc_env *env, bypass_ipc_lock *l)
{
	struct lib_core *lc = core_of(env);
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	if (!l || ((uintptr_t)l & 7))
		return -EINVAL;
	if (bp_ipc_lib_nheld >= LIB_MAX_HELD)
		return -ENOLCK;
	pthread_mutex_t *m = (pthread_mutex_t *)l;
	int r = pthread_mutex_lock(m);
	if (bp_unlikely(r == EOWNERDEAD)) {
		/* Usable again, but what it guards may be half-changed. */
		pthread_mutex_consistent(m);
		held[bp_ipc_lib_nheld++] = l;
		atomic_fetch_add(&lc->ctl->owner_dead, 1);
		if (!recovering) {
			atomic_store(&lc->ctl->broken, 1);
			bp_ipc_lib_odead = true;
			bp_warn("bypass: ipc: service %s: a lock's owner died holding it: "
				"the service is broken", lc->ctl->name);
		}
		return -EOWNERDEAD;
	}
	if (bp_unlikely(r))
		return -r;
	held[bp_ipc_lib_nheld++] = l;
	if (bp_unlikely(!recovering &&
			atomic_load_explicit(&lc->ctl->broken, memory_order_acquire))) {
		/* Marked broken while we waited for it: what it guards is not
		 * to be trusted until the recover hook has run. */
		bp_ipc_lib_nheld--;
		pthread_mutex_unlock(m);
		return -ENOTRECOVERABLE;
	}
	return 0;
}

static int env_unlock(const struct bypass_ipc_env *env, bypass_ipc_lock *l)
{
	(void)env;
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	for (unsigned i = bp_ipc_lib_nheld; i-- > 0;) {
		if (held[i] != l)
			continue;
		int r = pthread_mutex_unlock((pthread_mutex_t *)l);
		if (r)
			return -r;
		held[i] = held[--bp_ipc_lib_nheld];
		return 0;
	}
	return -EPERM; /* not held by this thread */
}

unsigned bp_ipc_lib_release_held(void)
{
	unsigned n = bp_ipc_lib_nheld;
	while (bp_ipc_lib_nheld) {
		bypass_ipc_lock *l = held[--bp_ipc_lib_nheld];
		struct bp_recover rp;
		if (BP_RECOVER_TRY(&rp, NULL, 0)) {
			pthread_mutex_unlock((pthread_mutex_t *)l);
			bp_recover_pop(&rp);
		}
	}
	return n;
}

/* ----------------------------------------------------------- allocator */

static unsigned class_of(uint64_t bytes)
{
	unsigned k = 0;
	while ((16ull << k) < bytes)
		k++;
	return k;
}

static int env_alloc(const struct bypass_ipc_env *env, size_t size, void **ptr)
{
	struct lib_core *lc = core_of(env);
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	if (!ptr || !size)
		return -EINVAL;
	struct lib_ctl *c = lc->ctl;
	if (size > c->heap_end - c->heap_off)
		return -ENOMEM;
	unsigned cls = class_of(size + LIB_BLOCK_HDR);
	if (cls >= LIB_NCLASS)
		return -ENOMEM;
	uint64_t bs = 16ull << cls;
	if (bp_ipc_lib_mutex_take(&c->alloc_lock) < 0)
		return -ENOLCK;
	uint64_t off = c->free_head[cls];
	if (off) {
		if (off < c->heap_off || off + bs > c->brk || (off & 15)) {
			pthread_mutex_unlock(&c->alloc_lock);
			atomic_store(&c->broken, 1);
			bp_warn("bypass: ipc: service %s: the allocator's free list is "
				"corrupt: the service is broken", c->name);
			return -ENOTRECOVERABLE;
		}
		c->free_head[cls] = ((struct lib_block *)(lc->base + off))->next;
	} else {
		off = c->brk;
		if (c->heap_end - off < bs) {
			pthread_mutex_unlock(&c->alloc_lock);
			return -ENOMEM;
		}
		c->brk = off + bs;
		atomic_store(&c->used, c->brk - c->heap_off);
	}
	pthread_mutex_unlock(&c->alloc_lock);
	struct lib_block *b = (struct lib_block *)(lc->base + off);
	b->cls = cls;
	b->next = 0;
	b->magic = LIB_BLOCK_USED;
	*ptr = (char *)b + LIB_BLOCK_HDR;
	return 0;
}

static int env_free(const struct bypass_ipc_env *env, void *ptr)
{
	struct lib_core *lc = core_of(env);
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	struct lib_ctl *c = lc->ctl;
	uintptr_t p = (uintptr_t)ptr;
	if (!ptr || (p & 15) || p < lc->base + c->heap_off + LIB_BLOCK_HDR ||
	    p >= lc->base + c->heap_end)
		return -EINVAL;
	uint64_t off = p - LIB_BLOCK_HDR - lc->base;
	struct lib_block *b = (struct lib_block *)(p - LIB_BLOCK_HDR);
	if (bp_ipc_lib_mutex_take(&c->alloc_lock) < 0)
		return -ENOLCK;
	if (b->magic != LIB_BLOCK_USED || b->cls >= LIB_NCLASS ||
	    off + (16ull << b->cls) > c->brk) {
		pthread_mutex_unlock(&c->alloc_lock);
		return -EINVAL;
	}
	b->magic = LIB_BLOCK_FREE;
	b->next = c->free_head[b->cls];
	c->free_head[b->cls] = off;
	pthread_mutex_unlock(&c->alloc_lock);
	return 0;
}

/* -------------------------------------------------------------- events */

static struct bypass_ipc_event *slot(struct lib_core *lc, uint64_t i)
{
	struct lib_ctl *c = lc->ctl;
	return (struct bypass_ipc_event *)(lc->base + c->ev_off) + (i % c->ev_slots);
}

static int env_post(const struct bypass_ipc_env *env, uint32_t type, const void *data,
		    size_t len)
{
	struct lib_core *lc = core_of(env);
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	struct lib_ctl *c = lc->ctl;
	if (len > BYPASS_IPC_EVENT_MAX)
		return -EMSGSIZE;
	if (len && !data)
		return -EINVAL;
	if (!c->ev_slots)
		return -ENOTSUP;
	if (bp_ipc_lib_mutex_take(&c->ev_lock) < 0)
		return -ENOLCK;
	uint64_t tail = atomic_load_explicit(&c->ev_tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&c->ev_head, memory_order_acquire);
	if (tail - head >= c->ev_slots) {
		pthread_mutex_unlock(&c->ev_lock);
		atomic_fetch_add(&c->dropped, 1);
		return -EAGAIN;
	}
	struct bypass_ipc_event *e = slot(lc, tail);
	e->type = type;
	e->len = (uint32_t)len;
	e->pid = (int32_t)bp_pid();
	e->reserved = 0;
	if (len)
		memcpy(e->data, data, len);
	atomic_store_explicit(&c->ev_tail, tail + 1, memory_order_seq_cst);
	pthread_mutex_unlock(&c->ev_lock);
	atomic_fetch_add_explicit(&c->events, 1, memory_order_relaxed);
	/* Dekker with bypass_ipc_lib_arm: the tail is published before the
	 * flag is read, the flag set before the server reads the tail. */
	if (atomic_load_explicit(&c->ev_armed, memory_order_seq_cst) &&
	    atomic_exchange(&c->ev_armed, 0)) {
		uint64_t one = 1;
		if (lc->evfd >= 0 && write(lc->evfd, &one, sizeof(one)) < 0)
			bp_debug("bypass: ipc: event wake-up: %s", strerror(errno));
	}
	return 0;
}

int bp_ipc_lib_event_take(struct lib_core *lc, struct bypass_ipc_event *ev)
{
	struct lib_ctl *c = lc->ctl;
	if (!c->ev_slots)
		return -EAGAIN;
	uint64_t head = atomic_load_explicit(&c->ev_head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&c->ev_tail, memory_order_acquire);
	if (head == tail)
		return -EAGAIN;
	if (tail - head > c->ev_slots) { /* a stray write: skip to what can be there */
		head = tail - c->ev_slots;
	}
	*ev = *slot(lc, head);
	if (ev->len > BYPASS_IPC_EVENT_MAX)
		ev->len = BYPASS_IPC_EVENT_MAX;
	atomic_store_explicit(&c->ev_head, head + 1, memory_order_release);
	return 0;
}

int bp_ipc_lib_events_waiting(struct lib_core *lc)
{
	struct lib_ctl *c = lc->ctl;
	return c->ev_slots && atomic_load_explicit(&c->ev_tail, memory_order_seq_cst) !=
				      atomic_load_explicit(&c->ev_head, memory_order_relaxed);
}

void bp_ipc_lib_env_init(struct lib_core *lc)
{
	lc->env.abi = BYPASS_IPC_LIB_ABI;
	lc->env.flags = lc->server ? BYPASS_IPC_ENV_SERVER : 0;
	lc->env.alloc = env_alloc;
	lc->env.free = env_free;
	lc->env.lock_init = env_lock_init;
	lc->env.lock = env_lock;
	lc->env.unlock = env_unlock;
	lc->env.post = env_post;
}
