/* SPDX-License-Identifier: MIT */
/*
 * The heap: the malloc family's small requests under the budget (issue 20).
 *
 * jemalloc (Debian's libjemalloc2, linked by the preload) does the
 * allocating; what it is not asked for is its memory.  Its one arena gets
 * every extent through extent hooks, from pager regions carved out of one
 * reserved range of addresses (PROT_NONE, MAP_NORESERVE, as large as the
 * swap file): a free tests two bounds to know a heap pointer, without a
 * lock.  Why jemalloc: it is the well-kept allocator whose extent hooks
 * (jemalloc 5) hand every page of an arena to the caller while its thread
 * caches, size classes and metadata stay its own; Debian ships it; its
 * metadata (the arena's base) stays in ordinary memory, so its fork
 * handlers work in a child.  mimalloc's arenas (mi_manage_os_memory) want
 * the whole arena up front and per-thread heaps created in it.
 *
 * jemalloc is configured through its malloc_conf symbol, defined here:
 * one arena (its hooks are the ones set; other automatic arenas would be
 * created with the default hooks, their metadata in pager memory), no
 * dedicated arena for large requests (oversize_threshold:0: it would take
 * the default hooks too), no retained address space (retain:false: with
 * it, the arena carved its first slabs out of a range it had reserved
 * through the default hooks before ours were set, outside the heap's
 * range), freed pages purged at once (dirty_decay_ms:0, muzzy_decay_ms:0:
 * the forced purge hook has the pager discard them, hk_purge; without it
 * freed memory stayed dirty pager memory, written back when evicted and
 * read back when reused: SQLite's program under the preload, 2026-11-29).
 *
 * The heap engages once the process's memory outside the pager (malloc by
 * the next allocator, small anonymous mmaps) has grown past
 * BYPASS_PAGER_HEAP_AFTER (16M by default, 0 = from the start): small
 * processes (a shell that forks and execs) never use it.  A forked child
 * has the heap's memory (served from the parent's swap slots, or read back
 * before the fork where that cannot work: libbypass-pager(3)) and goes on
 * using it (bp_pp_heap_forked).
 *
 * The reserved range is mapped as pager regions 32 MiB at a time (grow()),
 * and extents are carved from it: few regions, whatever jemalloc's extent
 * sizes.
 *
 * Heap regions are served by the pager's handler threads where the process
 * may (root, vm.unprivileged_userfaultfd = 1, /dev/userfaultfd): then a
 * system call on any heap buffer works (getdents, poll, futex ...), not
 * only the ones the preload pins around.  Otherwise they are upcall
 * regions like the large ones.
 */
#include "preload.h"
#include "pager/pager_internal.h" /* bp_pager_map_at */

#include <pthread.h>

#if BYPASS_PP_JEMALLOC
#include <jemalloc/jemalloc.h>

/* read by jemalloc when it initializes (before this library's constructor) */
EXPORT const char *malloc_conf =
	"narenas:1,oversize_threshold:0,retain:false,dirty_decay_ms:0,muzzy_decay_ms:0";
#endif

/* ------------------------------------------------------------ state */

enum { HEAP_OFF = 0, HEAP_ON = 1, HEAP_DEAD = 2 };
static _Atomic int heap_state;         /* HEAP_*: not engaged yet, in use, never again */
_Atomic uintptr_t bp_pp_heap_lo = 1, bp_pp_heap_hi = 0; /* the reserved range */
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
#if BYPASS_PP_JEMALLOC
static uintptr_t heap_bump;            /* carved up to here (heap_lock) */
static uintptr_t heap_mapped;          /* pager regions up to here (heap_lock) */
static uintptr_t heap_top;             /* jemalloc's part of the range ends here */
static uintptr_t pack_bump, pack_mapped; /* the packer's part: the same (pack.c's carve lock) */
#define HEAP_CHUNK (32ul << 20)        /* the reserved range is mapped this much at a time */
#define PACK_CHUNK (2ul << 20)         /* the packer's part: a program may pack little */
/* bypass_pager_map flags of heap regions, known once the first region is
 * mapped (the two parts grow under two locks: either may be the first) */
