/* SPDX-License-Identifier: MIT */
/* The pager's public API: create, map, unmap, pin, stats, destroy. */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/map.h"
#include "pager/share.h"
#include "pager/fork.h"
#include "pager/fault.h"
#include "pager/engine.h"
#include "pager/setup.h"
#include "pager/read.h"
#include "pager/evict.h"
#include "pager/lru.h"
#include "pager/sample.h"
#include "pager/uffd.h"
#include "pager/policy.h"
#include "core/syscall.h"
#include "core/fdhigh.h"
#include "pager/heat.h" /* access heat: the hooks below */

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------------------ page ids */

static int id_alloc(struct bypass_pager *p, uint32_t n, uint32_t *out)
{
	for (size_t i = 0; i < p->ids.n; i++) {
		if (p->ids.ext[i].len < n)
			continue;
		*out = p->ids.ext[i].start;
		p->ids.ext[i].start += n;
		p->ids.ext[i].len -= n;
		if (!p->ids.ext[i].len) {
			memmove(&p->ids.ext[i], &p->ids.ext[i + 1],
				(p->ids.n - i - 1) * sizeof(p->ids.ext[0]));
			p->ids.n--;
		}
		return 0;
	}
	return -ENOSPC;
}

static void id_free(struct bypass_pager *p, uint32_t start, uint32_t n)
{
	size_t i = 0;
	while (i < p->ids.n && p->ids.ext[i].start < start)
		i++;
	bool left = i > 0 && p->ids.ext[i - 1].start + p->ids.ext[i - 1].len == start;
	bool right = i < p->ids.n && start + n == p->ids.ext[i].start;
	if (left && right) {
		p->ids.ext[i - 1].len += n + p->ids.ext[i].len;
		memmove(&p->ids.ext[i], &p->ids.ext[i + 1],
			(p->ids.n - i - 1) * sizeof(p->ids.ext[0]));
		p->ids.n--;
	} else if (left) {
		p->ids.ext[i - 1].len += n;
	} else if (right) {
		p->ids.ext[i].start = start;
		p->ids.ext[i].len += n;
	} else {
		/* Room for one more extent was kept free in advance. */
		memmove(&p->ids.ext[i + 1], &p->ids.ext[i],
			(p->ids.n - i) * sizeof(p->ids.ext[0]));
		p->ids.ext[i].start = start;
		p->ids.ext[i].len = n;
		p->ids.n++;
	}
}

static int id_reserve_extent(struct bypass_pager *p)
{
	if (p->ids.n + 1 < p->ids.cap)
		return 0;
	size_t cap = p->ids.cap ? p->ids.cap * 2 : 16;
	void *n = bp_pg_realloc(p->ids.ext, cap * sizeof(p->ids.ext[0]));
	if (!n)
		return -ENOMEM;
	p->ids.ext = n;
	p->ids.cap = cap;
	return 0;
}

/* ------------------------------------------------------------ create */

static void pager_free(struct bypass_pager *p, bool child)
{
	bp_policy_destroy(p, child);
	if (!child) {
		bp_sample_stop(p);
		bp_engine_stop(p);
		bp_pager_thread_stop(p);
	}
	bp_heat_free(p); /* access heat (heat.h) */
	bp_sample_free(p);
	bp_evict_fini(p);
	bp_share_fini(p, !child);
	if (p->srv.uffd_sigbus >= 0)
		bp_sys_close(p->srv.uffd_sigbus);
	if (p->srv.uffd_thread >= 0)
		bp_sys_close(p->srv.uffd_thread);
	if (atomic_load(&p->eng.uffd_pool) >= 0)
		bp_sys_close(atomic_load(&p->eng.uffd_pool));
	if (p->srv.stop_fd >= 0)
		bp_sys_close(p->srv.stop_fd);
	if (p->swap.fd >= 0)
		bp_sys_close(p->swap.fd);
	if (p->ev.pidfd_owned >= 0)
		bp_sys_close(p->ev.pidfd_owned);
	if (p->pages)
		bp_sys_munmap(p->pages, p->pages_len);
	if (p->srv.bounce)
		bp_sys_munmap(p->srv.bounce, (size_t)p->srv.nbounce * p->cfg.ra * PG_SIZE);
	bp_pg_free(p->srv.bounce_map);
	bp_swap_read_fini(p);
	bp_pg_free((void *)p->swap.slotmap);
	bp_pg_free(p->swap.dir);
	bp_pg_free(p->ids.ext);
	if (!child)
		pthread_mutex_destroy(&p->lock);
	bp_pg_free(p);
}

