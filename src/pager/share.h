/* SPDX-License-Identifier: MIT */
/*
 * Fork without reading back (share.c): the gate, the registries of slot
 * holders.
 */
#ifndef BYPASS_PAGER_SHARE_H
#define BYPASS_PAGER_SHARE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct bypass_pager;

/*
 * Fork without reading back: the gate, the registries of slot holders.
 * Enter the gate before taking page locks outside the evict lock (tryenter
 * where the caller can skip its work: false while a fork is prepared).
 */
void bp_gate_enter(struct bypass_pager *p);
bool bp_gate_tryenter(struct bypass_pager *p);
void bp_gate_leave(struct bypass_pager *p);
/* The gate is closed (a fork is being prepared): reservations take room at
 * once, since the evict lock is the forking thread's. */
bool bp_gate_closed(const struct bypass_pager *p);
/* The gate is closed by thread tid (a userfaultfd message's thread id; 0:
 * unknown, false).  A fault of that thread then is the forking thread's
 * own, after the pager's prepare handler (glibc's fork touches the
 * program's memory before the fork system call and before the parent
 * handlers): served through the closed gate, and woken only once the
 * page's bookkeeping is done (fault.c). */
bool bp_gate_owned_by(const struct bypass_pager *p, pid_t tid);
/* Slots of our own file that descendants hold, in bitmap word w. */
uint64_t bp_share_busy(struct bypass_pager *p, uint32_t w);
/* A slot of an ancestor's file we no longer need (pg.slot value). */
void bp_share_drop(struct bypass_pager *p, uint32_t slot1);
/* The descriptor to read a slot from (pg.slot value). */
int bp_share_fd(struct bypass_pager *p, uint32_t slot1);
/* Give back the entries of descendants that are gone (exited, exec'd);
 * how many.  Any context (system calls only). */
unsigned bp_share_collect(struct bypass_pager *p);
/* Descendants holding slots of our file now (tests). */
unsigned bp_share_holders(struct bypass_pager *p);
/* fork.c's handlers: prepare (true: this fork keeps p's regions in the
 * child, nothing read back; p's lock held), the parent after it, the
 * child (0, or -errno: it cannot page its regions). */
bool bp_share_prepare(struct bypass_pager *p);
void bp_share_parent(struct bypass_pager *p);
int bp_share_child(struct bypass_pager *p);
/* In a fork child, before any pager starts threads there: close the epoll
 * descriptors of the parent's handler threads (dispatch.c), which the
 * child does not have. */
void bp_share_fork_fds(void);
/* The fork being prepared (or that made this child) keeps p. */
bool bp_share_kept(const struct bypass_pager *p);
/* At destroy: our entries back (release; not for a read-back child's
 * stale copy, whose entries are the parent's), files and maps closed. */
void bp_share_fini(struct bypass_pager *p, bool release);
/* Clear every pin (a child: the pins were the parent's threads'). */
void bp_share_unpin_all(struct bypass_pager *p);

#endif
