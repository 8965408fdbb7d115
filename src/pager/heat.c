/* SPDX-License-Identifier: MIT */
/*
 * Access heat: the API, the sampler thread, the scores and ranges, the
 * written source (PAGEMAP_SCAN) and the live view file.  See heat.h and
 * docs/pager.md ("Access heat").
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/map.h"
#include "pager/heat.h"
#include "pager/policy.h"
#include "core/syscall.h"
#include "core/fdhigh.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* PAGEMAP_SCAN (Linux 6.7), for headers that predate it. */
struct heat_page_region {
	uint64_t start, end, categories;
};
struct heat_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages,
		category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define HEAT_PAGEMAP_SCAN _IOWR('f', 16, struct heat_pm_scan_arg)
#define HEAT_PAGE_IS_WRITTEN (1u << 1)
#define HEAT_PAGE_IS_PRESENT (1u << 3)

#define HEAT_VEC 256u       /* ranges per PAGEMAP_SCAN call */
#define HEAT_DAMON_MAX 4096u /* accessed regions read per round */

/* ------------------------------------------------------------ the written source */

/*
 * PAGE_IS_WRITTEN of a page in a userfaultfd-WP range means "present and
 * not write-protected": for the pager, written since it was last cleaned
 * (read in, or written back).  Probe the ioctl on our own arrays.
 */
static int written_open(struct bp_heat *h)
{
	int fd = bp_sys_open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		int e = -errno;
		snprintf(h->written_why, sizeof(h->written_why), "open /proc/self/pagemap: %s",
			 strerror(-e));
		return e == -EACCES ? -EPERM : e;
	}
	struct heat_page_region v[1];
	struct heat_pm_scan_arg a = {
		.size = sizeof(a), .start = (uintptr_t)h->score,
		.end = (uintptr_t)h->score + PG_SIZE, .vec = (uintptr_t)v, .vec_len = 1,
		.category_mask = HEAT_PAGE_IS_PRESENT, .return_mask = HEAT_PAGE_IS_PRESENT,
	};
	if (bp_sys_ioctl(fd, HEAT_PAGEMAP_SCAN, &a) < 0) {
		int e = errno;
		bp_sys_close(fd);
		snprintf(h->written_why, sizeof(h->written_why),
			 "ioctl(PAGEMAP_SCAN): %s (Linux 6.7 or later needed)", strerror(e));
		return -EOPNOTSUPP;
	}
	h->pm_fd = bp_fd_lift(fd, true); /* out of the program's way */
	return 0;
}

/* Mark tmp bit 7 on the pages of [start, end) that are PAGE_IS_WRITTEN. */
static void written_scan(struct bp_heat *h, const struct region *r)
{
	struct heat_page_region v[HEAT_VEC];
	uintptr_t a = r->start;
	while (a < r->end) {
		struct heat_pm_scan_arg s = {
			.size = sizeof(s), .start = a, .end = r->end, .vec = (uintptr_t)v,
			.vec_len = HEAT_VEC,
			.category_mask = HEAT_PAGE_IS_WRITTEN | HEAT_PAGE_IS_PRESENT,
			.return_mask = HEAT_PAGE_IS_WRITTEN,
		};
		long n = bp_sys_ioctl(h->pm_fd, HEAT_PAGEMAP_SCAN, &s);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* e.g. the region went away meanwhile */
		}
		for (long i = 0; i < n; i++)
			for (uintptr_t q = v[i].start; q < v[i].end && q < r->end; q += PG_SIZE)
				if (q >= r->start)
					h->tmp[region_id(r, q)] |= 0x80;
		if (s.walk_end <= a || s.walk_end >= r->end)
			break;
		a = s.walk_end;
	}
}

/*
 * The written source of region r for this round.  An engine switch
 * (engine.c, region_switch) unprotects the whole region for a moment and
 * write-protects again the pages whose flags say so: a scan inside that
 * window sees every present page as written.  So a scan that overlapped a
 * switch (switch_seq odd, or changed meanwhile) is thrown away and every
 * page keeps what the previous scan saw (no evidence either way).
 */
