/* SPDX-License-Identifier: MIT */
/*
 * ipc-kv-client: talk to ipc-kv-server, in library mode (the handlers run
 * in this process, behind the protection-key gate where the CPU has one)
 * or in message mode (the server's thread runs them).
 *
 *   ipc-kv-client NAME lib|msg set KEY VALUE
 *   ipc-kv-client NAME lib|msg get KEY
 *   ipc-kv-client NAME lib|msg del KEY
 *   ipc-kv-client NAME lib|msg count
 *   ipc-kv-client NAME lib|msg save
 *   ipc-kv-client NAME lib|msg check N    N sets and gets, each checked
 */
#include <bypass/ipc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc-kv/kv.h"

static int set(bypass_ipc_lib *l, const char *k, const char *v)
{
	unsigned char req[sizeof(struct kv_set) + KV_KEY_MAX + KV_VAL_MAX];
	struct kv_set h = { .klen = (uint16_t)strlen(k), .vlen = (uint16_t)strlen(v) };
	if (!h.klen || h.klen > KV_KEY_MAX || h.vlen > KV_VAL_MAX)
		return -EINVAL;
	memcpy(req, &h, sizeof(h));
	memcpy(req + sizeof(h), k, h.klen);
	memcpy(req + sizeof(h) + h.klen, v, h.vlen);
	return bypass_ipc_lib_call(l, KV_SET, req, sizeof(h) + h.klen + h.vlen, NULL, 0);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s NAME lib|msg set|get|del|count|save|check ...\n",
			argv[0]);
		return 2;
	}
	struct bypass_ipc_lib_opts o = { 0 };
	if (!strcmp(argv[2], "msg"))
		o.flags = BYPASS_IPC_LIB_MESSAGE;
	else
		o.flags = BYPASS_IPC_LIB_FALLBACK; /* message mode if library mode is refused */
	bypass_ipc_lib *l;
	int r = bypass_ipc_lib_open(argv[1], &o, &l);
	if (r < 0) {
		fprintf(stderr, "open %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	const char *cmd = argv[3];
	char out[KV_VAL_MAX + 1];
	if (!strcmp(cmd, "set") && argc > 5) {
		r = set(l, argv[4], argv[5]);
	} else if (!strcmp(cmd, "get") && argc > 4) {
		r = bypass_ipc_lib_call(l, KV_GET, argv[4], strlen(argv[4]), out, KV_VAL_MAX);
		if (r >= 0)
			printf("%.*s\n", r, out);
	} else if (!strcmp(cmd, "del") && argc > 4) {
		r = bypass_ipc_lib_call(l, KV_DEL, argv[4], strlen(argv[4]), NULL, 0);
	} else if (!strcmp(cmd, "count")) {
		uint64_t n;
		r = bypass_ipc_lib_call(l, KV_COUNT, NULL, 0, &n, sizeof(n));
		if (r >= 0)
			printf("%llu\n", (unsigned long long)n);
	} else if (!strcmp(cmd, "save")) {
		r = bypass_ipc_lib_call(l, KV_SAVE, NULL, 0, NULL, 0);
	} else if (!strcmp(cmd, "check") && argc > 4) {
		int n = atoi(argv[4]);
		for (int i = 0; i < n && r >= 0; i++) {
			char k[32], v[32];
			snprintf(k, sizeof(k), "k%d", i % 100);
			snprintf(v, sizeof(v), "v%d", i);
			if ((r = set(l, k, v)) < 0)
				break;
			r = bypass_ipc_lib_call(l, KV_GET, k, strlen(k), out, KV_VAL_MAX);
			if (r != (int)strlen(v) || memcmp(out, v, (size_t)r)) {
				fprintf(stderr, "get %s: %d, want %s\n", k, r, v);
				r = r < 0 ? r : -EPROTO;
			}
		}
		struct bypass_ipc_lib_stats st;
		bypass_ipc_lib_stats(l, &st);
		printf("%d checked calls in %s mode%s\n", n,
		       st.mode == BYPASS_IPC_LIB_MODE_LIBRARY ? "library" : "message",
		       st.mode == BYPASS_IPC_LIB_MODE_LIBRARY
			       ? (st.guarded ? ", gated" : ", unguarded") : "");
	} else {
		fprintf(stderr, "unknown command %s\n", cmd);
		r = -EINVAL;
	}
	if (r < 0)
		fprintf(stderr, "%s: %s\n", cmd, strerror(-r));
	bypass_ipc_lib_close(l);
	return r < 0;
}