static _Atomic unsigned heap_flags;
static _Atomic bool heap_flags_known;
static _Atomic int64_t outside;        /* net bytes outside the pager */
static __thread int64_t outside_local __attribute__((tls_model("initial-exec")));
#endif

bool bp_pp_heap_on(void)
{
	return atomic_load_explicit(&heap_state, memory_order_acquire) == HEAP_ON;
}

#if BYPASS_PP_JEMALLOC

bool bp_pp_heap_counting(void)
{
	return bp_pp_cfg.heap && bp_pp_cfg.enabled &&
	       atomic_load_explicit(&heap_state, memory_order_relaxed) == HEAP_OFF;
}

/* ------------------------------------------------------------ extent hooks */

/*
 * Map [*mapped, end) of the reserved range as pager regions, in chunks of
 * chunk bytes up to hi (or just what is needed when the swap file has no
 * room for a chunk), each recorded in the preload's table (pinning around
 * system calls); *mapped advances.  A mapped page counts against the swap
 * file's size whether touched or not (bypass_pager_map).  The part's lock
 * held (heap_lock, or the packer's carve lock).  0 or -errno.
 */
static int grow(bypass_pager *p, uintptr_t *mapped, uintptr_t end, uintptr_t hi, size_t chunk)
{
	while (*mapped < end) {
		size_t want = ((end - *mapped) + chunk - 1) & ~(uintptr_t)(chunk - 1);
		if (want > hi - *mapped)
			want = hi - *mapped;
		size_t need = (end - *mapped + PP_PAGE - 1) & ~(uintptr_t)(PP_PAGE - 1);
		int e = -ENOSPC;
		for (size_t len = want; e && len >= need; len = len == need ? 0 : need) {
			bp_enter();
			e = -EPERM;
			bool known = atomic_load(&heap_flags_known);
			unsigned flags = known ? atomic_load(&heap_flags) : BYPASS_PAGER_MAP_HANDLER;
			if (flags)
				e = bp_pager_map_at(p, (void *)*mapped, len,
						    BYPASS_PAGER_MAP_HANDLER);
			if (!known) { /* the first region says what is allowed */
				flags = e == -EPERM ? 0 : BYPASS_PAGER_MAP_HANDLER;
				atomic_store(&heap_flags, flags);
				atomic_store(&heap_flags_known, true);
			}
			if (e == -EPERM && !flags)
				e = bp_pager_map_at(p, (void *)*mapped, len, 0);
			bp_leave();
			if (!e) {
				struct bp_pp_region r = { *mapped, *mapped + len, 0, PP_HEAP };
				if (bp_pp_lock()) {
					e = bp_pp_add(&r);
					bp_pp_unlock();
				} else {
					e = -EDEADLK;
				}
				if (e) { /* not pinnable: back to the reservation */
					bp_enter();
					bypass_pager_unmap(p, (void *)*mapped, len);
					bp_leave();
					REAL(mmap)((void *)*mapped, len, PROT_NONE,
						   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
							   MAP_FIXED,
						   -1, 0);
					return e;
				}
				bp_debug("bypass: pager preload: heap region %#lx + %zu",
					 (unsigned long)*mapped, len);
				*mapped += len;
			}
		}
		if (e)
			return e;
	}
	return 0;
}

/*
 * A new extent: size bytes at the given alignment (at new_addr if set:
 * only where the carving stands, so that jemalloc can grow in place).
 * Runs in jemalloc under its arena's locks, with jemalloc's reentrancy
 * level raised: nothing below may enter jemalloc (reserve_if_needed()).
 */
