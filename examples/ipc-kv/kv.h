/* SPDX-License-Identifier: MIT */
/*
 * The key-value service's protocol (examples/ipc-kv/kv-service.c), shared
 * by its clients: the op numbers of bypass_ipc_lib_call and the layout of
 * the requests.
 *
 *   KV_GET   req: the key                    resp: the value (its length)
 *   KV_SET   req: struct kv_set, key, value  resp: nothing (0)
 *   KV_DEL   req: the key                    resp: nothing (0), -ENOENT
 *   KV_COUNT req: nothing                    resp: uint64_t, the keys stored
 *   KV_SAVE  req: nothing                    resp: nothing: asks the
 *            server's loop (an event) to write the store's count to its
 *            log, since a handler runs in the caller's process and must not
 *            use the server's descriptors itself
 *   KV_PING  req: up to KV_PING_MAX bytes    resp: the same bytes (touches
 *            no state: RPAL's 32-byte call in bypass-bench ipc)
 *
 * Keys are 1..KV_KEY_MAX bytes, values 0..KV_VAL_MAX.
 */
#ifndef BYPASS_EXAMPLE_KV_H
#define BYPASS_EXAMPLE_KV_H

#include <stdint.h>

enum { KV_GET, KV_SET, KV_DEL, KV_COUNT, KV_SAVE, KV_PING, KV_NOPS };

#define KV_KEY_MAX 64
#define KV_VAL_MAX 1024
#define KV_PING_MAX 64
#define KV_EV_SAVE 1 /* the event KV_SAVE posts */

struct kv_set {
	uint16_t klen;
	uint16_t vlen;
	/* then klen bytes of key, vlen bytes of value */
};

#endif
