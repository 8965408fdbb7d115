/* SPDX-License-Identifier: MIT */
/*
 * The 2Q lists (lru.c): a page on and off its lists, the victims of a
 * round.
 */
#ifndef BYPASS_PAGER_LRU_H
#define BYPASS_PAGER_LRU_H

#include <stdbool.h>
#include <stdint.h>

struct bypass_pager;

/* Put a page that just became resident on a list (active or inactive). */
void bp_lru_add(struct bypass_pager *p, uint32_t id, bool active);
/* The same for a page read back from swap: active if it comes back sooner
 * than the active list would have kept it (Linux's workingset rule);
 * dist = pages evicted since it was. */
void bp_lru_add_refault(struct bypass_pager *p, uint32_t id, uint32_t dist);
void bp_lru_del(struct bypass_pager *p, uint32_t id);
/* Move a listed page to the tail of its inactive list (DONTNEED). */
void bp_lru_tail(struct bypass_pager *p, uint32_t id);
/* Up to want victims for an eviction round (DONTNEED pages, the
 * policy's, 2Q's, PRIORITY pages last), locked and off the lists; evict
 * lock held. */
uint32_t bp_select_victims(struct bypass_pager *p, uint32_t want, uint32_t *out);

#endif
