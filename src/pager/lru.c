/* SPDX-License-Identifier: MIT */
/*
 * The 2Q lists and the choice of victims: pages join and leave the sharded
 * active/inactive lists here, and bp_select_victims() picks what an eviction
 * round takes (DONTNEED pages, then the policy's, then 2Q's, PRIORITY pages
 * last).  Called under the evict lock by evict.c; the lists themselves are
 * guarded by each shard's lock.
 */
#include "pager/page.h"
#include "pager/lock.h"
#include "pager/struct.h"
#include "pager/lru.h"
#include "pager/policy.h"

/* ------------------------------------------------------------ lists */

static void list_unlink(struct bypass_pager *p, struct lru *l, uint32_t id)
{
	struct pg *pg = pg_of(p, id);
	if (pg->prev != PG_NONE)
		pg_of(p, pg->prev)->next = pg->next;
	else
		l->head = pg->next;
	if (pg->next != PG_NONE)
		pg_of(p, pg->next)->prev = pg->prev;
	else
		l->tail = pg->prev;
	l->count--;
}

static void list_push(struct bypass_pager *p, struct lru *l, uint32_t id)
{
	struct pg *pg = pg_of(p, id);
	pg->prev = PG_NONE;
	pg->next = l->head;
	if (l->head != PG_NONE)
		pg_of(p, l->head)->prev = id;
	else
		l->tail = id;
	l->head = id;
	l->count++;
}

static void list_push_tail(struct bypass_pager *p, struct lru *l, uint32_t id)
{
	struct pg *pg = pg_of(p, id);
	pg->next = PG_NONE;
	pg->prev = l->tail;
	if (l->tail != PG_NONE)
		pg_of(p, l->tail)->next = id;
	else
		l->head = id;
	l->tail = id;
	l->count++;
}

static inline struct lru_shard *shard_of(struct bypass_pager *p, uint32_t id)
{
	return &p->lists.shard[(id >> PG_LRU_RUN) % PG_LRU_SHARDS];
}

static void lru_add_locked(struct bypass_pager *p, struct lru_shard *sh, uint32_t id,
			   bool active)
{
	struct pg *pg = pg_of(p, id);
	uint32_t w = atomic_load(&pg->w);
	if ((w & PW_LRU) || (w >> PW_PIN_SHIFT)) /* pinned pages stay off */
		return;
	if (w & PW_COLD) { /* DONTNEED: the first to go */
		list_push_tail(p, &sh->lru[0], id);
		pg_clear(pg, PW_ACTIVE);
		pg_set(pg, PW_LRU);
		return;
	}
	list_push(p, &sh->lru[active], id);
	pg_clear(pg, PW_ACTIVE);
	pg_set(pg, PW_LRU | (active ? PW_ACTIVE : 0));
}

void bp_lru_add(struct bypass_pager *p, uint32_t id, bool active)
{
	struct lru_shard *sh = shard_of(p, id);
	bp_spin_lock(&sh->lock);
	lru_add_locked(p, sh, id, active);
	bp_spin_unlock(&sh->lock);
}

void bp_lru_add_refault(struct bypass_pager *p, uint32_t id, uint32_t dist)
{
	/* the active lists' length, all shards (read without their locks) */
	uint32_t active = 0;
	for (unsigned i = 0; i < PG_LRU_SHARDS; i++)
		active += atomic_load_explicit(&p->lists.shard[i].lru[1].count, memory_order_relaxed);
	struct lru_shard *sh = shard_of(p, id);
	bp_spin_lock(&sh->lock);
	lru_add_locked(p, sh, id, dist <= active);
	bp_spin_unlock(&sh->lock);
}

void bp_lru_del(struct bypass_pager *p, uint32_t id)
{
	struct lru_shard *sh = shard_of(p, id);
	bp_spin_lock(&sh->lock);
	struct pg *pg = pg_of(p, id);
	uint32_t w = atomic_load(&pg->w);
	if (w & PW_LRU) {
		list_unlink(p, &sh->lru[!!(w & PW_ACTIVE)], id);
		pg_clear(pg, PW_LRU | PW_ACTIVE);
	}
	bp_spin_unlock(&sh->lock);
}

