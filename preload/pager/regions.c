/* SPDX-License-Identifier: MIT */
/* The table of regions, mapping and unmapping them, and pinning buffers around system calls. */
#include "preload.h"
#include "pager/pager_internal.h" /* lock ranks */
#include "core/syscall.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

/*
 * A sorted array of records, under one lock whose owner is known: a signal
 * handler that interrupts the owner and makes a system call on a buffer
 * must not wait for it (bp_pp_lock() says no, and the call goes through
 * unpinned, as it would without the preload).  The records are few (one
 * per large allocation); the array lives in memory of its own (mmap), not
 * in the heap the wrappers serve.
 */
static struct bp_pp_region *tab;
static size_t ntab, captab;
static _Atomic pid_t owner;
_Atomic uintptr_t bp_pp_lo = UINTPTR_MAX, bp_pp_hi;

bool bp_pp_lock(void)
{
	pid_t me = bp_tid();
	if (atomic_load_explicit(&owner, memory_order_relaxed) == me)
		return false;
	bp_rank_check(BP_RANK_PP_TABLE);
	for (unsigned spins = 0;; spins++) {
		pid_t none = 0;
		if (atomic_compare_exchange_weak_explicit(&owner, &none, me, memory_order_acquire,
							  memory_order_relaxed)) {
			bp_rank_push(BP_RANK_PP_TABLE, &owner);
			return true;
		}
		if (spins > 64)
			sched_yield();
		else
			bp_cpu_relax();
	}
}

void bp_pp_unlock(void)
{
	bp_rank_pop(BP_RANK_PP_TABLE, &owner);
	atomic_store_explicit(&owner, 0, memory_order_release);
}

static void bounds(void)
{
	uintptr_t lo = ntab ? tab[0].start : UINTPTR_MAX, hi = ntab ? tab[ntab - 1].end : 0;
	atomic_store_explicit(&bp_pp_lo, lo, memory_order_relaxed);
	atomic_store_explicit(&bp_pp_hi, hi, memory_order_relaxed);
}