static void written_region(struct bp_heat *h, struct region *r)
{
	uint32_t s0 = atomic_load(&r->switch_seq);
	if (!(s0 & 1)) {
		written_scan(h, r);
		if (atomic_load(&r->switch_seq) == s0)
			return;
	}
	uint32_t n = (uint32_t)((r->end - r->start) >> PG_SHIFT);
	for (uint32_t id = r->id0; id < r->id0 + n; id++) {
		bool was = atomic_load_explicit(&h->hit[id], memory_order_relaxed) & HEAT_WAS_DIRTY;
		h->tmp[id] = (uint8_t)((h->tmp[id] & 0x7f) | (was ? 0x80 : 0));
	}
}

/* ------------------------------------------------------------ one round */

/*
 * A sample is known: [addr, addr + npages pages) of p was seen accessed by
 * a source other than faults (flags: BYPASS_PAGER_HEAT_*).
 */
static void heat_sample(struct bypass_pager *p, uintptr_t addr, size_t npages,
			unsigned flags)
{
	/* DAMON's samples are accesses, PAGEMAP_SCAN's are writes: to the
	 * reference bits, the prefetch counters and the policy's on_access
	 * (no page lock is held here; a nested region-table read section is
	 * allowed) */
	unsigned f = 0;
	if (flags & BYPASS_PAGER_HEAT_DAMON)
		f |= BYPASS_PAGER_ACCESSED;
	if (flags & BYPASS_PAGER_HEAT_WRITTEN)
		f |= BYPASS_PAGER_WRITTEN;
	bp_policy_access(p, addr, npages, f);
}

/* Apply DAMON's accessed regions to tmp[] (levels 1..64). */
static void damon_apply(struct bp_heat *h, struct regtab *t, const struct bp_damon_range *d,
			int n, unsigned maxacc)
{
	struct bypass_pager *p = h->p;
	if (!maxacc)
		maxacc = 1;
	for (int i = 0; i < n; i++) {
		unsigned lvl = (unsigned)(((uint64_t)d[i].nr_accesses * HEAT_FULL + maxacc - 1) /
					  maxacc);
		if (lvl > HEAT_FULL)
			lvl = HEAT_FULL;
		if (!lvl)
			continue;
		/* the pager's regions that overlap it (a DAMON region may
		 * span gaps of terabytes: walk the regions, not the gaps) */
		for (size_t k = 0; k < t->n; k++) {
			const struct region *r = t->r[k];
			if (r->pager != p || r->end <= d[i].start || r->start >= d[i].end)
				continue;
			uintptr_t a = d[i].start > r->start ? d[i].start & ~(uintptr_t)(PG_SIZE - 1)
							     : r->start;
			uintptr_t end = d[i].end < r->end ? d[i].end : r->end;
			size_t np = 0;
			uintptr_t first = a;
			for (; a < end; a += PG_SIZE, np++) {
				uint32_t id = region_id(r, a);
				if ((h->tmp[id] & 0x7f) < lvl)
					h->tmp[id] = (uint8_t)((h->tmp[id] & 0x80) | lvl);
			}
			if (np)
				heat_sample(p, first, np, BYPASS_PAGER_HEAT_DAMON);
		}
	}
}

/* Fold this round's evidence into the scores of region r's pages. */
static void fold_region(struct bp_heat *h, const struct region *r, uint64_t *cnt)
{
	struct bypass_pager *p = h->p;
	uint32_t id0 = r->id0, n = (uint32_t)((r->end - r->start) >> PG_SHIFT);
	bool wr_src = h->sources & BYPASS_PAGER_HEAT_WRITTEN;
	for (uint32_t id = id0; id < id0 + n; id++) {
		uint8_t hit = atomic_fetch_and_explicit(&h->hit[id], (uint8_t)HEAT_WAS_DIRTY,
							memory_order_relaxed);
		uint8_t tmp = h->tmp[id];
		h->tmp[id] = 0;
		unsigned ev = 0, lvl = tmp & 0x7f;
		if (hit & HEAT_HIT_ACC) {
			ev = HEAT_FULL;
			cnt[0]++;
			if (hit & HEAT_HIT_WR)
				cnt[1]++;
		}
		if (wr_src) {
			bool now = tmp & 0x80, was = hit & HEAT_WAS_DIRTY;
			if (now && !was) {
				ev = HEAT_FULL;
				cnt[2]++;
				atomic_fetch_or_explicit(&h->hit[id], (uint8_t)HEAT_WAS_DIRTY,
							 memory_order_relaxed);
				heat_sample(p, region_addr(r, id), 1, BYPASS_PAGER_HEAT_WRITTEN);
			} else if (!now && was) {
				atomic_fetch_and_explicit(&h->hit[id], (uint8_t)~HEAT_WAS_DIRTY,
							  memory_order_relaxed);
			}
		}
		if (lvl) {
			cnt[3]++;
			if (lvl > ev)
				ev = lvl;
		}
		unsigned s = atomic_load_explicit(&h->score[id], memory_order_relaxed);
		s = s - ((s + 3) >> 2) + ev;
		atomic_store_explicit(&h->score[id], (uint16_t)s, memory_order_relaxed);
		/* 2Q: a resident page on a list that DAMON saw accessed, or whose
		 * score says it is used interval after interval, is referenced. */
		if (lvl || s >= HEAT_REF_SCORE) {
			struct pg *pg = pg_of(p, id);
			uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
			if ((w & PW_LRU) && pg_state(w) == PS_RESIDENT) {
				if (!(w & PW_REF))
					pg_set(pg, PW_REF);
				cnt[4]++;
			}
		}
	}
}