int bypass_pager_create(const struct bypass_pager_config *cfg, bypass_pager **out)
{
	if (!cfg || !out)
		return -EINVAL;
	struct bypass_pager *p = bp_pg_calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->swap.fd = p->srv.uffd_sigbus = p->srv.uffd_thread = p->srv.stop_fd = -1;
	atomic_init(&p->eng.uffd_pool, -1);
	p->ev.pidfd = p->ev.pidfd_owned = -1;
	for (unsigned l = 0; l < PG_LEVELS; l++)
		p->lin.fd[l] = p->lin.ent[l] = p->lin.pend[l] = -1;
	pthread_mutex_init(&p->lock, NULL);
	bp_pid();
	p->cfg.gen = bp_fork_gen();
	int e = bp_check_config(cfg, p);
	if (e)
		goto fail;
	/* before any handler thread starts: they read it */
	uint64_t hz = bypass_tsc_hz();
	p->cfg.cyc_per_ns_q16 = hz ? (hz << 16) / 1000000000ull : 1ull << 16;
	if (!p->cfg.cyc_per_ns_q16)
		p->cfg.cyc_per_ns_q16 = 1;

	uint64_t avail = 0;
	e = bp_uffd_features_available(&avail);
	if (e) {
		if (e == -ENOSYS)
			bp_err("bypass: pager: this kernel has no userfaultfd");
		else
			bp_err("bypass: pager: userfaultfd: %s", strerror(-e));
		goto fail;
	}
	if (!(avail & UFFD_FEATURE_PAGEFAULT_FLAG_WP) ||
	    (p->cfg.mode != BYPASS_PAGER_HANDLER && !(avail & UFFD_FEATURE_SIGBUS))) {
		bp_err("bypass: pager: userfaultfd lacks write-protect or SIGBUS mode "
		       "(features %#llx)", (unsigned long long)avail);
		e = -EOPNOTSUPP;
		goto fail;
	}
	p->cfg.uffd_avail = avail;
	if (p->cfg.mode != BYPASS_PAGER_HANDLER) {
		/* Kernel-mode faults fail with EFAULT in SIGBUS mode anyway, so
		 * user-mode-only costs nothing and needs no privilege. */
		p->srv.uffd_sigbus = bp_uffd_open(true);
		if (p->srv.uffd_sigbus < 0) {
			e = p->srv.uffd_sigbus;
			bp_err("bypass: pager: userfaultfd: %s", strerror(-e));
			goto fail;
		}
		e = bp_uffd_setup(p->srv.uffd_sigbus,
			       UFFD_FEATURE_SIGBUS | UFFD_FEATURE_PAGEFAULT_FLAG_WP);
		if (!e)
			e = bp_pager_hook_install();
	} else {
		e = bp_open_thread_uffd(p);
		if (!e)
			e = bp_pager_thread_start(p);
	}
	if (e)
		goto fail;

	e = bp_open_swap(p, cfg);
	if (e)
		goto fail;

	p->pages_len = ((size_t)p->swap.pages * sizeof(struct pg) + PG_SIZE - 1) &
		       ~(PG_SIZE - 1);
	p->pages = bp_sys_mmap(NULL, p->pages_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p->pages == MAP_FAILED) {
		p->pages = NULL;
		e = -ENOMEM;
		goto fail;
	}
	uint32_t words = (p->swap.nslots + 63) / 64;
	p->swap.slotmap = bp_pg_calloc(words, sizeof(uint64_t));
	if (!p->swap.slotmap) {
		e = -ENOMEM;
		goto fail;
	}
	if (p->swap.nslots % 64) /* slots past the end are never free */
		atomic_store(&p->swap.slotmap[words - 1], ~0ull << (p->swap.nslots % 64));
	e = id_reserve_extent(p);
	if (e)
		goto fail;
	p->ids.ext[0].start = 0;
	p->ids.ext[0].len = p->swap.pages;
	p->ids.n = 1;

	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	p->srv.nbounce = (uint32_t)(ncpu > 0 ? 4 * ncpu : 16);
	if (p->srv.nbounce < 16)
		p->srv.nbounce = 16;
	if (p->srv.nbounce > 128)
		p->srv.nbounce = 128;
	p->srv.bounce = bp_sys_mmap(NULL, (size_t)p->srv.nbounce * p->cfg.ra * PG_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	p->srv.bounce_map = bp_pg_calloc((p->srv.nbounce + 63) / 64, sizeof(uint64_t));
	if (p->srv.bounce == MAP_FAILED || !p->srv.bounce_map) {
		if (p->srv.bounce == MAP_FAILED)
			p->srv.bounce = NULL;
		e = -ENOMEM;
		goto fail;
	}

	e = bp_swap_read_init(p, !(cfg->flags & BYPASS_PAGER_NO_SPIN));
	if (e)
		goto fail;
	e = bp_evict_init(p);
	if (e)
		goto fail;
	p->ev.pidfd_owned = bp_fd_lift(bp_sys_pidfd_open(bp_pid(), 0), true);
	p->ev.pidfd = p->ev.pidfd_owned;


	if (p->cfg.mode == BYPASS_PAGER_ADAPTIVE) {
		e = bp_engine_start(p);
		if (e)
			goto fail;
	}
	if (cfg->flags & BYPASS_PAGER_SAMPLE) {
		e = bp_sample_start(p, true);
		if (e)
			goto fail;
	}
	e = bp_fork_add(p); /* last: a fork prepares it from now on */
	if (e)
		goto fail;
	bp_info("bypass: pager: %s mode, budget %u pages (high %u, low %u, batch %u), "
		"swap %s: %u pages%s, readahead %u",
		p->cfg.mode == BYPASS_PAGER_UPCALL ? "upcall" : p->cfg.mode == BYPASS_PAGER_HANDLER ? "handler"
		: "adaptive",
		p->cfg.budget, p->cfg.high,
		p->cfg.low, p->cfg.batch, cfg->swap_path, p->swap.pages,
		p->swap.direct ? " O_DIRECT" : "", p->cfg.ra);
	*out = p;
	return 0;
fail:
	if (p->swap.created) /* not the caller's file: ours, half made */
		unlink(cfg->swap_path);
	pager_free(p, false);
	return e;
}

/* ------------------------------------------------------------ regions */

int bp_pager_check_owner(struct bypass_pager *p)
{
	if (!p)
		return -EINVAL;
	if (p->cfg.gen != bp_fork_gen())
		return -ECHILD;
	return 0;
}

/* Map a region of length bytes, at `at` (inside a reservation of the
 * caller's, which it replaces) or where the kernel likes (NULL). */
static int map_region(bypass_pager *p, size_t length, unsigned flags, void *at, void **addr)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	if (!addr || !length || (length & (PG_SIZE - 1)) || ((uintptr_t)at & (PG_SIZE - 1)) ||
	    (flags & ~BYPASS_PAGER_MAP_HANDLER))
		return -EINVAL;
	size_t np = length >> PG_SHIFT;
	bool handler = p->cfg.mode == BYPASS_PAGER_HANDLER || (flags & BYPASS_PAGER_MAP_HANDLER);
	void *m = MAP_FAILED;
	uint32_t id0 = 0;
	bool have_id = false;
	struct region *r = NULL;

	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	if (np > p->swap.pages - p->ids.mapped) {
		bp_err("bypass: pager: mapping %zu bytes would exceed the swap file "
		       "(%u of %u pages mapped already)", length, p->ids.mapped, p->swap.pages);
		e = -ENOSPC;
		goto out;
	}
	if (handler && p->srv.uffd_thread < 0) {
		/* Handler threads already serving the adaptive engine's pool
		 * poll the descriptors they found when they started: stop them
		 * and start them again (below) to read this one too. */
		bool restart = p->srv.nlive != 0;
		if (restart)
			bp_pager_thread_stop(p);
		e = bp_open_thread_uffd(p);
		if (e) {
			if (restart && bp_pager_thread_start(p) != 0)
				bp_err("bypass: pager: cannot restart the handler threads");
			goto out;
		}
	}
	if (handler) {
		e = bp_pager_thread_start(p);
		if (e)
			goto out;
	}
	e = id_reserve_extent(p);
	if (!e)
		e = id_alloc(p, (uint32_t)np, &id0);
	if (e) {
		bp_err("bypass: pager: no contiguous room for %zu pages in the swap file's "
		       "page table (fragmented by unmaps)", np);
		goto out;
	}
	have_id = true;
	m = bp_sys_mmap(at, length, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (at ? MAP_FIXED : 0), -1, 0);
	if (m == MAP_FAILED) {
		e = -errno;
		goto out;
	}
	/* 4 KiB pages only (the pager's unit).  Inherited by fork: fork.c
	 * makes every page resident first. */
	bp_sys_madvise(m, length, MADV_NOHUGEPAGE);
	bool adaptive = !handler && p->cfg.mode == BYPASS_PAGER_ADAPTIVE;
	bool pooled = adaptive && atomic_load(&p->eng.pool_now);
	int uffd = handler ? p->srv.uffd_thread : pooled ? atomic_load(&p->eng.uffd_pool) : p->srv.uffd_sigbus;
	e = bp_uffd_register(uffd, (uintptr_t)m, length);
	if (e) {
		bp_err("bypass: pager: UFFDIO_REGISTER: %s", strerror(-e));
		goto out;
	}
	r = bp_pg_calloc(1, sizeof(*r));
	if (!r) {
		e = -ENOMEM;
		goto out;
	}
	r->start = (uintptr_t)m;
	r->end = r->start + length;
	r->pager = p;
	r->id0 = id0;
	atomic_init(&r->uffd, uffd);
	atomic_init(&r->handler, handler || pooled);
	r->adaptive = adaptive;
	r->gen = p->cfg.gen;
	e = bp_region_engine_init(r);
	if (!e)
		e = bp_tab_replace(NULL, 0, &r, 1);
	if (e)
		goto out;
	p->ids.mapped += (uint32_t)np;
	*addr = m;
	bp_debug("bypass: pager: mapped %p, %zu pages, ids %u.., %s", m, np, id0,
		 handler ? "handler thread" : "upcall");
out:
	if (e) {
		bp_region_free(r);
		if (m != MAP_FAILED && at) /* the caller's reservation again */
			bp_sys_mmap(m, length, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		else if (m != MAP_FAILED)
			bp_sys_munmap(m, length);
		if (have_id)
			id_free(p, id0, (uint32_t)np);
	}
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return e;
}

int bypass_pager_map(bypass_pager *p, size_t length, unsigned flags, void **addr)
{
	return map_region(p, length, flags, NULL, addr);
}

int bp_pager_map_at(bypass_pager *p, void *at, size_t length, unsigned flags)
{
	void *got;
	return at ? map_region(p, length, flags, at, &got) : -EINVAL;
}

static struct region *region_dup(const struct region *r, uintptr_t start, uintptr_t end)
{
	struct region *n = bp_pg_calloc(1, sizeof(*n));
	if (n) {
		n->start = start;
		n->end = end;
		n->pager = r->pager;
		n->id0 = region_id(r, start);
		atomic_init(&n->uffd, atomic_load(&r->uffd));
		atomic_init(&n->handler, atomic_load(&r->handler));
		n->adaptive = r->adaptive;
		n->gen = r->gen;
		/* faults in r update these meanwhile: read them atomically */
		atomic_init(&n->ra_next, atomic_load_explicit(&r->ra_next, memory_order_relaxed));
		atomic_init(&n->ra_win, atomic_load_explicit(&r->ra_win, memory_order_relaxed));
		if (bp_region_engine_init(n)) {
			bp_pg_free(n);
			n = NULL;
		}
	}
	return n;
}

/* Unmap [a, a + len) of region r (p->lock held). */
static int unmap_locked(struct bypass_pager *p, struct region *r, uintptr_t a, size_t len)
{
	struct region *piece[2];
	size_t np = 0;
	if (a > r->start && !(piece[np++] = region_dup(r, r->start, a)))
		goto nomem;
	if (a + len < r->end && !(piece[np++] = region_dup(r, a + len, r->end)))
		goto nomem;
	if (bp_tab_replace(&r, 1, piece, np))
		goto nomem;

	/* No fault handler can reach the hole now; finish the write-backs
	 * in flight, then forget its pages. */
	uint32_t hid = region_id(r, a), hn = (uint32_t)(len >> PG_SHIFT);
	bp_plock_lock(&p->ev.lock);
	bp_evict_drain(p);
	uint32_t res = 0, pins = 0;
	for (uint32_t id = hid; id < hid + hn; id++) {
		struct pg *pg = pg_of(p, id);
		uint32_t w = atomic_load(&pg->w);
		if (w & PW_LRU)
			bp_lru_del(p, id);
		unsigned st = pg_state(w);
		if (st == PS_RESIDENT || st == PS_WRITEBACK)
			res++;
		pins += (w >> PW_PIN_SHIFT) != 0; /* p->bud.pinned counts pages, not pins */
		bp_slot_free(p, pg);
		atomic_store(&pg->w, 0);
		pg->prev = pg->next = 0;
	}
	bp_bud_sub(p, res);
	atomic_fetch_sub(&p->bud.pinned, pins);
	bp_heat_forget(p, hid, hn); /* access heat (heat.h) */
	bp_sample_forget(p, hid, hn); /* parked pages of the hole */
	bp_plock_unlock(&p->ev.lock);
	bp_policy_unmap(p, hid, hn);
	bp_pager_progress(p);
	bp_sys_munmap((void *)a, len);
	id_free(p, hid, hn);
	p->ids.mapped -= hn;
	bp_region_free(r);
	return 0;
nomem:
	while (np)
		bp_region_free(piece[--np]);
	return -ENOMEM;
}

int bypass_pager_unmap(bypass_pager *p, void *addr, size_t length)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	uintptr_t a = (uintptr_t)addr;
	if (!length || (a & (PG_SIZE - 1)) || (length & (PG_SIZE - 1)) || a + length < a)
		return -EINVAL;
	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	/* p's regions change only under p->lock, which we hold. */
	unsigned idx = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), a);
	bp_tab_leave(idx);
	if (!r || r->pager != p || a + length > r->end) {
		bp_err("bypass: pager: unmap of %p + %zu: not inside one region of this pager",
		       addr, length);
		e = -EINVAL;
	} else {
		e = id_reserve_extent(p);
		if (!e)
			e = unmap_locked(p, r, a, length);
	}
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return e;
}

