/* SPDX-License-Identifier: MIT */
/*
 * The malloc family: large requests become regions; once the heap is engaged
 * (heap.c) the rest comes from it, before that (and where it has no room)
 * from the next allocator.  Inside bypass everything goes to the next
 * allocator, or to the reserve (reserve.c) when that is the heap's own
 * jemalloc.
 */
#include "preload.h"

#include <malloc.h>

/* The next allocator's allocating calls: where it is the heap's jemalloc,
 * entering it is ranked (no heap lock may be held: pager_internal.h). */
#define NEXT(fn) (bp_pp_next_check(), bp_pl_real_##fn)

/*
 * While malloc itself is being resolved, dlsym may allocate: such requests
 * come from this static arena (never freed).
 */
static _Alignas(64) char boot[64 << 10];
static size_t boot_used;
static _Atomic int resolving;

static void *boot_alloc(size_t n)
{
	n = (n + 63) & ~(size_t)63;
	if (boot_used + n > sizeof(boot))
		return NULL;
	void *p = boot + boot_used;
	boot_used += n;
	return p;
}

static bool in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

static bool ready(void)
{
	if (bp_likely(bp_pl_real_malloc && bp_pl_real_free))
		return true;
	if (atomic_exchange(&resolving, 1))
		return false; /* dlsym allocating */
	bp_pl_resolve();
	atomic_store(&resolving, 0);
	return bp_pl_real_malloc != NULL;
}

static inline bool large(size_t n)
{
	return !PASS() && n >= bp_pp_cfg.threshold;
}

/* A small request from the heap, if it is engaged (NULL: use the next
 * allocator). */
static inline void *heap(size_t n, size_t align, bool zero)
{
	if (PASS() || !bp_pp_heap_on())
		return NULL;
	return bp_pp_heap_alloc(n, align, zero);
}

/* The next allocator's block p was taken (sign 1) or is given back (-1):
 * counted until the heap engages. */
static inline void outside(void *p, int sign)
{
	if (p && !PASS() && bp_pp_heap_counting() && bp_pl_real_malloc_usable_size)
		bp_pp_heap_outside(sign * (int64_t)bp_pl_real_malloc_usable_size(p));
}

/*
 * A region for n bytes at the given alignment (0 or a power of two):
 * the pointer, or NULL (and the caller uses the next allocator).
 */
static void *region_alloc(size_t n, size_t align)
{
	size_t extra = align > PP_PAGE ? align - PP_PAGE : 0;
	if (n > SIZE_MAX - extra - PP_PAGE)
		return NULL;
	size_t len = (n + extra + PP_PAGE - 1) & ~(PP_PAGE - 1);
	void *m;
	if (bp_pp_map(len, &m))
		return NULL;
	uintptr_t user = ((uintptr_t)m + (align > PP_PAGE ? align - 1 : 0)) &
			 ~(align > PP_PAGE ? align - 1 : 0);
	struct bp_pp_region r = { (uintptr_t)m, (uintptr_t)m + len, user, PP_MALLOC };
	int e = -ENOMEM;
	if (bp_pp_lock()) {
		e = bp_pp_add(&r);
		bp_pp_unlock();
	}
	if (e) {
		bp_pp_unmap(r.start, r.end);
		return NULL;
	}
	return (void *)user;
}

/* The region a malloc pointer came from: 1 and a copy, else 0. */
static int region_of(void *ptr, struct bp_pp_region *out)
{
	uintptr_t a = (uintptr_t)ptr;
	if (a & (PP_PAGE - 1) || !bp_pp_maybe(ptr, 1))
		return 0; /* every region pointer is page-aligned */
	if (!bp_pp_lock())
		return 0;
	struct bp_pp_region *r = bp_pp_find(a);
	int found = r && (r->kind & PP_MALLOC) && r->user == a;
	if (found)
		*out = *r;
	bp_pp_unlock();
	return found;
}

/* A stale region (a fork child's copy of the parent's) is ordinary memory
 * here: unmapped as such. */
static void region_free(const struct bp_pp_region *r)
{
	if (bp_pp_lock()) {
		bp_pp_forget(r->start, r->end);
		bp_pp_unlock();
	}
	if (r->kind & PP_STALE)
		REAL(munmap)((void *)r->start, r->end - r->start);
	else
		bp_pp_unmap(r->start, r->end);
}

EXPORT void *malloc(size_t n)
{
	if (bp_unlikely(!ready()))
		return boot_alloc(n);
	if (large(n)) {
		void *p = region_alloc(n, 0);
		if (p)
			return p;
	}
	void *p = heap(n, 0, false);
	if (p)
		return p;
	if (bp_pp_reserve_use())
		return bp_pp_reserve_alloc(n, 0, false);
	p = NEXT(malloc)(n);
	outside(p, 1);
	return p;
}

