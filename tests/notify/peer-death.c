/* SPDX-License-Identifier: MIT */
/*
 * peer-death: in each wait mode, a forked child that used the doorbell is
 * killed with SIGKILL.  Proves the parent's BYPASS_FOREVER wait returns
 * -EPIPE instead of hanging (whether the child dies before or during the
 * wait, reaped or not), a wait with a long timeout returns -EPIPE well
 * within it, peer_alive goes from 1 to 0, rings still pending are returned
 * before -EPIPE, a child that never used the doorbell is no peer, and a
 * process that rang the doorbell itself never gets -EPIPE (one of its
 * threads may ring again).
 */
#include <bypass/notify.h>
#include <signal.h>

#include "harness.h"
#include "core/testutil.h"

static void reap_killed(pid_t pid)
{
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/*
 * A child that rings once (so it is a peer), then sleeps or dies.  Returns
 * once it has rung: until then it is no peer, and a wait could rightly
 * return -EPIPE for the dead ones.
 */
static pid_t peer(bypass_doorbell *db, int die_after_ms)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid != 0) {
		char c;
		close(p[1]);
		CHECK_EQ(read(p[0], &c, 1), 1);
		close(p[0]);
	} else {
		close(p[0]);
		CHECK_ERR(bypass_notify_ring(db), 0);
		CHECK_EQ(write(p[1], "r", 1), 1);
		close(p[1]);
		if (die_after_ms >= 0) {
			test_sleep_ms((unsigned)die_after_ms);
			raise(SIGKILL);
		}
		for (;;)
			pause();
	}
	return pid;
}

static void one_mode(int mode)
{
	struct bypass_notify_opts o = { .mode = mode };
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(&o, &db), 0);

	/* Killed before the wait; a zombie, not yet reaped. */
	pid_t pid = peer(db, -1);
	CHECK_EQ(bypass_notify_wait(db, BYPASS_FOREVER), 1);
	CHECK_EQ(bypass_notify_peer_alive(db), 1);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_ERR(bypass_notify_wait(db, BYPASS_FOREVER), -EPIPE);
	CHECK_EQ(bypass_notify_peer_alive(db), 0);
	/* Pending rings (from a child that rang twice and exited) come
	 * first, then -EPIPE again. */
	pid_t ringer = fork();
	CHECK(ringer >= 0);
	if (ringer == 0) {
		CHECK_ERR(bypass_notify_ring(db), 0);
		CHECK_ERR(bypass_notify_ring(db), 0);
		_exit(0);
	}
	wait_child(ringer);
	CHECK_EQ(bypass_notify_wait(db, BYPASS_FOREVER), 2);
	CHECK_ERR(bypass_notify_wait(db, BYPASS_FOREVER), -EPIPE);
	reap_killed(pid);
	CHECK_ERR(bypass_notify_wait(db, BYPASS_FOREVER), -EPIPE);
	/* A long timeout: -EPIPE, not a wait until -ETIMEDOUT. */
	uint64_t t0 = test_now_ns();
	CHECK_ERR(bypass_notify_wait(db, 100000000000ll), -EPIPE);
	CHECK(test_now_ns() - t0 < 50000000000ull);
	/* try and a 0 timeout do not look at peers. */
	CHECK_ERR(bypass_notify_try(db), -EAGAIN);
	CHECK_ERR(bypass_notify_wait(db, 0), -ETIMEDOUT);
	CHECK_EQ(bypass_notify_peer_alive(db), 0);
	CHECK_ERR(bypass_notify_close(db), 0);

	/* Killed while the parent waits. */
	CHECK_ERR(bypass_notify_create(&o, &db), 0);
	pid = peer(db, 100);
	CHECK_EQ(bypass_notify_wait(db, BYPASS_FOREVER), 1);
	CHECK_ERR(bypass_notify_wait(db, BYPASS_FOREVER), -EPIPE);
	CHECK_EQ(bypass_notify_peer_alive(db), 0);
	reap_killed(pid);

	/* A new peer revives the doorbell. */
	pid = peer(db, -1);
	CHECK_EQ(bypass_notify_wait(db, BYPASS_FOREVER), 1);
	CHECK_EQ(bypass_notify_peer_alive(db), 1);
	CHECK_ERR(bypass_notify_wait(db, 20000000), -ETIMEDOUT);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	reap_killed(pid);
	CHECK_ERR(bypass_notify_wait(db, BYPASS_FOREVER), -EPIPE);
	CHECK_ERR(bypass_notify_close(db), 0);
}

int main(void)
{
	test_timeout(120);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %d", m);
		one_mode(m);
	}

	/* This process rang the doorbell itself, so a thread of ours may ring
	 * it again: no -EPIPE when the only other peer dies, a timeout. */
	{
		bypass_doorbell *self;
		CHECK_ERR(bypass_notify_create(NULL, &self), 0);
		CHECK_ERR(bypass_notify_ring(self), 0);
		CHECK_EQ(bypass_notify_wait(self, 0), 1);
		pid_t p = peer(self, -1);
		CHECK_EQ(bypass_notify_wait(self, BYPASS_FOREVER), 1);
		CHECK_EQ(kill(p, SIGKILL), 0);
		reap_killed(p);
		CHECK_EQ(bypass_notify_peer_alive(self), 0);
		CHECK_ERR(bypass_notify_wait(self, 100000000), -ETIMEDOUT);
		CHECK_ERR(bypass_notify_close(self), 0);
	}

	/* A child that never used the doorbell is no peer: a timeout, not
	 * -EPIPE, after it dies. */
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	wait_child(pid);
	CHECK_EQ(bypass_notify_peer_alive(db), 1);
	CHECK_ERR(bypass_notify_wait(db, 60000000), -ETIMEDOUT);
	CHECK_ERR(bypass_notify_close(db), 0);
	return test_pass("notify/peer-death");
}
