/* SPDX-License-Identifier: MIT */
/*
 * heap-pack-soak: heap-pack's threads for 4 x 600,000 operations (the
 * preload heap's packer, preload/pager/pack.c; make soak).  The threads'
 * blocks are about three times the 4 MiB budget, so most operations fault:
 * 2026-11-29, load 2-3, thread 0 did ~1,180 operations a second, steady
 * (a line on stderr every 30 s says how far it is): about 9 minutes.  At
 * 3 million a thread (before) it ran ~42 minutes and was never seen to end
 * inside a soak's bounds.
 * TEST_LABELS: soak threads
 */
#define PACK_OPS 600000
#include "pager/heap-pack.c"
