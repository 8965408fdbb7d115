/* SPDX-License-Identifier: MIT */
/*
 * arm-late: a consumer that receives and releases a message and arms at
 * once (while the producer may still be finishing that message's
 * publication) gets its descriptor readable for the next message, not
 * early for the one it already has: recv after poll finds the message.
 * 200 rounds of call, release, send, arm, poll, recv.
 */
#include <poll.h>
#include <sys/prctl.h>

#include "util.h"

#define ROUNDS 200

int main(void)
{
	test_timeout(60);
	char name[64];
	test_svc_name(name, sizeof(name), "arml");
	struct bypass_ipc_opts o = { .ring_size = 65536 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), 0);
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *c = test_connect(name, &o);
		for (int i = 0; i < ROUNDS; i++) {
			struct bypass_ipc_msg m;
			CHECK_ERR(bypass_ipc_call(c, "ping", 5, &m, 10 * BYPASS_SEC), 0);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
			int a = bypass_ipc_arm(c);
			CHECK(a == 0 || a == 1);
			CHECK(write(go[1], "g", 1) == 1); /* armed: send the next */
			if (a == 0) {
				struct pollfd p = { .fd = bypass_ipc_fd(c), .events = POLLIN };
				CHECK_EQ(poll(&p, 1, 10000), 1);
			}
			CHECK_ERR(bypass_ipc_recv(c, &m, 0), 0);
			CHECK(!memcmp(m.data, "next", 5));
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
		}
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	bypass_ipc_conn *c = test_accept(svc);
	for (int i = 0; i < ROUNDS; i++) {
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
		CHECK_ERR(bypass_ipc_reply(c, &m, "pong", 5, BYPASS_FOREVER), 0);
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
		char x;
		CHECK(read(go[0], &x, 1) == 1);
		CHECK_ERR(bypass_ipc_send(c, "next", 5, BYPASS_FOREVER), 0);
	}
	wait_child(pid);
	CHECK_ERR(bypass_ipc_close(c), 0);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	return test_pass("ipc/arm-late");
}
