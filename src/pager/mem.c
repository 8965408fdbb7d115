/* SPDX-License-Identifier: MIT */
/*
 * The pager's own memory: every allocation of src/pager goes to the C
 * library's allocator, resolved once, never to whatever allocator the
 * program interposes (issue 32).
 *
 * Under the pager preload the program's malloc is the preload's, whose
 * small requests come from the heap (jemalloc over pager regions), and a
 * program linked with jemalloc (Debian's redis-server) has that same
 * jemalloc as its "next allocator".  The pager's bookkeeping then came
 * from pager memory: a region's record allocated while the heap grew went
 * map_region -> calloc -> the preload -> jemalloc -> the heap's extent hook
 * -> heap_lock, already held by this thread (Redis hung at its first DEBUG
 * POPULATE), and a record a fault handler reads could have been evicted.
 * The library never calls into a preload (DESIGN.md: system calls go
 * through core/syscall.h for the same reason); its allocations do not
 * either.
 *
 * glibc's own functions are taken from libc.so.6 itself (dlopen with
 * RTLD_NOLOAD, dlsym on that handle: the first definition in libc and its
 * dependencies, whatever precedes it in the global scope), at load time
 * (a constructor, before any preload's heap engages) or at the first call.
 * Blocks are freed by bp_pg_free only, so the two allocators never see
 * each other's pointers.  Under AddressSanitizer and ThreadSanitizer the
 * sanitizer's malloc is used instead: it must see the library's blocks to
 * check them (and the preload is not used with them).
 */
#include "core/internal.h"
#include "pager/mem.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PG_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PG_SANITIZED 1
#endif
#endif

#ifdef PG_SANITIZED

static void *(*const g_malloc)(size_t) = malloc;
static void *(*const g_calloc)(size_t, size_t) = calloc;
static void *(*const g_realloc)(void *, size_t) = realloc;
static void (*const g_free)(void *) = free;
static void *(*const g_aligned)(size_t, size_t) = aligned_alloc;

#define READY() ((void)0)

#else

static void *(*_Atomic g_malloc)(size_t);
static void *(*g_calloc)(size_t, size_t);
static void *(*g_realloc)(void *, size_t);
static void (*g_free)(void *);
static void *(*g_aligned)(size_t, size_t);

/* g_malloc is stored last: once it is set, so are the others.  Two threads
 * racing here store the same pointers. */
static void resolve(void)
{
	void *(*m)(size_t) = NULL;
	void *(*c)(size_t, size_t) = NULL;
	void *(*r)(void *, size_t) = NULL;
	void (*f)(void *) = NULL;
	void *(*a)(size_t, size_t) = NULL;
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		m = (void *(*)(size_t))dlsym(h, "malloc");
		c = (void *(*)(size_t, size_t))dlsym(h, "calloc");
		r = (void *(*)(void *, size_t))dlsym(h, "realloc");
		f = (void (*)(void *))dlsym(h, "free");
		a = (void *(*)(size_t, size_t))dlsym(h, "aligned_alloc");
		dlclose(h); /* libc stays: RTLD_NOLOAD took a reference of its own */
	}
	if (!m || !c || !r || !f || !a) {
		/* no libc.so.6 (a static program): its malloc is the C
		 * library's anyway */
		m = malloc, c = calloc, r = realloc, f = free, a = aligned_alloc;
	}
	g_calloc = c;
	g_realloc = r;
	g_free = f;
	g_aligned = a;
	atomic_store_explicit(&g_malloc, m, memory_order_release);
}

__attribute__((constructor)) static void pg_mem_init(void)
{
	if (!atomic_load_explicit(&g_malloc, memory_order_acquire))
		resolve();
}

#define READY()                                                                  \
	do {                                                                     \
		if (bp_unlikely(!atomic_load_explicit(&g_malloc, memory_order_acquire))) \
			resolve();                                               \
	} while (0)

#endif

void *bp_pg_malloc(size_t n)
{
	READY();
	return g_malloc(n);
}

void *bp_pg_calloc(size_t a, size_t b)
{
	READY();
	return g_calloc(a, b);
}

void *bp_pg_realloc(void *q, size_t n)
{
	READY();
	return g_realloc(q, n);
}

void bp_pg_free(void *q)
{
	if (!q)
		return;
	READY();
	g_free(q);
}

void *bp_pg_aligned_alloc(size_t align, size_t n)
{
	READY();
	return g_aligned(align, n);
}

char *bp_pg_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = bp_pg_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}
