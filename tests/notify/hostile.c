/* SPDX-License-Identifier: MIT */
/*
 * hostile: a doorbell is shared memory, so a peer can write anything into
 * it.  Proves what a corrupt or hostile doorbell cannot make us do: write
 * into a descriptor that is not an eventfd (ours or another process's), or
 * spin on a lock; and that a full process table turns -EPIPE detection off
 * instead of reporting a live peer as dead.
 */
#include <bypass/notify.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

#include "harness.h"
#include "core/testutil.h"
#include "notify/notify_internal.h"

static uint64_t loc(pid_t pid, int fd)
{
	return ((uint64_t)(uint32_t)pid << 32) | (uint32_t)fd;
}

static void no_write_to(bypass_doorbell *db, pid_t pid, int fd)
{
	struct db_shared *sh = bypass_notify_addr(db);
	atomic_store(&sh->efd_loc, loc(pid, fd));
	atomic_store(&sh->efd_armed, 1);
	atomic_store(&sh->efd_posted, 0);
	/* The ring is counted; telling the receiver fails. */
	CHECK_ERR(bypass_notify_ring(db), -EPERM);
	CHECK_EQ(bypass_notify_try(db), 1);
}

int main(void)
{
	test_timeout(120);
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);

	/* Our own pipe, named as the eventfd: nothing is written into it. */
	int p[2];
	CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
	no_write_to(db, getpid(), p[1]);
	char c;
	CHECK(read(p[0], &c, 1) < 0 && errno == EAGAIN);

	/* A socket of another process: nothing arrives at its peer. */
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		for (;;)
			pause();
	}
	no_write_to(db, child, sv[0]);
	CHECK(recv(sv[1], &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	/* A descriptor number that is not open, a garbage pid: no crash. */
	no_write_to(db, getpid(), 987);
	no_write_to(db, -5, 3);

	/* The eventfd path still works once a real one is published. */
	atomic_store(&((struct db_shared *)bypass_notify_addr(db))->efd_loc, 0);
	int efd = bypass_notify_fd(db);
	CHECK(efd >= 0);
	CHECK_EQ(bypass_notify_arm(db), 0);
	CHECK_ERR(bypass_notify_ring(db), 0);
	uint64_t v;
	CHECK_EQ(read(efd, &v, 8), 8);
	CHECK_EQ(bypass_notify_try(db), 1);
	CHECK_ERR(bypass_notify_close(db), 0);

	/*
	 * More processes than the table holds: tracking is off, so when they
	 * all die a wait times out rather than claiming -EPIPE for a process
	 * it never saw.
	 */
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	pid_t kids[DB_PROCS + 1];
	for (int i = 0; i < DB_PROCS + 1; i++) {
		int go[2];
		CHECK_EQ(pipe(go), 0);
		kids[i] = fork();
		CHECK(kids[i] >= 0);
		if (kids[i] == 0) {
			CHECK_ERR(bypass_notify_ring(db), 0);
			CHECK_EQ(write(go[1], "r", 1), 1);
			for (;;)
				pause();
		}
		CHECK_EQ(read(go[0], &c, 1), 1);
		close(go[0]);
		close(go[1]);
	}
	CHECK_EQ(bypass_notify_wait(db, BYPASS_FOREVER), DB_PROCS + 1);
	CHECK_EQ(atomic_load(&((struct db_shared *)bypass_notify_addr(db))->untracked), 1);
	for (int i = 0; i < DB_PROCS + 1; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	CHECK_EQ(bypass_notify_peer_alive(db), 1);
	CHECK_ERR(bypass_notify_wait(db, 100000000), -ETIMEDOUT);
	CHECK_ERR(bypass_notify_close(db), 0);
	return test_pass("notify/hostile");
}
