/* SPDX-License-Identifier: MIT */
/*
 * The policy layer: the registry, bypass_pager_set_policy() (built-in,
 * registered or dlopen()ed policies, replaced on a live pager), per-range
 * hints (bypass_pager_advise), and the calls from the fault path and the
 * evictor into the policy, whose answers are checked here.
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/map.h"
#include "pager/lru.h"
#include "pager/policy.h"
#include "core/syscall.h"

#include <dlfcn.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_REGISTERED 32u
#define MAX_HINTS 64u
#define PF_OUT 8u /* prefetch ranges a policy may return per fault */

/* ------------------------------------------------------------ the registry */

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct bypass_pager_policy *g_reg[MAX_REGISTERED];
static unsigned g_nreg;

static bool name_ok(const char *n)
{
	size_t len = n ? strlen(n) : 0;
	return len >= 1 && len <= 31 && !strpbrk(n, ",:/");
}

static bool policy_ok(const struct bypass_pager_policy *pol)
{
	if (!pol || pol->version != BYPASS_PAGER_POLICY_VERSION || !name_ok(pol->name))
		return false;
	for (unsigned i = 0; i < BP_ARRAY_SIZE(pol->reserved); i++)
		if (pol->reserved[i])
			return false;
	return true;
}

static const struct bypass_pager_policy *find_locked(const char *name)
{
	for (unsigned i = 0; bp_builtin_policies[i]; i++)
		if (!strcasecmp(bp_builtin_policies[i]->name, name))
			return bp_builtin_policies[i];
	for (unsigned i = 0; i < g_nreg; i++)
		if (!strcasecmp(g_reg[i]->name, name))
			return g_reg[i];
	return NULL;
}

int bypass_pager_policy_register(const struct bypass_pager_policy *pol)
{
	if (!policy_ok(pol))
		return -EINVAL;
	int e = 0;
	bp_mutex_lock(&g_reg_lock, BP_RANK_POLREG);
	if (find_locked(pol->name))
		e = -EEXIST;
	else if (g_nreg == MAX_REGISTERED)
		e = -ENOSPC;
	else
		g_reg[g_nreg++] = pol;
	bp_mutex_unlock(&g_reg_lock, BP_RANK_POLREG);
	return e;
}

/* ------------------------------------------------------------ read sections */

/*
 * As the region table's (table.c): readers count themselves in the counter
 * of the current phase; a writer publishes, then flips the phase twice,
 * waiting each time for the old phase's readers to leave.
 */
unsigned bp_pol_enter(struct bypass_pager *p)
{
	unsigned idx = atomic_load(&p->pol.phase) & 1;
	atomic_fetch_add(&p->pol.readers[idx], 1);
	return idx;
}

void bp_pol_leave(struct bypass_pager *p, unsigned idx)
{
	atomic_fetch_sub(&p->pol.readers[idx], 1);
}

static void pol_sync(struct bypass_pager *p)
{
	for (int k = 0; k < 2; k++) {
		unsigned old = atomic_fetch_add(&p->pol.phase, 1) & 1;
		while (atomic_load(&p->pol.readers[old])) {
			struct timespec ts = { 0, 50000 };
			bp_sys_nanosleep(&ts, NULL);
		}
	}
}

static void pol_free(struct bp_pol *pol)
{
	if (!pol)
		return;
	if (pol->ops && pol->ops->fini)
		pol->ops->fini(pol->state);
	bp_pg_free(pol->addrs);
	if (pol->dl)
		dlclose(pol->dl);
	bp_pg_free(pol);
}

/* ------------------------------------------------------------ set_policy */

