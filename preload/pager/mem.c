/* SPDX-License-Identifier: MIT */
/* mmap, munmap, mremap, madvise on regions. */
#include "preload.h"

#include <stdarg.h>

/*
 * [a, b) cut into pieces: region parts (kind of the record, PP_STALE ones
 * count as gaps: they are not mapped in this process) and gaps (kind 0).
 * At most max pieces from a; the caller goes on from the last one's end.
 */
struct piece {
	uintptr_t a, b;
	int kind;
};

static int pieces(uintptr_t a, uintptr_t b, struct piece *out, int max)
{
	int n = 0;
	if (!bp_pp_maybe((void *)a, b - a) || !bp_pp_lock()) {
		out[0] = (struct piece){ a, b, 0 };
		return 1;
	}
	while (a < b && n < max) {
		struct bp_pp_region *r = bp_pp_next(a);
		uintptr_t e;
		int kind;
		if (!r || r->start >= b) {
			e = b;
			kind = 0;
		} else if (r->start > a) {
			e = r->start;
			kind = 0;
		} else {
			e = r->end < b ? r->end : b;
			kind = r->kind & PP_STALE ? 0 : r->kind;
		}
		if (n && out[n - 1].kind == kind && out[n - 1].b == a && !kind)
			out[n - 1].b = e; /* join gaps */
		else
			out[n++] = (struct piece){ a, e, kind };
		a = e;
	}
	bp_pp_unlock();
	return n;
}

/* A private anonymous read-write mapping the program lets the kernel place:
 * a region if it is large, or of any size once the heap is engaged (an
 * interpreter's arenas count too); small ones before that are counted as
 * memory outside the pager. */
static bool candidate(void *addr, size_t len, int prot, int flags, int fd)
{
	const int bad = MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_GROWSDOWN | MAP_STACK |
			MAP_HUGETLB | MAP_32BIT | MAP_LOCKED;
	if (addr || !(flags & MAP_ANONYMOUS) || (flags & bad) ||
	    (flags & MAP_TYPE) != MAP_PRIVATE || prot != (PROT_READ | PROT_WRITE) ||
	    !(fd == -1 || fd >= 0))
		return false;
	if (len >= bp_pp_cfg.threshold || bp_pp_heap_on())
		return true;
	bp_pp_heap_outside_mapped((int64_t)len);
	return false;
}

/* Unmap the region parts of [a, b) and forget them; 0 or -errno. */
static int drop_regions(uintptr_t a, uintptr_t b, bool munmap_gaps)
{
	struct piece pc[32];
	int err = 0;
	while (a < b) {
		int n = pieces(a, b, pc, 32);
		for (int i = 0; i < n; i++) {
			if (pc[i].kind) {
				if (bp_pp_lock()) {
					bp_pp_forget(pc[i].a, pc[i].b);
					bp_pp_unlock();
				}
				int e = bp_pp_unmap(pc[i].a, pc[i].b);
				if (e && !err)
					err = e;
			} else {
				if (bp_pp_lock()) { /* stale records there */
					bp_pp_forget(pc[i].a, pc[i].b);
					bp_pp_unlock();
				}
				if (munmap_gaps && REAL(munmap)((void *)pc[i].a, pc[i].b - pc[i].a) &&
				    !err)
					err = -errno;
			}
		}
		a = pc[n - 1].b;
	}
	return err;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!PASS() && len) {
		if (candidate(addr, len, prot, flags, fd)) {
			size_t l = (len + PP_PAGE - 1) & ~(PP_PAGE - 1);
			void *m;
			if (l >= len && bp_pp_map(l, &m) == 0) {
				struct bp_pp_region r = { (uintptr_t)m, (uintptr_t)m + l, 0, PP_MMAP };
				int e = -ENOMEM;
				if (bp_pp_lock()) {
					e = bp_pp_add(&r);
					bp_pp_unlock();
				}
				if (!e)
					return m;
				bp_pp_unmap(r.start, r.end);
			}
		} else if ((flags & MAP_FIXED) && !((uintptr_t)addr & (PP_PAGE - 1)) &&
			   bp_pp_maybe(addr, len)) {
			/* The new mapping replaces (parts of) regions. */
			uintptr_t a = (uintptr_t)addr;
			drop_regions(a, (a + len + PP_PAGE - 1) & ~(PP_PAGE - 1), false);
		}
	}
	return REAL(mmap)(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	if (PASS() || !len || (a & (PP_PAGE - 1)) || !bp_pp_maybe(addr, len))
		return REAL(munmap)(addr, len);
	uintptr_t b = (a + len + PP_PAGE - 1) & ~(PP_PAGE - 1);
	if (b < a) {
		errno = EINVAL;
		return -1;
	}
	int e = drop_regions(a, b, true);
	if (e) {
		errno = -e;
		return -1;
	}
	return 0;
}

/*
 * A region moves or shrinks; it never grows in place (the page after it is
 * not the pager's to give), so without MREMAP_MAYMOVE growing is ENOMEM,
 * as the kernel says when the next pages are taken.
 */
EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *fixed = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		fixed = va_arg(ap, void *);
		va_end(ap);
	}
	uintptr_t a = (uintptr_t)old;
	struct bp_pp_region r = { 0 };
	bool ours = false;
	if (!PASS() && oldlen && !(a & (PP_PAGE - 1)) && bp_pp_maybe(old, oldlen) &&
	    bp_pp_lock()) {
		struct bp_pp_region *f = bp_pp_find(a);
		if (f && !(f->kind & PP_STALE)) {
			r = *f;
			ours = true;
		}
		bp_pp_unlock();
	}
	if (!ours) {
		void *m = REAL(mremap)(old, oldlen, newlen, flags, fixed);
		if (m != MAP_FAILED && !PASS() && oldlen && bp_pp_maybe(old, oldlen) &&
		    bp_pp_lock()) {
			/* a fork child's stale record there: ordinary memory,
			 * moved or resized by the kernel, not tracked now */
			bp_pp_forget(a & ~(PP_PAGE - 1), (a + oldlen + PP_PAGE - 1) & ~(PP_PAGE - 1));
			bp_pp_unlock();
		}
		return m;
	}
	size_t ol = (oldlen + PP_PAGE - 1) & ~(PP_PAGE - 1);
	size_t nl = (newlen + PP_PAGE - 1) & ~(PP_PAGE - 1);
	if (a + ol > r.end || !newlen || (flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED)) ||
	    ((flags & MREMAP_FIXED) && !(flags & MREMAP_MAYMOVE))) {
		/* Beyond the region, or DONTUNMAP (needs a private anonymous
		 * mapping the kernel owns): the kernel's answer for a
		 * mapping it cannot remap. */
		errno = a + ol > r.end ? EFAULT : EINVAL;
		return MAP_FAILED;
	}
	if ((flags & MREMAP_FIXED) && ((uintptr_t)fixed & (PP_PAGE - 1))) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	if (nl <= ol && !(flags & MREMAP_FIXED)) {
		if (nl < ol)
			drop_regions(a + nl, a + ol, false);
		return old;
	}
	if (!(flags & MREMAP_MAYMOVE)) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	/* Move: a new region (or, at MREMAP_FIXED, plain memory there), the
	 * data copied, the old range unmapped. */
	void *m = MAP_FAILED;
	if (flags & MREMAP_FIXED) {
		uintptr_t f = (uintptr_t)fixed;
		if (f < a + ol && f + nl > a) {
			errno = EINVAL; /* overlapping */
			return MAP_FAILED;
		}
		m = mmap(fixed, nl, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	} else {
		m = mmap(NULL, nl, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (m == MAP_FAILED)
		return MAP_FAILED;
	memcpy(m, old, ol < nl ? ol : nl);
	drop_regions(a, a + ol, false);
	return m;
}

/* Prefetch: pin and unpin the start of the range (up to pin_max bytes). */
static void willneed(uintptr_t a, uintptr_t b)
{
	bypass_pager *p = bp_pp_pager();
	size_t len = b - a;
	if (len > bp_pp_cfg.pin_max)
		len = bp_pp_cfg.pin_max;
	bp_enter();
	if (p && bypass_pager_pin(p, (void *)a, len, 0) == 0)
		bypass_pager_unpin(p, (void *)a, len);
	bp_leave();
}

/*
 * MADV_DONTNEED and its like: reads as zeros afterwards.  The pager
 * discards the pages (nothing written or read for them; pages in use are
 * zeroed by writing, bypass_pager_discard); should it refuse (a race with
 * another thread's munmap), the zeros are written, as before it could.
 */
static void discard(uintptr_t a, uintptr_t b)
{
	bypass_pager *p = bp_pp_pager();
	bp_enter();
	int e = p ? bypass_pager_discard(p, (void *)a, b - a) : -EINVAL;
	bp_leave();
	if (e)
		memset((void *)a, 0, b - a);
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	uintptr_t a = (uintptr_t)addr;
	if (PASS() || !len || (a & (PP_PAGE - 1)) || !bp_pp_maybe(addr, len))
		return REAL(madvise)(addr, len, advice);
	uintptr_t b = (a + len + PP_PAGE - 1) & ~(PP_PAGE - 1);
	struct piece pc[32];
	int err = 0;
	while (a < b) {
		int n = pieces(a, b, pc, 32);
		for (int i = 0; i < n; i++) {
			uintptr_t x = pc[i].a, y = pc[i].b;
			if (!pc[i].kind) {
				if (REAL(madvise)((void *)x, y - x, advice) && !err)
					err = errno;
				continue;
			}
			switch (advice) {
			case MADV_DONTNEED:
			case MADV_REMOVE:
			case MADV_DONTNEED_LOCKED:
				discard(x, y);
				break;
			case MADV_WILLNEED:
				willneed(x, y);
				break;
			case MADV_FREE:        /* may keep the data: keeping is allowed */
			case MADV_DOFORK:      /* regions are always inherited (see fork) */
			case MADV_DONTFORK:
			case MADV_HUGEPAGE:    /* the pager's unit is the 4 KiB page */
			case MADV_NOHUGEPAGE:
			case MADV_MERGEABLE:
			case MADV_UNMERGEABLE:
			case MADV_COLD:
			case MADV_PAGEOUT:
#ifdef MADV_COLLAPSE
			case MADV_COLLAPSE:
#endif
			case MADV_POPULATE_READ:
			case MADV_POPULATE_WRITE:
				break;
			default:
				if (REAL(madvise)((void *)x, y - x, advice) && !err)
					err = errno;
			}
		}
		a = pc[n - 1].b;
	}
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
