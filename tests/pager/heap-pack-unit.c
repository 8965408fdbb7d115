/* SPDX-License-Identifier: MIT */
/*
 * heap-pack-unit: the preload heap's packer (preload/pager/pack.c) linked
 * alone, where the sanitizers see it: under the preload their malloc comes
 * first and the packer is never reached (heap-pack skips there).  pack.c is
 * included whole; what it calls outside itself is stubbed here: heap.c's
 * carve (slabs bumped out of a plain mmap of CARVE_MAX slabs, then none:
 * the packer falls back), the pager (a dummy), its discard (records each
 * call; zeroes the slab with MADV_DONTNEED, or one call in three refuses
 * with -EBUSY and the slab keeps its bytes), and jemalloc's mallocx,
 * dallocx, sallocx, rallocx, nallocx (the C library's malloc, counted;
 * nallocx: jemalloc's size classes).
 *
 * Checked, one thread: BYPASS_PAGER_HEAP_PACK=0 (nothing packed); usable
 * sizes of every request in (4 KiB, 16 KiB] (rounded up to 16); the bounds
 * (4096, 16385 and alignments above 16 go to jemalloc); SQLite's slots end
 * to end; calloc's zeros in fresh slots (known zero), reused ones, slabs
 * whose discard was refused and slabs discarded; emptied slabs discarded
 * whole (slab-aligned, inside the range), the class's last one with room
 * kept; realloc across the bounds both ways keeps the data; a double free
 * and a free inside a slot abort; the carve used up (jemalloc takes over);
 * the statistics (bp_pp_pack_report).  Then 4 threads (heap-stress.h)
 * with a third of the frees from another thread, while the main thread
 * forks 4 children that reset the packer's locks (bp_pp_pack_forked, as
 * heap.c's child handler does; the parent's fork handlers held them across
 * the fork) and allocate, check and free blocks of every class; then
 * forks while a thread carves (fork_in_carve: no child sees a carve half
 * done, the packer's fork handler takes its carve lock); at the end
 * every slab's bitmap agrees with its count, no slot and no jemalloc block
 * is left.  Skips where the preload is built without jemalloc.
 * TEST_LABELS: threads
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>

#if !BYPASS_PP_JEMALLOC

int main(void)
{
	SKIP("the preload is built without jemalloc: no heap, no packer");
}

#else

#include "pager/pack.c"

#include <malloc.h>
#include <sys/wait.h>

#define PACK_OPS 100000 /* per thread */

/* free(NULL) never reaches the heap (alloc.c) */
static void heap_free(void *p)
{
	if (p)
		bp_pp_heap_free(p);
}

#define HS_MALLOC(n) bp_pp_heap_alloc(n, 0, false)
#define HS_CALLOC(n) bp_pp_heap_alloc(n, 0, true)
#define HS_REALLOC(p, n) bp_pp_heap_realloc(p, n)
#define HS_FREE(p) heap_free(p)
#include "pager/heap-stress.h"

/* ThreadSanitizer's lock-order checker holds at most 64 locks a thread;
 * the packer's fork handler holds every class's (768) and the pool's.  Its
 * race detection stays on; the packer's locks are leaves (pack.c). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "detect_deadlocks=0";
}

PL_REAL_DEFINE(PL_REAL_FUNCS)
PL_NAMES("pager (heap-pack-unit)", "the packer stays off")

/* ------------------------------------------------------------ stubs */

#define CARVE_MAX 2048u /* slabs: 512 MiB of address space */
static uintptr_t carve_lo;
static uint32_t carve_n, carve_limit = CARVE_MAX;
static pthread_mutex_t carve_lock = PTHREAD_MUTEX_INITIALIZER;
/* carves in progress (heap.c's maps a region, then moves its carving point:
 * a fork between the two leaves the child a carve half done), and how long
 * each lasts (fork_in_carve: the window widened) */
static _Atomic int carving;
static _Atomic unsigned carve_us;

uintptr_t bp_pp_heap_carve_pack(size_t len)
{
	if (len != PACK_SLAB)
		abort();
	atomic_fetch_add(&carving, 1);
	unsigned us = atomic_load(&carve_us);
	if (us)
		usleep(us);
	uintptr_t a = 0;
	pthread_mutex_lock(&carve_lock);
	if (carve_n < carve_limit)
		a = carve_lo + (uintptr_t)carve_n++ * PACK_SLAB;
	pthread_mutex_unlock(&carve_lock);
	atomic_fetch_sub(&carving, 1);
	return a;
}

