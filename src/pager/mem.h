/* SPDX-License-Identifier: MIT */
/*
 * The pager's own allocations (mem.c).
 */
#ifndef BYPASS_PAGER_MEM_H
#define BYPASS_PAGER_MEM_H

#include <stddef.h>

/*
 * The pager's own allocations: the C library's allocator, resolved once,
 * never a preload's (whose heap is pager memory: see mem.c).  Every block
 * of src/pager is allocated and freed with these; nothing of src/pager
 * calls malloc, calloc, realloc, free, aligned_alloc or strdup by name
 * (tests/pager/own-alloc.c).
 */
void *bp_pg_malloc(size_t n);
void *bp_pg_calloc(size_t a, size_t b);
void *bp_pg_realloc(void *q, size_t n);
void bp_pg_free(void *q);
void *bp_pg_aligned_alloc(size_t align, size_t n);
char *bp_pg_strdup(const char *s);

#endif