static void heat_round(struct bp_heat *h, const struct bp_damon_range *d, int nd,
		       unsigned maxacc)
{
	struct bypass_pager *p = h->p;
	uint64_t t0 = bypass_now_ns();
	uint64_t cnt[5] = { 0 };
	bp_mutex_lock(&h->lock, BP_RANK_HEAT);
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	if (t && (h->sources & BYPASS_PAGER_HEAT_WRITTEN))
		for (size_t i = 0; i < t->n; i++)
			if (t->r[i]->pager == p)
				written_region(h, t->r[i]);
	if (t && nd > 0)
		damon_apply(h, t, d, nd, maxacc);
	for (size_t i = 0; t && i < t->n; i++)
		if (t->r[i]->pager == p)
			fold_region(h, t->r[i], cnt);
	bp_tab_leave(idx);
	bp_mutex_unlock(&h->lock, BP_RANK_HEAT);
	atomic_fetch_add(&h->fault_accessed, cnt[0]);
	atomic_fetch_add(&h->fault_written, cnt[1]);
	atomic_fetch_add(&h->written_pages, cnt[2]);
	atomic_fetch_add(&h->damon_accessed, cnt[3]);
	atomic_fetch_add(&h->refs_set, cnt[4]);
	if (nd > 0)
		atomic_fetch_add(&h->damon_regions, (uint64_t)nd);
	atomic_fetch_add(&h->samples, 1);
	atomic_fetch_add(&h->sample_ns, bypass_now_ns() - t0);
}

/* ------------------------------------------------------------ ranges */

static unsigned level_of(unsigned s)
{
	return s == 0 ? 0 : s < 32 ? 1 : s < HEAT_REF_SCORE ? 2 : 3;
}

/* Is a better than b for which? */
static bool range_better(int which, const struct bypass_pager_heat_range *a,
			 const struct bypass_pager_heat_range *b)
{
	if (a->heat != b->heat)
		return which == BYPASS_PAGER_HEAT_HOT ? a->heat > b->heat : a->heat < b->heat;
	return a->length > b->length;
}

/* Keep the best n of the runs offered (insertion into a sorted array). */
static void range_offer(int which, struct bypass_pager_heat_range *out, size_t n,
			size_t *have, const struct bypass_pager_heat_range *c)
{
	if (!n || (which == BYPASS_PAGER_HEAT_HOT && !c->heat))
		return;
	size_t i = *have;
	if (i == n) {
		if (!range_better(which, c, &out[n - 1]))
			return;
		i = n - 1;
	} else {
		(*have)++;
	}
	while (i > 0 && range_better(which, c, &out[i - 1])) {
		out[i] = out[i - 1];
		i--;
	}
	out[i] = *c;
}