bool bp_pp_heap_on(void)
{
	return true;
}

static char dummy_pager;
bypass_pager *bp_pp_pager(void)
{
	return (bypass_pager *)&dummy_pager;
}

static _Atomic unsigned discard_calls, discard_refused, discard_bad;

int bp_pager_discard(struct bypass_pager *p, uintptr_t a, size_t len)
{
	unsigned n = atomic_fetch_add(&discard_calls, 1);
	if (p != (bypass_pager *)&dummy_pager || len != PACK_SLAB || (a - carve_lo) % PACK_SLAB ||
	    a < carve_lo || a >= carve_lo + (uintptr_t)CARVE_MAX * PACK_SLAB)
		atomic_fetch_add(&discard_bad, 1);
	if (n % 3 == 2) { /* refused: the slab keeps its bytes */
		atomic_fetch_add(&discard_refused, 1);
		return -EBUSY;
	}
	return madvise((void *)a, len, MADV_DONTNEED) ? -errno : 0;
}

/* jemalloc's calls over the C library's malloc */
static _Atomic long je_live, je_bad;

void *mallocx(size_t size, int flags)
{
	size_t al = (size_t)1 << (flags & 0x3f);
	if (al < 16)
		al = 16;
	void *q = NULL;
	if (posix_memalign(&q, al, size))
		return NULL;
	if (flags & MALLOCX_ZERO)
		memset(q, 0, size);
	atomic_fetch_add(&je_live, 1);
	return q;
}

void dallocx(void *ptr, int flags)
{
	(void)flags;
	if (!ptr || bp_pp_in_pack(ptr))
		atomic_fetch_add(&je_bad, 1); /* NULL, or a packed block sent to jemalloc */
	else
		free(ptr);
	atomic_fetch_sub(&je_live, 1);
}

size_t sallocx(const void *ptr, int flags)
{
	(void)flags;
	if (bp_pp_in_pack(ptr))
		atomic_fetch_add(&je_bad, 1);
	return malloc_usable_size((void *)ptr);
}

void *rallocx(void *ptr, size_t size, int flags)
{
	(void)flags;
	if (bp_pp_in_pack(ptr))
		atomic_fetch_add(&je_bad, 1);
	return realloc(ptr, size);
}

/* jemalloc's size classes: 4 a power of two above 16 */
size_t nallocx(size_t size, int flags)
{
	(void)flags;
	if (size <= 16)
		return 16;
	unsigned lg = 63 - (unsigned)__builtin_clzll(size - 1); /* 2^lg < size <= 2^(lg+1) */
	size_t step = lg >= 4 ? (size_t)1 << (lg - 2) : 16;
	return (size + step - 1) & ~(step - 1);
}

/* ------------------------------------------------------------ helpers */

static bool packed(const void *p)
{
	return bp_pp_in_pack(p);
}

static bool zeros(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* A field of the statistics line. */
static long long stat_of(const char *line, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(line, k);
	return p ? atoll(p + strlen(k)) : -1;
}

/* The packer's part of the statistics line. */
static const char *report(void)
{
	static struct bp_pl_line l;
	bp_pl_line_open(&l, "pager", false);
	bp_pp_pack_report(&l);
	l.buf[l.n < sizeof(l.buf) ? l.n : sizeof(l.buf) - 1] = 0;
	return l.buf;
}

/* The child dies of SIGABRT (the packer's check of a free). */
static void aborts(void *ptr, const char *what)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		bp_pp_pack_forked();
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2); /* the packer's line */
		bp_pp_heap_free(ptr);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT)
		TEST_FAIL("%s: not refused (child status %#x)", what, st);
}

/* ------------------------------------------------------------ one thread */

