/* SPDX-License-Identifier: MIT */
/*
 * exec-recv: a doorbell passed to a truly separate process (fork + exec of
 * helper-recv, sharing no memory) with bypass_notify_send/recv over a Unix
 * socketpair, in each wait mode.  Proves: ring/wait work both ways across the
 * exec boundary with exact counts; the eventfd of a doorbell made with
 * BYPASS_NOTIFY_EVENTFD travels with it (the helper's fd becomes readable
 * when the test rings after the helper armed it); and a ring reaches an
 * eventfd that the other process created itself.
 */
#include <bypass/notify.h>
#include <fcntl.h>
#include <sys/socket.h>

#include "harness.h"
#include "core/testutil.h"

#define ROUNDS 2000

static char helper[4096];

static void one_mode(int mode)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct bypass_notify_opts o = { .mode = mode };
	bypass_doorbell *ping, *pong, *third;
	o.flags = BYPASS_NOTIFY_EVENTFD;
	CHECK_ERR(bypass_notify_create(&o, &ping), 0);
	o.flags = 0;
	CHECK_ERR(bypass_notify_create(&o, &pong), 0);
	CHECK_ERR(bypass_notify_create(&o, &third), 0);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char s[16], m[16], r[16];
		fcntl(sv[1], F_SETFD, 0);
		snprintf(s, sizeof(s), "%d", sv[1]);
		snprintf(m, sizeof(m), "%d", mode);
		snprintf(r, sizeof(r), "%d", ROUNDS);
		execl(helper, helper, s, m, r, (char *)NULL);
		TEST_FAIL("exec %s: %s", helper, strerror(errno));
	}
	close(sv[1]);
	CHECK_ERR(bypass_notify_send(sv[0], ping), 0);
	CHECK_ERR(bypass_notify_send(sv[0], pong), 0);
	CHECK_ERR(bypass_notify_send(sv[0], third), 0);

	for (int i = 0; i < ROUNDS; i++) {
		CHECK_ERR(bypass_notify_ring(ping), 0);
		CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 1);
	}
	CHECK_ERR(bypass_notify_ring(ping), 0); /* "go" */
	/* Tell the helper the ring has returned: a ring that is still running
	 * when the helper arms would post the eventfd after the count it
	 * already consumed (a readable fd with nothing to take). */
	CHECK_EQ(write(sv[0], "g", 1), 1);
	/* The helper armed ping's (travelled) eventfd: ring it. */
	CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 1);
	CHECK_ERR(bypass_notify_ring(ping), 0);
	/* The helper armed third's eventfd, which it made itself. */
	CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 1);
	CHECK_ERR(bypass_notify_ring(third), 0);
	CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 1);
	wait_child(pid);

	CHECK_ERR(bypass_notify_try(pong), -EAGAIN);
	close(sv[0]);
	CHECK_ERR(bypass_notify_close(ping), 0);
	CHECK_ERR(bypass_notify_close(pong), 0);
	CHECK_ERR(bypass_notify_close(third), 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	test_timeout(120);
	test_helper_path(helper, sizeof(helper), argv[0], "notify", "helper-recv");
	if (access(helper, X_OK))
		TEST_FAIL("helper %s not found", helper);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %d", m);
		one_mode(m);
	}
	return test_pass("notify/exec-recv");
}