static void *hk_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t align,
		      bool *zero, bool *commit, unsigned ind)
{
	(void)h;
	(void)ind;
	bypass_pager *p = bp_pp_pager();
	if (!p || !size || (size & (PP_PAGE - 1)))
		return NULL;
	if (align < PP_PAGE)
		align = PP_PAGE;
	bp_rank_push(BP_RANK_JEMALLOC, h); /* called inside jemalloc */
	bp_mutex_lock(&heap_lock, BP_RANK_PP_HEAP);
	uintptr_t hi = heap_top, a;
	if (new_addr)
		a = (uintptr_t)new_addr == heap_bump ? heap_bump : 0;
	else
		a = (heap_bump + align - 1) & ~(uintptr_t)(align - 1);
	void *out = NULL;
	if (a && a >= heap_bump && a + size > a && a + size <= hi &&
	    grow(p, &heap_mapped, a + size, hi, HEAP_CHUNK) == 0) {
		heap_bump = a + size;
		out = (void *)a;
		*zero = true;   /* pager pages never handed out before read as zeros */
		*commit = true;
	}
	bp_mutex_unlock(&heap_lock, BP_RANK_PP_HEAP);
	bp_rank_pop(BP_RANK_JEMALLOC, h);
	return out;
}

/*
 * A new slab of len bytes for the packer (pack.c), mapped: its address, or
 * 0 (its part of the range is used up, or the pager cannot map it).  Called
 * under the packer's carve lock only (pack.c), which its fork handler
 * takes: not the heap lock, which can have none (hk_alloc runs under
 * jemalloc's arena locks, which jemalloc's own handler takes).
 */
uintptr_t bp_pp_heap_carve_pack(size_t len)
{
	bypass_pager *p = bp_pp_pager();
	if (!p)
		return 0;
	uintptr_t out = 0;
	uintptr_t hi = atomic_load(&bp_pp_pack_hi);
	if (pack_bump + len > pack_bump && pack_bump + len <= hi &&
	    grow(p, &pack_mapped, pack_bump + len, hi, PACK_CHUNK) == 0) {
		out = pack_bump;
		pack_bump += len;
	}
	return out;
}

/* Giving extents back: refused (jemalloc keeps them for reuse). */
static bool hk_dalloc(extent_hooks_t *h, void *addr, size_t size, bool committed, unsigned ind)
{
	(void)h, (void)addr, (void)size, (void)committed, (void)ind;
	return true;
}

static void hk_destroy(extent_hooks_t *h, void *addr, size_t size, bool committed,
		       unsigned ind)
{
	(void)h, (void)addr, (void)size, (void)committed, (void)ind;
}

/* Pager pages are always committed. */
static bool hk_commit(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len,
		      unsigned ind)
{
	(void)h, (void)addr, (void)size, (void)off, (void)len, (void)ind;
	return false;
}

/* Decommit and lazy purge: not done (true: refused). */
static bool hk_refuse(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len,
		      unsigned ind)
{
	(void)h, (void)addr, (void)size, (void)off, (void)len, (void)ind;
	return true;
}

/*
 * Forced purge: the pager discards the pages (bp_pager_discard: no write of
 * freed memory when it is evicted, no read of it when jemalloc hands it out
 * again: it reads as zeros, which is what a forced purge promises).  A page
 * the pager could not discard (locked, pinned, parked, under write-back)
 * keeps its data: then refused (true), and jemalloc keeps the range dirty.
 * Called inside jemalloc (its reentrancy raised): the pager takes its evict
 * lock and page locks (trylock), nothing that enters jemalloc.
 */
static bool hk_purge(extent_hooks_t *h, void *addr, size_t size, size_t off, size_t len,
		     unsigned ind)
{
	(void)size, (void)ind;
	bypass_pager *p = bp_pp_pager();
	if (!p)
		return true;
	bp_rank_push(BP_RANK_JEMALLOC, h);
	bp_enter();
	int e = bp_pager_discard(p, (uintptr_t)addr + off, len);
	bp_leave();
	bp_rank_pop(BP_RANK_JEMALLOC, h);
	return e != 0;
}

/* Splitting and merging extents: allowed (false), the pages do not care. */
static bool hk_split(extent_hooks_t *h, void *addr, size_t size, size_t a, size_t b,
		     bool committed, unsigned ind)
{
	(void)h, (void)addr, (void)size, (void)a, (void)b, (void)committed, (void)ind;
	return false;
}