/* "path.so[:symbol]": the policy struct it exports (dlopen handle in *dl). */
static int load_so(char *body, const struct bypass_pager_policy **out, void **dl)
{
	const char *sym = "bypass_pager_policy";
	char *slash = strrchr(body, '/');
	char *colon = strrchr(slash ? slash : body, ':');
	if (colon) {
		*colon = 0;
		sym = colon + 1;
		if (!*sym)
			return -EINVAL;
	}
	if (!*body)
		return -EINVAL;
	void *h = dlopen(body, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		bp_err("bypass: pager: policy %s: %s", body, dlerror());
		return -ENOENT;
	}
	const struct bypass_pager_policy *pol = dlsym(h, sym);
	if (!pol) {
		bp_err("bypass: pager: policy %s has no symbol %s", body, sym);
		dlclose(h);
		return -ENOENT;
	}
	if (!policy_ok(pol)) {
		bp_err("bypass: pager: %s in %s is not a version-%u policy", sym, body,
		       BYPASS_PAGER_POLICY_VERSION);
		dlclose(h);
		return -EINVAL;
	}
	*out = pol;
	*dl = h;
	return 0;
}

static bool is_path(const char *body)
{
	size_t n = strlen(body);
	return strchr(body, '/') || (n > 3 && !strcmp(body + n - 3, ".so")) ||
	       strstr(body, ".so:");
}

int bypass_pager_set_policy(bypass_pager *p, const char *spec)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	if (!spec || !*spec || strlen(spec) >= 4096)
		return -EINVAL;
	char *buf = bp_pg_strdup(spec);
	if (!buf)
		return -ENOMEM;
	char *args = strchr(buf, ',');
	if (args)
		*args++ = 0;
	const struct bypass_pager_policy *ops = NULL;
	void *dl = NULL;
	if (!*buf) {
		e = -EINVAL;
	} else if (is_path(buf)) {
		e = load_so(buf, &ops, &dl);
	} else {
		bp_mutex_lock(&g_reg_lock, BP_RANK_POLREG);
		ops = find_locked(buf);
		bp_mutex_unlock(&g_reg_lock, BP_RANK_POLREG);
		if (!ops) {
			bp_err("bypass: pager: no policy named %s", buf);
			e = -ENOENT;
		}
	}
	struct bp_pol *pol = NULL;
	if (!e) {
		pol = bp_pg_calloc(1, sizeof(*pol));
		if (pol)
			pol->addrs = bp_pg_calloc(p->cfg.batch, sizeof(void *));
		if (!pol || !pol->addrs) {
			e = -ENOMEM;
			if (pol)
				bp_pg_free(pol);
			pol = NULL;
		}
	}
	if (e) {
		if (dl)
			dlclose(dl);
		bp_pg_free(buf);
		return e;
	}
	pol->ops = ops;
	pol->bi = bp_builtin_of(ops);
	pol->dl = dl;
	snprintf(pol->name, sizeof(pol->name), "%s", ops->name);

	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	if (ops->init) {
		e = ops->init(p, args, &pol->state);
		if (e > 0 || e < -4095)
			e = -EINVAL;
	}
	if (!e && ((pol->bi && pol->bi->prefetcher) || ops->prefetch)) {
		e = bp_pf_start(p);
		if (e && ops->fini)
			ops->fini(pol->state);
	}
	struct bp_pol *old = NULL;
	if (!e) {
		/* the built-in 2Q is no policy at all: NULL, which the fault
		 * path reads without a read section */
		bool plain = pol->bi && !pol->bi->victims && !pol->bi->streams &&
			     !pol->bi->prefetcher;
		old = atomic_exchange(&p->pol.cur, plain ? NULL : pol);
		pol_sync(p); /* nobody uses old any more */
		if (plain) {
			bp_info("bypass: pager: policy 2q");
			pol_free(pol);
			pol = NULL;
		}
	}
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	if (e) {
		pol->ops = NULL; /* fini done (or init failed) */
		pol_free(pol);
		bp_err("bypass: pager: policy %s: %s", buf, strerror(-e));
	} else {
		if (pol)
			bp_info("bypass: pager: policy %s%s%s", pol->name, args ? ", args " : "",
				args ? args : "");
		pol_free(old);
	}
	bp_pg_free(buf);
	return e;
}

void bp_policy_destroy(struct bypass_pager *p, bool child)
{
	if (!child)
		bp_pf_stop(p);
	else
		bp_pf_forget(p); /* the thread is the parent's */
	struct bp_pol *pol = atomic_exchange(&p->pol.cur, NULL);
	if (!child)
		pol_free(pol);
	else if (pol) {
		bp_pg_free(pol->addrs);
		bp_pg_free(pol);
	}
	bp_pg_free(p->pol.hints);
	p->pol.hints = NULL;
}

