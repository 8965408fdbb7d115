/* SPDX-License-Identifier: MIT */
/*
 * creds: SO_PEERCRED decides who may connect.  A client running as another
 * uid (a child that dropped to "nobody" with setresuid, as root) is refused
 * on both sides with -EACCES and gets no arena; with that uid in the
 * service's allow-list (and the server's uid in the client's) it connects;
 * BYPASS_IPC_ANY_UID accepts anyone.
 */
#include "util.h"

#define NOBODY 65534

static void child(const char *name, const struct bypass_ipc_opts *o, int want)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		TEST_FAIL("setresuid: %s", strerror(errno));
	bypass_ipc_conn *c = NULL;
	int r = bypass_ipc_connect(name, o, &c);
	CHECK_ERR(r, want);
	if (!r) {
		uint64_t v = 21;
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_call(c, &v, sizeof(v), &m, BYPASS_FOREVER), 0);
		CHECK_EQ(*(uint64_t *)m.data, 42);
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
		CHECK_ERR(bypass_ipc_close(c), 0);
	} else {
		CHECK(c == NULL);
		CHECK_EQ(test_count_maps("bypass-ipc"), 0);
	}
	_exit(0);
}

static void serve_one(bypass_ipc_conn *c)
{
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	uint64_t v = *(uint64_t *)m.data * 2;
	CHECK_ERR(bypass_ipc_reply(c, &m, &v, sizeof(v), BYPASS_FOREVER), 0);
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), -ECONNRESET);
	CHECK_ERR(bypass_ipc_close(c), 0);
}

static void trial(const struct bypass_ipc_opts *so, const struct bypass_ipc_opts *co,
		  int want)
{
	char name[64];
	test_svc_name(name, sizeof(name), "creds");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, so, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child(name, co, want);
	bypass_ipc_conn *c = NULL;
	int r = bypass_ipc_accept(svc, &c, 10000000000ll);
	if (want == -EACCES && (!so || !(so->flags & BYPASS_IPC_ANY_UID)) &&
	    (!so || !so->nallow)) {
		CHECK_ERR(r, -EACCES);
		CHECK(c == NULL);
	} else {
		CHECK_ERR(r, 0);
		pid_t p;
		uid_t u;
		CHECK_ERR(bypass_ipc_peer(c, &p, &u), 0);
		CHECK_EQ(u, NOBODY);
		if (want == 0)
			serve_one(c);
		else
			CHECK_ERR(bypass_ipc_close(c), 0);
	}
	wait_child(pid);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
}

int main(void)
{
	test_timeout(60);
	if (geteuid() != 0)
		SKIP("needs root to run a client under another uid");
	int fds = test_count_fds();
	uid_t nobody = NOBODY, root = 0;
	/* Default: same uid only. */
	trial(NULL, NULL, -EACCES);
	/* Allowed by the server, but the client does not trust root. */
	struct bypass_ipc_opts so = { .allow_uids = &nobody, .nallow = 1 };
	trial(&so, NULL, -EACCES);
	/* Both allow each other. */
	struct bypass_ipc_opts co = { .allow_uids = &root, .nallow = 1 };
	trial(&so, &co, 0);
	/* Any uid. */
	struct bypass_ipc_opts any = { .flags = BYPASS_IPC_ANY_UID };
	trial(&any, &any, 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/creds");
}
