/* SPDX-License-Identifier: MIT */
/*
 * Policies, hints and the asynchronous prefetcher: the pager's internal
 * interface to them (policy.c, policies.c, prefetch.c).  See docs/pager.md,
 * "Policies and prefetch".
 *
 * The fault path (signal context in upcall mode) calls bp_policy_fault()
 * and the evictor bp_policy_victims(); both reach the current policy
 * through p->pol.cur inside a read section (bp_pol_enter/leave), so that
 * bypass_pager_set_policy() can replace it on a live pager: it publishes
 * the new one and waits for every reader of the old one before its fini.
 */
#ifndef BYPASS_PAGER_POLICY_H
#define BYPASS_PAGER_POLICY_H

#include "pager/page.h"
#include "pager/table.h"
#include "pager/struct.h"

#define PG_MAX_PF 1024u /* pages one prefetch request or window may span */

/*
 * Taking a victim: the evictor's callback (lru.c), handed to the policy
 * with each request for victims, so that policies never call the lists by
 * name.  Takes page id if it is resident, on a list and unlocked (and, for
 * the prefetcher, neither PRIORITY nor prefetched and unused): locked and
 * off the lists on success.  Evict lock held.
 */
typedef bool (*bp_take_fn)(struct bypass_pager *p, uint32_t id);

/* A built-in policy's hooks into the pager's internals (trusted code). */
struct bp_builtin {
	/* victims: up to n ids taken with take(); returns how many */
	uint32_t (*victims)(struct bypass_pager *p, void *state, uint32_t *ids, uint32_t n,
			    bp_take_fn take);
	bool streams;    /* detect sequential and stride streams in every region */
	bool prefetcher; /* needs the prefetch thread */
};

/* A policy in use by one pager. */
struct bp_pol {
	const struct bypass_pager_policy *ops; /* external callbacks, or NULL */
	const struct bp_builtin *bi;           /* built-in hooks, or NULL */
	void *state;
	void *dl;                              /* dlopen handle */
	void **addrs;                          /* choose_victims' answer (batch) */
	char name[32];
};

/* Policy read sections (signal-safe). */
unsigned bp_pol_enter(struct bypass_pager *p);
void bp_pol_leave(struct bypass_pager *p, unsigned idx);

/* A fault was served at page id of r (kind: BYPASS_PAGER_FAULT_*, mapped:
 * pages it mapped).  Signal context. */
void bp_policy_fault(struct bypass_pager *p, struct region *r, uint32_t id, unsigned kind,
		     bool write, uint32_t mapped);
/*
 * bp_policy_access - an access sample (for the heat sampler): npages pages
 * from addr were accessed (BYPASS_PAGER_ACCESSED) and/or written
 * (BYPASS_PAGER_WRITTEN).  Sets their reference bits, counts prefetched
 * pages as used and forwards the sample to the policy's on_access.  Any
 * context; the caller must not hold a page lock.
 */
void bp_policy_access(struct bypass_pager *p, uintptr_t addr, size_t npages, unsigned flags);
/* Victims for the evictor beyond the DONTNEED ones, from the policy
 * (checked), each taken with take; returns how many ids (locked, off the
 * lists). */
uint32_t bp_policy_victims(struct bypass_pager *p, uint32_t *ids, uint32_t n, bp_take_fn take);
/* Forget hints and streams of the ids [id, id + n) (unmap, p->lock). */
void bp_policy_unmap(struct bypass_pager *p, uint32_t id, uint32_t n);
/* Stop the prefetcher and release the policy (destroy; in a forked child,
 * only free the memory). */
void bp_policy_destroy(struct bypass_pager *p, bool child);

/* The hint of page id (BYPASS_PAGER_ADV_*), from its flags. */
int bp_hint_of(uint32_t w);

/* -------------------------------------------------------------- prefetch.c */

/* A prefetched page is seen used (clears PW_PF, counts it). */
void bp_pf_mark_used(struct bypass_pager *p, struct pg *pg);
/* Start the prefetch thread if none runs (normal context, p->lock). */
int bp_pf_start(struct bypass_pager *p);
void bp_pf_stop(struct bypass_pager *p);
/* A forked child's copy: release the ring and buffers, no thread to stop. */
void bp_pf_forget(struct bypass_pager *p);
/* Queue [id, id + n) for prefetch; false if there is no prefetcher or its
 * queue is full.  Signal-safe. */
bool bp_pf_push(struct bypass_pager *p, uint32_t id, uint32_t n);
/* The stream detector: a fault at id of r mapped `mapped` pages; with
 * seq, the page is in a SEQUENTIAL range (an ascending stream is assumed);
 * wrote: the fault is the first write to a page the prefetcher installed.
 * Queues the prefetch ahead of it. */
void bp_pf_stream(struct bypass_pager *p, struct region *r, uint32_t id, uint32_t mapped,
		  bool seq, bool wrote);
/* Nothing to prefetch: the thread sleeps, no read in flight, no request
 * queued (tests wait for it instead of for a time). */
bool bp_pf_idle(struct bypass_pager *p);
/* The largest prefetch window of p, in pages. */
uint32_t bp_pf_max(const struct bypass_pager *p);
/* A stream's next window at a fault that continues it (or after lost
 * pages), from its window w, the pages of its region lost (prefetched, evicted unused) since the last
 * fault and the region's ceiling *ceil (0: maxw; updated): w doubled up to
 * the ceiling, the ceiling raised by 8 pages when w is at it, both halved
 * (not below 8 pages) when pages were lost; never above maxw. */
uint32_t bp_pf_window(uint32_t w, uint32_t *ceil, uint32_t lost, uint32_t maxw);
/* Victims chosen for eviction (evict lock held): count those prefetched and
 * never seen used into their region's pf_lost. */
void bp_pf_note_victims(struct bypass_pager *p, const uint32_t *ids, uint32_t n);

/* -------------------------------------------------------------- policies.c */

/* The built-in policies, NULL-terminated. */
extern const struct bypass_pager_policy *const bp_builtin_policies[];
/* The hooks of a built-in policy struct, or NULL. */
const struct bp_builtin *bp_builtin_of(const struct bypass_pager_policy *pol);
/* The SEQUENTIAL ranges (window policy): up to max [start, end) id pairs. */
uint32_t bp_hints_seq(struct bypass_pager *p, uint32_t *pairs, uint32_t max);

#endif