EXPORT void *calloc(size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	if (bp_unlikely(!ready() || !bp_pl_real_calloc))
		return boot_alloc(n); /* static: zeroed */
	if (large(n)) {
		void *p = region_alloc(n, 0); /* reads as zeros */
		if (p)
			return p;
	}
	void *p = heap(n, 0, true);
	if (p)
		return p;
	if (bp_pp_reserve_use())
		return bp_pp_reserve_alloc(n, 0, true);
	p = NEXT(calloc)(a, b);
	outside(p, 1);
	return p;
}

EXPORT void free(void *ptr)
{
	if (!ptr || in_boot(ptr))
		return;
	if (bp_pp_in_heap(ptr)) {
		bp_pp_heap_free(ptr);
		return;
	}
	if (bp_pp_in_reserve(ptr)) {
		bp_pp_reserve_free(ptr);
		return;
	}
	struct bp_pp_region r;
	if (bp_pp_cfg.enabled && region_of(ptr, &r)) {
		region_free(&r);
		return;
	}
	if (bp_likely(ready())) {
		outside(ptr, -1);
		bp_pl_real_free(ptr);
	}
}

static size_t usable(const struct bp_pp_region *r)
{
	return r->end - r->user;
}

EXPORT void *realloc(void *ptr, size_t n)
{
	if (!ptr)
		return malloc(n);
	if (bp_unlikely(!ready()))
		return NULL;
	struct bp_pp_region r;
	if (bp_pp_in_heap(ptr)) {
		if (!n) { /* glibc: realloc(p, 0) frees and returns NULL */
			bp_pp_heap_free(ptr);
			return NULL;
		}
		size_t have = bp_pp_heap_size(ptr);
		void *q = NULL;
		if (bp_pp_reserve_use()) { /* jemalloc must not be entered */
			q = bp_pp_reserve_alloc(n, 0, false);
			if (q) {
				memcpy(q, ptr, n < have ? n : have);
				bp_pp_heap_free(ptr);
			}
			return q;
		}
		if (large(n))
			q = region_alloc(n > 2 * have ? n : 2 * have, 0); /* room, as below */
		if (!q && !large(n))
			q = bp_pp_heap_realloc(ptr, n);
		if (q && !large(n))
			return q; /* moved or resized by jemalloc */
		if (!q)
			q = NEXT(malloc)(n);
		if (!q)
			return NULL; /* the old block is untouched */
		memcpy(q, ptr, n < have ? n : have);
		bp_pp_heap_free(ptr);
		return q;
	}
	if (bp_pp_in_reserve(ptr)) {
		if (!n) {
			bp_pp_reserve_free(ptr);
			return NULL;
		}
		return bp_pp_reserve_realloc(ptr, n);
	}
	if (in_boot(ptr)) {
		void *q = malloc(n);
		if (q)
			memcpy(q, ptr, n < (size_t)(boot + sizeof(boot) - (char *)ptr)
					 ? n : (size_t)(boot + sizeof(boot) - (char *)ptr));
		return q;
	}
	if (bp_pp_cfg.enabled && region_of(ptr, &r)) {
		if (r.kind & PP_STALE) {
			/* A fork child's copy of the parent's: moved into memory
			 * of its own, the copy unmapped. */
			if (!n) {
				region_free(&r);
				return NULL;
			}
			size_t have = usable(&r);
			void *q = malloc(n);
			if (!q)
				return NULL; /* the old block is untouched */
			memcpy(q, ptr, n < have ? n : have);
			region_free(&r);
			return q;
		}
		if (!n) { /* glibc: realloc(p, 0) frees and returns NULL */
			region_free(&r);
			return NULL;
		}
		size_t have = usable(&r);
		if (n <= have && n >= bp_pp_cfg.threshold) {
			/* Shrink in place: give back the whole pages past n. */
			uintptr_t keep = (r.user + n + PP_PAGE - 1) & ~(PP_PAGE - 1);
			if (keep < r.end && bp_pp_unmap(keep, r.end) == 0 && bp_pp_lock()) {
				bp_pp_forget(keep, r.end);
				bp_pp_unlock();
			}
			return ptr;
		}
		/*
		 * Growing moves (a region cannot grow in place): leave room
		 * for as much again, so that a block grown in small steps
		 * (a vector, a Python list) is copied log2 times, not at
		 * every step.  The pages of the room cost nothing until
		 * touched; where the swap file has no room for them, none.
		 */
		void *q = NULL;
		if (n >= bp_pp_cfg.threshold) {
			if (n > have && n <= SIZE_MAX / 2)
				q = region_alloc(n > 2 * have ? n : 2 * have, 0);
			if (!q)
				q = region_alloc(n, 0);
		}
		if (!q)
			q = heap(n, 0, false);
		if (!q)
			q = NEXT(malloc)(n);
		if (!q)
			return NULL; /* the old block is untouched */
		memcpy(q, ptr, n < have ? n : have);
		region_free(&r);
		return q;
	}
	if (large(n)) {
		size_t have = bp_pl_real_malloc_usable_size ? bp_pl_real_malloc_usable_size(ptr) : 0;
		void *q = NULL;
		if (have && n > have && n <= SIZE_MAX / 2)
			q = region_alloc(n > 2 * have ? n : 2 * have, 0); /* room, as above */
		if (have && !q)
			q = region_alloc(n, 0);
		if (q) {
			memcpy(q, ptr, n < have ? n : have);
			outside(ptr, -1);
			bp_pl_real_free(ptr);
			return q;
		}
	}
	if (n && bp_pp_reserve_use() && bp_pl_real_malloc_usable_size) {
		/* the next allocator is the heap's jemalloc: not entered */
		size_t have = bp_pl_real_malloc_usable_size(ptr);
		void *q = bp_pp_reserve_alloc(n, 0, false);
		if (q) {
			memcpy(q, ptr, n < have ? n : have);
			bp_pl_real_free(ptr);
		}
		return q;
	}
	if (n && !PASS() && bp_pp_heap_on() && bp_pl_real_malloc_usable_size) {
		/* the next allocator's block moves into the heap as it changes */
		size_t have = bp_pl_real_malloc_usable_size(ptr);
		void *q = heap(n, 0, false);
		if (q) {
			memcpy(q, ptr, n < have ? n : have);
			bp_pl_real_free(ptr);
			return q;
		}
	}
	outside(ptr, -1);
	void *q = NEXT(realloc)(ptr, n);
	outside(q ? q : n ? ptr : NULL, 1);
	return q;
}

