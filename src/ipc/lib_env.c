/* SPDX-License-Identifier: MIT */
/*
 * What a handler may use (struct bypass_ipc_env): the arena's allocator,
 * locks whose owner's death is seen, and posting an event to the server's
 * loop.
 *
 * Robustness: a process may be killed at any instruction of a handler.
 * The allocator and the event queue change their shared state with one
 * store each, under a lock of the control block (lib_lock.c), so whatever
 * point a process dies at leaves them consistent (a block or an event slot
 * lost at most); the next taker of the lock finds its owner dead, takes it
 * and goes on.  The service's own locks cannot know what their owner was
 * doing: the next taker gets -EOWNERDEAD and the service is marked broken
 * until its recover hook has run.  Every value read from the control block
 * is bounded before it decides anything (lib.h): a stray write there costs
 * the service (broken, an event lost), never a process.
 *
 * The env functions work only inside a call (a handler, the init or the
 * recover hook), where this thread's PKRU opens the heap: -EPERM outside.
 */
#include "ipc/lib.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(struct lib_block) == LIB_BLOCK_HDR, "block header");
_Static_assert(sizeof(struct bypass_ipc_event) == 64, "event");

/* The locks this thread holds (taken through env->lock), and the control
 * block's lock a section holds (bp_ipc_lib_ctl_lock). */
__thread unsigned bp_ipc_lib_nheld __attribute__((tls_model("initial-exec")));
static __thread bypass_ipc_lock *held[LIB_MAX_HELD] __attribute__((tls_model("initial-exec")));
#define MAX_INNER 4
static __thread _Atomic uint32_t *inner[MAX_INNER] __attribute__((tls_model("initial-exec")));
static __thread unsigned ninner __attribute__((tls_model("initial-exec")));
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

static void mark_broken(struct lib_core *lc, const char *why)
{
	if (!(atomic_fetch_or(&lc->ctl->broken, LIB_BROKEN) & LIB_BROKEN))
		bp_warn("bypass: ipc: service %s: %s: the service is broken", lc->name, why);
}

int bp_ipc_lib_ctl_lock(struct lib_core *lc, _Atomic uint32_t *w)
{
	if (ninner >= MAX_INNER)
		return -ENOLCK; /* never: the library nests two at most */
	int r = bp_ipc_lib_lock(lc->owner, w, LIB_LOCK_BOUND_NS);
	if (r >= 0) {
		inner[ninner++] = w;
		return 0;
	}
	mark_broken(lc, r == -ETIMEDOUT ? "a library lock stayed held past its bound"
					: "no lock owner id");
	return -ENOLCK;
}

void bp_ipc_lib_ctl_unlock(_Atomic uint32_t *w)
{
	if (ninner && inner[ninner - 1] == w)
		ninner--;
	bp_ipc_lib_unlock(w);
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
	return 0;
}

static inline _Atomic uint32_t *word_of(bypass_ipc_lock *l)
{
	return (_Atomic uint32_t *)(void *)l;
}

static int env_lock(const struct bypass_ipc_env *env, bypass_ipc_lock *l)
{
	struct lib_core *lc = core_of(env);
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	if (!l || ((uintptr_t)l & 7))
		return -EINVAL;
	for (unsigned i = 0; i < bp_ipc_lib_nheld; i++)
		if (held[i] == l)
			return -EDEADLK;
	if (bp_ipc_lib_nheld >= LIB_MAX_HELD)
		return -ENOLCK;
	int r = bp_ipc_lib_lock(lc->owner, word_of(l), LIB_SVC_LOCK_BOUND_NS);
	if (bp_unlikely(r == 1)) {
		/* Usable again, but what it guards may be half-changed. */
		held[bp_ipc_lib_nheld++] = l;
		atomic_fetch_add(&lc->ctl->owner_dead, 1);
		if (!recovering) {
			atomic_fetch_or(&lc->ctl->broken, LIB_BROKEN);
			bp_ipc_lib_odead = true;
			bp_warn("bypass: ipc: service %s: a lock's owner died holding it: "
				"the service is broken", lc->name);
		}
		return -EOWNERDEAD;
	}
	if (bp_unlikely(r < 0)) {
		mark_broken(lc, r == -ETIMEDOUT ? "a lock of the state stayed held past its bound"
						: "no lock owner id");
		return -ENOTRECOVERABLE;
	}
	held[bp_ipc_lib_nheld++] = l;
	if (bp_unlikely(!recovering &&
			atomic_load_explicit(&lc->ctl->broken, memory_order_acquire))) {
		/* Marked broken while we waited for it: what it guards is not
		 * to be trusted until the recover hook has run. */
		bp_ipc_lib_nheld--;
		bp_ipc_lib_unlock(word_of(l));
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
		bp_ipc_lib_unlock(word_of(l));
		held[i] = held[--bp_ipc_lib_nheld];
		return 0;
	}
	return -EPERM; /* not held by this thread */
}

