/* SPDX-License-Identifier: MIT */
/*
 * Between eviction (evict.c: victim choice, the evict loop, reservations)
 * and write-back (writeback.c: swap slots, the pager's io_uring, the
 * per-thread settle).  Internal to those two files; the rest of the pager
 * uses evict.h.
 */
#ifndef BYPASS_PAGER_WRITEBACK_H
#define BYPASS_PAGER_WRITEBACK_H

#include "pager/struct.h"
#include "pager/table.h"
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#define WB_MAX_PAGES 64u /* pages in one write-back record (one writev) */

/* A round's context: the region table, and the region found last. */
struct ectx {
	struct regtab *t;
	struct region *cache;
};

static inline struct region *ectx_region(struct bypass_pager *p, struct ectx *c, uint32_t id)
{
	struct region *r = c->cache;
	if (r && region_has_id(r, id))
		return r;
	r = bp_tab_find_id(c->t, p, id);
	if (r)
		c->cache = r;
	return r;
}

/* evict.c: discard n locked resident pages whose data is safe; unlocks them. */
void bp_evict_drop(struct bypass_pager *p, struct ectx *c, const uint32_t *ids, uint32_t n,
		   bool clean);

/*
 * writeback.c (evict lock held for each): reap finished writes (with wait,
 * up to 1 ms for one), returning the pages dropped; write n locked,
 * write-protected dirty victims v (sorted) to fresh slots, the staged ones
 * v[at[k]] that the compressed pool keeps into the pool only (v is
 * scratch: reordered); are all (all) or any (!all) of
 * the write-backs in flight the calling thread's; where they stand, logged
 * at level.
 */
uint32_t bp_wb_reap(struct bypass_pager *p, struct ectx *c, bool wait);
void bp_wb_submit(struct bypass_pager *p, struct ectx *c, uint32_t *v, uint32_t n,
		  const uint32_t *at, uint32_t staged);
/* Write iov (niov buffers) to the swap file at slot, in this thread (the
 * system call): bytes written, or -errno. */
int bp_wb_write_sync(struct bypass_pager *p, const struct iovec *iov, uint32_t niov,
		     uint32_t slot);
bool bp_wb_mine(struct bypass_pager *p, bool all);
void bp_wb_report(struct bypass_pager *p, int level);
/* The records and the ring: created, renewed in a fork child, freed. */
int bp_wb_init(struct bypass_pager *p);
void bp_wb_child(struct bypass_pager *p);
void bp_wb_fini(struct bypass_pager *p);

#endif
