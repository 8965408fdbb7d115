/* SPDX-License-Identifier: MIT */
/*
 * Serving faults: the serve (fault.c); the signal hook and the handler
 * threads (dispatch.c).
 */
#ifndef BYPASS_PAGER_FAULT_H
#define BYPASS_PAGER_FAULT_H

#include <stdbool.h>
#include <stdint.h>

struct bypass_pager;
struct region;

/*
 * Serve a fault (or a pin) at addr in r: make the page resident, writable if
 * write.  handler: called from the handler thread (wake the faulting
 * thread).  Returns 0 or -errno (the fault cannot be served).
 */
int bp_pager_serve(struct region *r, uintptr_t addr, bool write, bool handler);
/* The same, from a handler thread for the forking thread's own fault while
 * its fork is prepared: not woken here, and the policy and the prefetcher
 * not told (dispatch.c, handle_msg). */
int bp_pager_serve_forking(struct region *r, uintptr_t addr, bool write);
int bp_pager_hook_install(void);
/* Start the handler threads (p->cfg.nthreads of them) if none run. */
int bp_pager_thread_start(struct bypass_pager *p);
/* The calling thread is a pager's handler thread. */
bool bp_pager_in_handler_thread(void);
void bp_pager_thread_stop(struct bypass_pager *p);

#endif
