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
#include <string.h>
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
 * The held copies' runs (run k: copies run0[k] .. run0[k + 1] - 1, their
 * slots consecutive) to their slots: res[k] the bytes written or -errno.
 * All of them at once on the tier's ring, then waited for, so that their
 * O_DIRECT writes' service times overlap: one pwritev a run, in the
 * evicting thread, took 73-103 us a page on this VM (shrinking, under
 * others' load: 0.2-0.25 s of a SQLite run whose share moved 50 times),
 * all at once 25-47 us (issue 35).  Each completion's task work runs in
 * this thread's wait, which sees every one before it returns: nothing is
 * left to interrupt the program's next call.  Without the ring (not made,
 * or failed once): one pwritev a run, in this thread, as before.
 */
static void write_runs(struct bypass_pager *p, struct bp_tier *t, const struct held *hd,
		       const uint32_t *run0, uint32_t nrun, int *res)
{
	uint32_t sent = 0;
	for (uint32_t k = 0; k < nrun; k++)
		res[k] = -EINPROGRESS;
	if (t->ring_live) {
		for (; sent < nrun; sent++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
			if (!sqe)
				break;
			uint32_t i = run0[sent];
			io_uring_prep_write(sqe, p->swap.fd, t->stage + (size_t)i * PG_SIZE,
					    (run0[sent + 1] - i) * PG_SIZE, (uint64_t)hd->slot[i] * PG_SIZE);
			io_uring_sqe_set_data64(sqe, sent);
		}
		int e = sent ? io_uring_submit(&t->ring) : 0;
		if (e != (int)sent) {
			bp_err("bypass: pager: the compressed pool's writes: io_uring_submit: %d of %u; "
			       "one pwritev at a time from now on", e, sent);
			t->ring_live = false;
			sent = e > 0 ? (uint32_t)e : 0;
		}
		for (uint32_t got = 0; got < sent; got++) {
			struct io_uring_cqe *cqe;
			int w;
			while ((w = io_uring_wait_cqe(&t->ring, &cqe)) == -EINTR || w == -EAGAIN)
				;
			if (w) { /* the rest unknown: they stay in the pool, the ring unused */
				bp_err("bypass: pager: the compressed pool's writes: "
				       "io_uring_wait_cqe: %s", strerror(-w));
				t->ring_live = false;
				break;
			}
			uint64_t k = io_uring_cqe_get_data64(cqe);
			if (k < nrun)
				res[k] = cqe->res;
			io_uring_cqe_seen(&t->ring, cqe);
		}
	}
	for (uint32_t k = 0; k < nrun; k++) {
		uint32_t len = (run0[k + 1] - run0[k]) * PG_SIZE;
		if (k < sent && (res[k] == -EINPROGRESS || res[k] < 0 || (uint32_t)res[k] == len))
			continue; /* done, failed, or not known */
		/* not sent, or written short */
		struct iovec iov = { t->stage + (size_t)run0[k] * PG_SIZE, len };
		res[k] = bp_wb_write_sync(p, &iov, 1, hd->slot[run0[k]]);
	}
}

/*
 * Write the held copies to their slots (write_runs()), then for each:
 * written, its entry is clean (and with forget, dropped from the pool);
 * not written, it stays pool-only (the next shrink tries again, a failure
 * counted as the write-back's are).  Unlocks the pages.  Returns the
 * copies written.
 */
static uint32_t write_held(struct bypass_pager *p, struct bp_tier *t, struct held *hd,
			   bool forget_them)
{
	uint32_t run0[BP_TIER_STAGE + 1], nrun = 0;
	int res[BP_TIER_STAGE];
	for (uint32_t i = 0; i < hd->n; i++)
		if (!i || hd->slot[i] != hd->slot[i - 1] + 1)
			run0[nrun++] = i;
	run0[nrun] = hd->n;
	write_runs(p, t, hd, run0, nrun, res);
	uint32_t written = 0;
	for (uint32_t k = 0; k < nrun; k++) {
		uint32_t i = run0[k], j = run0[k + 1];
		bool ok = res[k] == (int)((j - i) * PG_SIZE);
		if (ok) {
			stat_add(&ST(p).wr, (uint64_t)(j - i) * PG_SIZE);
		} else {
			stat_add(&ST(p).wr_err, j - i);
			bp_err("bypass: pager: writing %u pages from the compressed pool to swap "
			       "failed; they stay in the pool", j - i);
		}
		for (uint32_t m = i; m < j; m++) {
			if (ok) {
				atomic_fetch_add_explicit(&t->pool_writes, 1, memory_order_relaxed);
				if (forget_them) {
					bp_tier_drop_ent(p, t, hd->slot[m], hd->e[m]);
					bp_tier_ghost(t, hd->slot[m]);
					atomic_fetch_add_explicit(&t->dropped, 1,
								  memory_order_relaxed);
				} else {
					atomic_store_explicit(&t->ent[hd->slot[m]], ent_obj(hd->e[m]),
							      memory_order_relaxed);
				}
				written++;
			}
			bp_pg_unlock(pg_of(p, hd->id[m]));
		}
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