int bypass_pager_destroy(bypass_pager *p)
{
	if (!p)
		return -EINVAL;
	bp_fork_remove(p); /* no fork prepares it from now on */
	if (p->cfg.gen != bp_fork_gen()) {
		/*
		 * A forked child: the regions are ordinary memory here (the
		 * table forgot them at fork; the program unmaps them as any
		 * memory) and the parent's threads do not exist; release our
		 * copy only.
		 */
		pager_free(p, true);
		return 0;
	}
	bp_heat_stop(p); /* access heat: the sampler and DAMON (heat.h) */
	bp_sample_stop(p); /* access samples: every parked page back */
	bp_engine_stop(p); /* no switch from now on */
	bp_pf_stop(p);     /* no prefetch either */
	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	for (;;) {
		unsigned idx = bp_tab_enter();
		struct regtab *t = bp_tab_get();
		struct region *r = NULL;
		for (size_t i = 0; t && i < t->n && !r; i++)
			if (t->r[i]->pager == p)
				r = t->r[i];
		bp_tab_leave(idx);
		if (!r)
			break;
		if (id_reserve_extent(p) || unmap_locked(p, r, r->start, r->end - r->start)) {
			bp_err("bypass: pager: out of memory while destroying; regions leak");
			break;
		}
	}
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	pager_free(p, false);
	return 0;
}

