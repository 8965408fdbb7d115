/* SPDX-License-Identifier: MIT */
/*
 * The compressed tier's write path (tier-int.h): shrinking forgets the
 * pool's oldest copies, writing the pool-only ones to their slots first;
 * the flush before a fork writes every pool-only copy, keeping it.
 */
#include "pager/page.h"
#include "pager/struct.h"
#include "pager/evict.h"
#include "pager/writeback.h"
#include "pager/stats.h"
#include "pager/tier-int.h"

#include <errno.h>
#include <sys/uio.h>

/* ------------------------------------------------------------ shrinking */

/*
 * Pool-only copies on their way to the file: up to BP_TIER_STAGE, each
 * decompressed into the staging buffer (the evictor's scratch: the evict
 * lock is held), its page locked by us.
 */
struct held {
	uint32_t n;
	uint32_t slot[BP_TIER_STAGE], e[BP_TIER_STAGE], id[BP_TIER_STAGE];
};

/*
 * Write the held copies to their slots (runs of consecutive slots: one
 * pwritev each, in this thread), then for each: written, its entry is
 * clean (and with forget, dropped from the pool); not written, it stays
 * pool-only (the next shrink tries again, a failure counted as the
 * write-back's are).  Unlocks the pages.  Returns the copies written.
 */
static uint32_t write_held(struct bypass_pager *p, struct bp_tier *t, struct held *hd,
			   bool forget_them)
{
	uint32_t written = 0;
	for (uint32_t i = 0; i < hd->n;) {
		uint32_t j = i + 1;
		while (j < hd->n && hd->slot[j] == hd->slot[j - 1] + 1)
			j++;
		struct iovec iov = { t->stage + (size_t)i * PG_SIZE, (size_t)(j - i) * PG_SIZE };
		bool ok = bp_wb_write_sync(p, &iov, 1, hd->slot[i]) == (int)iov.iov_len;
		if (ok) {
			stat_add(&ST(p).wr, iov.iov_len);
		} else {
			stat_add(&ST(p).wr_err, j - i);
			bp_err("bypass: pager: writing %u pages from the compressed pool to swap "
			       "failed; they stay in the pool", j - i);
		}
		for (uint32_t k = i; k < j; k++) {
			if (ok) {
				atomic_fetch_add_explicit(&t->pool_writes, 1, memory_order_relaxed);
				if (forget_them) {
					bp_tier_drop_ent(p, t, hd->slot[k], hd->e[k]);
					bp_tier_ghost(t, hd->slot[k]);
					atomic_fetch_add_explicit(&t->dropped, 1,
								  memory_order_relaxed);
				} else {
					atomic_store_explicit(&t->ent[hd->slot[k]], ent_obj(hd->e[k]),
							      memory_order_relaxed);
				}
				written++;
			}
			bp_pg_unlock(pg_of(p, hd->id[k]));
		}
		i = j;
	}
	hd->n = 0;
	return written;
}

/*
 * Forget one object.  Only the holder of its page's lock may: taken with
 * trylock (the evict lock is held: lock order); a page whose lock is
 * taken is being read back by a fault, which frees the slot or keeps it:
 * either way not now.  A pool-only copy is decompressed and held (its
 * page still locked) for write_held().  Returns 1 done or held, 0 skipped.
 */
