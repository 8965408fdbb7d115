/* SPDX-License-Identifier: MIT */
/*
 * duplex: a connection's sending side and receiving side used at once by
 * two threads (allowed: one sender and one receiver at a time), in both
 * processes: the client's sender thread streams messages while its main
 * thread takes the server's echoes; the server's two threads do the same.
 * Everything arrives, in order.  TEST_LABELS: threads
 */
#include <pthread.h>

#include "util.h"

#define N 20000

struct side {
	bypass_ipc_conn *c;
	uint64_t base;
};

static void *sender(void *p)
{
	struct side *s = p;
	for (uint64_t i = 0; i < N; i++) {
		uint64_t v[4] = { s->base + i, i, i * 3, ~i };
		CHECK_ERR(bypass_ipc_send(s->c, v, sizeof(v), BYPASS_FOREVER), 0);
	}
	return NULL;
}

static void receive_all(bypass_ipc_conn *c, uint64_t base)
{
	for (uint64_t i = 0; i < N; i++) {
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
		uint64_t v[4];
		CHECK_EQ(m.len, sizeof(v));
		memcpy(v, m.data, sizeof(v));
		CHECK_EQ(v[0], base + i);
		CHECK_EQ(v[3], ~i);
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
	}
}

static void run(bypass_ipc_conn *c, uint64_t mine, uint64_t theirs)
{
	struct side s = { c, mine };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, sender, &s) == 0);
	receive_all(c, theirs);
	CHECK(pthread_join(t, NULL) == 0);
}

int main(void)
{
	test_timeout(120);
	char name[64];
	test_svc_name(name, sizeof(name), "duplex");
	struct bypass_ipc_opts o = { .ring_size = 16384 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bypass_ipc_conn *c = test_connect(name, NULL);
		run(c, 1000000, 5000000);
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	bypass_ipc_conn *c = test_accept(svc);
	run(c, 5000000, 1000000);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_close(c), 0);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	return test_pass("ipc/duplex");
}
