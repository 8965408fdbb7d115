/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the tests of the process tree's ledger (tests/pager/tree-*.c,
 * issue 32, item 3): a ledger of the test's own, and pagers of this
 * process joined to it, through the internal API (as the preload's first
 * process opens the ledger and joins each process's pager).
 */
#ifndef BYPASS_TEST_PAGER_TREE_UTIL_H
#define BYPASS_TEST_PAGER_TREE_UTIL_H

#include "util.h"
#include "pager/pager_internal.h"
#include "pager/tree.h"

#include <sys/mman.h>

/* A ledger for a tree budget of budget_pages pages; *fd: its descriptor. */
static inline struct bp_ledger *tree_ledger(uint64_t budget_pages, int *fd)
{
	const char *why;
	struct bp_ledger *L = bp_tree_open(NULL, budget_pages * PAGE, &why, fd);
	if (!L)
		TEST_FAIL("bp_tree_open: %s", strerror(-*fd));
	return L;
}

/*
 * A pager in mode with a budget of budget_pages pages and swap bytes of
 * swap (an unnamed file), joined to L; NULL where the mode is not allowed
 * here (a line says so: the caller skips that mode).
 */
static inline bypass_pager *tree_pager(struct bp_ledger *L, int mode, uint64_t budget_pages,
				       size_t swap)
{
	struct bypass_pager_config c = { .budget = budget_pages * PAGE, .swap_size = swap,
					 .mode = mode };
	bypass_pager *p = try_pager(&c);
	if (!p) {
		printf("  %s: not allowed here (skipped)\n", mode_name(mode));
		return NULL;
	}
	CHECK_EQ(bp_tree_join(p, L), 0);
	return p;
}

/* The ledger unmapped and its descriptor closed (its pagers destroyed). */
static inline void tree_close(struct bp_ledger *L, int fd)
{
	munmap(L, BP_TREE_SIZE);
	close(fd);
}

#endif
