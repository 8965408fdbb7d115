/* SPDX-License-Identifier: MIT */
/*
 * pidns: a server in another pid namespace (a container).  Its own pid
 * means nothing in the client's namespace: there it may be the pid of some
 * unrelated process.  The client must watch the server itself, as the
 * kernel names it here, not whatever process has the server's number:
 * killing that unrelated process leaves the connection alive, and
 * bypass_ipc_peer reports the server's pid in the client's namespace.
 *
 * The server gets, in its namespace, the number of a victim process of
 * ours (ns_last_pid).  Needs root (skips otherwise).
 */
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>

#include "util.h"

int main(void)
{
	test_timeout(60);
	if (geteuid() != 0)
		SKIP("needs root for a pid namespace");
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "pidns");
	pid_t victim = fork();
	CHECK(victim >= 0);
	if (victim == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	int ready[2], done[2];
	CHECK(pipe(ready) == 0 && pipe(done) == 0);
	pid_t outer = fork();
	CHECK(outer >= 0);
	if (outer == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWPID) < 0) {
			printf("SKIP: unshare(CLONE_NEWPID): %s\n", strerror(errno));
			_exit(77);
		}
		pid_t init = fork(); /* pid 1 of the new namespace */
		CHECK(init >= 0);
		if (init == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			char b[32];
			int n = snprintf(b, sizeof(b), "%d", (int)victim - 1);
			int f = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
			if (f < 0 || write(f, b, (size_t)n) != n) {
				printf("SKIP: ns_last_pid: %s\n", strerror(errno));
				_exit(77);
			}
			close(f);
			pid_t srv = fork();
			CHECK(srv >= 0);
			if (srv == 0) {
				if (getpid() != victim) {
					printf("SKIP: pid %d taken in the new namespace\n", (int)victim);
					_exit(77);
				}
				bypass_ipc_service *svc;
				CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
				CHECK(write(ready[1], "r", 1) == 1);
				bypass_ipc_conn *c = test_accept(svc);
				struct bypass_ipc_msg m;
				CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
				CHECK_ERR(bypass_ipc_reply(c, &m, "ok", 3, BYPASS_FOREVER), 0);
				CHECK_ERR(bypass_ipc_release(c, &m), 0);
				char x;
				CHECK(read(done[0], &x, 1) == 1);
				_exit(0);
			}
			wait_child(srv);
			_exit(0);
		}
		wait_child(init);
		_exit(0);
	}
	close(ready[1]);
	char x;
	if (read(ready[0], &x, 1) != 1) {
		/* The server side skipped (or failed): say which. */
		wait_child(outer);
		TEST_FAIL("no server");
	}
	bypass_ipc_conn *c = test_connect(name, NULL);
	pid_t pp;
	CHECK_ERR(bypass_ipc_peer(c, &pp, NULL), 0);
	CHECK(pp > 0 && pp != victim);
	/* The unrelated process that has the server's number here dies. */
	kill(victim, SIGKILL);
	CHECK(waitpid(victim, NULL, 0) == victim);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, 100000000), -ETIMEDOUT);
	CHECK_ERR(bypass_ipc_call(c, "q", 2, &m, 10000000000ll), 0);
	CHECK(!memcmp(m.data, "ok", 3));
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK(write(done[1], "d", 1) == 1);
	wait_child(outer);
	/* Now it is gone. */
	CHECK_ERR(bypass_ipc_recv(c, &m, 10000000000ll), -ECONNRESET);
	CHECK_ERR(bypass_ipc_close(c), 0);
	close(ready[0]);
	close(done[0]);
	close(done[1]);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/pidns");
}
