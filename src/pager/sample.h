/* SPDX-License-Identifier: MIT */
/*
 * The access sampler (sample.c).
 */
#ifndef BYPASS_PAGER_SAMPLE_H
#define BYPASS_PAGER_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

struct bypass_pager;
struct pg;
struct region;
struct bp_sample;
/* Start / stop (every parked page put back) / free the access sampler;
 * without its thread (tests), pages are parked only by bp_sample_park_now. */
int bp_sample_start(struct bypass_pager *p, bool thread);
void bp_sample_stop(struct bypass_pager *p);
void bp_sample_free(struct bypass_pager *p);
/* A fork child keeping p: the parent's sampler forgotten (its parking area
 * is not inherited); true if it had a thread. */
bool bp_sample_forget_child(struct bypass_pager *p);
/* A fault on a parked page (locked, PW_PARK): its data back, a hit. */
int bp_sample_fault(struct bypass_pager *p, struct region *r, struct pg *pg, uint32_t id,
		    uintptr_t pa, bool write);
/* Page ids [id0, id0 + n) were unmapped (no reader can reach them): their
 * parking slots are free again (a region given the ids next must not find
 * the old data). */
void bp_sample_forget(struct bypass_pager *p, uint32_t id0, uint32_t n);
/* Park the resident pages of [addr, addr + n pages) now (tests): how many. */
uint32_t bp_sample_park_now(struct bypass_pager *p, uintptr_t addr, uint32_t n);
/* Put every parked page back now (tests). */
void bp_sample_unpark_now(struct bypass_pager *p);
void bp_sample_stats(struct bypass_pager *p, uint64_t *parked, uint64_t *hits, uint64_t *ns,
		     uint64_t *hit_ns);

#endif
