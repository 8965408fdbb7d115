/* SPDX-License-Identifier: MIT */
/*
 * One budget for a process tree (issue 32, item 3): the ledger (tree.c).
 *
 * A memfd of BP_TREE_SIZE bytes, sealed against resizing, mapped shared by
 * every process of the tree: the tree's resident total (pages), its budget,
 * and a slot per process that joined (pid, its charge, a request word the
 * others bump to ask it to evict, with the number of pages asked).  A
 * process's pager charges every page it makes resident and uncharges every
 * page it drops (evict.c, pager.c, tier.c); a reservation that finds the
 * tree full evicts its own pages, or asks the process holding the most and
 * waits, bounded (bp_tree_reserve).  Each member runs one small thread that
 * sleeps on its request word and evicts when asked.  The preload creates
 * the ledger (or finds it through BYPASS_PAGER_LEDGER) and joins its pager
 * to it; the library's API does not use it.
 */
#ifndef BYPASS_PAGER_TREE_H
#define BYPASS_PAGER_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bypass_pager;
struct bp_ledger;

#define BP_TREE_SIZE 65536u /* bytes of the memfd: the header and the slots */

/* The counters of the tree (whole tree) and of this process's slot. */
struct bp_tree_stats {
	uint64_t budget_pages, slack_pages, total_pages, peak_pages;
	uint64_t over_pages;   /* charged above the budget (fallback, fork) */
	uint64_t asks;         /* requests made to other members */
	uint64_t ask_timeouts; /* asks not answered in time: fell back */
	uint64_t reclaimed;    /* slots of gone processes given back */
	uint64_t answered;     /* requests this process served */
	uint64_t members;      /* slots in use now */
	/* this process's reservations with the tree full (its slot) */
	uint64_t asks_made;    /* asks it made */
	uint64_t waits;        /* waits on the ledger's progress (1 ms at most) */
	uint64_t wait_ns;      /* time in them, waits and evictions included */
	uint64_t own_pages;    /* its own pages evicted there */
	uint64_t served_pages; /* pages its thread evicted when asked */
};

/*
 * The ledger of this process: the one named by env (a descriptor number in
 * decimal, BYPASS_PAGER_LEDGER's value, NULL for none), if it is a valid
 * ledger (a memfd of BP_TREE_SIZE bytes, sealed, the right magic and
 * version), else a new one with budget bytes.  *why gets the reason a named
 * one was refused (NULL when accepted or none named); *fd the descriptor
 * (inherited across exec: no close-on-exec).  Returns the mapping or NULL
 * (-errno in *fd) when no ledger can be made.
 */
struct bp_ledger *bp_tree_open(const char *env, size_t budget, const char **why, int *fd);
/* The ledger's budget in bytes. */
size_t bp_tree_budget(const struct bp_ledger *L);
/* Join p (a new pager, before its first map) to the ledger: a slot, the
 * request thread.  0 or -errno (the pager then keeps its own budget). */
int bp_tree_join(struct bypass_pager *p, struct bp_ledger *L);
/* The child of a fork that keeps p (atfork child handler, evict.c): a slot
 * of its own charged with the pages it has now, its own thread. */
void bp_tree_child(struct bypass_pager *p);
/* Tests only (tests/pager/tree-fork-ask): called, when set, at the end of
 * bp_tree_child, in the fork child's handler before the child's ring,
 * process descriptor, userfaultfds and handler threads are its own (the
 * window in which its ledger thread must not serve an ask yet).  NULL in
 * every program but that test: one load and a branch per fork. */
extern void (*bp_tree_test_child_hook)(struct bypass_pager *p);
/* p is destroyed: stop the thread, give the slot back (our own only). */
void bp_tree_leave(struct bypass_pager *p);
/* Charge n pages to the tree: the local count is already raised (any
 * context).  Uncharge n. */
void bp_tree_charge(struct bypass_pager *p, uint32_t n);
void bp_tree_uncharge(struct bypass_pager *p, uint32_t n);
/* Room for n pages in the tree, at most limit pages in all (the budget,
 * or its high watermark for speculative pages); with must, evicting our
 * own or asking another member, bounded.  On success the ledger and
 * p->bud.resident are both raised.  0, -EAGAIN (!must), -ENOMEM. */
int bp_tree_reserve(struct bypass_pager *p, uint32_t n, bool must, uint32_t limit);
void bp_tree_stats(struct bypass_pager *p, struct bp_tree_stats *st);
/* Tests: the ledger of p, or NULL. */
struct bp_ledger *bp_tree_ledger(struct bypass_pager *p);

#endif