static size_t collect(struct bp_heat *h, int which, struct bypass_pager_heat_range *out,
		      size_t n)
{
	struct bypass_pager *p = h->p;
	size_t have = 0;
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	for (size_t i = 0; t && i < t->n; i++) {
		const struct region *r = t->r[i];
		if (r->pager != p)
			continue;
		uint32_t n_pg = (uint32_t)((r->end - r->start) >> PG_SHIFT);
		uint32_t run0 = 0;
		uint64_t sum = 0;
		unsigned lvl = 0;
		for (uint32_t k = 0; k <= n_pg; k++) {
			unsigned s = k < n_pg ? atomic_load_explicit(&h->score[r->id0 + k],
								     memory_order_relaxed)
					      : 0;
			unsigned l = level_of(s);
			if (k && (k == n_pg || l != lvl)) {
				struct bypass_pager_heat_range c = {
					.addr = (void *)(r->start + ((uintptr_t)run0 << PG_SHIFT)),
					.length = (size_t)(k - run0) << PG_SHIFT,
					.heat = (unsigned)(sum / (k - run0)),
				};
				range_offer(which, out, n, &have, &c);
				run0 = k;
				sum = 0;
			}
			lvl = l;
			sum += s;
		}
	}
	bp_tab_leave(idx);
	return have;
}

/* ------------------------------------------------------------ live view */

#define HEAT_VIEW_RANGES 10

/* The view is built in memory, then written with one write(2) (no stdio:
 * fclose is a name the preloads define; core/syscall.h). */
struct view_buf {
	char b[8192];
	size_t n;
	bool full;
};

static void __attribute__((format(printf, 2, 3))) vput(struct view_buf *v, const char *fmt, ...)
{
	if (v->full)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(v->b + v->n, sizeof(v->b) - v->n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof(v->b) - v->n)
		v->full = true;
	else
		v->n += (size_t)k;
}

static void write_view(struct bp_heat *h)
{
	char tmp[PATH_MAX + 16];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", h->stats_path) >= (int)sizeof(tmp))
		return;
	int fd = bp_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		bp_warn("bypass: pager: heat view %s: %s", tmp, strerror(errno));
		return;
	}
	struct view_buf v;
	v.n = 0;
	v.full = false;
	struct bypass_pager_heat_stats st;
	struct bypass_pager_stats ps;
	bypass_pager_heat_stats(h->p, &st);
	bypass_pager_stats(h->p, &ps);
	vput(&v, "bypass-heat 1\npid %d\ntime_ns %llu\ninterval_ms %u\nsources %s%s%s\n",
	     (int)bp_pid(), (unsigned long long)bypass_now_ns(), st.interval_ms,
	     st.sources & BYPASS_PAGER_HEAT_FAULTS ? "faults," : "",
	     st.sources & BYPASS_PAGER_HEAT_WRITTEN ? "written," : "",
	     st.sources & BYPASS_PAGER_HEAT_DAMON ? "damon," : "");
	vput(&v, "samples %llu\nfault_accessed %llu\nfault_written %llu\n"
		 "written_pages %llu\ndamon_accessed %llu\ndamon_regions %llu\n"
		 "refs_set %llu\nsample_ns %llu\n",
	     (unsigned long long)st.samples, (unsigned long long)st.fault_accessed,
	     (unsigned long long)st.fault_written, (unsigned long long)st.written_pages,
	     (unsigned long long)st.damon_accessed, (unsigned long long)st.damon_regions,
	     (unsigned long long)st.refs_set, (unsigned long long)st.sample_ns);
	if (st.written_status)
		vput(&v, "written_off %s\n", st.written_why);
	if (st.damon_status)
		vput(&v, "damon_off %s\n", st.damon_why);
	vput(&v, "resident_pages %llu\nbudget_pages %llu\nmapped_pages %llu\n"
		 "faults_swapin %llu\nevictions %llu\n",
	     (unsigned long long)ps.resident_pages, (unsigned long long)ps.budget_pages,
	     (unsigned long long)ps.mapped_pages, (unsigned long long)ps.faults_swapin,
	     (unsigned long long)ps.evictions);
	struct bypass_pager_heat_range r[HEAT_VIEW_RANGES];
	for (int which = 0; which < 2; which++) {
		size_t n = collect(h, which, r, HEAT_VIEW_RANGES);
		for (size_t i = 0; i < n; i++)
			vput(&v, "%s %#lx %zu %u\n",
			     which == BYPASS_PAGER_HEAT_HOT ? "hot" : "cold",
			     (unsigned long)(uintptr_t)r[i].addr, r[i].length, r[i].heat);
	}
	int e = v.full ? ENOSPC : 0;
	for (size_t off = 0; !e && off < v.n;) {
		ssize_t k = bp_sys_write(fd, v.b + off, v.n - off);
		if (k > 0)
			off += (size_t)k;
		else if (k == 0)
			e = EIO;
		else if (errno != EINTR)
			e = errno;
	}
	if (bp_sys_close(fd) != 0 && !e)
		e = errno;
	if (e || rename(tmp, h->stats_path) != 0) {
		bp_warn("bypass: pager: heat view %s: %s", h->stats_path, strerror(e ? e : errno));
		unlink(tmp);
	}
}