static bool hk_merge(extent_hooks_t *h, void *a, size_t sa, void *b, size_t sb, bool committed,
		     unsigned ind)
{
	(void)h, (void)a, (void)sa, (void)b, (void)sb, (void)committed, (void)ind;
	return false;
}

static extent_hooks_t hooks = {
	.alloc = hk_alloc, .dalloc = hk_dalloc, .destroy = hk_destroy, .commit = hk_commit,
	.decommit = hk_refuse, .purge_lazy = hk_refuse, .purge_forced = hk_purge,
	.split = hk_split, .merge = hk_merge,
};

/* ------------------------------------------------------------ engaging */

/*
 * Nothing under the extent hook may enter jemalloc: jemalloc serves an
 * allocation made inside a hook from arena 0 (its reentrancy rule), whose
 * hooks are these, and the thread would wait on the heap lock it holds.
 * The library's own blocks come from glibc (src/pager/mem.c); what the C
 * library allocates inside bypass (a new thread's TLS, a FILE) goes to the
 * next allocator, which is this jemalloc in a program linked with it
 * (Debian's redis-server): then it goes to the reserve (reserve.c).
 * 0, or -errno if the reserve is needed and cannot be made.
 */
static int reserve_if_needed(void)
{
	Dl_info next, mine;
	if (!bp_pl_real_malloc || !dladdr((void *)bp_pl_real_malloc, &next) ||
	    !dladdr((void *)mallocx, &mine))
		return -ENOENT;
	if (next.dli_fbase != mine.dli_fbase)
		return 0;
	bp_info("bypass: pager preload: the program's allocator is the heap's jemalloc (%s): "
		"what is allocated inside bypass comes from the reserve", mine.dli_fname);
	int e = bp_pp_reserve_start();
	if (e)
		bp_warn("bypass: pager preload: no reserve (%s); the heap stays unpaged",
			strerror(-e));
	return e;
}

static void engage(void)
{
	int st = HEAP_OFF;
	if (!atomic_compare_exchange_strong(&heap_state, &st, HEAP_DEAD))
		return; /* another thread engages, or it is decided */
	bool ok = false;
	bp_enter();
	bypass_pager *p = bp_pp_pager();
	unsigned narenas = 0;
	size_t oversize = 1, sz = sizeof(narenas);
	if (p && mallctl("opt.narenas", &narenas, &sz, NULL, 0) == 0 && narenas == 1 &&
	    (sz = sizeof(oversize), mallctl("opt.oversize_threshold", &oversize, &sz, NULL, 0)) ==
		    0 &&
	    oversize == 0 && reserve_if_needed() == 0) {
		size_t len = bp_pp_cfg.swap_size & ~(PP_PAGE - 1);
		void *m = REAL(mmap)(NULL, len, PROT_NONE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m != MAP_FAILED) {
			heap_bump = heap_mapped = (uintptr_t)m;
			/* the top quarter for the packer (pack.c), where it can */
			uintptr_t mid = ((uintptr_t)m + len - len / 4 + PACK_SLAB - 1) &
					~(uintptr_t)(PACK_SLAB - 1);
			heap_top = (uintptr_t)m + len;
			if (mid < heap_top && heap_top - mid >= 4 * PACK_SLAB &&
			    bp_pp_pack_start(mid, heap_top) == 0) {
				heap_top = mid;
				pack_bump = pack_mapped = mid;
			}
			/* lo first: [lo, hi) stays empty until hi is set */
			atomic_store(&bp_pp_heap_lo, (uintptr_t)m);
			atomic_store(&bp_pp_heap_hi, (uintptr_t)m + len);
			extent_hooks_t *hp = &hooks;
			ok = mallctl("arena.0.extent_hooks", NULL, NULL, &hp, sizeof(hp)) == 0;
		}
	} else if (p) {
		bp_warn("bypass: pager preload: jemalloc runs with more than one arena or a "
			"dedicated large arena (malloc_conf not taken?); the heap stays unpaged");
	}
	bp_leave();
	if (ok)
		atomic_store_explicit(&heap_state, HEAP_ON, memory_order_release);
	bp_info("bypass: pager preload: heap %s: [%#lx, %#lx)", ok ? "engaged" : "not engaged",
		(unsigned long)atomic_load(&bp_pp_heap_lo), (unsigned long)atomic_load(&bp_pp_heap_hi));
}