static void functional(void)
{
	/* usable sizes: the request rounded up to 16; the bounds */
	for (size_t n = 4097; n <= 16384; n += 13) {
		unsigned char *p = HS_MALLOC(n);
		CHECK(p && packed(p));
		size_t u = bp_pp_heap_size(p);
		if (u < n || u >= n + 16)
			TEST_FAIL("%zu bytes: usable size %zu", n, u);
		CHECK(((uintptr_t)p & 15) == 0);
		mark(p, n, (unsigned)n);
		CHECK(marked(p, n, (unsigned)n));
		HS_FREE(p);
	}
	void *lo = HS_MALLOC(4096), *top = HS_MALLOC(16384), *hi = HS_MALLOC(16385);
	void *a16 = bp_pp_heap_alloc(5000, 16, false), *a32 = bp_pp_heap_alloc(5000, 32, false);
	CHECK(lo && !packed(lo) && top && packed(top) && hi && !packed(hi));
	CHECK(a16 && packed(a16) && a32 && !packed(a32) && ((uintptr_t)a32 & 31) == 0);
	HS_FREE(lo), HS_FREE(top), HS_FREE(hi), HS_FREE(a16), HS_FREE(a32);

	/* SQLite's page slots: end to end */
	enum { NSQ = 200 };
	unsigned char *sq[NSQ];
	unsigned adjacent = 0;
	for (unsigned i = 0; i < NSQ; i++) {
		sq[i] = HS_MALLOC(4380);
		CHECK(sq[i] && packed(sq[i]));
		mark(sq[i], 4380, i);
		if (i && sq[i] - sq[i - 1] == 4384)
			adjacent++;
	}
	TEST_LOG("%u of %d blocks of 4380 bytes right after the previous one", adjacent, NSQ - 1);
	CHECK(adjacent >= NSQ - 1 - NSQ / 59); /* 59 slots a slab */

	/* the statistics: 200 slots of 4384 bytes, jemalloc's 5120 each */
	const char *rep = report();
	TEST_LOG("report: %s", rep);
	CHECK_EQ(stat_of(rep, "pack_slots"), NSQ);
	CHECK_EQ(stat_of(rep, "pack_saved"), NSQ * (5120 - 4384));
	CHECK(stat_of(rep, "pack_slots_peak") >= NSQ);
	CHECK(stat_of(rep, "pack_saved_peak") >= NSQ * (5120 - 4384));
	CHECK(stat_of(rep, "pack_slabs") >= (NSQ + 58) / 59);
	for (unsigned i = 0; i < NSQ; i++) {
		CHECK(marked(sq[i], 4380, i));
		HS_FREE(sq[i]);
	}

	/* calloc: zeros in fresh slots (known zero), reused ones, slabs
	 * whose discard was refused (their bytes kept) and discarded ones */
	for (int round = 0; round < 6; round++) {
		enum { NZ = 300 };
		unsigned char *z[NZ];
		for (int i = 0; i < NZ; i++) {
			z[i] = HS_CALLOC(6000);
			CHECK(z[i] && packed(z[i]));
			if (!zeros(z[i], 6000))
				TEST_FAIL("round %d: calloc(6000) #%d not zeros", round, i);
			memset(z[i], 0xa5, 6000);
		}
		for (int i = 0; i < NZ; i += 2)
			HS_FREE(z[i]);
		for (int i = 0; i < NZ; i += 2) {
			z[i] = HS_CALLOC(6000);
			if (!zeros(z[i], 6000))
				TEST_FAIL("round %d: calloc(6000) #%d (reused) not zeros", round, i);
			memset(z[i], 0x5a, 6000);
		}
		unsigned before = atomic_load(&discard_calls);
		for (int i = 0; i < NZ; i++)
			HS_FREE(z[i]); /* every slab but one emptied: discarded */
		/* 300 slots of 6000 bytes, 43 a slab: 7 slabs, 6 discarded,
		 * the class's last one with room kept */
		struct pack_class *k = &classes[class_of(6000)];
		CHECK_EQ(k->nroom, 1u);
		CHECK_EQ(slabs[k->room - 1].nused, 0);
		CHECK_EQ(atomic_load(&discard_calls) - before, (NZ + 42) / 43 - 1);
	}
	unsigned calls = atomic_load(&discard_calls), refused = atomic_load(&discard_refused);
	TEST_LOG("%u discards, %u of them refused", calls, refused);
	CHECK(calls >= 6 * 6 && refused > 0);
	CHECK_EQ(atomic_load(&discard_bad), 0u);
	rep = report();
	CHECK_EQ(stat_of(rep, "pack_discards"), calls - refused);
	CHECK_EQ(stat_of(rep, "pack_discards_refused"), refused);
	CHECK_EQ(stat_of(rep, "pack_slots"), 0);
	CHECK_EQ(stat_of(rep, "pack_saved"), 0);

	/* realloc across the packer's bounds, both ways */
	unsigned char *r = HS_MALLOC(1000);
	CHECK(r && !packed(r));
	mark(r, 1000, 4);
	static const size_t steps[] = { 5000, 5008, 4200, 20000, 9000, 3000, 12000, 16384, 16385, 6000, 2500 };
	static const bool in[] = { true, true, true, false, true, false, true, true, false, true, false };
	size_t have = 1000;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t n = steps[i];
		r = HS_REALLOC(r, n);
		CHECK(r);
		if (packed(r) != in[i])
			TEST_FAIL("realloc %zu -> %zu: %s", have, n, packed(r) ? "packed" : "not packed");
		if (!marked(r, n < have ? n : have, 4) && n >= have)
			TEST_FAIL("realloc %zu -> %zu lost the data", have, n);
		CHECK(bp_pp_heap_size(r) >= n);
		mark(r, n, 4);
		have = n;
	}
	HS_FREE(r);

	/* a double free, a pointer inside a slot: refused */
	unsigned char *d = HS_MALLOC(7000), *keep = HS_MALLOC(7000);
	CHECK(d && keep);
	aborts(d + 16, "free inside a slot");
	HS_FREE(d);
	aborts(d, "double free");
	HS_FREE(keep);

	/* the carve used up: jemalloc serves the range */
	pthread_mutex_lock(&carve_lock);
	uint32_t was = carve_limit;
	carve_limit = carve_n;
	pthread_mutex_unlock(&carve_lock);
	enum { NF = 2000 }; /* more than the pool's slabs hold */
	unsigned char *f[NF];
	unsigned out = 0;
	for (unsigned i = 0; i < NF; i++) {
		f[i] = HS_MALLOC(15000);
		CHECK(f[i]);
		out += !packed(f[i]);
		mark(f[i], 15000, i);
	}
	TEST_LOG("carve used up: %u of %d blocks of 15000 bytes from jemalloc", out, NF);
	CHECK(out > 0);
	for (unsigned i = 0; i < NF; i++) {
		CHECK(marked(f[i], 15000, i));
		HS_FREE(f[i]);
	}
	pthread_mutex_lock(&carve_lock);
	carve_limit = was;
	pthread_mutex_unlock(&carve_lock);
}