/* ------------------------------------------------------------ descriptors */

static void fd_add(int fd, int *out, int max, int *n)
{
	if (fd < 0)
		return;
	for (int i = 0; i < *n && i < max; i++)
		if (out[i] == fd)
			return;
	if (*n < max)
		out[*n] = fd;
	(*n)++;
}

int bp_pager_fds(bypass_pager *p, int *out, int max)
{
	int n = 0;
	if (!p)
		return 0;
	fd_add(p->srv.uffd_sigbus, out, max, &n);
	fd_add(p->srv.uffd_thread, out, max, &n);
	fd_add(p->srv.stop_fd, out, max, &n);
	fd_add(atomic_load(&p->eng.uffd_pool), out, max, &n);
	fd_add(p->swap.fd, out, max, &n);
	for (unsigned l = 0; l < p->lin.depth && l < PG_LEVELS; l++)
		fd_add(p->lin.fd[l], out, max, &n);
	fd_add(p->ev.pidfd_owned, out, max, &n);
	/* the rings (write-back, swap-in reads, the prefetcher's, the tier's:
	 * every ring of the library, core/uring.c) and the handler threads'
	 * epoll instances: the library's list (core/fdhigh.h) */
	int listed[64];
	int nl = bp_fd_listed(listed, 64);
	for (int i = 0; i < nl && i < 64; i++)
		fd_add(listed[i], out, max, &n);
	struct bp_heat *h = atomic_load(&p->heat);
	if (h) {
		fd_add(h->stop_fd, out, max, &n);
		fd_add(h->pm_fd, out, max, &n);
	}
	return n;
}