unsigned bp_ipc_lib_release_held(void)
{
	unsigned n = bp_ipc_lib_nheld + ninner;
	while (ninner)
		bp_ipc_lib_unlock(inner[--ninner]);
	while (bp_ipc_lib_nheld) {
		bypass_ipc_lock *l = held[--bp_ipc_lib_nheld];
		struct bp_recover rp;
		if (BP_RECOVER_TRY(&rp, NULL, 0)) {
			bp_ipc_lib_unlock(word_of(l));
			bp_recover_pop(&rp);
		}
	}
	return n;
}

void bp_ipc_lib_forget_held(void)
{
	bp_ipc_lib_nheld = 0;
	ninner = 0;
}

/* ----------------------------------------------------------- allocator */

static unsigned class_of(uint64_t bytes)
{
	unsigned k = 0;
	while (k < LIB_NCLASS && (16ull << k) < bytes)
		k++;
	return k;
}

/* The break, read once and checked: within the heap, aligned, and never
 * below what this process saw (it only grows).  0 if it is not. */
static uint64_t read_brk(struct lib_core *lc)
{
	uint64_t b = *(volatile uint64_t *)&lc->ctl->brk;
	uint64_t seen = atomic_load_explicit(&lc->brk_seen, memory_order_relaxed);
	if (b < lc->heap_off || b > lc->heap_end || (b & 15) || b < seen)
		return 0;
	if (b > seen)
		atomic_store_explicit(&lc->brk_seen, b, memory_order_relaxed);
	return b;
}

static int env_alloc(const struct bypass_ipc_env *env, size_t size, void **ptr)
{
	struct lib_core *lc = core_of(env);
	if (!bp_ipc_lib_in_call())
		return -EPERM;
	if (!ptr || !size)
		return -EINVAL;
	struct lib_ctl *c = lc->ctl;
	if (size > lc->heap_end - lc->heap_off)
		return -ENOMEM;
	unsigned cls = class_of(size + LIB_BLOCK_HDR);
	if (cls >= LIB_NCLASS)
		return -ENOMEM;
	uint64_t bs = 16ull << cls;
	if (bp_ipc_lib_ctl_lock(lc, &c->alloc_lock))
		return -ENOLCK;
	const char *bad = NULL;
	uint64_t brk = read_brk(lc);
	uint64_t off = *(volatile uint64_t *)&c->free_head[cls];
	struct lib_block *b = NULL;
	if (!brk) {
		bad = "the allocator's break is out of bounds";
	} else if (off) {
		/* A free block: in the heap, below the break, and marked free
		 * and of this class in its header. */
		b = (struct lib_block *)(lc->base + off);
		if (off < lc->heap_off || off > brk || brk - off < bs || (off & 15) ||
		    *(volatile uint32_t *)&b->magic != LIB_BLOCK_FREE ||
		    *(volatile uint32_t *)&b->cls != cls)
			bad = "the allocator's free list is corrupt";
		else
			c->free_head[cls] = *(volatile uint64_t *)&b->next;
	} else {
		off = brk;
		if (lc->heap_end - off < bs) {
			bp_ipc_lib_ctl_unlock(&c->alloc_lock);
			return -ENOMEM;
		}
		c->brk = off + bs;
		atomic_store_explicit(&lc->brk_seen, off + bs, memory_order_relaxed);
		atomic_store(&c->used, off + bs - lc->heap_off);
		b = (struct lib_block *)(lc->base + off);
	}
	bp_ipc_lib_ctl_unlock(&c->alloc_lock);
	if (bad) {
		mark_broken(lc, bad);
		return -ENOTRECOVERABLE;
	}
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
	if (!ptr || (p & 15) || p < lc->base + lc->heap_off + LIB_BLOCK_HDR ||
	    p >= lc->base + lc->heap_end)
		return -EINVAL;
	uint64_t off = p - LIB_BLOCK_HDR - lc->base;
	struct lib_block *b = (struct lib_block *)(p - LIB_BLOCK_HDR);
	if (bp_ipc_lib_ctl_lock(lc, &c->alloc_lock))
		return -ENOLCK;
	uint64_t brk = read_brk(lc);
	uint32_t cls = *(volatile uint32_t *)&b->cls;
	if (!brk || *(volatile uint32_t *)&b->magic != LIB_BLOCK_USED || cls >= LIB_NCLASS ||
	    off + (16ull << cls) > brk) {
		bp_ipc_lib_ctl_unlock(&c->alloc_lock);
		return -EINVAL;
	}
	b->magic = LIB_BLOCK_FREE;
	b->next = c->free_head[cls];
	c->free_head[cls] = off;
	bp_ipc_lib_ctl_unlock(&c->alloc_lock);
	return 0;
}