/* ------------------------------------------------------------ hint table */

/*
 * The hint ranges of a pager in page ids, disjoint, written under p->lock
 * with a sequence count (odd while changing) so that the evictor can read
 * them in a signal handler without a lock.
 */
struct bp_hints {
	_Atomic uint32_t seq;
	_Atomic uint32_t n;
	struct {
		_Atomic uint32_t a, b;
		_Atomic int adv;
	} r[MAX_HINTS];
};

struct hrange {
	uint32_t a, b;
	int adv;
};

/* Replace [a, b) in the list by adv (NORMAL: remove).  -ENOSPC if full. */
static int hints_set(struct hrange *v, uint32_t *n, uint32_t a, uint32_t b, int adv)
{
	struct hrange out[MAX_HINTS + 2];
	uint32_t m = 0;
	for (uint32_t i = 0; i < *n; i++) {
		if (v[i].b <= a || v[i].a >= b) {
			out[m++] = v[i];
			continue;
		}
		if (v[i].a < a)
			out[m++] = (struct hrange){ v[i].a, a, v[i].adv };
		if (v[i].b > b)
			out[m++] = (struct hrange){ b, v[i].b, v[i].adv };
	}
	if (adv != BYPASS_PAGER_ADV_NORMAL)
		out[m++] = (struct hrange){ a, b, adv };
	if (m > MAX_HINTS)
		return -ENOSPC;
	memcpy(v, out, m * sizeof(*v));
	*n = m;
	return 0;
}

static void hints_load(struct bp_hints *h, struct hrange *v, uint32_t *n)
{
	*n = atomic_load_explicit(&h->n, memory_order_relaxed);
	for (uint32_t i = 0; i < *n; i++) {
		v[i].a = atomic_load_explicit(&h->r[i].a, memory_order_relaxed);
		v[i].b = atomic_load_explicit(&h->r[i].b, memory_order_relaxed);
		v[i].adv = atomic_load_explicit(&h->r[i].adv, memory_order_relaxed);
	}
}

static void hints_store(struct bp_hints *h, const struct hrange *v, uint32_t n)
{
	atomic_fetch_add(&h->seq, 1);
	for (uint32_t i = 0; i < n; i++) {
		atomic_store_explicit(&h->r[i].a, v[i].a, memory_order_relaxed);
		atomic_store_explicit(&h->r[i].b, v[i].b, memory_order_relaxed);
		atomic_store_explicit(&h->r[i].adv, v[i].adv, memory_order_relaxed);
	}
	atomic_store_explicit(&h->n, n, memory_order_relaxed);
	atomic_fetch_add(&h->seq, 1);
}

uint32_t bp_hints_seq(struct bypass_pager *p, uint32_t *pairs, uint32_t max)
{
	struct bp_hints *h = __atomic_load_n(&p->pol.hints, __ATOMIC_ACQUIRE);
	if (!h)
		return 0;
	/* a bounded retry: the writer may be this thread, interrupted */
	for (int tries = 0; tries < 64; tries++) {
		uint32_t s = atomic_load(&h->seq), got = 0;
		if (s & 1) {
			bp_cpu_relax();
			continue;
		}
		uint32_t n = atomic_load_explicit(&h->n, memory_order_relaxed);
		for (uint32_t i = 0; i < n && i < MAX_HINTS && got < max; i++) {
			if (atomic_load_explicit(&h->r[i].adv, memory_order_relaxed) !=
			    BYPASS_PAGER_ADV_SEQUENTIAL)
				continue;
			pairs[2 * got] = atomic_load_explicit(&h->r[i].a, memory_order_relaxed);
			pairs[2 * got + 1] = atomic_load_explicit(&h->r[i].b, memory_order_relaxed);
			got++;
		}
		/* the relaxed reads above may not move below the re-check */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&h->seq, memory_order_relaxed) == s)
			return got;
	}
	return 0;
}

