/* SPDX-License-Identifier: MIT */
/*
 * The packer: the heap's mid-size requests at glibc's density (issue 32,
 * item 4).
 *
 * jemalloc's size classes above 4 KiB are a quarter of a power of two
 * apart (5120, 6144, 7168, 8192, 10240 ...) and cannot be changed at run
 * time: SQLite's page-cache slots (4096 + ~290 bytes) took 5120 bytes
 * each, 17% more live data to page than glibc's 4392 (2026-11-29: under
 * the preload SQLite's program read ~40% more pages than under Linux,
 * and Linux given the same jemalloc read as much).  Requests in
 * (PACK_MIN, PACK_MAX] bytes at an alignment of at most 16 come from
 * here instead: slots of one size (a multiple of 16) laid end to end in
 * slabs of PACK_SLAB bytes, a class per size.
 *
 * BYPASS_PAGER_HEAP_PACK=0 (or off) turns it off: every request to jemalloc.
 *
 * The packer's slabs lie in the top part of the heap's reserved range
 * ([bp_pp_pack_lo, bp_pp_pack_hi), pager regions mapped by heap.c): free,
 * realloc and malloc_usable_size know a packed pointer by two bounds,
 * without a lock.  A slab's metadata (which class, which slots are in use,
 * which are known to read as zeros) is in ordinary memory, an array
 * indexed by the slab's place in the range: never in pager memory, which
 * a fault may have to read back (issue 32, item 1).  A slot is the lowest
 * free one of the class's first slab with room, so a slab's pages past its
 * last slot in use are never touched.
 *
 * The heap's calls (bp_pp_heap_alloc, _free, _size, _realloc) are here
 * too: each goes to the packer or to jemalloc, and realloc moves a block
 * across the packer's bounds.  tests/pager/heap-pack-unit links this file
 * alone, with heap.c's carve, the pager's discard and jemalloc stubbed, so
 * that the sanitizers see it (under the preload their malloc comes first).
 *
 * Statistics (the preload's line at exit, bp_pp_pack_report): slots in
 * use and their peak, the bytes they save against jemalloc's size class
 * for the same request (nallocx) and its peak, slabs held by classes,
 * slabs carved, discarded, and discards refused.
 *
 * Locks: a class's lock, and the pool's (slabs no class has); both are
 * leaves (nothing is taken, nothing entered, no pager memory touched under
 * them): a new slab is carved and an empty one discarded
 * (bp_pager_discard) with neither held.  The carve (heap.c: the packer's
 * part of the range, mapped as pager regions as it goes) is under a lock
 * of the packer's own, carve_lock, taken with neither of those held; under
 * it, heap.c's carve maps regions (the pager's locks, its table's, the C
 * library's malloc) but enters neither the packer nor jemalloc.  The fork
 * handlers take them all around a fork, carve_lock last: so a fork waits
 * for a carve in progress and a child never sees one half done (a region
 * mapped, the carving point not yet past it), whatever the order of
 * heap.c's lock (jemalloc's part; it can have no fork handler of its own:
 * it is taken inside jemalloc's extent hook, under the arena's locks that
 * jemalloc's own handler takes).
 *
 * An empty slab goes back to the pool, its pages discarded (nothing written
 * or read back for freed memory; they read as zeros after), unless it is
 * the class's only slab with room (a class that frees and allocates one
 * block over and over would discard and fault a page at each turn).
 */
#include "preload.h"
#include "pager/pager_internal.h" /* bp_pager_discard */

#include <pthread.h>

#if BYPASS_PP_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

_Atomic uintptr_t bp_pp_pack_lo = 1, bp_pp_pack_hi = 0; /* the packer's slabs */

#if BYPASS_PP_JEMALLOC

#define PACK_GRAIN 16u
#define PACK_NCLASS ((PACK_MAX - PACK_MIN) / PACK_GRAIN)
#define PACK_NONE 0xffffu

struct pack_slab {
	uint64_t used;          /* slots in use (class lock) */
	uint64_t clean;         /* slots known to read as zeros (class lock) */
	_Atomic uint16_t cls;   /* class, or PACK_NONE (in the pool) */
	uint8_t nslots, nused;
	uint32_t next, prev;    /* the class's slabs with room / the pool (index + 1) */
};

struct pack_class {
	pthread_mutex_t lock;
	uint32_t room;          /* first slab with a free slot (index + 1), 0: none */
	uint32_t nroom;         /* slabs with a free slot */
	uint32_t gap;           /* jemalloc's size class for the slot's size, less it */
} __attribute__((aligned(64)));