EXPORT void *reallocarray(void *ptr, size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, n);
}

static bool pow2(size_t a)
{
	return a && !(a & (a - 1));
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (!pow2(align) || align % sizeof(void *))
		return EINVAL;
	if (ready() && large(n)) {
		void *p = region_alloc(n, align);
		if (p) {
			*out = p;
			return 0;
		}
	}
	if (!ready())
		return ENOMEM;
	void *p = heap(n, align, false);
	if (!p && bp_pp_reserve_use() && !(p = bp_pp_reserve_alloc(n, align, false)))
		return ENOMEM;
	if (p) {
		*out = p;
		return 0;
	}
	int e = NEXT(posix_memalign)(out, align, n);
	if (!e)
		outside(*out, 1);
	return e;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (!pow2(align)) { /* glibc 2.36 accepts any power of two */
		errno = EINVAL;
		return NULL;
	}
	if (ready() && large(n)) {
		void *p = region_alloc(n, align);
		if (p)
			return p;
	}
	void *p = ready() ? heap(n, align, false) : NULL;
	if (!p && ready() && bp_pp_reserve_use())
		return bp_pp_reserve_alloc(n, align, false);
	if (!p && ready()) {
		p = NEXT(aligned_alloc)(align, n);
		outside(p, 1);
	}
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (ready() && large(n) && pow2(align)) {
		void *p = region_alloc(n, align);
		if (p)
			return p;
	}
	void *p = ready() && pow2(align) ? heap(n, align, false) : NULL;
	if (!p && ready() && pow2(align) && bp_pp_reserve_use())
		return bp_pp_reserve_alloc(n, align, false);
	if (!p && ready()) {
		p = NEXT(memalign)(align, n);
		outside(p, 1);
	}
	return p;
}

EXPORT void *valloc(size_t n)
{
	if (ready() && large(n)) {
		void *p = region_alloc(n, PP_PAGE);
		if (p)
			return p;
	}
	void *p = ready() ? heap(n, PP_PAGE, false) : NULL;
	if (!p && ready() && bp_pp_reserve_use())
		return bp_pp_reserve_alloc(n, PP_PAGE, false);
	if (!p && ready()) {
		p = NEXT(valloc)(n);
		outside(p, 1);
	}
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	size_t r = (n + PP_PAGE - 1) & ~(PP_PAGE - 1);
	if (ready() && large(r)) {
		void *p = region_alloc(r ? r : PP_PAGE, PP_PAGE);
		if (p)
			return p;
	}
	void *p = ready() ? heap(r ? r : PP_PAGE, PP_PAGE, false) : NULL;
	if (!p && ready() && bp_pp_reserve_use())
		return bp_pp_reserve_alloc(r ? r : PP_PAGE, PP_PAGE, false);
	if (!p && ready()) {
		p = NEXT(pvalloc)(n);
		outside(p, 1);
	}
	return p;
}

EXPORT size_t malloc_usable_size(void *ptr)
{
	struct bp_pp_region r;
	if (!ptr || in_boot(ptr))
		return 0;
	if (bp_pp_in_heap(ptr))
		return bp_pp_heap_size(ptr);
	if (bp_pp_in_reserve(ptr))
		return bp_pp_reserve_size(ptr);
	if (bp_pp_cfg.enabled && region_of(ptr, &r))
		return usable(&r);
	return ready() ? bp_pl_real_malloc_usable_size(ptr) : 0;
}
