/* SPDX-License-Identifier: MIT */
/*
 * call: synchronous calls across processes.  The server's handler runs in
 * the server's own thread (it sees its own tid); requests built in a loan
 * and copied from private buffers both work; responses are read in place;
 * one-way messages the server sends during a call stay queued for recv in
 * order; a call that times out drops its late response; a server that dies
 * before answering turns the call into -ECONNRESET.
 */
#include <sys/syscall.h>

#include "util.h"

#define CALLS 5000

static void server(bypass_ipc_service *svc, int wfd)
{
	bypass_ipc_conn *c = test_accept(svc);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (;;) {
		struct bypass_ipc_msg m;
		int r = bypass_ipc_recv(c, &m, BYPASS_FOREVER);
		if (r == -ECONNRESET)
			break;
		CHECK_ERR(r, 0);
		if (!(m.flags & BYPASS_IPC_MSG_CALL)) {
			/* One-way "die": exit without answering the next call. */
			CHECK_ERR(bypass_ipc_reply(c, &m, "no", 2, 0), -EINVAL);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
			struct bypass_ipc_msg q;
			CHECK_ERR(bypass_ipc_recv(c, &q, BYPASS_FOREVER), 0);
			CHECK(q.flags & BYPASS_IPC_MSG_CALL);
			_exit(0);
		}
		CHECK(m.len >= sizeof(uint64_t));
		uint64_t v;
		memcpy(&v, m.data, sizeof(v));
		if (v == 777777) {
			/* Push three one-way messages before the answer. */
			for (uint64_t k = 0; k < 3; k++)
				CHECK_ERR(bypass_ipc_send(c, &k, sizeof(k), BYPASS_FOREVER), 0);
		}
		if (v == 888888) {
			/* Answer late: after the caller gave up. */
			usleep(300000);
		}
		struct { uint64_t v; int32_t tid; } ans = { v * 2, tid };
		if (v % 2) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, sizeof(ans), &buf, BYPASS_FOREVER), 0);
			memcpy(buf, &ans, sizeof(ans));
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
			CHECK_ERR(bypass_ipc_reply(c, &m, buf, sizeof(ans), BYPASS_FOREVER), 0);
		} else {
			CHECK_ERR(bypass_ipc_reply(c, &m, &ans, sizeof(ans), BYPASS_FOREVER), 0);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
		}
	}
	CHECK_ERR(bypass_ipc_close(c), 0);
	(void)wfd;
	_exit(0);
}

int main(void)
{
	test_timeout(120);
	char name[64];
	test_svc_name(name, sizeof(name), "call");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		server(svc, -1);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	bypass_ipc_conn *c = test_connect(name, NULL);
	pid_t server_tid = 0;
	for (uint64_t i = 1; i <= CALLS; i++) {
		struct bypass_ipc_msg r;
		if (i % 3 == 0) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, 64, &buf, BYPASS_FOREVER), 0);
			memcpy(buf, &i, sizeof(i));
			CHECK_ERR(bypass_ipc_call(c, buf, sizeof(i), &r, BYPASS_FOREVER), 0);
		} else {
			CHECK_ERR(bypass_ipc_call(c, &i, sizeof(i), &r, BYPASS_FOREVER), 0);
		}
		CHECK_EQ(r.len, 16);
		uint64_t v;
		int32_t tid;
		memcpy(&v, r.data, 8);
		memcpy(&tid, (char *)r.data + 8, 4);
		CHECK_EQ(v, 2 * i);
		if (!server_tid)
			server_tid = tid;
		CHECK_EQ(tid, server_tid);   /* always the server's one thread */
		CHECK_EQ(tid, pid);          /* ... which is its main thread */
		struct bypass_ipc_msg r2;
		CHECK_ERR(bypass_ipc_call(c, &i, sizeof(i), &r2, BYPASS_FOREVER), -EBUSY);
		CHECK_ERR(bypass_ipc_release(c, &r), 0);
	}
	/* One-way messages pushed during a call wait for recv, in order. */
	uint64_t v = 777777;
	struct bypass_ipc_msg r, m;
	CHECK_ERR(bypass_ipc_call(c, &v, sizeof(v), &r, BYPASS_FOREVER), 0);
	CHECK_EQ(*(uint64_t *)r.data, 2 * v);
	for (uint64_t k = 0; k < 3; k++) {
		CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
		CHECK_EQ(m.len, 8);
		CHECK_EQ(*(uint64_t *)m.data, k);
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
	}
	CHECK_ERR(bypass_ipc_release(c, &r), 0);
	CHECK_ERR(bypass_ipc_recv(c, &m, 0), -EAGAIN);

	/* A call that times out; its late response is dropped, not received. */
	v = 888888;
	CHECK_ERR(bypass_ipc_call(c, &v, sizeof(v), &r, 50000000), -ETIMEDOUT);
	v = 4;
	CHECK_ERR(bypass_ipc_call(c, &v, sizeof(v), &r, BYPASS_FOREVER), 0);
	CHECK_EQ(*(uint64_t *)r.data, 8);
	CHECK_ERR(bypass_ipc_release(c, &r), 0);
	CHECK_ERR(bypass_ipc_recv(c, &m, 0), -EAGAIN);

	/* The server dies before answering. */
	CHECK_ERR(bypass_ipc_send(c, "die", 3, BYPASS_FOREVER), 0);
	v = 5;
	CHECK_ERR(bypass_ipc_call(c, &v, sizeof(v), &r, BYPASS_FOREVER), -ECONNRESET);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_call(c, &v, sizeof(v), &r, BYPASS_FOREVER), -EPIPE);
	CHECK_ERR(bypass_ipc_close(c), 0);
	return test_pass("ipc/call");
}