static int drop_one(struct bypass_pager *p, struct bp_tier *t, uint32_t e, struct held *hd)
{
	char *o = obj_addr(t, (e - 1) / TIER_MAXOBJ, (e - 1) % TIER_MAXOBJ);
	struct tobj h;
	memcpy(&h, o, sizeof(h));
	/* e was listed before its page's owner could free it: the header is
	 * that of e's slot only while the slot's entry is still e (the entry
	 * is published after the header is written) */
	if (h.slot >= t->nent ||
	    ent_obj(atomic_load_explicit(&t->ent[h.slot], memory_order_acquire)) != e ||
	    h.id >= p->pages_len / sizeof(struct pg))
		return 0;
	struct pg *pg = pg_of(p, h.id);
	if (!bp_pg_trylock(pg))
		return 0;
	uint32_t now = atomic_load_explicit(&t->ent[h.slot], memory_order_relaxed);
	if (pg->slot != slot_make(p->lin.depth, h.slot) || ent_obj(now) != e) {
		bp_pg_unlock(pg);
		return 0;
	}
	if (now & TIER_DIRTY) {
		if (bp_tier_unpack(o, t->stage + (size_t)hd->n * PG_SIZE)) {
			bp_pg_unlock(pg);
			return 0;
		}
		hd->slot[hd->n] = h.slot;
		hd->e[hd->n] = now;
		hd->id[hd->n++] = h.id;
		if (hd->n == BP_TIER_STAGE)
			write_held(p, t, hd, true);
		return 1;
	}
	bp_tier_drop_ent(p, t, h.slot, e);
	bp_tier_ghost(t, h.slot);
	atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
	bp_pg_unlock(pg);
	return 1;
}

uint32_t bp_tier_shrink(struct bypass_pager *p, struct bp_tier *t, uint32_t target)
{
	uint32_t before = bp_tier_pages(t);
	struct held hd;
	hd.n = 0;
	/* at most as many slabs as there are: each pass takes the oldest,
	 * and a slab it cannot empty goes to the back of the age list */
	for (uint32_t pass = 0; bp_tier_pages(t) > target && pass <= t->hi; pass++) {
		tlock(t);
		uint32_t i = t->age_head;
		uint32_t objs[TIER_MAXOBJ], n = 0;
		if (i != TNONE) {
			struct tslab *s = &t->slabs[i];
			for (uint32_t o = 0; o < objs_per(s->cls); o++)
				if (s->map[o / 64] & (1ull << (o % 64)))
					objs[n++] = i * TIER_MAXOBJ + o + 1;
		}
		tunlock(t);
		if (i == TNONE)
			break;
		bool skipped = false;
		for (uint32_t k = 0; k < n; k++)
			skipped |= drop_one(p, t, objs[k], &hd) == 0;
		uint32_t held = hd.n;
		if (held && write_held(p, t, &hd, true) < held)
			skipped = true;
		if (skipped) { /* still in use: the next oldest first */
			tlock(t);
			if (t->slabs[i].cls && t->age_tail != i) {
				age_del(t, i);
				age_add(t, i);
			}
			tunlock(t);
		}
	}
	uint32_t after = bp_tier_pages(t);
	return before > after ? before - after : 0;
}

int bp_tier_flush(struct bypass_pager *p, struct bp_tier *t)
{
	struct held hd;
	hd.n = 0;
	uint32_t want = 0, done = 0;
	for (uint32_t s = 0; s < t->nent; s++) {
		uint32_t e = atomic_load_explicit(&t->ent[s], memory_order_relaxed);
		if (!(e & TIER_DIRTY))
			continue;
		char *o = obj_addr(t, (ent_obj(e) - 1) / TIER_MAXOBJ, (ent_obj(e) - 1) % TIER_MAXOBJ);
		struct tobj h;
		memcpy(&h, o, sizeof(h));
		struct pg *pg = pg_of(p, h.id);
		/* trylock (lock order: the evict lock is held); with nobody
		 * inside the pager it is free, else this fork reads back */
		want++;
		if (h.id >= p->pages_len / sizeof(struct pg) || !bp_pg_trylock(pg))
			continue;
		if (atomic_load_explicit(&t->ent[s], memory_order_relaxed) != e) {
			want--;
			bp_pg_unlock(pg); /* freed meanwhile: nothing to write */
			continue;
		}
		if (bp_tier_unpack(o, t->stage + (size_t)hd.n * PG_SIZE)) {
			bp_pg_unlock(pg);
			continue;
		}
		hd.slot[hd.n] = s;
		hd.e[hd.n] = e;
		hd.id[hd.n++] = h.id;
		if (hd.n == BP_TIER_STAGE)
			done += write_held(p, t, &hd, false);
	}
	done += write_held(p, t, &hd, false);
	return done == want ? 0 : -EIO;
}
