/* SPDX-License-Identifier: MIT */
/*
 * The C side of the Rust-vs-C ping-pong: the same loops as bench/ipc's
 * ipc.call row (bypass_ipc_call of a 32-byte request, the server's
 * recv + reply + release), timed per call with rdtscp.  The Rust side
 * (src/main.rs) runs the same loops through the safe crate.
 */
#include <bypass/ipc.h>

/* Serve n calls on conn; 0 or the first -errno. */
int pingpong_c_server(bypass_ipc_conn *conn, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct bypass_ipc_msg m;
		int r = bypass_ipc_recv(conn, &m, BYPASS_FOREVER);
		if (r)
			return r;
		r = bypass_ipc_reply(conn, &m, m.data, m.len, BYPASS_FOREVER);
		bypass_ipc_release(conn, &m);
		if (r)
			return r;
	}
	return 0;
}

/* Make n calls of len bytes (at most 64) on conn, out[i] = cycles of call i. */
int pingpong_c_client(bypass_ipc_conn *conn, size_t n, size_t len, uint64_t *out)
{
	char q[64] = "request";
	if (len > sizeof(q))
		return -22;
	for (size_t i = 0; i < n; i++) {
		struct bypass_ipc_msg a;
		uint64_t t0 = bypass_rdtscp(NULL);
		int r = bypass_ipc_call(conn, q, len, &a, BYPASS_FOREVER);
		out[i] = bypass_rdtscp(NULL) - t0;
		if (r)
			return r;
		r = bypass_ipc_release(conn, &a);
		if (r)
			return r;
	}
	return 0;
}

/* Library mode: n calls of handler op with len bytes (at most 64), each
 * answered into a 64-byte buffer; out[i] = cycles of call i. */
int pingpong_c_lib_client(bypass_ipc_lib *lib, unsigned op, size_t n, size_t len, uint64_t *out)
{
	char q[64] = "request", a[64];
	if (len > sizeof(q))
		return -22;
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = bypass_rdtscp(NULL);
		int r = bypass_ipc_lib_call(lib, op, q, len, a, sizeof(a));
		out[i] = bypass_rdtscp(NULL) - t0;
		if (r < 0)
			return r;
	}
	return 0;
}
