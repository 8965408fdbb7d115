/* SPDX-License-Identifier: MIT */
/*
 * fork.c's list of the pagers a fork prepares.
 */
#ifndef BYPASS_PAGER_FORK_H
#define BYPASS_PAGER_FORK_H


struct bypass_pager;

/* A pager in the list of those a fork prepares (every region resident
 * before the fork: see fork.c); 0 or -ENOMEM.  Remove: at destroy. */
int bp_fork_add(struct bypass_pager *p);
void bp_fork_remove(struct bypass_pager *p);

#endif
