/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier: a pool of LZ4-compressed pages between the resident
 * pages and the swap file (tier.h for the locking, docs/pager.md,
 * "Compressed tier", for the design; tier-write.c for the pool's write path).
 *
 * The pool is an arena of slabs of TIER_SLAB bytes (4 pages), reserved at
 * enable for as many slabs as the budget has room for and committed as
 * slabs are used.  A slab holds objects of one size class (multiples of
 * 64 bytes, a 16-byte header included), a bitmap says which are in use;
 * slabs with room are on their class's list, used slabs on the age list
 * (oldest first) that shrinking writes back from.  Every slab in use
 * counts TIER_SLAB_PAGES pages in the budget (bud.resident): the memory
 * it holds, not the bytes compressed.
 *
 * LZ4 over zstd: see the commit that added this file (the same pages of a
 * Python heap compressed by both: LZ4 decompresses a page in a fifth of
 * zstd level 1's time, on every swap-in from the pool).
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/evict.h"
#include "pager/writeback.h"
#include "pager/stats.h"
#include "pager/tier-int.h"
#include "core/syscall.h"
#include "core/uring.h"
#include "pager/tree.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef BYPASS_HAVE_LZ4
#include <lz4.h>
#endif

/* ------------------------------------------------------------ slabs */

static unsigned cls_of(uint32_t bytes)
{
	return (bytes + TIER_GRAIN - 1) / TIER_GRAIN;
}

static void list_del(struct bp_tier *t, uint32_t *head, uint32_t i)
{
	struct tslab *s = &t->slabs[i];
	if (s->prev != TNONE)
		t->slabs[s->prev].next = s->next;
	else
		*head = s->next;
	if (s->next != TNONE)
		t->slabs[s->next].prev = s->prev;
	s->prev = s->next = TNONE;
}

static void list_push(struct bp_tier *t, uint32_t *head, uint32_t i)
{
	struct tslab *s = &t->slabs[i];
	s->prev = TNONE;
	s->next = *head;
	if (*head != TNONE)
		t->slabs[*head].prev = i;
	*head = i;
}

/* An object of class cls (lock held): its entry value, or 0 (no room
 * under the cap, or the arena is full).  *grew: a slab was taken. */
static uint32_t obj_alloc(struct bp_tier *t, unsigned cls, bool *grew)
{
	uint32_t i = t->part[cls];
	*grew = false;
	if (i == TNONE) {
		if (atomic_load_explicit(&t->pages_mem, memory_order_relaxed) + TIER_SLAB_PAGES >
		    t->cap)
			return 0;
		if (t->free_head != TNONE) {
			i = t->free_head;
			list_del(t, &t->free_head, i);
		} else if (t->hi < t->nslabs) {
			i = t->hi++;
		} else {
			return 0;
		}
		struct tslab *s = &t->slabs[i];
		s->cls = (uint16_t)cls;
		s->used = 0;
		memset(s->map, 0, sizeof(s->map));
		list_push(t, &t->part[cls], i);
		age_add(t, i);
		atomic_fetch_add_explicit(&t->pages_mem, TIER_SLAB_PAGES, memory_order_relaxed);
		*grew = true;
	}
	struct tslab *s = &t->slabs[i];
	uint32_t n = objs_per(cls), o = TNONE;
	for (uint32_t w = 0; w < (n + 63) / 64 && o == TNONE; w++) {
		uint64_t m = ~s->map[w];
		if (w == n / 64 && n % 64)
			m &= (1ull << (n % 64)) - 1;
		if (m)
			o = w * 64 + (uint32_t)__builtin_ctzll(m);
	}
	s->map[o / 64] |= 1ull << (o % 64);
	if (++s->used == n)
		list_del(t, &t->part[cls], i);
	return i * TIER_MAXOBJ + o + 1;
}

/* Free an object (lock held); true if its slab was freed too. */
static bool obj_free(struct bp_tier *t, uint32_t e)
{
	uint32_t i = (e - 1) / TIER_MAXOBJ, o = (e - 1) % TIER_MAXOBJ;
	struct tslab *s = &t->slabs[i];
	uint32_t n = objs_per(s->cls);
	s->map[o / 64] &= ~(1ull << (o % 64));
	if (s->used-- == n)
		list_push(t, &t->part[s->cls], i);
	if (s->used)
		return false;
	list_del(t, &t->part[s->cls], i);
	age_del(t, i);
	s->cls = 0;
	list_push(t, &t->free_head, i);
	/* the memory back (the system call: never a preload's madvise) */
	bp_syscall3(SYS_madvise, t->arena + (size_t)i * TIER_SLAB, (size_t)TIER_SLAB, MADV_DONTNEED);
	atomic_fetch_sub_explicit(&t->pages_mem, TIER_SLAB_PAGES, memory_order_relaxed);
	return true;
}

/* ------------------------------------------------------------ the evictor */

bool bp_tier_on(const struct bp_tier *t)
{
	return t && atomic_load_explicit(&t->on, memory_order_relaxed);
}

int bp_tier_compress(struct bp_tier *t, const char *page, uint32_t idx)
{
#ifdef BYPASS_HAVE_LZ4
	int n = LZ4_compress_fast_extState(t->lz4state, page, t->cbuf + (size_t)idx * PG_SIZE,
					   (int)PG_SIZE, (int)t->accept, 1);
	if (n <= 0) { /* larger than accept: LZ4 stops, returns 0 */
		t->clen[idx] = -1;
		atomic_fetch_add_explicit(&t->rejected, 1, memory_order_relaxed);
		return -1;
	}
	t->clen[idx] = n;
	return n;
#else
	(void)t;
	(void)page;
	(void)idx;
	return -1;
#endif
}

/*
 * Under ThreadSanitizer the pages are copied by the kernel first
 * (process_vm_readv on ourselves), as the file write-back has the kernel
 * read them: the sanitizer then sees no plain read racing with the
 * program's earlier writes, which the write-protection orders but a
 * sanitizer cannot see.
 */
static char *stage_copy(struct bp_tier *t, void *const *addrs, uint32_t n)
{
	if (n > BP_TIER_STAGE)
		return NULL;
	struct iovec local = { t->stage, (size_t)n * PG_SIZE };
	struct iovec remote[BP_TIER_STAGE];
	for (uint32_t i = 0; i < n; i++) {
		remote[i].iov_base = addrs[i];
		remote[i].iov_len = PG_SIZE;
	}
	long got = bp_sys_ret(bp_syscall6(SYS_process_vm_readv, (long)getpid(), (long)&local, 1l,
					     (long)remote, (long)n, 0l));
	if (got == (long)local.iov_len)
		return t->stage;
	for (uint32_t i = 0; i < n; i++) /* not permitted here: a plain copy */
		memcpy(t->stage + (size_t)i * PG_SIZE, addrs[i], PG_SIZE);
	return t->stage;
}

/*
 * The pages are write-protected and locked: no write can change them, and
 * they are resident (no fault, even in a handler thread).  LZ4 reads them
 * where they are; a staging copy first cost an eviction round a sixth of
 * its time (process_vm_readv's page walk and copy, issue 35's profile).
 * A page whose 2 MiB chunk failed TIER_SKIP_AFTER times in a row is tried
 * only one time in TIER_SKIP_EVERY (tier-int.h): a failed attempt costs
 * about what writing the page back costs the evictor (1.3-3.1 us a page
 * against 1.9-4.1, rdtscp, not quiet), and random data fails every time.
 */
bool bp_tier_compress_pages(struct bp_tier *t, void *const *addrs, uint32_t n)
{
	if (n > BP_TIER_STAGE)
		return false;
	const char *buf = NULL;
	if (BP_TSAN && !(buf = stage_copy(t, addrs, n)))
		return false;
	for (uint32_t k = 0; k < n; k++) {
		struct tier_skip *sk = &t->skip[((uintptr_t)addrs[k] >> TIER_SKIP_SHIFT) % TIER_SKIP_N];
		if (sk->fails >= TIER_SKIP_AFTER && ++sk->tick < TIER_SKIP_EVERY) {
			t->clen[k] = -1; /* the file, untried */
			atomic_fetch_add_explicit(&t->rejected, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&t->skipped, 1, memory_order_relaxed);
			continue;
		}
		sk->tick = 0;
		if (bp_tier_compress(t, buf ? buf + (size_t)k * PG_SIZE : (const char *)addrs[k], k) >= 0)
			sk->fails = 0;
		else if (sk->fails < TIER_SKIP_AFTER)
			sk->fails++;
	}
	bp_tier_share_tick(t, n);
	return true;
}

uint64_t bp_tier_skipped(const struct bp_tier *t)
{
	return t ? atomic_load_explicit(&t->skipped, memory_order_relaxed) : 0;
}

/* n pages of the budget for a slab, only if they fit (never above it:
 * the pool counts as resident pages). */
static bool slab_reserve(struct bypass_pager *p, uint32_t n)
{
	if (bp_unlikely(bp_pager_tree(p)))
		return bp_tree_reserve(p, n, false, p->cfg.budget) == 0;
	uint32_t r = atomic_load(&p->bud.resident);
	while (r + n <= p->cfg.budget)
		if (atomic_compare_exchange_weak(&p->bud.resident, &r, r + n)) {
			uint64_t peak = atomic_load_explicit(&p->bud.peak, memory_order_relaxed);
			while (r + n > peak && !atomic_compare_exchange_weak(&p->bud.peak, &peak, r + n))
				;
			return true;
		}
	return false;
}

/* An object of class cls, its slab's pages reserved if it takes a new one:
 * the entry, 0 (the pool is at its cap), or -EAGAIN as a negative value
 * (no room in the budget for a slab). */
static int64_t alloc_reserved(struct bypass_pager *p, struct bp_tier *t, unsigned cls)
{
	bool grew, reserved = false;
	tlock(t);
	if (t->part[cls] == TNONE) {
		if (!slab_reserve(p, TIER_SLAB_PAGES)) {
			tunlock(t);
			return -EAGAIN;
		}
		reserved = true;
	}
	uint32_t e = obj_alloc(t, cls, &grew);
	tunlock(t);
	if (reserved && !grew)
		bp_bud_sub(p, TIER_SLAB_PAGES);
	return e;
}

bool bp_tier_compressed(const struct bp_tier *t, uint32_t idx)
{
	return t->clen[idx] >= 0;
}

bool bp_tier_commit(struct bypass_pager *p, struct bp_tier *t, uint32_t s, uint32_t id,
		    uint32_t idx, bool pool_only)
{
	int len = t->clen[idx];
	t->clen[idx] = -1;
	if (len < 0 || s >= t->nent)
		return false;
	unsigned cls = cls_of((uint32_t)len + TIER_HDR);
	int64_t e = alloc_reserved(p, t, cls);
	if (e == 0 && t->cap >= TIER_SLAB_PAGES &&
	    bp_tier_shrink(p, t, t->cap - TIER_SLAB_PAGES)) /* the oldest out */
		e = alloc_reserved(p, t, cls);
	if (e <= 0)
		return false;
	char *o = obj_addr(t, (uint32_t)(e - 1) / TIER_MAXOBJ, (uint32_t)(e - 1) % TIER_MAXOBJ);
	ghost_clear(t, s);
	struct tobj h = { s, id, (uint32_t)len, 0 };
	memcpy(o, &h, sizeof(h));
	memcpy(o + TIER_HDR, t->cbuf + (size_t)idx * PG_SIZE, (size_t)len);
	atomic_store_explicit(&t->ent[s], (uint32_t)e | (pool_only ? TIER_DIRTY : 0),
			      memory_order_release);
	if (pool_only)
		atomic_fetch_add_explicit(&t->pool_only, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->pool_pages, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->comp_bytes, (uint64_t)len, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->stored, 1, memory_order_relaxed);
	return true;
}

bool bp_tier_has(const struct bp_tier *t, uint32_t s)
{
	return s < t->nent && atomic_load_explicit(&t->ent[s], memory_order_relaxed);
}

uint32_t bp_tier_readmit(struct bypass_pager *p, struct bp_tier *t, const uint32_t *ids,
			 const uint32_t *slots, void *const *addrs, uint32_t n)
{
#ifdef BYPASS_HAVE_LZ4
	const char *buf = NULL;
	if (n > BP_TIER_STAGE || (BP_TSAN && !(buf = stage_copy(t, addrs, n))))
		return 0;
	uint32_t kept = 0;
	for (uint32_t k = 0; k < n; k++) {
		/* a chunk that has not compressed lately is not tried: its
		 * pages stay in the file (random data read back costs no
		 * attempt at each clean eviction) */
		struct tier_skip *sk = &t->skip[((uintptr_t)addrs[k] >> TIER_SKIP_SHIFT) % TIER_SKIP_N];
		if (sk->fails >= TIER_SKIP_AFTER)
			continue;
		const char *pg = buf ? buf + (size_t)k * PG_SIZE : (const char *)addrs[k];
		int len = LZ4_compress_fast_extState(t->lz4state, pg, t->cbuf + (size_t)k * PG_SIZE,
						     (int)PG_SIZE, (int)t->accept, 1);
		if (len <= 0) {
			sk->fails++;
			continue;
		}
		sk->fails = 0;
		t->clen[k] = len;
		if (bp_tier_commit(p, t, slots[k], ids[k], k, false))
			kept++;
	}
	atomic_fetch_add_explicit(&t->readmitted, kept, memory_order_relaxed);
	return kept;
#else
	(void)p;
	(void)t;
	(void)ids;
	(void)slots;
	(void)addrs;
	(void)n;
	return 0;
#endif
}

/* ------------------------------------------------------------ loads, frees */

int bp_tier_unpack(const char *o, char *dst)
{
#ifdef BYPASS_HAVE_LZ4
	struct tobj h;
	memcpy(&h, o, sizeof(h));
	int n = LZ4_decompress_safe(o + TIER_HDR, dst, (int)h.len, (int)PG_SIZE);
	return n == (int)PG_SIZE ? 0 : -EIO;
#else
	(void)o;
	(void)dst;
	return -EIO;
#endif
}

int bp_tier_load(struct bp_tier *t, uint32_t s, char *dst)
{
	if (s >= t->nent)
		return 0;
	uint32_t e = atomic_load_explicit(&t->ent[s], memory_order_acquire);
	if (!e) {
		bp_tier_ghost_read(t, s);
		return 0;
	}
	e = ent_obj(e);
	/* the page's lock: nobody frees this object meanwhile (tier.h) */
	int r = bp_tier_unpack(obj_addr(t, (e - 1) / TIER_MAXOBJ, (e - 1) % TIER_MAXOBJ), dst);
	return r ? r : 1;
}

void bp_tier_drop_ent(struct bypass_pager *p, struct bp_tier *t, uint32_t s, uint32_t e)
{
	e = ent_obj(e);
	char *o = obj_addr(t, (e - 1) / TIER_MAXOBJ, (e - 1) % TIER_MAXOBJ);
	struct tobj h;
	memcpy(&h, o, sizeof(h));
	atomic_store_explicit(&t->ent[s], 0, memory_order_relaxed);
	atomic_fetch_sub_explicit(&t->pool_pages, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&t->comp_bytes, h.len, memory_order_relaxed);
	tlock(t);
	bool freed = obj_free(t, e);
	tunlock(t);
	if (freed) {
		bp_bud_sub(p, TIER_SLAB_PAGES);
		bp_pager_progress(p);
	}
}

void bp_tier_forget(struct bypass_pager *p, struct bp_tier *t, uint32_t s)
{
	if (s >= t->nent)
		return;
	ghost_clear(t, s);
	uint32_t e = atomic_load_explicit(&t->ent[s], memory_order_relaxed);
	if (e)
		bp_tier_drop_ent(p, t, s, e);
}

uint32_t bp_tier_pages(const struct bp_tier *t)
{
	return (uint32_t)atomic_load_explicit(&t->pages_mem, memory_order_relaxed);
}

uint32_t bp_tier_cap(const struct bp_tier *t)
{
	return t->cap;
}

void bp_tier_count_cold(struct bp_tier *t)
{
	atomic_fetch_add_explicit(&t->cold, 1, memory_order_relaxed);
}

void bp_tier_count_reads(struct bp_tier *t, uint32_t pool, uint32_t file)
{
	if (pool)
		atomic_fetch_add_explicit(&t->swapin_pool, pool, memory_order_relaxed);
	if (file)
		atomic_fetch_add_explicit(&t->swapin_file, file, memory_order_relaxed);
}

/* ------------------------------------------------------------ setup */

static _Atomic uint32_t *ent_alloc(uint32_t n)
{
	return bp_pg_calloc(n ? n : 1, sizeof(_Atomic uint32_t));
}

void bp_tier_child(struct bypass_pager *p, struct bp_tier *t)
{
	/* the copies are of the parent's slots, which we now read from the
	 * parent's file (levels below ours): forgotten, slabs and all (the
	 * arena is our copy of the parent's) */
	for (uint32_t i = 0; i < t->hi; i++)
		if (t->slabs[i].cls)
			bp_bud_sub(p, TIER_SLAB_PAGES);
	bp_syscall3(SYS_madvise, t->arena, t->arena_len, MADV_DONTNEED);
	memset(t->slabs, 0, (size_t)t->nslabs * sizeof(*t->slabs));
	t->hi = 0;
	t->free_head = t->age_head = t->age_tail = TNONE;
	for (unsigned c = 0; c < TIER_NCLASS; c++)
		t->part[c] = TNONE;
	atomic_store(&t->pages_mem, 0);
	atomic_store(&t->pool_pages, 0);
	atomic_store(&t->comp_bytes, 0);
	bp_pg_free((void *)t->ent);
	bp_pg_free((void *)t->ghost);
	t->nent = p->swap.nslots;
	t->ent = ent_alloc(t->nent);
	t->ghost = ent_alloc(t->nent);
	if (!t->ent || !t->ghost) {
		t->nent = 0;
		atomic_store(&t->on, false);
	}
	if (t->ring_live) { /* the parent's: mapped shared with it */
		bp_uring_exit(&t->ring);
		t->ring_live = bp_uring_init(BP_TIER_STAGE, &t->ring, NULL) >= 0;
	}
}

void bp_tier_free(struct bp_tier *t)
{
	if (!t)
		return;
	if (t->ring_live)
		bp_uring_exit(&t->ring);
	if (t->arena)
		bp_sys_munmap(t->arena, t->arena_len);
	if (t->stage)
		bp_sys_munmap(t->stage, (size_t)BP_TIER_STAGE * PG_SIZE + PG_SIZE);
	bp_pg_free(t->slabs);
	bp_pg_free((void *)t->ent);
	bp_pg_free((void *)t->ghost);
	bp_pg_free(t->cbuf);
	bp_pg_free(t->lz4state);
	bp_pg_free(t);
}

static struct bp_tier *tier_new(struct bypass_pager *p)
{
#ifdef BYPASS_HAVE_LZ4
	struct bp_tier *t = bp_pg_calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->nslabs = p->cfg.budget / TIER_SLAB_PAGES + 1;
	t->arena_len = (size_t)t->nslabs * TIER_SLAB;
	/* the system call: a preload's mmap could make it a region */
	void *a = (void *)bp_sys_ret(bp_syscall6(SYS_mmap, 0, (long)t->arena_len, PROT_READ | PROT_WRITE,
						   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
	void *st = (void *)bp_sys_ret(bp_syscall6(SYS_mmap, 0, (long)BP_TIER_STAGE * PG_SIZE + PG_SIZE,
						    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	t->arena = a == MAP_FAILED ? NULL : a;
	t->stage = st == MAP_FAILED ? NULL : st;
	t->slabs = bp_pg_calloc(t->nslabs, sizeof(*t->slabs));
	t->nent = p->swap.nslots;
	t->ent = ent_alloc(t->nent);
	t->ghost = ent_alloc(t->nent);
	t->cbuf = bp_pg_malloc((size_t)BP_TIER_STAGE * PG_SIZE);
	t->lz4state = bp_pg_malloc((size_t)LZ4_sizeofState());
	if (!t->arena || !t->stage || !t->slabs || !t->ent || !t->ghost || !t->cbuf || !t->lz4state) {
		bp_tier_free(t);
		return NULL;
	}
	t->free_head = t->age_head = t->age_tail = TNONE;
	for (unsigned c = 0; c < TIER_NCLASS; c++)
		t->part[c] = TNONE;
	for (unsigned i = 0; i < BP_TIER_STAGE; i++)
		t->clen[i] = -1;
	/* without it the pool writes one pwritev at a time (tier-write.c) */
	t->ring_live = bp_uring_init(BP_TIER_STAGE, &t->ring, NULL) >= 0;
	return t;
#else
	(void)p;
	return NULL;
#endif
}

/* ------------------------------------------------------------ the API */

int bypass_pager_tier(bypass_pager *p, const struct bypass_pager_tier_config *cfg)
{
	if (!p)
		return -EINVAL;
	if (p->cfg.gen != bp_fork_gen())
		return -ECHILD;
	unsigned share = 50, accept = 60;
	if (cfg) {
		if ((cfg->flags & ~BYPASS_PAGER_TIER_FIXED) || cfg->reserved_u)
			return -EINVAL;
		for (unsigned i = 0; i < BP_ARRAY_SIZE(cfg->reserved); i++)
			if (cfg->reserved[i])
				return -EINVAL;
		if (cfg->share_pct)
			share = cfg->share_pct;
		if (cfg->accept_pct)
			accept = cfg->accept_pct;
		if (share < 5 || share > 90 || accept < 10 || accept > 95)
			return -EINVAL;
	}
#ifndef BYPASS_HAVE_LZ4
	if (cfg)
		return -EOPNOTSUPP;
#endif
	int e = 0;
	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	bp_plock_lock(&p->ev.lock);
	struct bp_tier *t = atomic_load(&p->tier);
	if (cfg) {
		if (!t) {
			t = tier_new(p);
			if (!t)
				e = -ENOMEM;
			else
				atomic_store(&p->tier, t);
		}
		if (t) {
			uint32_t cap = (uint32_t)((uint64_t)p->cfg.budget * share / 100);
			t->cap = cap - cap % TIER_SLAB_PAGES;
			t->accept = (uint32_t)(PG_SIZE * accept / 100);
			bp_tier_share_reset(p, t, cfg->flags & BYPASS_PAGER_TIER_FIXED);
			if (bp_tier_pages(t) > t->cap)
				bp_tier_shrink(p, t, t->cap);
			atomic_store(&t->on, true);
		}
	} else if (t) {
		/* what a fault holds now is forgotten by later rounds */
		atomic_store(&t->on, false);
		bp_tier_shrink(p, t, 0);
	}
	bp_plock_unlock(&p->ev.lock);
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return e;
}

int bypass_pager_tier_stats(bypass_pager *p, struct bypass_pager_tier_stats *st)
{
	if (!p || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	struct bp_tier *t = atomic_load(&p->tier);
	if (!t)
		return 0;
	st->pool_bytes = atomic_load(&t->pages_mem) * PG_SIZE;
	st->pool_pages = atomic_load(&t->pool_pages);
	st->comp_bytes = atomic_load(&t->comp_bytes);
	st->stored = atomic_load(&t->stored);
	st->rejected = atomic_load(&t->rejected);
	st->dropped = atomic_load(&t->dropped);
	st->swapin_pool = atomic_load(&t->swapin_pool);
	st->swapin_file = atomic_load(&t->swapin_file);
	st->cold = atomic_load(&t->cold);
	st->pool_only = atomic_load(&t->pool_only);
	st->pool_writes = atomic_load(&t->pool_writes);
	st->share_moves = atomic_load(&t->moves);
	st->skipped = bp_tier_skipped(t);
	st->readmitted = atomic_load(&t->readmitted);
	return 0;
}
