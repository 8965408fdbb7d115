/* SPDX-License-Identifier: MIT */
/*
 * backpressure: a sender facing a full ring gets -EAGAIN (no wait) or
 * -ETIMEDOUT (a bounded wait) and loses nothing; a blocked sender sleeps
 * until the receiver releases room (in each wait mode), and every message
 * arrives once, in order.  A held loan keeps its room.
 */
#include "util.h"

static void one(int mode)
{
	char name[64];
	test_svc_name(name, sizeof(name), "bp");
	struct bypass_ipc_opts o = { .mode = mode, .ring_size = 8192 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), 0);
	int go[2], full[2];
	CHECK(pipe(go) == 0 && pipe(full) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		close(full[0]);
		bypass_ipc_conn *c = test_connect(name, &o);
		char buf[1000];
		unsigned n = 0;
		int r;
		for (;;) {
			test_fill(buf, sizeof(buf), n);
			r = bypass_ipc_send(c, buf, sizeof(buf), 0);
			if (r)
				break;
			n++;
		}
		CHECK_ERR(r, -EAGAIN);
		CHECK(n >= 6 && n <= 8); /* 8 KiB ring, 1 KiB records, one spare line */
		void *loan;
		CHECK_ERR(bypass_ipc_loan(c, sizeof(buf), &loan, 0), -EAGAIN);
		CHECK_ERR(bypass_ipc_send(c, buf, sizeof(buf), 20000000), -ETIMEDOUT);
		/* Let the server read; now blocking sends go through. */
		CHECK(write(full[1], "f", 1) == 1);
		char x;
		CHECK(read(go[0], &x, 1) == 1);
		for (unsigned i = n; i < n + 200; i++) {
			test_fill(buf, sizeof(buf), i);
			CHECK_ERR(bypass_ipc_send(c, buf, sizeof(buf), BYPASS_FOREVER), 0);
		}
		/* A loan holds its room while the reader drains the rest. */
		CHECK_ERR(bypass_ipc_loan(c, 10, &loan, BYPASS_FOREVER), 0);
		memcpy(loan, "last loan", 10);
		CHECK_ERR(bypass_ipc_send(c, loan, 10, 0), 0);
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	close(go[0]);
	close(full[1]);
	bypass_ipc_conn *c = test_accept(svc);
	/* Nothing is read until the client has filled the ring and seen its
	 * bounded sends fail (it was a 100 ms sleep: a slow client under
	 * AddressSanitizer at load 14 was still filling when reading began). */
	char f;
	CHECK(read(full[0], &f, 1) == 1);
	CHECK(write(go[1], "g", 1) == 1);
	unsigned i = 0;
	for (;; i++) {
		struct bypass_ipc_msg m;
		int r = bypass_ipc_recv(c, &m, BYPASS_FOREVER);
		if (r == -ECONNRESET)
			break;
		CHECK_ERR(r, 0);
		if (m.len == 10) {
			CHECK(!memcmp(m.data, "last loan", 10));
		} else {
			CHECK_EQ(m.len, 1000);
			if (!test_check(m.data, m.len, i))
				TEST_FAIL("message %u corrupted", i);
		}
		if (i % 7 == 0)
			usleep(200); /* a slow reader now and then */
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
	}
	CHECK(i >= 206);
	wait_child(pid);
	close(go[1]);
	close(full[0]);
	CHECK_ERR(bypass_ipc_close(c), 0);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
}

int main(void)
{
	test_timeout(60);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %d", m);
		one(m);
	}
	return test_pass("ipc/backpressure");
}