static struct pack_slab *slabs;   /* ordinary memory, one per PACK_SLAB of the range */
static struct pack_class classes[PACK_NCLASS];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t carve_lock_pk = PTHREAD_MUTEX_INITIALIZER; /* heap.c's carve */
static uint32_t pool;             /* slabs no class has (index + 1; pool_lock) */

/* statistics: slots in use and the bytes they save against jemalloc's
 * classes, now and at their peaks; slabs carved, discarded, refused */
static _Atomic uint64_t st_slots, st_slots_peak, st_saved, st_saved_peak;
static _Atomic uint64_t st_carved, st_discards, st_kept;

static void count(_Atomic uint64_t *now, _Atomic uint64_t *peak, uint64_t add)
{
	uint64_t v = atomic_fetch_add_explicit(now, add, memory_order_relaxed) + add;
	uint64_t pk = atomic_load_explicit(peak, memory_order_relaxed);
	while (v > pk && !atomic_compare_exchange_weak_explicit(peak, &pk, v, memory_order_relaxed,
								memory_order_relaxed))
		;
}

static inline uint32_t class_of(size_t n)
{
	return (uint32_t)((n - PACK_MIN + PACK_GRAIN - 1) / PACK_GRAIN - 1);
}

static inline size_t slot_size(uint32_t cls)
{
	return PACK_MIN + ((size_t)cls + 1) * PACK_GRAIN;
}

static inline uintptr_t slab_addr(uint32_t i)
{
	return atomic_load_explicit(&bp_pp_pack_lo, memory_order_relaxed) + (uintptr_t)i * PACK_SLAB;
}

static inline uint32_t slab_index(uintptr_t a)
{
	return (uint32_t)((a - atomic_load_explicit(&bp_pp_pack_lo, memory_order_relaxed)) /
			  PACK_SLAB);
}

static void lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
}

static void unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

static void prepare(void)
{
	for (uint32_t c = 0; c < PACK_NCLASS; c++)
		lock(&classes[c].lock);
	lock(&pool_lock);
	lock(&carve_lock_pk);
}

static void parent(void)
{
	unlock(&carve_lock_pk);
	unlock(&pool_lock);
	for (uint32_t c = PACK_NCLASS; c-- > 0;)
		unlock(&classes[c].lock);
}

void bp_pp_pack_forked(void)
{
	pthread_mutex_init(&carve_lock_pk, NULL);
	pthread_mutex_init(&pool_lock, NULL);
	for (uint32_t c = 0; c < PACK_NCLASS; c++)
		pthread_mutex_init(&classes[c].lock, NULL);
}