void bp_policy_unmap(struct bypass_pager *p, uint32_t id, uint32_t n)
{
	struct bp_hints *h = p->pol.hints;
	if (!h)
		return;
	struct hrange v[MAX_HINTS];
	uint32_t m;
	hints_load(h, v, &m);
	if (hints_set(v, &m, id, id + n, BYPASS_PAGER_ADV_NORMAL)) {
		/* no room to split a range around the hole: forget the range
		 * (the pages keep their hint flags; only the window policy's
		 * view of SEQUENTIAL ranges loses it) */
		uint32_t k = 0;
		for (uint32_t i = 0; i < m; i++)
			if (v[i].b <= id || v[i].a >= id + n)
				v[k++] = v[i];
		m = k;
	}
	hints_store(h, v, m);
}

int bp_hint_of(uint32_t w)
{
	if (w & PW_PRIO)
		return BYPASS_PAGER_ADV_PRIORITY;
	if (w & PW_COLD)
		return BYPASS_PAGER_ADV_DONTNEED;
	if (w & PW_NORA)
		return BYPASS_PAGER_ADV_RANDOM;
	if (w & PW_SEQ)
		return BYPASS_PAGER_ADV_SEQUENTIAL;
	return BYPASS_PAGER_ADV_NORMAL;
}

static const uint32_t hint_flag[] = {
	[BYPASS_PAGER_ADV_NORMAL] = 0,        [BYPASS_PAGER_ADV_SEQUENTIAL] = PW_SEQ,
	[BYPASS_PAGER_ADV_RANDOM] = PW_NORA,  [BYPASS_PAGER_ADV_WILLNEED] = 0,
	[BYPASS_PAGER_ADV_DONTNEED] = PW_COLD, [BYPASS_PAGER_ADV_PRIORITY] = PW_PRIO,
};

/* Apply advice to the ids [a, b) of one region (p->lock held). */
static void advise_ids(struct bypass_pager *p, uint32_t a, uint32_t b, int advice)
{
	if (advice == BYPASS_PAGER_ADV_WILLNEED) {
		/* a full queue empties as the thread reads: wait for room (up
		 * to a second per request, then the rest is not read) */
		for (uint32_t id = a; id < b; id += PG_MAX_PF) {
			uint32_t n = b - id < PG_MAX_PF ? b - id : PG_MAX_PF;
			int tries = 0;
			while (!bp_pf_push(p, id, n) && tries++ < 1000) {
				struct timespec ts = { 0, 1000000 };
				bp_sys_nanosleep(&ts, NULL);
			}
			if (tries > 1000)
				return;
		}
		return;
	}
	for (uint32_t id = a; id < b; id++) {
		struct pg *pg = pg_of(p, id);
		pg_clear(pg, PW_HINTS);
		pg_set(pg, hint_flag[advice]);
		if (advice == BYPASS_PAGER_ADV_DONTNEED)
			bp_lru_tail(p, id);
	}
}

int bypass_pager_advise(bypass_pager *p, void *addr, size_t len, int advice)
{
	int e = bp_pager_check_owner(p);
	if (e)
		return e;
	if (advice < BYPASS_PAGER_ADV_NORMAL || advice > BYPASS_PAGER_ADV_PRIORITY)
		return -EINVAL;
	if (!len)
		return 0;
	uintptr_t start = (uintptr_t)addr & ~(PG_SIZE - 1);
	uintptr_t end = ((uintptr_t)addr + len + PG_SIZE - 1) & ~(PG_SIZE - 1);
	if (end <= start)
		return -EINVAL;
	bp_mutex_lock(&p->lock, BP_RANK_PAGER);
	if (!p->pol.hints) {
		struct bp_hints *h = bp_pg_calloc(1, sizeof(*h));
		if (!h) {
			bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
			return -ENOMEM;
		}
		__atomic_store_n(&p->pol.hints, h, __ATOMIC_RELEASE);
	}
	unsigned idx = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	struct hrange v[MAX_HINTS];
	uint32_t m;
	hints_load(p->pol.hints, v, &m);
	for (uintptr_t a = start; !e && a < end;) {
		struct region *r = bp_tab_find(t, a);
		if (!r || r->pager != p) {
			e = -EINVAL;
			break;
		}
		uintptr_t b = end < r->end ? end : r->end;
		if (advice != BYPASS_PAGER_ADV_WILLNEED)
			e = hints_set(v, &m, region_id(r, a), region_id(r, b - 1) + 1, advice);
		a = b;
	}
	if (!e && (advice == BYPASS_PAGER_ADV_WILLNEED || advice == BYPASS_PAGER_ADV_SEQUENTIAL))
		e = bp_pf_start(p);
	if (!e) {
		hints_store(p->pol.hints, v, m);
		for (uintptr_t a = start; a < end;) {
			struct region *r = bp_tab_find(t, a);
			uintptr_t b = end < r->end ? end : r->end;
			advise_ids(p, region_id(r, a), region_id(r, b - 1) + 1, advice);
			a = b;
		}
	}
	bp_tab_leave(idx);
	struct bp_pol *pol = atomic_load(&p->pol.cur); /* stable: p->lock held */
	if (!e && pol && pol->ops && pol->ops->on_hint) {
		int pe = pol->ops->on_hint(pol->state, (void *)start, end - start, advice);
		if (pe)
			stat_add(&ST(p).rejects, 1);
	}
	bp_mutex_unlock(&p->lock, BP_RANK_PAGER);
	return e;
}