/* ------------------------------------------------------------ stats */

/* New counters come out of the reserved tail: the struct keeps its size. */
_Static_assert(sizeof(struct bypass_pager_stats) == 96 * sizeof(uint64_t),
	       "struct bypass_pager_stats changed size");

/* BP_PAGER_COUNTERS has the public struct's fields, in its order, and
 * every one of them but the reserved words: a mirror of the list, checked
 * field by field against the public struct. */
#define MIRROR_ONE(name) uint64_t name;
#define MIRROR_SHARD MIRROR_ONE
#define MIRROR_ATOMIC MIRROR_ONE
#define MIRROR_PLAIN MIRROR_ONE
#define MIRROR_SAMPLE MIRROR_ONE
#define MIRROR_HIST(name) uint64_t name[BYPASS_PAGER_HIST];
#define MIRROR(name, kind, from) MIRROR_##kind(name)
struct stats_mirror {
	BP_PAGER_COUNTERS(MIRROR)
};
#define SAME_PLACE(name, kind, from)                                                        \
	_Static_assert(offsetof(struct stats_mirror, name) ==                               \
			       offsetof(struct bypass_pager_stats, name),                   \
		       "BP_PAGER_COUNTERS: " #name " is not where the public struct has it");
BP_PAGER_COUNTERS(SAME_PLACE)
_Static_assert(sizeof(struct stats_mirror) == offsetof(struct bypass_pager_stats, reserved),
	       "BP_PAGER_COUNTERS: the public struct has a counter the list lacks");

int bypass_pager_stats(bypass_pager *p, struct bypass_pager_stats *st)
{
	if (!p || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
#define FILL_SHARD(name, from) st->name = ST_SUM(p, from);
#define FILL_ATOMIC(name, from) st->name = atomic_load_explicit(&p->from, memory_order_relaxed);
#define FILL_PLAIN(name, from) st->name = p->from;
#define FILL_HIST(name, from)                            \
	for (int i = 0; i < BYPASS_PAGER_HIST; i++)      \
		st->name[i] = ST_SUM(p, from[i]);
#define FILL_SAMPLE(name, from)
#define FILL(name, kind, from) FILL_##kind(name, from)
	BP_PAGER_COUNTERS(FILL)
#undef FILL
	bp_sample_stats(p, &st->access_samples, &st->access_hits, &st->access_sample_ns,
			&st->access_hit_ns);
	return 0;
}