int bp_pp_pack_start(uintptr_t lo, uintptr_t hi)
{
	bool on = true;
	if (!bp_pl_env_onoff("BYPASS_PAGER_HEAP_PACK", &on) || !on)
		return -ENOTSUP; /* jemalloc's size classes for every request */
	if ((lo & (PACK_SLAB - 1)) || hi <= lo || (hi - lo) / PACK_SLAB > UINT32_MAX - 1)
		return -EINVAL;
	size_t n = (hi - lo) / PACK_SLAB;
	size_t len = (n * sizeof(struct pack_slab) + PP_PAGE - 1) & ~(PP_PAGE - 1);
	void *m = REAL(mmap)(NULL, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	for (uint32_t c = 0; c < PACK_NCLASS; c++) {
		pthread_mutex_init(&classes[c].lock, NULL);
		size_t je = nallocx(slot_size(c), 0); /* 0: jemalloc cannot say */
		classes[c].gap = je > slot_size(c) ? (uint32_t)(je - slot_size(c)) : 0;
	}
	int e = pthread_atfork(prepare, parent, NULL); /* the child: bp_pp_pack_forked */
	if (e) {
		REAL(munmap)(m, len);
		return -e;
	}
	slabs = m;
	atomic_store(&bp_pp_pack_lo, lo); /* lo first: [lo, hi) empty until hi is set */
	atomic_store(&bp_pp_pack_hi, lo + n * PACK_SLAB);
	return 0;
}

/* class lock: slab i (with room) at the head of the class's list */
static void room_push(struct pack_class *k, uint32_t i)
{
	struct pack_slab *s = &slabs[i];
	s->prev = 0;
	s->next = k->room;
	if (k->room)
		slabs[k->room - 1].prev = i + 1;
	k->room = i + 1;
	k->nroom++;
}

static void room_remove(struct pack_class *k, uint32_t i)
{
	struct pack_slab *s = &slabs[i];
	if (s->prev)
		slabs[s->prev - 1].next = s->next;
	else
		k->room = s->next;
	if (s->next)
		slabs[s->next - 1].prev = s->prev;
	s->next = s->prev = 0;
	k->nroom--;
}

/* class lock: a slot of the class's first slab with room; NULL if none.
 * *zero: the slot reads as zeros. */
static void *take(struct pack_class *k, uint32_t cls, bool *zero)
{
	if (!k->room)
		return NULL;
	uint32_t i = k->room - 1;
	struct pack_slab *s = &slabs[i];
	uint64_t all = s->nslots == 64 ? ~0ull : (1ull << s->nslots) - 1;
	unsigned b = (unsigned)__builtin_ctzll(~s->used & all);
	uint64_t bit = 1ull << b;
	s->used |= bit;
	*zero = s->clean & bit;
	s->clean &= ~bit;
	if (++s->nused == s->nslots)
		room_remove(k, i);
	/* counted before the slot is handed out: its free comes after */
	count(&st_slots, &st_slots_peak, 1);
	count(&st_saved, &st_saved_peak, k->gap);
	return (void *)(slab_addr(i) + (uintptr_t)b * slot_size(cls));
}

/* A slab for class cls (no lock held): from the pool, else carved. */
static bool new_slab(uint32_t cls, uint32_t *out)
{
	uint32_t i = 0;
	lock(&pool_lock);
	if (pool) {
		i = pool;
		pool = slabs[i - 1].next;
	}
	unlock(&pool_lock);
	if (i) {
		i--;
	} else {
		lock(&carve_lock_pk);
		uintptr_t a = bp_pp_heap_carve_pack(PACK_SLAB);
		unlock(&carve_lock_pk);
		if (!a)
			return false;
		i = slab_index(a);
		slabs[i].clean = ~0ull; /* never handed out: zeros */
		atomic_fetch_add_explicit(&st_carved, 1, memory_order_relaxed);
	}
	struct pack_slab *s = &slabs[i];
	size_t sz = slot_size(cls);
	s->nslots = (uint8_t)(PACK_SLAB / sz > 64 ? 64 : PACK_SLAB / sz);
	s->nused = 0;
	s->used = 0;
	s->next = s->prev = 0;
	atomic_store_explicit(&s->cls, (uint16_t)cls, memory_order_relaxed);
	*out = i;
	return true;
}

bool bp_pp_pack_fits(size_t n, size_t align)
{
	return n > PACK_MIN && n <= PACK_MAX && align <= PACK_GRAIN &&
	       atomic_load_explicit(&bp_pp_pack_hi, memory_order_acquire) != 0;
}

void *bp_pp_pack_alloc(size_t n, bool zero)
{
	uint32_t cls = class_of(n);
	struct pack_class *k = &classes[cls];
	bool clean = false;
	lock(&k->lock);
	void *q = take(k, cls, &clean);
	unlock(&k->lock);
	if (!q) {
		uint32_t i;
		if (!new_slab(cls, &i))
			return NULL;
		lock(&k->lock);
		room_push(k, i);
		q = take(k, cls, &clean);
		unlock(&k->lock);
	}
	if (zero && !clean)
		memset(q, 0, slot_size(cls));
	return q;
}

size_t bp_pp_pack_size(const void *ptr)
{
	uint16_t cls = atomic_load_explicit(&slabs[slab_index((uintptr_t)ptr)].cls,
					    memory_order_relaxed);
	return cls == PACK_NONE ? 0 : slot_size(cls);
}

static void bad(const void *ptr)
{
	bp_warn("bypass: pager preload: free of %p: not a block in use (the heap's packer)", ptr);
	abort();
}

void bp_pp_pack_free(void *ptr)
{
	uintptr_t a = (uintptr_t)ptr;
	uint32_t i = slab_index(a);
	struct pack_slab *s = &slabs[i];
	uint16_t cls = atomic_load_explicit(&s->cls, memory_order_relaxed);
	if (cls == PACK_NONE)
		bad(ptr);
	size_t sz = slot_size(cls), off = a - slab_addr(i);
	if (off % sz)
		bad(ptr);
	uint64_t bit = 1ull << (off / sz);
	struct pack_class *k = &classes[cls];
	lock(&k->lock);
	if (atomic_load_explicit(&s->cls, memory_order_relaxed) != cls || !(s->used & bit)) {
		unlock(&k->lock);
		bad(ptr);
	}
	s->used &= ~bit;
	if (s->nused-- == s->nslots)
		room_push(k, i);
	bool release = !s->nused && k->nroom > 1;
	if (release) {
		room_remove(k, i);
		atomic_store_explicit(&s->cls, PACK_NONE, memory_order_relaxed);
	}
	unlock(&k->lock);
	atomic_fetch_sub_explicit(&st_slots, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&st_saved, k->gap, memory_order_relaxed);
	if (!release)
		return;
	/* Empty: its pages discarded (they read as zeros after, if every one
	 * was), the slab to the pool. */
	bypass_pager *p = bp_pp_pager();
	int kept = -EINVAL;
	if (p) {
		bp_enter();
		kept = bp_pager_discard(p, slab_addr(i), PACK_SLAB);
		bp_leave();
	}
	s->clean = kept == 0 ? ~0ull : 0;
	atomic_fetch_add_explicit(kept == 0 ? &st_discards : &st_kept, 1, memory_order_relaxed);
	lock(&pool_lock);
	s->next = pool;
	pool = i + 1;
	unlock(&pool_lock);
}

/* ------------------------------------------------------------ the heap's calls */

/* jemalloc's own calls into libc that allocate go to the next allocator
 * (bp_enter), never back into jemalloc. */
void *bp_pp_heap_alloc(size_t n, size_t align, bool zero)
{
	if (bp_pp_pack_fits(n, align)) {
		void *q = bp_pp_pack_alloc(n, zero);
		if (q)
			return q;
	}
	int fl = (zero ? MALLOCX_ZERO : 0) | (align > 16 ? MALLOCX_ALIGN(align) : 0);
	bp_rank_check(BP_RANK_JEMALLOC);
	bp_enter();
	void *q = mallocx(n ? n : 1, fl);
	bp_leave();
	return q;
}

void bp_pp_heap_free(void *ptr)
{
	if (!bp_pp_heap_on())
		return; /* cannot happen: a heap pointer comes from the heap on */
	if (bp_pp_in_pack(ptr)) {
		bp_pp_pack_free(ptr);
		return;
	}
	bp_rank_check(BP_RANK_JEMALLOC);
	bp_enter();
	dallocx(ptr, 0);
	bp_leave();
}

size_t bp_pp_heap_size(void *ptr)
{
	if (!bp_pp_heap_on())
		return 0;
	return bp_pp_in_pack(ptr) ? bp_pp_pack_size(ptr) : sallocx(ptr, 0);
}

/*
 * Across the packer's boundary a block moves (a packed one to jemalloc, a
 * jemalloc one into the packer); a packed block stays where it is while n
 * fits its slot and is more than half of it.
 */
void *bp_pp_heap_realloc(void *ptr, size_t n)
{
	size_t have = 0;
	if (bp_pp_in_pack(ptr)) {
		have = bp_pp_pack_size(ptr);
		if (n <= have && n > have / 2)
			return ptr;
	} else if (bp_pp_pack_fits(n, 0)) {
		have = sallocx(ptr, 0);
	} else {
		bp_rank_check(BP_RANK_JEMALLOC);
		bp_enter();
		void *q = rallocx(ptr, n ? n : 1, 0);
		bp_leave();
		return q;
	}
	void *q = bp_pp_heap_alloc(n, 0, false);
	if (q) {
		memcpy(q, ptr, n < have ? n : have);
		bp_pp_heap_free(ptr);
	}
	return q;
}

/* ------------------------------------------------------------ statistics */

void bp_pp_pack_report(struct bp_pl_line *l)
{
	if (!atomic_load_explicit(&bp_pp_pack_hi, memory_order_acquire))
		return; /* never started */
	uint64_t free_slabs = 0;
	lock(&pool_lock);
	for (uint32_t i = pool; i; i = slabs[i - 1].next)
		free_slabs++;
	unlock(&pool_lock);
	uint64_t carved = atomic_load(&st_carved);
	bp_pl_line_u64(l, "pack_slots", atomic_load(&st_slots));
	bp_pl_line_u64(l, "pack_slots_peak", atomic_load(&st_slots_peak));
	bp_pl_line_u64(l, "pack_saved", atomic_load(&st_saved));
	bp_pl_line_u64(l, "pack_saved_peak", atomic_load(&st_saved_peak));
	bp_pl_line_u64(l, "pack_slabs", carved > free_slabs ? carved - free_slabs : 0);
	bp_pl_line_u64(l, "pack_slabs_carved", carved);
	bp_pl_line_u64(l, "pack_discards", atomic_load(&st_discards));
	bp_pl_line_u64(l, "pack_discards_refused", atomic_load(&st_kept));
}

#else /* no jemalloc at build time: no heap, no packer */

void bp_pp_pack_report(struct bp_pl_line *l)
{
	(void)l;
}

#endif
