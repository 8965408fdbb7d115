/* SPDX-License-Identifier: MIT */
/*
 * The adaptive engine (engine.c): upcalls or the handler threads' pool.
 */
#ifndef BYPASS_PAGER_ENGINE_H
#define BYPASS_PAGER_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

enum bp_engine_force {
	BP_ENGINE_ADAPTIVE = 0, /* measure and choose (the default) */
	BP_ENGINE_UPCALL,       /* held on upcalls */
	BP_ENGINE_POOL,         /* held on the pool (measurements) */
	BP_ENGINE_FLIP,         /* switch every interval (tests: switches under load) */
};

struct bypass_pager;
struct region;

/*
 * Hold an adaptive pager's engine (or let it measure again), moving its
 * regions at once for UPCALL and POOL: the explicit option that tests,
 * benchmarks and the preload (BYPASS_PAGER_ENGINE) use; the library reads
 * no environment for it.  0, -EINVAL (not an adaptive pager, unknown
 * force), -ECHILD, or the error of the switch (-EBUSY: pages are pinned).
 */
int bp_engine_force(struct bypass_pager *p, int force);
/* Open uffd_pool and start the monitor thread of an adaptive pager. */
int bp_engine_start(struct bypass_pager *p);
void bp_engine_stop(struct bypass_pager *p);
/* A serve of an adaptive region: enter it, unless a switch is under way
 * (then wait for its end and return false: the fault is to be retried). */
bool bp_engine_enter(struct region *r);
/* bp_engine_enter() that never waits: false (not entered) during a switch */
bool bp_engine_enter_nowait(struct region *r);
void bp_engine_leave(struct region *r);
/* An adaptive region's serve counters (0 or -ENOMEM); a region's end. */
int bp_region_engine_init(struct region *r);
void bp_region_free(struct region *r);
/* A SIGSEGV in an adaptive region: 1 if it came from a switch (retry). */
int bp_engine_segv(struct region *r, uintptr_t addr);
/* Count thread tid (0: the calling thread) among this interval's
 * faulting threads. */
void bp_engine_note_thread(struct bypass_pager *p, uint32_t tid);
/* The thread a handler thread is serving now (0: itself), for the above. */
extern __thread uint32_t bp_serving_tid __attribute__((tls_model("initial-exec")));
/* Wait until no switch of r is under way. */
void bp_engine_wait(struct region *r);

#endif
