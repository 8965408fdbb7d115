/* SPDX-License-Identifier: MIT */
/*
 * wrap: calls whose requests and responses wrap a small ring many times.
 * A 4 KiB ring, request and response sizes drawn from 0 to the largest
 * message, responses sent by copy and built in loans that reserve the
 * largest message and answer less (as library mode's message mode does):
 * pads fall before responses at every offset.  Every byte is checked.
 * Then the same through library mode's message mode (TS_ECHO, random
 * request lengths and response capacities).
 *
 * On 95741d6 a call whose response sat after a pad at the ring's end never
 * moved the client's read position past the pad: after about two laps the
 * server found no room, and the call failed with -ECONNRESET/-EPIPE (the
 * server's bounded reply wait gave up) instead of answering.
 */
#include "libutil.h"

#define RING 4096

/* Sizes of call i: both sides draw them from the same seed. */
struct sizes {
	size_t req, resp;
	unsigned how;
};

static struct sizes draw(uint64_t *s, size_t max)
{
	struct sizes z;
	uint64_t x = test_rand(s);
	z.req = (size_t)(x % (max + 1));
	z.resp = (size_t)((x >> 20) % (max + 1));
	z.how = (unsigned)(x >> 52);
	return z;
}

static void server(bypass_ipc_service *svc, unsigned calls, uint64_t seed)
{
	bypass_ipc_conn *c = test_accept(svc);
	size_t max;
	CHECK_ERR(bypass_ipc_max_msg(c, &max), 0);
	uint64_t s = seed;
	for (unsigned i = 0; i < calls; i++) {
		struct sizes z = draw(&s, max);
		struct bypass_ipc_msg m;
		/* Bounded: a ring that never frees fails the test, not hangs it. */
		CHECK_ERR(bypass_ipc_recv(c, &m, 5 * BYPASS_SEC), 0);
		CHECK(m.flags & BYPASS_IPC_MSG_CALL);
		CHECK_EQ(m.len, z.req);
		CHECK(test_check(m.data, m.len, i));
		if (z.how & 1) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, max, &buf, 5 * BYPASS_SEC), 0);
			test_fill(buf, z.resp, i + 7);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
			CHECK_ERR(bypass_ipc_reply(c, &m, buf, z.resp, 5 * BYPASS_SEC), 0);
		} else {
			unsigned char tmp[z.resp + 1];
			test_fill(tmp, z.resp, i + 7);
			CHECK_ERR(bypass_ipc_reply(c, &m, tmp, z.resp, 5 * BYPASS_SEC), 0);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
		}
	}
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, 10 * BYPASS_SEC), -ECONNRESET);
	CHECK_ERR(bypass_ipc_close(c), 0);
	_exit(0);
}

static void plain_calls(unsigned calls, uint64_t seed)
{
	char name[64];
	test_svc_name(name, sizeof(name), "wrap");
	struct bypass_ipc_opts so = { .ring_size = RING, .max_msg = RING / 2 - 128 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		server(svc, calls, seed);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	bypass_ipc_conn *c = test_connect(name, NULL);
	size_t max;
	CHECK_ERR(bypass_ipc_max_msg(c, &max), 0);
	CHECK_EQ(max, RING / 2 - 128);
	uint64_t s = seed;
	for (unsigned i = 0; i < calls; i++) {
		struct sizes z = draw(&s, max);
		struct bypass_ipc_msg r;
		int e;
		if (z.how & 2) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, z.req, &buf, 5 * BYPASS_SEC), 0);
			test_fill(buf, z.req, i);
			e = bypass_ipc_call(c, buf, z.req, &r, 10 * BYPASS_SEC);
		} else {
			unsigned char tmp[z.req + 1];
			test_fill(tmp, z.req, i);
			e = bypass_ipc_call(c, tmp, z.req, &r, 10 * BYPASS_SEC);
		}
		if (e)
			TEST_FAIL("call %u of %u (req %zu, resp %zu): %s", i, calls, z.req,
				  z.resp, strerror(-e));
		CHECK_EQ(r.len, z.resp);
		CHECK(test_check(r.data, r.len, i + 7));
		CHECK_ERR(bypass_ipc_release(c, &r), 0);
	}
	CHECK_ERR(bypass_ipc_close(c), 0);
	wait_child(pid);
	TEST_LOG("%u plain calls through a %d-byte ring", calls, RING);
}

static void lib_message_calls(unsigned calls, uint64_t seed)
{
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "wrap-lib");
	struct bypass_ipc_opts mo = { .ring_size = RING, .max_msg = RING / 2 - 128 };
	struct bypass_ipc_lib_opts o = { .msg = &mo };
	int err;
	pid_t srv = test_lib_server(name, so, &o, -1, &err);
	CHECK_ERR(err, 0);
	struct bypass_ipc_opts co = { 0 };
	struct bypass_ipc_lib_opts oc = { .flags = BYPASS_IPC_LIB_MESSAGE, .msg = &co,
					  .call_timeout_ns = 10 * BYPASS_SEC };
	bypass_ipc_lib *l = test_lib_open(name, &oc);
	CHECK_EQ(test_lib_mode(l), BYPASS_IPC_LIB_MODE_MESSAGE);
	size_t max = RING / 2 - 128 - sizeof(struct lib_wire);
	unsigned char req[RING], resp[RING];
	uint64_t s = seed;
	for (unsigned i = 0; i < calls; i++) {
		struct sizes z = draw(&s, max);
		test_fill(req, z.req, i);
		size_t cap = z.resp;
		int r = bypass_ipc_lib_call(l, TS_ECHO, req, z.req, resp, cap);
		if (z.req > cap) {
			if (r != -ENOBUFS)
				TEST_FAIL("echo %u (req %zu, cap %zu): %d", i, z.req, cap, r);
			continue;
		}
		if (r != (int)z.req)
			TEST_FAIL("echo %u of %u (req %zu, cap %zu): %d (%s)", i, calls, z.req,
				  cap, r, r < 0 ? strerror(-r) : "short");
		CHECK(test_check(resp, z.req, i));
	}
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);
	TEST_LOG("%u library message-mode calls through a %d-byte ring", calls, RING);
}

int main(void)
{
	test_timeout(300); /* a hang, not a timing */
	uint64_t seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
	TEST_LOG("seed %#llx", (unsigned long long)seed);
	plain_calls(100000, seed);
	lib_message_calls(100000, seed ^ 0x5555);
	return test_pass("ipc/wrap");
}
