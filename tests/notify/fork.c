/* SPDX-License-Identifier: MIT */
/*
 * fork: ring and wait between a process and its forked child, in each wait
 * mode.  Proves that a doorbell created before fork() works in both
 * processes: a ping-pong over two doorbells with exact counts (each wait
 * returns 1), a child asleep on the futex is woken by the parent, rings made
 * by a child that has since exited are still delivered, a doorbell's
 * peers (parent and a live child) are reported alive, and the rings of
 * several children at once are all counted.
 */
#include <bypass/notify.h>
#include <stdatomic.h>

#include "harness.h"
#include "notify/notify_internal.h"
#include "core/testutil.h"

#define ROUNDS 2000

static void wait_sleepers(bypass_doorbell *db, unsigned n)
{
	struct db_shared *sh = bypass_notify_addr(db);
	while (atomic_load(&sh->ww.sleepers) < n)
		test_sleep_ms(1);
}

static void one_mode(int mode)
{
	struct bypass_notify_opts o = { .mode = mode };
	bypass_doorbell *ping, *pong;
	CHECK_ERR(bypass_notify_create(&o, &ping), 0);
	CHECK_ERR(bypass_notify_create(&o, &pong), 0);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < ROUNDS; i++) {
			CHECK_EQ(bypass_notify_wait(ping, BYPASS_FOREVER), 1);
			CHECK_ERR(bypass_notify_ring(pong), 0);
		}
		/* Then sleep until the parent rings once more. */
		CHECK_EQ(bypass_notify_wait(ping, BYPASS_FOREVER), 1);
		/* Leave rings behind and exit. */
		for (int i = 0; i < 3; i++)
			CHECK_ERR(bypass_notify_ring(pong), 0);
		_exit(0);
	}
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_ERR(bypass_notify_ring(ping), 0);
		CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 1);
	}
	CHECK_EQ(bypass_notify_peer_alive(ping), 1);
	CHECK_EQ(bypass_notify_peer_alive(pong), 1);
	if (mode != BYPASS_WAIT_SPIN)
		wait_sleepers(ping, 1);
	CHECK_ERR(bypass_notify_ring(ping), 0);
	wait_child(pid);
	/* The child is gone; its rings are not. */
	CHECK_EQ(bypass_notify_wait(pong, BYPASS_FOREVER), 3);
	CHECK_ERR(bypass_notify_try(ping), -EAGAIN);
	CHECK_ERR(bypass_notify_close(ping), 0);
	CHECK_ERR(bypass_notify_close(pong), 0);
}

int main(void)
{
	test_timeout(120);
	for (int m = BYPASS_WAIT_ADAPTIVE; m <= BYPASS_WAIT_SPIN; m++) {
		TEST_LOG("mode %d", m);
		one_mode(m);
	}

	/*
	 * Several children ring one parent at once: nothing is lost.  Each
	 * child stays alive, blocked on a pipe, until the parent has counted
	 * every ring: a child that had rung all its rings and exited before
	 * the next one rang at all would leave the parent no live peer, and
	 * its wait would rightly answer -EPIPE (notify.h).  The parent closes
	 * the pipe (by exiting too, if a check fails) to let them go.
	 */
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	enum { KIDS = 4, EACH = 5000 };
	int hold[2];
	CHECK_ERR(pipe(hold), 0);
	pid_t kids[KIDS];
	for (int k = 0; k < KIDS; k++) {
		kids[k] = fork();
		CHECK(kids[k] >= 0);
		if (kids[k] == 0) {
			close(hold[1]);
			for (int i = 0; i < EACH; i++)
				CHECK_ERR(bypass_notify_ring(db), 0);
			char c;
			ssize_t n;
			while ((n = read(hold[0], &c, 1)) < 0 && errno == EINTR)
				;
			CHECK_EQ(n, 0); /* end of file: the parent is done */
			_exit(0);
		}
	}
	close(hold[0]);
	long total = 0;
	while (total < KIDS * EACH) {
		int r = bypass_notify_wait(db, BYPASS_FOREVER);
		CHECK(r > 0);
		total += r;
	}
	close(hold[1]);
	for (int k = 0; k < KIDS; k++)
		wait_child(kids[k]);
	CHECK_EQ(total, KIDS * EACH);
	CHECK_ERR(bypass_notify_try(db), -EAGAIN);
	CHECK_ERR(bypass_notify_close(db), 0);
	return test_pass("notify/fork");
}
