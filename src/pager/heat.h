/* SPDX-License-Identifier: MIT */
/*
 * Access heat (docs/pager.md, "Access heat"): per page, what the enabled
 * sources saw in each sampling interval, folded into a decaying score by a
 * sampler thread of the pager's.  Sources:
 *
 *  - faults: every fault served is an access, a write fault a write; the
 *    fault path (a signal handler in upcall mode) only ORs bits into the
 *    page's byte of hit[] (bp_heat_fault below);
 *  - written: PAGEMAP_SCAN's PAGE_IS_WRITTEN on /proc/self/pagemap (heat.c);
 *  - DAMON: a kdamond of this process's own, configured through sysfs, whose
 *    region access counts make reads of resident pages visible (damon.c).
 *
 * Nothing is allocated and no thread runs until heat is enabled; then the
 * arrays live until the pager is freed (a fault in flight may still write
 * to hit[] after heat is disabled).
 */
#ifndef BYPASS_PAGER_HEAT_H
#define BYPASS_PAGER_HEAT_H

#include "pager/struct.h"

#include <limits.h>

/* hit[] bits: set by the fault path and the sampler */
#define HEAT_HIT_ACC 0x1u    /* faulted this interval */
#define HEAT_HIT_WR 0x2u     /* a write fault this interval */
#define HEAT_WAS_DIRTY 0x80u /* PAGE_IS_WRITTEN at the previous scan */

/* score: s - ceil(s / 4) + evidence, evidence <= HEAT_FULL per interval */
#define HEAT_FULL 64u
/* A resident page whose score reaches this is marked referenced for 2Q. */
#define HEAT_REF_SCORE 96u

struct bp_damon;

struct bp_heat {
	struct bypass_pager *p;
	uint32_t npages;           /* page ids: p->swap.pages */
	_Atomic uint8_t *hit;      /* per page id, HEAT_HIT_* */
	_Atomic uint16_t *score;   /* per page id, decayed heat */
	uint8_t *tmp;              /* per page id, this round (sampler only):
				      bit 7 written now, bits 0-6 DAMON level */
	size_t maplen;             /* bytes mapped for the three arrays */
	_Atomic bool on;           /* faults are recorded */

	pthread_mutex_t lock;      /* the sampler's round vs reset and ranges */
	struct bp_thread thread;
	bool live;                 /* the sampler runs */
	int stop_fd;               /* eventfd: stop the sampler */
	unsigned sources;          /* BYPASS_PAGER_HEAT_* in use */
	unsigned interval_ms, stats_ms;
	char stats_path[PATH_MAX]; /* "" = no live view file */
	uint64_t stats_last_ns;
	int pm_fd;                 /* /proc/self/pagemap, or -1 */
	int written_status, damon_status; /* 0 in use, -errno why not */
	char written_why[128], damon_why[128];
	struct bp_damon *damon;

	_Atomic uint64_t samples, fault_accessed, fault_written, written_pages,
		damon_accessed, damon_regions, refs_set, sample_ns;
};

/* The fault path: page id was accessed (written, if write). */
static inline void bp_heat_fault(struct bypass_pager *p, uint32_t id, bool write)
{
	struct bp_heat *h = atomic_load_explicit(&p->heat, memory_order_acquire);
	if (h && atomic_load_explicit(&h->on, memory_order_relaxed))
		atomic_fetch_or_explicit(&h->hit[id], write ? HEAT_HIT_ACC | HEAT_HIT_WR
							    : HEAT_HIT_ACC,
					 memory_order_relaxed);
}

/* pager.c hooks: stop at destroy; free; unmap.  (BYPASS_PAGER_HEAT* are
 * read by the preload, which calls bypass_pager_heat_enable.) */
void bp_heat_stop(struct bypass_pager *p);
/* Page ids [id0, id0 + n) were unmapped (no reader can reach them): a
 * region that gets them next starts cold. */
void bp_heat_forget(struct bypass_pager *p, uint32_t id0, uint32_t n);
void bp_heat_free(struct bypass_pager *p);

/* ---------------------------------------------------------------- damon.c */

/* An accessed region as DAMON reports it. */
struct bp_damon_range {
	uintptr_t start, end;
	unsigned nr_accesses; /* samples that found it accessed, of max_accesses */
};

/*
 * Start a kdamond monitoring the pager's regions (sets h->damon).  Returns
 * 0, or -errno with the reason in why: -ENOENT (no DAMON sysfs), -EPERM
 * (not root), -EBUSY (a kdamond that is not ours runs: sysfs cannot add one
 * then; or another pager of this process has DAMON), -EOPNOTSUPP (no
 * virtual address monitoring in this kernel).
 */
int bp_damon_start(struct bp_heat *h, unsigned interval_ms, char *why, size_t whylen);
/*
 * Wait for the next aggregation (about one interval) and read the accessed
 * regions into out (at most max).  Updates the monitored ranges first if
 * the pager's regions changed.  Returns how many, or -errno.
 */
int bp_damon_read(struct bp_heat *h, struct bp_damon_range *out, size_t max,
		  unsigned *max_accesses);
/* Turn our kdamond off and remove it. */
void bp_damon_stop(struct bp_heat *h);
/* DAMON's sysfs directory (tests point it at a fake tree). */
extern const char *bp_damon_root;

#endif
