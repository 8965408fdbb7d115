/* SPDX-License-Identifier: MIT */
/*
 * A key-value store as a bypass ipc service: handlers in a shared object
 * (built as ipc-kv.so), state in the service arena.  The server loads it
 * with bypass_ipc_lib_listen; a client that opens the service in library
 * mode runs these handlers in its own thread, one in message mode has the
 * server's threads run them.  Protocol: kv.h.
 *
 * What a service written for library mode must hold to:
 *  - every pointer it stores lives in the arena (env->alloc), never in a
 *    process's private memory: the same state is used by every process;
 *  - shared data is guarded by env's robust locks, and every change becomes
 *    visible with one store (link a fully built entry; unlink before
 *    freeing), so a process killed at any point leaves the table
 *    consistent (a leaked entry at most) -- the recover hook checks and
 *    recounts anyway, since the library cannot know;
 *  - a handler runs in the caller's process: it may not use the server's
 *    descriptors, files or logs; KV_SAVE posts an event instead, and the
 *    server's loop does the writing (examples/ipc-kv-server.c);
 *  - it links nothing of bypass: it calls the library through env.
 */
#include <bypass/ipc.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "kv.h"

#define NBUCKET 4096
#define NSTRIPE 64
#define ENTRY_MAGIC 0x6b76656eu /* "kven" */
#define STATE_MAGIC 0x6b7673746174652eull

struct entry {
	struct entry *next;
	uint32_t magic;
	uint16_t klen, vlen;
	unsigned char data[]; /* key, then value */
};

struct state {
	uint64_t magic;
	bypass_ipc_lock lock[NSTRIPE];
	uint64_t count[NSTRIPE];
	struct entry *bucket[NBUCKET];
};

static uint32_t hash(const unsigned char *k, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

static int kv_init(const struct bypass_ipc_env *env, void **out)
{
	struct state *s;
	int r = env->alloc(env, sizeof(*s), (void **)&s);
	if (r)
		return r;
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < NSTRIPE; i++)
		if ((r = env->lock_init(env, &s->lock[i])))
			return r;
	s->magic = STATE_MAGIC;
	*out = s;
	return 0;
}

/* Take bucket b's stripe; an error ends the handler (the lock is released
 * on -EOWNERDEAD: the library has marked the service broken). */
static int take(const struct bypass_ipc_env *env, struct state *s, uint32_t b)
{
	int r = env->lock(env, &s->lock[b % NSTRIPE]);
	if (r == -EOWNERDEAD)
		env->unlock(env, &s->lock[b % NSTRIPE]);
	return r;
}

static void drop(const struct bypass_ipc_env *env, struct state *s, uint32_t b)
{
	env->unlock(env, &s->lock[b % NSTRIPE]);
}

static struct entry **find(struct state *s, uint32_t b, const unsigned char *k, size_t n)
{
	struct entry **pp = &s->bucket[b];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->klen == n && !memcmp((*pp)->data, k, n))
			return pp;
	return pp;
}

static int kv_get(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	struct state *s = st;
	if (!len || len > KV_KEY_MAX)
		return -EINVAL;
	uint32_t b = hash(req, len) % NBUCKET;
	int r = take(env, s, b);
	if (r)
		return r;
	struct entry *e = *find(s, b, req, len);
	if (!e)
		r = -ENOENT;
	else if (e->vlen > cap)
		r = -ENOBUFS;
	else {
		memcpy(resp, e->data + e->klen, e->vlen);
		r = e->vlen;
	}
	drop(env, s, b);
	return r;
}