/* ------------------------------------------------------------ the sampler */

/* The calling thread is a sampler (it writes the view under p->lock). */
static __thread bool in_sampler;

static void *sampler_main(void *arg)
{
	bp_enter_for_good(); /* the library's own thread */
	struct bp_heat *h = arg;
	in_sampler = true;
	struct bp_damon_range *d = NULL;
	if (h->sources & BYPASS_PAGER_HEAT_DAMON)
		d = bp_pg_malloc(HEAT_DAMON_MAX * sizeof(*d));
	for (;;) {
		int nd = 0;
		unsigned maxacc = 0;
		int wait_ms = (int)h->interval_ms;
		if (d) {
			/* waits for DAMON's next aggregation (one interval);
			 * whatever it took, a round per interval at most */
			uint64_t t0 = bypass_now_ns();
			nd = bp_damon_read(h, d, HEAT_DAMON_MAX, &maxacc);
			if (nd < 0) {
				bp_warn("bypass: pager: heat: reading DAMON: %s", strerror(-nd));
				nd = 0;
			}
			uint64_t took_ms = (bypass_now_ns() - t0) / 1000000u;
			wait_ms = took_ms >= h->interval_ms ? 0 : (int)(h->interval_ms - took_ms);
		}
		struct pollfd pf = { .fd = h->stop_fd, .events = POLLIN };
		int r = bp_sys_poll(&pf, 1, wait_ms);
		if (r > 0 || (r < 0 && errno != EINTR))
			break;
		heat_round(h, d, nd, maxacc);
		if (h->stats_path[0]) {
			uint64_t now = bypass_now_ns();
			if (now - h->stats_last_ns >= (uint64_t)h->stats_ms * 1000000u) {
				h->stats_last_ns = now;
				write_view(h);
			}
		}
	}
	if (h->stats_path[0])
		write_view(h); /* the final state */
	bp_pg_free(d);
	return NULL;
}

/* ------------------------------------------------------------ the API */

static struct bp_heat *heat_get(struct bypass_pager *p)
{
	return atomic_load_explicit(&p->heat, memory_order_acquire);
}

/* The heat of p, allocated on first use (p->lock held). */
static int heat_alloc(struct bypass_pager *p, struct bp_heat **out)
{
	struct bp_heat *h = heat_get(p);
	if (h) {
		*out = h;
		return 0;
	}
	h = bp_pg_calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->p = p;
	h->npages = p->swap.pages;
	h->maplen = ((size_t)h->npages * 4 + PG_SIZE - 1) & ~(PG_SIZE - 1);
	void *m = bp_sys_mmap(NULL, h->maplen, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		bp_pg_free(h);
		return -ENOMEM;
	}
	bp_sys_madvise(m, h->maplen, MADV_DONTFORK);
	h->score = m;                                           /* 2 bytes a page */
	h->hit = (_Atomic uint8_t *)((char *)m + (size_t)h->npages * 2); /* 1 */
	h->tmp = (uint8_t *)m + (size_t)h->npages * 3;          /* 1 */
	h->stop_fd = h->pm_fd = -1;
	pthread_mutex_init(&h->lock, NULL);
	atomic_store_explicit(&p->heat, h, memory_order_release);
	*out = h;
	return 0;
}

static void heat_stop_locked(struct bp_heat *h)
{
	if (h->live) {
		uint64_t one = 1;
		ssize_t n = bp_sys_write(h->stop_fd, &one, sizeof(one));
		(void)n;
		bp_thread_join(&h->thread);
		h->live = false;
	}
	if (h->damon)
		bp_damon_stop(h);
	atomic_store(&h->on, false);
	if (h->stop_fd >= 0)
		bp_sys_close(h->stop_fd);
	if (h->pm_fd >= 0)
		bp_sys_close(h->pm_fd);
	h->stop_fd = h->pm_fd = -1;
	h->sources = 0;
}