/* ------------------------------------------------------------ threads, forks */

/* A fork child: the packer's locks reset, its own blocks of every size */
static int child(void)
{
	bp_pp_pack_forked();
	pthread_mutex_init(&carve_lock, NULL); /* heap.c's child handler: its lock */
	int bad = 0;
	unsigned char *mine[500];
	for (unsigned i = 0; i < 500; i++) {
		size_t n = 4097 + (i * 2654435761u) % 12288;
		mine[i] = HS_MALLOC(n);
		if (!mine[i])
			return 3;
		mark(mine[i], n, i);
	}
	for (unsigned i = 0; i < 500; i++) {
		if (!marked(mine[i], 4097 + (i * 2654435761u) % 12288, i))
			bad = 1;
		HS_FREE(mine[i]);
	}
	return bad ? 2 : 0;
}

/*
 * A fork while another thread carves slab after slab (16 KiB blocks, 16 a
 * slab; each carve lasts 1 ms): the packer's fork handler waits for the
 * carve in progress (its carve lock), so no child sees one half done; the
 * child carves slabs of its own (the carve lock reset by
 * bp_pp_pack_forked).  Without the handler's carve lock nearly every
 * child sees one.
 */
#define CARVER_BLOCKS (16 * 160)
static void *cblk[CARVER_BLOCKS];
static _Atomic bool carver_stop;

static void *carver(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < CARVER_BLOCKS && !atomic_load(&carver_stop); i++)
		if (!(cblk[i] = HS_MALLOC(PACK_MAX)))
			break;
	/* alive until the forks end: a thread ended and not joined is a leak
	 * to ThreadSanitizer in each child */
	while (!atomic_load(&carver_stop))
		usleep(1000);
	return NULL;
}

