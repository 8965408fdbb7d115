/* SPDX-License-Identifier: MIT */
/*
 * epoll-nomem: bypass_ipc_epoll_ctl(EPOLL_CTL_ADD) that runs out of memory while
 * growing its table of registrations returns -ENOMEM and loses nothing: the
 * connections registered before are still reported, and the refused one can
 * be added once memory is back.  realloc is interposed to fail on demand.
 */
#include <dlfcn.h>
#include <sys/prctl.h>

#include "util.h"

#define CONNS 9 /* one more than the table's first size */

static int fail_realloc;

void *realloc(void *p, size_t n)
{
	static void *(*next)(void *, size_t);
	if (fail_realloc)
		return NULL;
	if (!next)
		next = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	return next(p, n);
}

int main(void)
{
	test_timeout(30);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "epnomem");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bypass_ipc_conn *c[CONNS];
		for (int i = 0; i < CONNS; i++)
			c[i] = test_connect(name, NULL);
		char x;
		CHECK(read(go[0], &x, 1) == 1);
		for (int i = 0; i < CONNS; i++)
			CHECK_ERR(bypass_ipc_send(c[i], &i, sizeof(i), BYPASS_FOREVER), 0);
		CHECK(read(go[0], &x, 1) == 1);
		for (int i = 0; i < CONNS; i++)
			CHECK_ERR(bypass_ipc_close(c[i]), 0);
		_exit(0);
	}
	bypass_ipc_conn *s[CONNS];
	for (int i = 0; i < CONNS; i++)
		s[i] = test_accept(svc);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN }, ev[CONNS];
	for (int i = 0; i < CONNS - 1; i++) {
		e.data.u64 = (uint64_t)i;
		CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s[i], &e), 0);
	}
	e.data.u64 = CONNS - 1;
	fail_realloc = 1;
	int r = bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s[CONNS - 1], &e);
	fail_realloc = 0;
	CHECK_ERR(r, -ENOMEM);
	/* Everything registered before is still there. */
	CHECK(write(go[1], "g", 1) == 1);
	uint64_t seen = 0;
	while (seen != (1u << (CONNS - 1)) - 1) {
		int n = bypass_ipc_epoll_wait(ep, ev, CONNS, 10000 * BYPASS_MS);
		CHECK(n > 0);
		for (int i = 0; i < n; i++) {
			uint64_t k = ev[i].data.u64;
			CHECK(k < CONNS - 1);
			struct bypass_ipc_msg m;
			CHECK_ERR(bypass_ipc_recv(s[k], &m, 0), 0);
			CHECK_ERR(bypass_ipc_release(s[k], &m), 0);
			seen |= 1u << k;
		}
	}
	/* And the refused one can be added now. */
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, s[CONNS - 1], &e), 0);
	int n = bypass_ipc_epoll_wait(ep, ev, CONNS, 10000 * BYPASS_MS);
	CHECK_EQ(n, 1);
	CHECK_EQ(ev[0].data.u64, CONNS - 1);
	CHECK(write(go[1], "g", 1) == 1);
	wait_child(pid);
	for (int i = 0; i < CONNS; i++)
		CHECK_ERR(bypass_ipc_close(s[i]), 0);
	close(ep);
	close(go[0]);
	close(go[1]);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/epoll-nomem");
}