int bypass_pager_heat_enable(bypass_pager *p, const struct bypass_pager_heat_config *cfg)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	if (!cfg || (cfg->sources & ~BYPASS_PAGER_HEAT_ALL) ||
	    (cfg->flags & ~BYPASS_PAGER_HEAT_OPTIONAL) || cfg->reserved_u)
		return -EINVAL;
	for (unsigned i = 0; i < BP_ARRAY_SIZE(cfg->reserved); i++)
		if (cfg->reserved[i])
			return -EINVAL;
	unsigned interval = cfg->interval_ms ? cfg->interval_ms : 100;
	if (interval < 10 || interval > 60000)
		return -EINVAL;
	unsigned stats_ms = cfg->stats_ms ? cfg->stats_ms : 1000;
	if (stats_ms < interval)
		stats_ms = interval;
	if (cfg->stats_path && (!cfg->stats_path[0] || strlen(cfg->stats_path) >= PATH_MAX - 16))
		return -EINVAL;
	bool optional = !cfg->sources || (cfg->flags & BYPASS_PAGER_HEAT_OPTIONAL);
	unsigned want = cfg->sources ? cfg->sources : BYPASS_PAGER_HEAT_ALL;

	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	struct bp_heat *h;
	e = heat_alloc(p, &h);
	if (e)
		goto out;
	if (h->live) {
		e = -EBUSY;
		goto out;
	}
	h->interval_ms = interval;
	h->stats_ms = stats_ms;
	snprintf(h->stats_path, sizeof(h->stats_path), "%s", cfg->stats_path ? cfg->stats_path : "");
	h->sources = BYPASS_PAGER_HEAT_FAULTS & want;
	h->written_status = h->damon_status = -ENOTCONN;
	snprintf(h->written_why, sizeof(h->written_why), "not requested");
	snprintf(h->damon_why, sizeof(h->damon_why), "not requested");
	if (want & BYPASS_PAGER_HEAT_WRITTEN) {
		h->written_why[0] = 0;
		h->written_status = written_open(h);
		if (!h->written_status)
			h->sources |= BYPASS_PAGER_HEAT_WRITTEN;
		else
			bp_info("bypass: pager: heat: no written source: %s", h->written_why);
		if (h->written_status && !optional) {
			e = h->written_status;
			goto undo;
		}
	}
	if (want & BYPASS_PAGER_HEAT_DAMON) {
		h->damon_why[0] = 0;
		h->damon_status = bp_damon_start(h, interval, h->damon_why, sizeof(h->damon_why));
		if (!h->damon_status)
			h->sources |= BYPASS_PAGER_HEAT_DAMON;
		else
			bp_info("bypass: pager: heat: no DAMON source: %s", h->damon_why);
		if (h->damon_status && !optional) {
			e = h->damon_status;
			goto undo;
		}
	}
	h->stop_fd = bp_fd_lift(eventfd(0, EFD_CLOEXEC), true);
	if (h->stop_fd < 0) {
		e = -errno;
		goto undo;
	}
	atomic_store(&h->on, (h->sources & BYPASS_PAGER_HEAT_FAULTS) != 0);
	h->stats_last_ns = 0;
	e = bp_thread_start(&h->thread, sampler_main, h);
	if (e)
		goto undo;
	h->live = true;
	bp_info("bypass: pager: heat on: sources %#x, every %u ms%s%s", h->sources, interval,
		h->stats_path[0] ? ", view " : "", h->stats_path);
	goto out;
undo:
	heat_stop_locked(h);
out:
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return e;
}

int bypass_pager_heat_disable(bypass_pager *p)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	struct bp_heat *h = heat_get(p);
	if (h)
		heat_stop_locked(h);
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return 0;
}