/* Index of the first record with end > a. */
static size_t lower(uintptr_t a)
{
	size_t lo = 0, hi = ntab;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (tab[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct bp_pp_region *bp_pp_next(uintptr_t a)
{
	size_t i = lower(a);
	return i < ntab ? &tab[i] : NULL;
}

struct bp_pp_region *bp_pp_find(uintptr_t a)
{
	struct bp_pp_region *r = bp_pp_next(a);
	return r && r->start <= a ? r : NULL;
}

static int reserve(size_t n)
{
	if (n <= captab)
		return 0;
	size_t cap = captab ? captab * 2 : 256;
	while (cap < n)
		cap *= 2;
	void *m = REAL(mmap)(NULL, cap * sizeof(*tab), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	if (ntab)
		memcpy(m, tab, ntab * sizeof(*tab));
	if (tab)
		REAL(munmap)(tab, captab * sizeof(*tab));
	tab = m;
	captab = cap;
	return 0;
}

int bp_pp_add(const struct bp_pp_region *r)
{
	bp_pp_forget(r->start, r->end); /* stale records of a parent's regions */
	if (reserve(ntab + 1))
		return -ENOMEM;
	size_t i = lower(r->start);
	memmove(&tab[i + 1], &tab[i], (ntab - i) * sizeof(*tab));
	tab[i] = *r;
	ntab++;
	bounds();
	return 0;
}

void bp_pp_forget(uintptr_t a, uintptr_t b)
{
	for (size_t i = lower(a); i < ntab && tab[i].start < b;) {
		struct bp_pp_region *r = &tab[i];
		if (r->start < a && r->end > b) { /* a hole in the middle: split */
			if (reserve(ntab + 1))
				return; /* keep the record: a lookup finds too much, never too little */
			r = &tab[i];
			memmove(&tab[i + 1], &tab[i], (ntab - i) * sizeof(*tab));
			ntab++;
			tab[i].end = a;
			tab[i + 1].start = b;
			break;
		}
		if (r->start < a) {
			r->end = a;
			i++;
		} else if (r->end > b) {
			r->start = b;
			break;
		} else {
			memmove(&tab[i], &tab[i + 1], (ntab - i - 1) * sizeof(*tab));
			ntab--;
		}
	}
	bounds();
}

void bp_pp_forked(bool stale)
{
	atomic_store(&owner, 0);
	for (size_t i = 0; stale && i < ntab; i++)
		tab[i].kind |= PP_STALE;
}

int bp_pp_map(size_t len, void **out)
{
	bypass_pager *p = bp_pp_pager();
	if (!p)
		return -ENODEV;
	bp_enter();
	int e = bypass_pager_map(p, len, 0, out);
	bp_leave();
	return e;
}

int bp_pp_unmap(uintptr_t a, uintptr_t b)
{
	bypass_pager *p = bp_pp_pager();
	if (!p)
		return -ENODEV;
	bp_enter();
	int e = bypass_pager_unmap(p, (void *)a, b - a);
	bp_leave();
	return e;
}

/* ------------------------------------------------------------ pinning */

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };
	bp_sys_nanosleep(&ts, NULL);
}

/* Pin [a, a + len) of one region; on -ENOMEM (others hold pins) try less,
 * down to one page, and wait for room.  Returns the bytes pinned or -errno. */
static ssize_t pin_some(bypass_pager *p, uintptr_t a, size_t len, bool write)
{
	unsigned flags = write ? BYPASS_PAGER_PIN_WRITE : 0;
	for (int waited = 0;;) {
		size_t n = len;
		for (;;) {
			bp_enter();
			int e = bypass_pager_pin(p, (void *)a, n, flags);
			bp_leave();
			if (!e)
				return (ssize_t)n;
			if (e != -ENOMEM)
				return e;
			size_t first = PP_PAGE - (a & (PP_PAGE - 1));
			if (n <= first)
				break;
			n = ((n / 2) + (a & (PP_PAGE - 1)) + PP_PAGE - 1) & ~(PP_PAGE - 1);
			n -= a & (PP_PAGE - 1);
			if (n < first)
				n = first;
		}
		if (++waited > 10000) /* 10 s without one page of room */
			return -ENOMEM;
		sleep_ms(1);
	}
}

ssize_t bp_pp_pin(const struct iovec *v, int n, bool write, struct bp_pp_pins *pins)
{
	pins->n = 0;
	int k;
	for (k = 0; k < n; k++)
		if (v[k].iov_len && bp_pp_maybe(v[k].iov_base, v[k].iov_len))
			break;
	if (k == n)
		return SSIZE_MAX; /* nothing in a region */
	if (!bp_pp_lock())
		return SSIZE_MAX;
	/*
	 * The region parts of the first bytes, with their offsets from the
	 * start of the whole buffer, up to pin_max bytes of them; limit is
	 * where the safe prefix ends if they all pin.
	 */
	struct { uintptr_t a; size_t len, off; } part[PP_MAXPIN];
	int np = 0;
	size_t left = bp_pp_cfg.pin_max, off = 0, limit = SSIZE_MAX;
	for (int i = 0; i < n && limit == SSIZE_MAX; i++) {
		uintptr_t a = (uintptr_t)v[i].iov_base, end = a + v[i].iov_len;
		while (a < end) {
			struct bp_pp_region *r = bp_pp_next(a);
			if (!r || r->start >= end) {
				off += end - a;
				break;
			}
			if (r->start > a) {
				off += r->start - a;
				a = r->start;
			}
			if (r->kind & PP_STALE) { /* a fork child's ordinary memory */
				uintptr_t e = end < r->end ? end : r->end;
				off += e - a;
				a = e;
				continue;
			}
			if (np == PP_MAXPIN || !left) {
				limit = off;
				break;
			}
			size_t len = (end < r->end ? end : r->end) - a;
			if (len > left) {
				len = left;
				limit = off + len;
			}
			part[np].a = a;
			part[np].len = len;
			part[np].off = off;
			np++;
			left -= len;
			off += len;
			a += len;
			if (limit != SSIZE_MAX)
				break;
		}
	}
	bp_pp_unlock();
	bypass_pager *p = np ? bp_pp_pager() : NULL;
	if (!p)
		return SSIZE_MAX;
	for (int i = 0; i < np; i++) {
		ssize_t got = pin_some(p, part[i].a, part[i].len, write);
		if (got == -EINVAL) /* unmapped meanwhile: the program's race */
			continue;
		if (got < 0) {
			if (!part[i].off) {
				bp_pp_unpin(pins);
				return got;
			}
			return (ssize_t)part[i].off;
		}
		pins->r[pins->n].a = (void *)part[i].a;
		pins->r[pins->n].len = (size_t)got;
		pins->n++;
		if ((size_t)got < part[i].len)
			return (ssize_t)(part[i].off + (size_t)got);
	}
	return (ssize_t)limit;
}

void bp_pp_unpin(struct bp_pp_pins *pins)
{
	bypass_pager *p = bp_pp_pager();
	for (int i = 0; p && i < pins->n; i++) {
		bp_enter();
		bypass_pager_unpin(p, pins->r[i].a, pins->r[i].len);
		bp_leave();
	}
	pins->n = 0;
}

#if defined(__SANITIZE_ADDRESS__)
#define PINS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PINS_ASAN 1
#endif
#endif
#ifdef PINS_ASAN
#include <sanitizer/asan_interface.h>
#endif

static void unpin_cb(void *pins)
{
	bp_pp_unpin(pins);
#ifdef PINS_ASAN
	/* Cancellation came back to bp_pp_pinned by longjmp (glibc's C
	 * cleanup), past the frames of the call without clearing their
	 * redzones; AddressSanitizer's own handling of the noreturn unwind
	 * that follows works in that stack and took the stale redzones for
	 * an overflow (its sigaltstack interceptor).  Clear them. */
	char *fa = __builtin_frame_address(0);
	__asan_unpoison_memory_region(fa - (64 << 10), 64 << 10);
#endif
}

ssize_t bp_pp_pinned(struct bp_pp_pins *pins, ssize_t (*call)(void *arg), void *arg)
{
	volatile ssize_t r; /* set between the cleanup handler's setjmp and its pop */
	pthread_cleanup_push(unpin_cb, pins);
	r = call(arg);
	pthread_cleanup_pop(0);
	int e = errno;
	bp_pp_unpin(pins);
	errno = e;
	return r;
}
