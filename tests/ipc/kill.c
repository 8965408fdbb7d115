/* SPDX-License-Identifier: MIT */
/*
 * kill: SIGKILL either side at a random moment of a random workload (calls,
 * one-way messages, loans, in each wait mode), 150 times.  The
 * survivor's calls end in -ECONNRESET or -EPIPE, never hang (every wait has
 * a 10 s limit that counts as a failure), never crash; and once it closes
 * the connections, no descriptor or mapping of an arena is left.
 */
#include <signal.h>

#include "util.h"

#define TRIALS 150 /* 300 took 11.5 s at load 14 on 2 CPUs: each test well under 10 s */
#define LIMIT 10000000000ll /* a hang, not a timing */

static bool gone(int r)
{
	return r == -ECONNRESET || r == -EPIPE;
}

/* The side that gets killed: keeps talking until it dies. */
static void victim_client(const char *name, int mode, uint64_t seed)
{
	struct bypass_ipc_opts o = { .mode = mode };
	bypass_ipc_conn *c = test_connect(name, &o);
	CHECK_ERR(bypass_ipc_send(c, "hi", 2, LIMIT), 0);
	for (uint64_t i = 0;; i++) {
		uint64_t r = test_rand(&seed), v = i;
		if (r % 3 == 0) {
			struct bypass_ipc_msg m;
			if (bypass_ipc_call(c, &v, sizeof(v), &m, LIMIT) == 0)
				bypass_ipc_release(c, &m);
		} else if (r % 3 == 1) {
			void *b;
			if (bypass_ipc_loan(c, 100, &b, LIMIT) == 0) {
				memset(b, 1, 100);
				bypass_ipc_send(c, b, 100, 0);
			}
		} else {
			bypass_ipc_send(c, &v, sizeof(v), LIMIT);
		}
	}
}

static void victim_server(bypass_ipc_service *svc, int mode)
{
	bypass_ipc_conn *c = test_accept(svc);
	bypass_ipc_set_mode(c, mode, 0);
	for (;;) {
		struct bypass_ipc_msg m;
		if (bypass_ipc_recv(c, &m, LIMIT))
			continue;
		if (m.flags & BYPASS_IPC_MSG_CALL)
			bypass_ipc_reply(c, &m, m.data, m.len, LIMIT);
		bypass_ipc_release(c, &m);
	}
}

/* The survivor as server: serve until the client is gone. */
static void survive_server(bypass_ipc_conn *c, pid_t pid, uint64_t delay_us)
{
	uint64_t start = bypass_now_ns();
	bool killed = false;
	for (;;) {
		if (!killed && bypass_now_ns() - start >= delay_us * 1000) {
			kill(pid, SIGKILL);
			killed = true;
		}
		struct bypass_ipc_msg m;
		int r = bypass_ipc_recv(c, &m, killed ? LIMIT : 100000);
		if (r == -ETIMEDOUT && !killed)
			continue;
		if (gone(r))
			break;
		CHECK_ERR(r, 0);
		if (m.flags & BYPASS_IPC_MSG_CALL) {
			r = bypass_ipc_reply(c, &m, m.data, m.len, LIMIT);
			CHECK(r == 0 || gone(r));
		}
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
	}
	CHECK(killed);
}

/* The survivor as client: call and send until the server is gone. */
static void survive_client(bypass_ipc_conn *c, pid_t pid, uint64_t delay_us, uint64_t seed)
{
	uint64_t start = bypass_now_ns();
	bool killed = false;
	for (uint64_t i = 0;; i++) {
		if (!killed && bypass_now_ns() - start >= delay_us * 1000) {
			kill(pid, SIGKILL);
			killed = true;
		}
		int r;
		if (test_rand(&seed) % 2) {
			struct bypass_ipc_msg m;
			r = bypass_ipc_call(c, &i, sizeof(i), &m, LIMIT);
			if (!r)
				CHECK_ERR(bypass_ipc_release(c, &m), 0);
		} else {
			r = bypass_ipc_send(c, &i, sizeof(i), LIMIT);
		}
		if (gone(r))
			break;
		CHECK_ERR(r, 0);
	}
	CHECK(killed);
}

int main(void)
{
	test_timeout(150);
	int fds = test_count_fds();
	uint64_t seed = 0xdeadbeefull ^ (uint64_t)getpid();
	char name[64];
	test_svc_name(name, sizeof(name), "kill");
	struct bypass_ipc_opts so = { .ring_size = 8192 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	int by_kind[2] = { 0, 0 };
	for (int t = 0; t < TRIALS; t++) {
		int mode = (int)(test_rand(&seed) % 3);
		uint64_t delay = test_rand(&seed) % 3000; /* 0..3 ms */
		bool kill_client = t % 2 == 0;
		by_kind[kill_client]++;
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			if (kill_client)
				victim_client(name, mode, seed);
			else
				victim_server(svc, mode);
			_exit(0);
		}
		bypass_ipc_conn *c;
		if (kill_client) {
			c = test_accept(svc);
			bypass_ipc_set_mode(c, (mode + 1) % 3, 0);
			survive_server(c, pid, delay);
		} else {
			struct bypass_ipc_opts o = { .mode = mode };
			c = test_connect(name, &o);
			survive_client(c, pid, delay, seed);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		CHECK_ERR(bypass_ipc_close(c), 0);
		/* Nothing of this connection is left in this process. */
		if (test_count_maps("bypass-ipc") != 0)
			TEST_FAIL("trial %d: arena still mapped", t);
	}
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	TEST_LOG("%d trials killing the client, %d killing the server", by_kind[1], by_kind[0]);
	return test_pass("ipc/kill");
}
