/* SPDX-License-Identifier: MIT */
/*
 * backlog: bypass_ipc_connect honours the handshake timeout even when the
 * server never accepts and its listen backlog is full (a hung or hostile
 * server): connect() on a Unix socket waits for room in the backlog, and
 * that wait must not outlast the timeout.  Afterwards nothing is left open.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include "util.h"

int main(void)
{
	test_timeout(30);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "backlog");
	/* A server that listens with no backlog and never accepts. */
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "bypass-ipc:%s", name);
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(ls >= 0);
	CHECK(bind(ls, (struct sockaddr *)&sa, alen) == 0);
	CHECK(listen(ls, 0) == 0);
	/* Fill the backlog: plain connections until one would wait. */
	int filler[8], nf = 0;
	for (; nf < 8; nf++) {
		filler[nf] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		CHECK(filler[nf] >= 0);
		if (connect(filler[nf], (struct sockaddr *)&sa, alen) < 0) {
			CHECK(errno == EAGAIN);
			close(filler[nf]);
			break;
		}
	}
	CHECK(nf > 0 && nf < 8);

	/* The handshake timeout covers the wait for room in the backlog. */
	struct bypass_ipc_opts o = { .handshake_timeout_ns = 100000000 };
	bypass_ipc_conn *c = NULL;
	CHECK_ERR(bypass_ipc_connect(name, &o, &c), -ETIMEDOUT);
	CHECK(c == NULL);

	/* A server that accepted but never answers: the same timeout. */
	for (int i = 0; i < nf; i++)
		close(filler[i]);
	int a = accept(ls, NULL, NULL);
	CHECK(a >= 0);
	close(a);
	CHECK_ERR(bypass_ipc_connect(name, &o, &c), -ETIMEDOUT);
	close(ls);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/backlog");
}