void bp_lru_tail(struct bypass_pager *p, uint32_t id)
{
	struct lru_shard *sh = shard_of(p, id);
	bp_spin_lock(&sh->lock);
	struct pg *pg = pg_of(p, id);
	uint32_t w = atomic_load(&pg->w);
	if (w & PW_LRU) {
		list_unlink(p, &sh->lru[!!(w & PW_ACTIVE)], id);
		list_push_tail(p, &sh->lru[0], id);
		pg_clear(pg, PW_ACTIVE | PW_REF);
	}
	bp_spin_unlock(&sh->lock);
}

/* The take() given to the policy (bp_take_fn, policy.h). */
static bool victim_take(struct bypass_pager *p, uint32_t id)
{
	struct pg *pg = pg_of(p, id);
	uint32_t w = atomic_load(&pg->w);
	if (!(w & PW_LRU) || pg_state(w) != PS_RESIDENT || (w & (PW_LOCK | PW_PARK)) ||
	    (p->ev.noprio && ((w & PW_PRIO) || (w & (PW_PF | PW_PFAGED)) == PW_PF)) ||
	    !bp_pg_trylock(pg))
		return false;
	struct lru_shard *sh = shard_of(p, id);
	bp_spin_lock(&sh->lock);
	w = atomic_load(&pg->w);
	/* PW_PARK changes under the page lock only: checked again now */
	bool ok = (w & PW_LRU) && pg_state(w) == PS_RESIDENT && !(w & PW_PARK);
	if (ok) {
		list_unlink(p, &sh->lru[!!(w & PW_ACTIVE)], id);
		pg_clear(pg, PW_LRU | PW_ACTIVE);
	}
	bp_spin_unlock(&sh->lock);
	if (!ok)
		bp_pg_unlock(pg);
	return ok;
}

/* DONTNEED pages waiting at the tail of a shard's inactive list. */
static uint32_t select_cold(struct bypass_pager *p, struct lru_shard *sh, uint32_t want,
			    uint32_t *out)
{
	uint32_t n = 0;
	bp_spin_lock(&sh->lock);
	struct lru *in = &sh->lru[0];
	while (n < want && in->tail != PG_NONE) {
		uint32_t id = in->tail;
		struct pg *pg = pg_of(p, id);
		if ((atomic_load(&pg->w) & (PW_COLD | PW_PARK)) != PW_COLD || !bp_pg_trylock(pg))
			break;
		if (atomic_load(&pg->w) & PW_PARK) { /* parked meanwhile */
			bp_pg_unlock(pg);
			break;
		}
		list_unlink(p, in, id);
		pg_clear(pg, PW_LRU | PW_ACTIVE);
		out[n++] = id;
	}
	bp_spin_unlock(&sh->lock);
	return n;
}

/*
 * Take up to want victims from the tail of a shard's inactive list, locked
 * and off the lists.  First refill the inactive list from the active one so
 * that it is at least as long (Linux's inactive_is_low for small memory);
 * a referenced page at the inactive tail is activated instead of evicted.
 */