/* ------------------------------------------------------------ the fault path */

/*
 * A policy's prefetch ranges: each must lie inside one region of p; the
 * pages of one fault's ranges together are capped at bp_pf_max().
 */
static void policy_prefetch(struct bypass_pager *p, struct bp_pol *pol,
			    const struct bypass_pager_fault *f)
{
	struct bypass_pager_range out[PF_OUT];
	memset(out, 0, sizeof(out));
	int n = pol->ops->prefetch(pol->state, f, out, PF_OUT);
	if (n < 0) {
		stat_add(&ST(p).rejects, 1);
		return;
	}
	if ((unsigned)n > PF_OUT) {
		stat_add(&ST(p).rejects, (unsigned)n - PF_OUT);
		n = PF_OUT;
	}
	struct regtab *t = bp_tab_get();
	uint32_t left = bp_pf_max(p);
	for (int i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)out[i].addr & ~(PG_SIZE - 1);
		uintptr_t b = (uintptr_t)out[i].addr + out[i].len;
		struct region *r = t ? bp_tab_find(t, a) : NULL;
		if (!out[i].len || b < a || !r || r->pager != p || b > r->end) {
			stat_add(&ST(p).rejects, 1);
			continue;
		}
		uint32_t id = region_id(r, a), np = (uint32_t)((b - a + PG_SIZE - 1) >> PG_SHIFT);
		if (np > left) {
			stat_add(&ST(p).rejects, 1); /* beyond the limit: cut */
			np = left;
		}
		if (np && bp_pf_push(p, id, np))
			left -= np;
	}
}

void bp_policy_fault(struct bypass_pager *p, struct region *r, uint32_t id, unsigned kind,
		     bool write, uint32_t mapped)
{
	struct pg *pg = pg_of(p, id);
	uint32_t w = atomic_load_explicit(&pg->w, memory_order_relaxed);
	if (kind == BYPASS_PAGER_FAULT_OTHER || kind == BYPASS_PAGER_FAULT_WP) {
		pg_set(pg, PW_REF);
		if (w & PW_PF) {
			bp_pf_mark_used(p, pg);
			if (kind == BYPASS_PAGER_FAULT_WP) /* a prefetched page written */
				atomic_fetch_add_explicit(&r->pf_wp, 1, memory_order_relaxed);
		}
	}
	bool nora = (w & PW_NORA) != 0;
	/* the first write to a page the prefetcher installed (bp_pf_stream) */
	bool wrote = kind == BYPASS_PAGER_FAULT_WP && (w & PW_PF);
	if (!atomic_load_explicit(&p->pol.cur, memory_order_acquire)) {
		/* 2Q: no policy to keep alive, no read section (two atomic
		 * operations on a shared line less per fault) */
		if (!nora && kind != BYPASS_PAGER_FAULT_ZERO && (w & PW_SEQ))
			bp_pf_stream(p, r, id, mapped, true, wrote);
		return;
	}
	unsigned idx = bp_pol_enter(p);
	struct bp_pol *pol = atomic_load(&p->pol.cur);
	if (!nora && kind != BYPASS_PAGER_FAULT_ZERO) {
		if (w & PW_SEQ)
			bp_pf_stream(p, r, id, mapped, true, wrote);
		else if (pol && pol->bi && pol->bi->streams)
			bp_pf_stream(p, r, id, mapped, false, wrote);
	}
	const struct bypass_pager_policy *ops = pol ? pol->ops : NULL;
	if (ops && !pol->bi && (ops->on_fault || ops->prefetch)) {
		struct bypass_pager_fault f = {
			.addr = (void *)region_addr(r, id), .region = (void *)r->start,
			.region_len = r->end - r->start, .kind = kind, .write = write,
			.npages = mapped, .advice = bp_hint_of(w),
		};
		if (ops->on_fault)
			ops->on_fault(pol->state, &f);
		if (ops->prefetch && !nora)
			policy_prefetch(p, pol, &f);
	}
	bp_pol_leave(p, idx);
}