/* -------------------------------------------------------------- events */

static inline struct bypass_ipc_event *slot(const struct lib_core *lc, uint64_t i)
{
	return lc->ev + (i % lc->ev_slots);
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
	if (!lc->ev_slots)
		return -ENOTSUP;
	/* The caller's bytes first, outside the lock: a fault on them is
	 * the call's, with nothing held. */
	struct bypass_ipc_event ev = { .type = type, .len = (uint32_t)len,
				       .pid = (int32_t)bp_pid() };
	if (len)
		memcpy(ev.data, data, len);
	if (bp_ipc_lib_ctl_lock(lc, &c->ev_lock))
		return -ENOLCK;
	uint64_t tail = atomic_load_explicit(&c->ev_tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&c->ev_head, memory_order_acquire);
	if (tail - head >= lc->ev_slots) {
		bp_ipc_lib_ctl_unlock(&c->ev_lock);
		atomic_fetch_add(&c->dropped, 1);
		return -EAGAIN;
	}
	memcpy(slot(lc, tail), &ev, sizeof(ev));
	atomic_store_explicit(&c->ev_tail, tail + 1, memory_order_seq_cst);
	bp_ipc_lib_ctl_unlock(&c->ev_lock);
	atomic_fetch_add_explicit(&c->events, 1, memory_order_relaxed);
	/* Dekker with bypass_ipc_lib_arm: the tail is published before the
	 * flag is read, the flag set before the server reads the tail. */
	if (atomic_load_explicit(&c->ev_armed, memory_order_seq_cst) &&
	    atomic_exchange(&c->ev_armed, 0)) {
		uint64_t one = 1;
		if (lc->evfd >= 0 && bp_sys_write(lc->evfd, &one, sizeof(one)) < 0)
			bp_debug("bypass: ipc: event wake-up: %s", strerror(errno));
	}
	return 0;
}

/*
 * The server takes events at its private head; the tail is the posters'
 * (any client can write it): one that runs more than the queue ahead is
 * cut to the last ev_slots events, one behind the head is taken as "none"
 * (and the head follows it, so that posters see room again).
 */
int bp_ipc_lib_event_take(struct lib_core *lc, struct bypass_ipc_event *ev)
{
	struct lib_ctl *c = lc->ctl;
	if (!lc->ev_slots)
		return -EAGAIN;
	uint64_t head = lc->ev_head;
	uint64_t tail = atomic_load_explicit(&c->ev_tail, memory_order_acquire);
	if (tail == head)
		return -EAGAIN;
	if ((int64_t)(tail - head) < 0) {
		lc->ev_head = tail;
		atomic_store_explicit(&c->ev_head, tail, memory_order_release);
		return -EAGAIN;
	}
	if (tail - head > lc->ev_slots)
		head = tail - lc->ev_slots;
	memcpy(ev, slot(lc, head), sizeof(*ev));
	if (ev->len > BYPASS_IPC_EVENT_MAX)
		ev->len = BYPASS_IPC_EVENT_MAX;
	lc->ev_head = head + 1;
	atomic_store_explicit(&c->ev_head, head + 1, memory_order_release);
	return 0;
}

int bp_ipc_lib_events_waiting(struct lib_core *lc)
{
	return lc->ev_slots &&
	       atomic_load_explicit(&lc->ctl->ev_tail, memory_order_seq_cst) != lc->ev_head;
}

void bp_ipc_lib_layout(struct lib_core *lc, const struct lib_ctl *c)
{
	lc->heap_off = c->heap_off;
	lc->heap_end = c->heap_end;
	lc->ev_slots = c->ev_slots;
	lc->ev = c->ev_slots ? (struct bypass_ipc_event *)(lc->base + c->ev_off) : NULL;
	atomic_store(&lc->brk_seen, lc->heap_off);
	if (lc->desc && lc->desc->name)
		snprintf(lc->name, sizeof(lc->name), "%s", lc->desc->name);
	else
		snprintf(lc->name, sizeof(lc->name), "(unnamed)");
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