/*
 * Count bytes outside; true once they have passed BYPASS_PAGER_HEAP_AFTER.
 */
static bool count_outside(int64_t bytes)
{
	outside_local += bytes;
	if (outside_local < (int64_t)(256 << 10) && outside_local > -(int64_t)(256 << 10))
		return false;
	int64_t now = atomic_fetch_add_explicit(&outside, outside_local, memory_order_relaxed) +
		      outside_local;
	outside_local = 0;
	return now >= (int64_t)bp_pp_cfg.heap_after;
}

/*
 * Passed inside an mmap call: the heap engages at the next malloc or free
 * that reaches the next allocator (bp_pp_heap_outside), not there.  The
 * caller of mmap is most often jemalloc itself, growing an arena with its
 * locks held; engaging there made the pager (its threads: pthread_create
 * callocs a new thread's TLS vector) and called mallctl, re-entering
 * jemalloc, which deadlocked on its own lock when the calloc needed it
 * (Debian's redis-server under the realworld suite, about 1 start in 1,000:
 * tree_setup's setenv -> malloc -> jemalloc -> mmap -> engage ->
 * pthread_create -> calloc -> jemalloc's held mutex).
 */
static _Atomic bool engage_due;

void bp_pp_heap_outside(int64_t bytes)
{
	if (!bp_pp_heap_counting())
		return;
	if (atomic_load_explicit(&engage_due, memory_order_relaxed) || count_outside(bytes))
		engage();
}

void bp_pp_heap_outside_mapped(int64_t bytes)
{
	if (bp_pp_heap_counting() && count_outside(bytes))
		atomic_store_explicit(&engage_due, true, memory_order_relaxed);
}

void bp_pp_heap_start(void)
{
	if (bp_pp_cfg.heap && !bp_pp_cfg.heap_after)
		engage();
}

/* The heap's calls (bp_pp_heap_alloc, _free, _size, _realloc): pack.c,
 * which sends each to the packer or to jemalloc. */

#else /* no jemalloc at build time: the heap never engages */

bool bp_pp_heap_counting(void)
{
	return false;
}

void bp_pp_heap_outside(int64_t bytes)
{
	(void)bytes;
}

void bp_pp_heap_outside_mapped(int64_t bytes)
{
	(void)bytes;
}

void bp_pp_heap_start(void)
{
}

void *bp_pp_heap_alloc(size_t n, size_t align, bool zero)
{
	(void)n, (void)align, (void)zero;
	return NULL;
}

void bp_pp_heap_free(void *ptr)
{
	(void)ptr;
}

size_t bp_pp_heap_size(void *ptr)
{
	(void)ptr;
	return 0;
}

void *bp_pp_heap_realloc(void *ptr, size_t n)
{
	(void)ptr, (void)n;
	return NULL;
}

#endif

/* A forked child: jemalloc's state describes the heap's pages (its own
 * fork handlers keep it whole) and the packer's (its handlers held its
 * locks, carve included): it goes on, its new extents and slabs carved
 * from the rest of the reserved range.  Usually the child keeps the pager
 * (the parent's evicted pages served from the parent's swap slots: the
 * regions go on as pager regions); where the library read every evicted
 * page back instead (pager.md, "Fork"), they are ordinary memory here and
 * the new ones are regions of the child's own pager (created on first
 * use; init.c's atfork_child).  heap_lock is reset, as the packer's
 * locks are. */
void bp_pp_heap_forked(void)
{
	pthread_mutex_init(&heap_lock, NULL);
#if BYPASS_PP_JEMALLOC
	bp_pp_pack_forked();
#endif
}