void bp_policy_access(struct bypass_pager *p, uintptr_t addr, size_t npages, unsigned flags)
{
	if (!p || !npages || !(flags & (BYPASS_PAGER_ACCESSED | BYPASS_PAGER_WRITTEN)))
		return;
	addr &= ~(PG_SIZE - 1);
	unsigned ti = bp_tab_enter();
	struct regtab *t = bp_tab_get();
	struct region *r = NULL;
	for (size_t i = 0; t && i < npages; i++) {
		uintptr_t a = addr + i * PG_SIZE;
		if (!r || a < r->start || a >= r->end)
			r = bp_tab_find(t, a);
		if (!r || r->pager != p)
			continue;
		struct pg *pg = pg_of(p, region_id(r, a));
		pg_set(pg, PW_REF);
		bp_pf_mark_used(p, pg);
	}
	bp_tab_leave(ti);
	if (!atomic_load_explicit(&p->pol.cur, memory_order_acquire))
		return;
	unsigned idx = bp_pol_enter(p);
	struct bp_pol *pol = atomic_load(&p->pol.cur);
	if (pol && pol->ops && pol->ops->on_access)
		pol->ops->on_access(pol->state, (void *)addr, npages, flags);
	bp_pol_leave(p, idx);
}

/* ------------------------------------------------------------ victims */

uint32_t bp_policy_victims(struct bypass_pager *p, uint32_t *ids, uint32_t n, bp_take_fn take)
{
	if (!atomic_load_explicit(&p->pol.cur, memory_order_acquire))
		return 0; /* 2Q */
	unsigned idx = bp_pol_enter(p);
	struct bp_pol *pol = atomic_load(&p->pol.cur);
	uint32_t got = 0;
	if (!pol || !n) {
		/* 2Q */
	} else if (pol->bi && pol->bi->victims) {
		got = pol->bi->victims(p, pol->state, ids, n, take);
	} else if (pol->ops && pol->ops->choose_victims) {
		if (n > p->cfg.batch)
			n = p->cfg.batch; /* the size of pol->addrs */
		memset(pol->addrs, 0, n * sizeof(void *));
		int k = pol->ops->choose_victims(pol->state, pol->addrs, n);
		if (k < 0) {
			stat_add(&ST(p).rejects, 1);
			k = 0;
		} else if ((unsigned)k > n) {
			stat_add(&ST(p).rejects, (unsigned)k - n);
			k = (int)n;
		}
		struct regtab *t = bp_tab_get();
		for (int i = 0; i < k; i++) {
			uintptr_t a = (uintptr_t)pol->addrs[i];
			struct region *r = t && !(a & (PG_SIZE - 1)) ? bp_tab_find(t, a) : NULL;
			uint32_t id = r ? region_id(r, a) : 0;
			/* a resident, evictable page of ours, not PRIORITY, not
			 * taken already (take() refuses duplicates: a taken
			 * page is off the lists) */
			if (!r || r->pager != p || (atomic_load(&pg_of(p, id)->w) & PW_PRIO) ||
			    !take(p, id)) {
				stat_add(&ST(p).rejects, 1);
				continue;
			}
			ids[got++] = id;
		}
	}
	bp_pol_leave(p, idx);
	return got;
}