int bypass_pager_heat_stats(bypass_pager *p, struct bypass_pager_heat_stats *st)
{
	if (!p || !st)
		return -EINVAL;
	/* a forked child: the configuration is read under p->lock, which a
	 * thread of the parent may have held at the fork */
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	memset(st, 0, sizeof(*st));
	struct bp_heat *h = heat_get(p);
	if (!h) {
		st->written_status = st->damon_status = -ENOTCONN;
		snprintf(st->written_why, sizeof(st->written_why), "heat never enabled");
		snprintf(st->damon_why, sizeof(st->damon_why), "heat never enabled");
		return 0;
	}
#define LD(x) atomic_load_explicit(&h->x, memory_order_relaxed)
	st->samples = LD(samples);
	st->fault_accessed = LD(fault_accessed);
	st->fault_written = LD(fault_written);
	st->written_pages = LD(written_pages);
	st->damon_accessed = LD(damon_accessed);
	st->damon_regions = LD(damon_regions);
	st->refs_set = LD(refs_set);
	st->sample_ns = LD(sample_ns);
#undef LD
	/* the configuration changes only under p->lock, by enable/disable;
	 * the sampler's own view (write_view) reads it without */
	bool own = in_sampler;
	if (!own)
		bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	st->sources = h->sources;
	st->interval_ms = h->interval_ms;
	st->written_status = h->written_status;
	st->damon_status = h->damon_status;
	snprintf(st->written_why, sizeof(st->written_why), "%s", h->written_why);
	snprintf(st->damon_why, sizeof(st->damon_why), "%s", h->damon_why);
	if (!own)
		bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return 0;
}

int bypass_pager_heat_ranges(bypass_pager *p, int which, struct bypass_pager_heat_range *out,
			     size_t n)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	if ((which != BYPASS_PAGER_HEAT_HOT && which != BYPASS_PAGER_HEAT_COLD) || (!out && n))
		return -EINVAL;
	struct bp_heat *h = heat_get(p);
	if (!h)
		return -ENODATA;
	if (n > INT_MAX)
		n = INT_MAX;
	bp_mutex_lock(&h->lock, BP_RANK_HEAT);
	size_t got = collect(h, which, out, n);
	bp_mutex_unlock(&h->lock, BP_RANK_HEAT);
	return (int)got;
}

int bypass_pager_heat_reset(bypass_pager *p)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	struct bp_heat *h = heat_get(p);
	if (!h)
		return -ENODATA;
	bp_mutex_lock(&h->lock, BP_RANK_HEAT);
	for (uint32_t i = 0; i < h->npages; i++) {
		atomic_store_explicit(&h->score[i], 0, memory_order_relaxed);
		atomic_fetch_and_explicit(&h->hit[i], (uint8_t)HEAT_WAS_DIRTY,
					  memory_order_relaxed);
	}
	atomic_store(&h->samples, 0);
	atomic_store(&h->fault_accessed, 0);
	atomic_store(&h->fault_written, 0);
	atomic_store(&h->written_pages, 0);
	atomic_store(&h->damon_accessed, 0);
	atomic_store(&h->damon_regions, 0);
	atomic_store(&h->refs_set, 0);
	atomic_store(&h->sample_ns, 0);
	bp_mutex_unlock(&h->lock, BP_RANK_HEAT);
	return 0;
}

/* ------------------------------------------------------------ pager.c hooks */

void bp_heat_forget(struct bypass_pager *p, uint32_t id0, uint32_t n)
{
	struct bp_heat *h = heat_get(p);
	if (!h)
		return;
	for (uint32_t id = id0; id < id0 + n; id++) {
		atomic_store_explicit(&h->score[id], 0, memory_order_relaxed);
		atomic_store_explicit(&h->hit[id], 0, memory_order_relaxed);
	}
}

void bp_heat_stop(struct bypass_pager *p)
{
	struct bp_heat *h = heat_get(p);
	if (h) {
		bp_mutex_lock(&p->lock, BP_RANK_PAGER);
		heat_stop_locked(h);
		bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	}
}

void bp_heat_free(struct bypass_pager *p)
{
	struct bp_heat *h = heat_get(p);
	if (!h)
		return;
	atomic_store(&p->heat, NULL);
	if (p->cfg.gen == bp_fork_gen()) {
		heat_stop_locked(h); /* create failed after enabling, or destroy did it */
		pthread_mutex_destroy(&h->lock);
	}
	/* A forked child: the sampler and kdamond are the parent's; the
	 * arrays were not inherited (DONTFORK), the mapping is gone. */
	else {
		h->maplen = 0;
		if (h->stop_fd >= 0)
			bp_sys_close(h->stop_fd);
		if (h->pm_fd >= 0)
			bp_sys_close(h->pm_fd);
	}
	if (h->maplen)
		bp_sys_munmap((void *)h->score, h->maplen);
	bp_pg_free(h);
}
