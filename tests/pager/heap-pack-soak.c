/* SPDX-License-Identifier: MIT */
/*
 * heap-pack-soak: heap-pack's threads for 4 x 3 million operations (the
 * preload heap's packer, preload/pager/pack.c; make soak).
 * TEST_LABELS: soak threads
 */
#define PACK_OPS 3000000
#include "pager/heap-pack.c"