static uint32_t select_shard(struct bypass_pager *p, struct lru_shard *sh, uint32_t want,
			     uint32_t *out, bool prio, uint32_t *passed)
{
	bp_spin_lock(&sh->lock);
	struct lru *in = &sh->lru[0], *ac = &sh->lru[1];
	for (uint32_t moved = 0; ac->count > in->count && moved < 2 * want; moved++) {
		uint32_t id = ac->tail;
		list_unlink(p, ac, id);
		list_push(p, in, id);
		pg_clear(pg_of(p, id), PW_ACTIVE | PW_REF);
	}
	uint32_t n = 0, limit = in->count;
	for (uint32_t scanned = 0; n < want && scanned < limit && in->count; scanned++) {
		uint32_t id = in->tail;
		struct pg *pg = pg_of(p, id);
		uint32_t w = atomic_load(&pg->w);
		list_unlink(p, in, id);
		/* PRIORITY: only when nothing else.  The prefetcher evicts a
		 * page it prefetched and nobody used yet only on its second
		 * pass (a full turn of the list later), so that it does not
		 * evict its own work but stale prefetches do not block it. */
		if ((w & PW_PRIO) && !prio) {
			list_push(p, ac, id);
			pg_set(pg, PW_ACTIVE);
			continue;
		}
		if (p->ev.noprio && (w & PW_PF) && !(w & PW_PFAGED)) {
			/* once round the inactive list first */
			list_push(p, in, id);
			pg_set(pg, PW_PFAGED);
			continue;
		}
		if ((w & PW_REF) && !(w & PW_COLD)) {
			pg_clear(pg, PW_REF);
			pg_set(pg, PW_ACTIVE);
			list_push(p, ac, id);
			(*passed)++;
			continue;
		}
		/* parked (sampled now; PW_PARK changes under the page lock, so
		 * it is checked again once we hold it) or locked: passed */
		bool parked = (w & PW_PARK) != 0;
		if (!parked && bp_pg_trylock(pg)) {
			parked = (atomic_load(&pg->w) & PW_PARK) != 0;
			if (parked)
				bp_pg_unlock(pg);
			else
				goto take;
		}
		list_push(p, in, id);
		(*passed)++;
		continue;
take:
		pg_clear(pg, PW_LRU | PW_ACTIVE);
		out[n++] = id;
	}
	bp_spin_unlock(&sh->lock);
	return n;
}

/*
 * Victims from the shards in turn (evict lock held): up to one run of ids
 * (32) from a shard, across rounds, before the next shard.  Consecutive
 * rounds then evict consecutive pages of a sequential stream into
 * consecutive slots, which readahead needs (a shard per round broke the
 * runs wherever rounds were short).
 */
static uint32_t select_2q(struct bypass_pager *p, uint32_t want, uint32_t *out, bool prio,
			  uint32_t *passed)
{
	const uint32_t run = 1u << PG_LRU_RUN;
	uint32_t n = 0;
	for (unsigned i = 0; i <= PG_LRU_SHARDS && n < want; i++) {
		uint32_t ask = want - n;
		if (ask > run - p->lists.taken)
			ask = run - p->lists.taken;
		uint32_t got = select_shard(p, &p->lists.shard[p->lists.cursor], ask, out + n, prio, passed);
		n += got;
		p->lists.taken += got;
		if (got < ask || p->lists.taken >= run) {
			p->lists.cursor = (p->lists.cursor + 1) % PG_LRU_SHARDS;
			p->lists.taken = 0;
		}
	}
	return n;
}

/*
 * The victims of a round, in this order: DONTNEED pages, the policy's
 * choice (checked, policy.c), 2Q; PRIORITY pages only if none of these
 * gave any while the resident pages not under write-back are at the high
 * watermark (not to get down to the low one), and never for the prefetcher (p->ev.noprio).
 * A 2Q pass that found nothing but passed other pages (referenced ones
 * lose their bit and are activated, locked ones are left) is followed by
 * another (up to PG_PRIO_PASSES): those pages are not PRIORITY and can be
 * evicted once their second chance is used (a single empty pass took
 * PRIORITY pages while every other page was merely referenced).
 */
#define PG_PRIO_PASSES 16
uint32_t bp_select_victims(struct bypass_pager *p, uint32_t want, uint32_t *out)
{
	uint32_t n = 0;
	for (unsigned i = 0; i < PG_LRU_SHARDS && n < want; i++)
		n += select_cold(p, &p->lists.shard[i], want - n, out + n);
	if (n < want)
		n += bp_policy_victims(p, out + n, want - n, victim_take);
	for (int pass = 0; n < want && pass < PG_PRIO_PASSES; pass++) {
		uint32_t passed = 0;
		n += select_2q(p, want - n, out + n, false, &passed);
		if (n || !passed)
			break;
	}
	if (!n && !p->ev.noprio &&
	    atomic_load(&p->bud.resident) - atomic_load(&p->bud.writeback) >= p->cfg.high) {
		uint32_t passed = 0;
		n = select_2q(p, want, out, true, &passed);
	}
	bp_pf_note_victims(p, out, n);
	return n;
}

