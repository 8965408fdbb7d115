/* SPDX-License-Identifier: MIT */
/*
 * messages: one-way messages across processes, both directions, in each
 * wait mode: every size from 0 to the maximum, sent by copy and by loan,
 * arrive whole, in order, read in place.  A small ring makes the records
 * wrap around hundreds of times (with pads of every length).
 */
#include "util.h"

static void client(const char *name, int mode, unsigned n, uint64_t seed)
{
	struct bypass_ipc_opts o = { .mode = mode };
	bypass_ipc_conn *c = test_connect(name, &o);
	size_t max;
	CHECK_ERR(bypass_ipc_max_msg(c, &max), 0);
	uint64_t s = seed;
	for (unsigned i = 0; i < n; i++) {
		size_t len = (size_t)(test_rand(&s) % (max + 1));
		if (i % 3 == 0) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, len, &buf, BYPASS_FOREVER), 0);
			CHECK(buf != NULL);
			test_fill(buf, len, i);
			CHECK_ERR(bypass_ipc_send(c, buf, len, BYPASS_FOREVER), 0);
		} else {
			unsigned char tmp[len + 1];
			test_fill(tmp, len, i);
			CHECK_ERR(bypass_ipc_send(c, tmp, len, BYPASS_FOREVER), 0);
		}
	}
	/* And the other way: the server echoes a few messages back. */
	for (unsigned i = 0; i < 100; i++) {
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
		CHECK_EQ(m.len, i);
		CHECK(test_check(m.data, m.len, i + 1000));
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
	}
	CHECK_ERR(bypass_ipc_close(c), 0);
	_exit(0);
}

static void run(int mode, size_t ring, unsigned n)
{
	char name[64];
	test_svc_name(name, sizeof(name), "msg");
	struct bypass_ipc_opts o = { .mode = mode, .ring_size = ring };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), 0);
	uint64_t seed = 0x1234567ull + mode;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		client(name, mode, n, seed);
	bypass_ipc_conn *c = test_accept(svc);
	size_t max;
	CHECK_ERR(bypass_ipc_max_msg(c, &max), 0);
	CHECK_EQ(max, ring / 4);
	pid_t ppid;
	uid_t puid;
	CHECK_ERR(bypass_ipc_peer(c, &ppid, &puid), 0);
	CHECK_EQ(ppid, pid);
	CHECK_EQ(puid, geteuid());
	uint64_t s = seed;
	for (unsigned i = 0; i < n; i++) {
		size_t len = (size_t)(test_rand(&s) % (max + 1));
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
		if (m.len != len || !test_check(m.data, m.len, i))
			TEST_FAIL("message %u: len %zu (want %zu) or content wrong", i, m.len, len);
		CHECK_EQ(m.flags, 0);
		/* In place: inside the shared ring, 16-byte aligned. */
		CHECK(((uintptr_t)m.data & 15) == 0);
		struct bypass_ipc_msg m2;
		CHECK_ERR(bypass_ipc_recv(c, &m2, 0), -EBUSY);
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
		CHECK_ERR(bypass_ipc_release(c, &m), -EINVAL);
	}
	for (unsigned i = 0; i < 100; i++) {
		unsigned char tmp[128];
		test_fill(tmp, i, i + 1000);
		CHECK_ERR(bypass_ipc_send(c, tmp, i, BYPASS_FOREVER), 0);
	}
	wait_child(pid);
	/* Everything was read: now the peer is gone. */
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), -ECONNRESET);
	CHECK_ERR(bypass_ipc_send(c, "x", 1, 0), -EPIPE);
	CHECK_ERR(bypass_ipc_close(c), 0);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
}

int main(void)
{
	test_timeout(120);
	int fds = test_count_fds();
	for (int mode = BYPASS_WAIT_ADAPTIVE; mode <= BYPASS_WAIT_SPIN; mode++) {
		TEST_LOG("mode %d, 64 KiB ring", mode);
		run(mode, 65536, 3000);
	}
	/* 4 KiB ring, messages up to 1 KiB: ~1,000 laps with pads. */
	TEST_LOG("wrap-around, 4 KiB ring");
	run(BYPASS_WAIT_ADAPTIVE, 4096, 20000);
	CHECK_EQ(test_count_fds(), fds);
	CHECK_EQ(test_count_maps("bypass-ipc"), 0);
	return test_pass("ipc/messages");
}