static int kv_set(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	(void)resp;
	(void)cap;
	struct state *s = st;
	struct kv_set h;
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, req, sizeof(h));
	const unsigned char *k = (const unsigned char *)req + sizeof(h);
	if (!h.klen || h.klen > KV_KEY_MAX || h.vlen > KV_VAL_MAX ||
	    len != sizeof(h) + h.klen + h.vlen)
		return -EINVAL;
	/* Build the entry before taking the lock: a short critical section. */
	struct entry *n;
	int r = env->alloc(env, sizeof(*n) + h.klen + h.vlen, (void **)&n);
	if (r)
		return r;
	n->magic = ENTRY_MAGIC;
	n->klen = h.klen;
	n->vlen = h.vlen;
	memcpy(n->data, k, (size_t)h.klen + h.vlen);
	uint32_t b = hash(k, h.klen) % NBUCKET;
	if ((r = take(env, s, b))) {
		env->free(env, n);
		return r;
	}
	struct entry **pp = find(s, b, k, h.klen), *old = *pp;
	if (old) {
		n->next = old->next;
		*pp = n; /* one store replaces it */
	} else {
		n->next = s->bucket[b];
		s->bucket[b] = n; /* one store links it */
		s->count[b % NSTRIPE]++;
	}
	drop(env, s, b);
	if (old)
		env->free(env, old);
	return 0;
}

static int kv_del(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	(void)resp;
	(void)cap;
	struct state *s = st;
	if (!len || len > KV_KEY_MAX)
		return -EINVAL;
	uint32_t b = hash(req, len) % NBUCKET;
	int r = take(env, s, b);
	if (r)
		return r;
	struct entry **pp = find(s, b, req, len), *e = *pp;
	if (e) {
		*pp = e->next; /* one store unlinks it */
		s->count[b % NSTRIPE]--;
	}
	drop(env, s, b);
	if (!e)
		return -ENOENT;
	env->free(env, e);
	return 0;
}

static int kv_count(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		    void *resp, size_t cap)
{
	(void)env;
	(void)req;
	(void)len;
	struct state *s = st;
	uint64_t n = 0;
	if (cap < sizeof(n))
		return -ENOBUFS;
	for (int i = 0; i < NSTRIPE; i++) /* unlocked: a snapshot */
		n += __atomic_load_n(&s->count[i], __ATOMIC_RELAXED);
	memcpy(resp, &n, sizeof(n));
	return sizeof(n);
}

static int kv_save(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		   void *resp, size_t cap)
{
	(void)st;
	(void)req;
	(void)len;
	(void)resp;
	(void)cap;
	/* The server's log is the server's: ask its loop to write it. */
	return env->post(env, KV_EV_SAVE, NULL, 0);
}

static int kv_ping(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		   void *resp, size_t cap)
{
	(void)env;
	(void)st;
	if (len > KV_PING_MAX || len > cap)
		return -EINVAL;
	if (len)
		memcpy(resp, req, len);
	return (int)len;
}

/* After a fault or a dead lock owner: every chain is walked under its
 * stripe's lock, cut where an entry does not look like one, and the
 * counts are taken again. */
static int kv_recover(const struct bypass_ipc_env *env, void *st)
{
	struct state *s = st;
	if (!s || s->magic != STATE_MAGIC)
		return -EINVAL;
	for (int i = 0; i < NSTRIPE; i++) {
		int r = env->lock(env, &s->lock[i]);
		if (r && r != -EOWNERDEAD)
			return r;
		uint64_t n = 0;
		for (uint32_t b = (uint32_t)i; b < NBUCKET; b += NSTRIPE) {
			struct entry **pp = &s->bucket[b];
			for (unsigned depth = 0; *pp; pp = &(*pp)->next, depth++) {
				struct entry *e = *pp;
				if (((uintptr_t)e & 15) || e->magic != ENTRY_MAGIC || !e->klen ||
				    e->klen > KV_KEY_MAX || e->vlen > KV_VAL_MAX || depth > 1000000) {
					*pp = NULL;
					break;
				}
				n++;
			}
		}
		s->count[i] = n;
		env->unlock(env, &s->lock[i]);
	}
	return 0;
}

static const bypass_ipc_handler kv_ops[KV_NOPS] = {
	[KV_GET] = kv_get, [KV_SET] = kv_set,     [KV_DEL] = kv_del,
	[KV_COUNT] = kv_count, [KV_SAVE] = kv_save, [KV_PING] = kv_ping,
};

__attribute__((visibility("default"))) const struct bypass_ipc_lib_desc bypass_ipc_lib_entry = {
	.abi = BYPASS_IPC_LIB_ABI,
	.nops = KV_NOPS,
	.name = "kv",
	.arena_size = 64 << 20,
	.init = kv_init,
	.recover = kv_recover,
	.ops = kv_ops,
};