static void fork_in_carve(void)
{
	unsigned carved = carve_n;
	atomic_store(&carve_us, 1000);
	atomic_store(&carver_stop, false);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, carver, NULL), 0);
	int seen = 0;
	for (int k = 0; k < 20; k++) {
		usleep(2000);
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (!pid) {
			if (atomic_load(&carving))
				_exit(4);
			bp_pp_pack_forked();
			pthread_mutex_init(&carve_lock, NULL); /* heap.c's child handler: its lock */
			atomic_store(&carve_us, 0);
			void *b[40];
			for (unsigned i = 0; i < 40; i++)
				if (!(b[i] = HS_MALLOC(PACK_MAX)) || !packed(b[i]))
					_exit(3);
			for (unsigned i = 0; i < 40; i++)
				HS_FREE(b[i]);
			_exit(0);
		}
		int st;
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 4)
			seen++;
		else if (!WIFEXITED(st) || WEXITSTATUS(st))
			TEST_FAIL("fork in a carve %d: child status %#x", k, st);
	}
	atomic_store(&carver_stop, true);
	CHECK_EQ(pthread_join(t, NULL), 0);
	atomic_store(&carve_us, 0);
	TEST_LOG("fork in a carve: %u slabs carved by the thread meanwhile, %d of 20 children saw a "
		 "carve half done", carve_n - carved, seen);
	if (seen)
		TEST_FAIL("%d of 20 fork children saw a carve half done: the fork did not wait "
			  "for it", seen);
	for (unsigned i = 0; i < CARVER_BLOCKS; i++) {
		HS_FREE(cblk[i]);
		cblk[i] = NULL;
	}
}

/* Every slab's bitmap agrees with its count; no slot in use. */
static void consistent(void)
{
	for (uint32_t i = 0; i < carve_n; i++) {
		struct pack_slab *s = &slabs[i];
		if (atomic_load(&s->cls) == PACK_NONE)
			continue;
		if ((unsigned)__builtin_popcountll(s->used) != s->nused)
			TEST_FAIL("slab %u: %d slots marked, %u counted", i,
				  __builtin_popcountll(s->used), s->nused);
		if (s->nused)
			TEST_FAIL("slab %u: %u slots still in use", i, s->nused);
	}
	CHECK_EQ(atomic_load(&st_slots), 0);
	CHECK_EQ(atomic_load(&st_saved), 0);
}

int main(void)
{
	test_timeout(240);
	size_t len = (size_t)(CARVE_MAX + 1) * PACK_SLAB;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	CHECK(m != MAP_FAILED);
	carve_lo = ((uintptr_t)m + PACK_SLAB - 1) & ~(uintptr_t)(PACK_SLAB - 1);
	setenv("BYPASS_PAGER_HEAP_PACK", "0", 1); /* off: every request to jemalloc */
	CHECK_EQ(bp_pp_pack_start(carve_lo, carve_lo + (uintptr_t)CARVE_MAX * PACK_SLAB), -ENOTSUP);
	CHECK(!bp_pp_pack_fits(5000, 16));
	void *j = HS_MALLOC(5000);
	CHECK(j && !packed(j));
	HS_FREE(j);
	unsetenv("BYPASS_PAGER_HEAP_PACK");
	CHECK_EQ(bp_pp_pack_start(carve_lo, carve_lo + (uintptr_t)CARVE_MAX * PACK_SLAB), 0);

	functional();

	pthread_t t[NTHREADS];
	stress_start(t);
	for (int k = 0; k < 4; k++) {
		usleep(20000);
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (!pid)
			_exit(child());
		int st;
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			TEST_FAIL("fork child %d: status %#x", k, st);
	}
	stress_finish(t);
	fork_in_carve();
	consistent();
	TEST_LOG("%u slabs carved, %u discards (%u refused), %ld jemalloc blocks left", carve_n,
		 atomic_load(&discard_calls), atomic_load(&discard_refused), atomic_load(&je_live));
	CHECK_EQ(atomic_load(&je_live), 0);
	CHECK_EQ(atomic_load(&je_bad), 0);
	CHECK_EQ(atomic_load(&discard_bad), 0u);
	return test_pass("pager/heap-pack-unit");
}

#endif
