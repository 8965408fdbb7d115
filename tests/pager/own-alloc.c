/* SPDX-License-Identifier: MIT */
/*
 * own-alloc: the pager's own allocations never go to the program's malloc
 * (issue 32).  Under the pager preload the program's malloc is the
 * preload's, whose heap is pager memory: the library's bookkeeping
 * allocated there deadlocked Redis (map_region's calloc, while the heap
 * grew, re-entered the heap's lock) and could be evicted under a fault
 * handler that reads it.
 *
 * This program interposes malloc, calloc, realloc, free, aligned_alloc,
 * posix_memalign and strdup itself (forwarding to glibc's __libc_ names)
 * and counts the calls made from its own executable's code, which is
 * where the library lives (linked statically): during the pager's whole
 * life (create in upcall and handler modes, a region at a given address
 * as the preload's heap maps them, faults, evictions, a split by a partial
 * unmap, a policy change, pins, hints, statistics, destroy) the count must
 * stay 0.  Calls the C library makes on the library's behalf (a thread's
 * TLS in pthread_create, a FILE) come from libc's code and are not
 * counted: the preload handles those (reserve.c, tested by preload-redis).
 * It fails on 95741d6, where map_region called calloc.
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_pager_map_at */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifdef SANITIZED
int main(void)
{
	printf("SKIP: under a sanitizer the library uses the sanitizer's malloc on purpose, "
	       "and this test cannot interpose it\n");
	return 77;
}
#else

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern char __executable_start[], etext[];

static _Atomic int watching;
static _Atomic unsigned long from_exe;
static const char *_Atomic first_fn;

/* A call from this executable's code (the library, or this test) while
 * watching: counted. */
static inline void note(const char *fn, void *ra)
{
	if (atomic_load_explicit(&watching, memory_order_relaxed) &&
	    (char *)ra >= __executable_start && (char *)ra < etext) {
		atomic_fetch_add(&from_exe, 1);
		const char *none = NULL;
		atomic_compare_exchange_strong(&first_fn, &none, fn);
	}
}

/* noinline: clang inlined these into main's self-check, so the return address
 * was main's caller's and the check saw no call from here. */
__attribute__((noinline)) void *malloc(size_t n)
{
	note("malloc", __builtin_return_address(0));
	return __libc_malloc(n);
}

__attribute__((noinline)) void *calloc(size_t a, size_t b)
{
	note("calloc", __builtin_return_address(0));
	return __libc_calloc(a, b);
}

__attribute__((noinline)) void *realloc(void *q, size_t n)
{
	note("realloc", __builtin_return_address(0));
	return __libc_realloc(q, n);
}

__attribute__((noinline)) void free(void *q)
{
	note("free", __builtin_return_address(0));
	__libc_free(q);
}

__attribute__((noinline)) void *aligned_alloc(size_t al, size_t n)
{
	note("aligned_alloc", __builtin_return_address(0));
	return __libc_memalign(al, n);
}

__attribute__((noinline)) int posix_memalign(void **out, size_t al, size_t n)
{
	note("posix_memalign", __builtin_return_address(0));
	void *q = __libc_memalign(al, n);
	if (!q)
		return ENOMEM;
	*out = q;
	return 0;
}

char *strdup(const char *s)
{
	note("strdup", __builtin_return_address(0));
	size_t n = strlen(s) + 1;
	char *d = __libc_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static void watch(bool on)
{
	atomic_store(&watching, on);
}

static void life(int mode)
{
	struct bypass_pager_config c = { .budget = 32 * PAGE, .swap_size = 1024 * PAGE,
					 .mode = mode, .flags = BYPASS_PAGER_SAMPLE };
	c.swap_path = tmpdir(); /* made before watching: it forks and runs rm */
	c.flags |= BYPASS_PAGER_SWAP_TEMP;
	/* a reservation for a region at a given address (the preload's heap) */
	char *resv = mmap(NULL, 64 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	CHECK(resv != MAP_FAILED);

	watch(true);
	bypass_pager *p = NULL;
	int e = bypass_pager_create(&c, &p);
	if (e == -EPERM && mode == BYPASS_PAGER_HANDLER) {
		watch(false);
		munmap(resv, 64 * PAGE);
		printf("  handler mode not allowed here: upcall only\n");
		return;
	}
	CHECK_EQ(e, 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, 256 * PAGE, 0, (void **)&m), 0);
	CHECK_EQ(bp_pager_map_at(p, resv, 64 * PAGE, 0), 0);
	for (int pass = 0; pass < 2; pass++) /* 8 budgets: evictions, swap-ins */
		for (size_t i = 0; i < 256; i++)
			m[i * PAGE] = (char)(i + pass);
	for (size_t i = 0; i < 64; i++)
		resv[i * PAGE] = 1;
	CHECK_EQ(bypass_pager_set_policy(p, "clock"), 0);
	for (size_t i = 0; i < 256; i++)
		CHECK_EQ(m[i * PAGE], (char)(i + 1));
	CHECK_EQ(bypass_pager_pin(p, m + 5 * PAGE, 3 * PAGE, BYPASS_PAGER_PIN_WRITE), 0);
	CHECK_EQ(bypass_pager_unpin(p, m + 5 * PAGE, 3 * PAGE), 0);
	CHECK_EQ(bypass_pager_advise(p, m, 64 * PAGE, BYPASS_PAGER_ADV_SEQUENTIAL), 0);
	CHECK_EQ(bypass_pager_set_policy(p, "prefetch"), 0);
	for (size_t i = 0; i < 256; i++)
		CHECK_EQ(m[i * PAGE], (char)(i + 1));
	CHECK_EQ(bypass_pager_unmap(p, m + 100 * PAGE, 10 * PAGE), 0); /* a split */
	struct bypass_pager_stats st;
	CHECK_EQ(bypass_pager_stats(p, &st), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	watch(false);

	CHECK(st.evictions > 0 && st.faults_swapin > 0);
	munmap(resv, 64 * PAGE); /* the region at resv was unmapped by destroy */
}

int main(void)
{
	test_timeout(120);
	/* the counting works: a call from here is seen */
	watch(true);
	void *x = malloc(10);
	__asm__ volatile("" : : "r"(x) : "memory"); /* kept: not folded with free */
	watch(false);
	free(x);
	CHECK_EQ(atomic_load(&from_exe), 1);
	atomic_store(&from_exe, 0);
	atomic_store(&first_fn, NULL);

	life(BYPASS_PAGER_UPCALL);
	life(BYPASS_PAGER_ADAPTIVE);
	life(BYPASS_PAGER_HANDLER);
	unsigned long n = atomic_load(&from_exe);
	if (n)
		TEST_FAIL("the library called the program's allocator %lu times (first: %s)", n,
			  atomic_load(&first_fn));
	tmpdir_cleanup();
	return test_pass("pager/own-alloc");
}
#endif
