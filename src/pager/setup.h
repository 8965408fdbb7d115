/* SPDX-License-Identifier: MIT */
/*
 * Opening a pager's userfaultfds and swap file, checking its configuration
 * (setup.c).
 */
#ifndef BYPASS_PAGER_SETUP_H
#define BYPASS_PAGER_SETUP_H

#include <stdbool.h>
#include <stdint.h>

struct bypass_pager;
struct bypass_pager_config;

/* The handler thread's userfaultfd (kernel faults too), or -EPERM; the
 * features it is set up with. */
int bp_open_thread_uffd(struct bypass_pager *p);
uint64_t bp_thread_uffd_features(const struct bypass_pager *p);
/* The adaptive engine's pool userfaultfd (user-mode-only, no SIGBUS). */
int bp_open_pool_uffd(struct bypass_pager *p);
/* Open and size the swap file; sets swap_fd, direct, swap_pages. */
int bp_open_swap(struct bypass_pager *p, const struct bypass_pager_config *cfg);
/* A new unnamed swap file in dir for a forked child, nslots pages long
 * (sparse); the descriptor or -errno. */
int bp_swap_tmpfile(struct bypass_pager *p, const char *dir, bool direct);
/* Check cfg and set budget, watermarks, batch, readahead and mode. */
int bp_check_config(const struct bypass_pager_config *cfg, struct bypass_pager *p);

#endif
