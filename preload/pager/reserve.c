/* SPDX-License-Identifier: MIT */
/*
 * The reserve: a small allocator of the preload's own for the C library's
 * allocations made inside bypass, when the program's next allocator is the
 * heap's own jemalloc (issue 32).
 *
 * The library's own blocks come from glibc, never from a preload
 * (src/pager/mem.c).  But the C library allocates on the library's behalf
 * too: pthread_create() allocates the new thread's TLS vector with calloc
 * (the pager starts its handler threads when the heap maps its first
 * region, inside jemalloc's extent hook), dlopen(), fopen() ...  Those
 * calls reach the preload's malloc inside bypass, which passes them to the
 * next allocator.  In most programs that is glibc, which never calls the
 * heap's hooks.  A program linked with jemalloc (Debian's redis-server)
 * has as next allocator the same jemalloc the heap runs on, and jemalloc
 * serves any allocation made inside an extent hook from arena 0 (its
 * reentrancy rule), whose hooks are the heap's: the thread then waits on
 * the heap lock it holds.  So in that case, and only then, what is
 * allocated inside bypass comes from here.
 *
 * One range of address space reserved once (MAP_NORESERVE: pages cost
 * memory when touched), blocks of power-of-two sizes carved from it with a
 * bump pointer and kept on a free list per size when freed; a 16-byte
 * header before each pointer gives its size class and its offset in the
 * block (aligned requests).  free() knows a reserve pointer by two
 * comparisons with the range, wherever it is called.  Few blocks ever come
 * from here (a thread's TLS vector, a file's buffer): simplicity beats
 * fragmentation.
 */
#include "preload.h"
#include "pager/pager_internal.h" /* lock ranks */

#include <sched.h>

#define RES_SPAN (256ul << 20)   /* address space reserved */
#define RES_MIN_SHIFT 5           /* 32-byte blocks at least */
#define RES_CLASSES 29            /* up to 2^28 = RES_SPAN */
#define RES_MAGIC 0x52455356u      /* "RESV" */

struct hdr {
	uint32_t cls;   /* the block is 1 << cls bytes */
	uint32_t off;   /* from the block's start to the pointer */
	uint32_t magic;
	uint32_t pad;
};

_Atomic uintptr_t bp_pp_res_lo = 1, bp_pp_res_hi = 0;
_Atomic bool bp_pp_res_mode;
static uintptr_t bump;                   /* res_lock */
static void *freel[RES_CLASSES];        /* res_lock */
static _Atomic int res_lock;

static void lock(void)
{
	bp_rank_check(BP_RANK_PP_RESERVE);
	for (unsigned i = 0; atomic_exchange_explicit(&res_lock, 1, memory_order_acquire); i++) {
		if (i < 100)
			bp_cpu_relax();
		else
			sched_yield();
	}
	bp_rank_push(BP_RANK_PP_RESERVE, &res_lock);
}

static void unlock(void)
{
	bp_rank_pop(BP_RANK_PP_RESERVE, &res_lock);
	atomic_store_explicit(&res_lock, 0, memory_order_release);
}

int bp_pp_reserve_start(void)
{
	if (atomic_load(&bp_pp_res_mode))
		return 0;
	void *m = REAL(mmap)(NULL, RES_SPAN, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	bump = (uintptr_t)m;
	atomic_store(&bp_pp_res_lo, (uintptr_t)m); /* lo first: empty until hi is set */
	atomic_store(&bp_pp_res_hi, (uintptr_t)m + RES_SPAN);
	atomic_store(&bp_pp_res_mode, true);
	return 0;
}

void bp_pp_next_check(void)
{
	if (atomic_load_explicit(&bp_pp_res_mode, memory_order_relaxed))
		bp_rank_check(BP_RANK_JEMALLOC);
}

bool bp_pp_reserve_use(void)
{
	return atomic_load_explicit(&bp_pp_res_mode, memory_order_relaxed) && bp_inside();
}

static unsigned class_of(size_t need)
{
	unsigned c = RES_MIN_SHIFT;
	while (c < RES_CLASSES && ((size_t)1 << c) < need)
		c++;
	return c;
}

void *bp_pp_reserve_alloc(size_t n, size_t align, bool zero)
{
	if (align < 16)
		align = 16;
	if (n > RES_SPAN || align > RES_SPAN / 2) {
		errno = ENOMEM;
		return NULL;
	}
	size_t need = sizeof(struct hdr) + n + (align > 16 ? align : 0);
	unsigned c = class_of(need);
	if (c >= RES_CLASSES) {
		errno = ENOMEM;
		return NULL;
	}
	size_t size = (size_t)1 << c;
	lock();
	char *b = freel[c];
	bool fresh = !b;
	if (b) {
		freel[c] = *(void **)b;
	} else {
		/* blocks aligned to their size, up to a page */
		size_t al = size < PP_PAGE ? size : PP_PAGE;
		uintptr_t a = (bump + al - 1) & ~(uintptr_t)(al - 1);
		if (a + size <= atomic_load(&bp_pp_res_hi)) {
			b = (char *)a;
			bump = a + size;
		}
	}
	unlock();
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	uintptr_t u = ((uintptr_t)b + sizeof(struct hdr) + align - 1) & ~(uintptr_t)(align - 1);
	struct hdr *h = (struct hdr *)u - 1;
	h->cls = c;
	h->off = (uint32_t)(u - (uintptr_t)b);
	h->magic = RES_MAGIC;
	if (zero && !fresh)
		memset((void *)u, 0, size - h->off);
	return (void *)u;
}

static struct hdr *hdr_of(void *ptr)
{
	struct hdr *h = (struct hdr *)ptr - 1;
	if (h->magic != RES_MAGIC || h->cls >= RES_CLASSES) {
		/* not a pointer this allocator returned: a double free or a
		 * wild pointer, as glibc would report */
		static const char msg[] = "bypass: pager preload: free(): invalid pointer "
					  "in the reserve\n";
		ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)w;
		abort();
	}
	return h;
}

size_t bp_pp_reserve_size(void *ptr)
{
	struct hdr *h = hdr_of(ptr);
	return ((size_t)1 << h->cls) - h->off;
}

void bp_pp_reserve_free(void *ptr)
{
	struct hdr *h = hdr_of(ptr);
	char *b = (char *)ptr - h->off;
	unsigned c = h->cls;
	h->magic = 0;
	lock();
	*(void **)b = freel[c];
	freel[c] = b;
	unlock();
}

void *bp_pp_reserve_realloc(void *ptr, size_t n)
{
	size_t have = bp_pp_reserve_size(ptr);
	if (n <= have)
		return ptr;
	void *q = bp_pp_reserve_alloc(n, 0, false);
	if (q) {
		memcpy(q, ptr, have);
		bp_pp_reserve_free(ptr);
	}
	return q;
}

/* A fork child: the lock may have been held by a thread that is gone. */
void bp_pp_reserve_forked(void)
{
	atomic_store(&res_lock, 0);
}
