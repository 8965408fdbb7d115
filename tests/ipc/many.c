/* SPDX-License-Identifier: MIT */
/*
 * many: one service, many clients at once, each with its own arena: every
 * client's calls get its own answers (a client cannot see another's rings),
 * and closing all of them leaves no descriptor or mapping behind.
 */
#include "util.h"

#define CLIENTS 48
#define CALLS 200

int main(void)
{
	test_timeout(120);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "many");
	struct bypass_ipc_opts o = { .ring_size = 16384 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), 0);
	pid_t kids[CLIENTS];
	for (int k = 0; k < CLIENTS; k++) {
		kids[k] = fork();
		CHECK(kids[k] >= 0);
		if (kids[k] == 0) {
			struct bypass_ipc_opts co = { .mode = BYPASS_WAIT_SLEEP };
			bypass_ipc_conn *c = test_connect(name, &co);
			for (uint64_t i = 0; i < CALLS; i++) {
				uint64_t q[2] = { (uint64_t)k, i }, *a;
				struct bypass_ipc_msg r;
				CHECK_ERR(bypass_ipc_call(c, q, sizeof(q), &r, BYPASS_FOREVER), 0);
				CHECK_EQ(r.len, sizeof(q));
				a = r.data;
				CHECK_EQ(a[0], (uint64_t)k + 1000);
				CHECK_EQ(a[1], i);
				CHECK_ERR(bypass_ipc_release(c, &r), 0);
			}
			CHECK_ERR(bypass_ipc_close(c), 0);
			_exit(0);
		}
	}
	/* One thread serves everyone through bypass_ipc_epoll_wait. */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event sev = { .events = EPOLLIN, .data.ptr = svc };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, bypass_ipc_service_fd(svc), &sev) == 0);
	int open_conns = 0, done = 0;
	bypass_ipc_conn *conns[CLIENTS];
	int owner[CLIENTS];
	for (int i = 0; i < CLIENTS; i++)
		owner[i] = -1;
	while (done < CLIENTS) {
		struct epoll_event ev[16];
		int n = bypass_ipc_epoll_wait(ep, ev, 16, 10000 * BYPASS_MS);
		CHECK(n > 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == svc) {
				bypass_ipc_conn *c;
				int r = bypass_ipc_accept(svc, &c, 0);
				if (r == -EAGAIN)
					continue;
				CHECK_ERR(r, 0);
				CHECK(open_conns < CLIENTS);
				conns[open_conns] = c;
				struct epoll_event cev = { .events = EPOLLIN,
							   .data.u64 = (uint64_t)open_conns };
				CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev), 0);
				open_conns++;
				continue;
			}
			int idx = (int)ev[i].data.u64;
			bypass_ipc_conn *c = conns[idx];
			struct bypass_ipc_msg m;
			int r = bypass_ipc_recv(c, &m, 0);
			if (r == -EAGAIN)
				continue;
			if (r == -ECONNRESET) {
				CHECK(ev[i].events & EPOLLHUP);
				CHECK_ERR(bypass_ipc_close(c), 0);
				done++;
				continue;
			}
			CHECK_ERR(r, 0);
			CHECK(m.flags & BYPASS_IPC_MSG_CALL);
			uint64_t a[2];
			memcpy(a, m.data, sizeof(a));
			if (owner[idx] < 0)
				owner[idx] = (int)a[0];
			CHECK_EQ(owner[idx], (int)a[0]); /* one client per connection */
			a[0] += 1000;
			CHECK_ERR(bypass_ipc_reply(c, &m, a, sizeof(a), BYPASS_FOREVER), 0);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
		}
	}
	for (int k = 0; k < CLIENTS; k++)
		wait_child(kids[k]);
	close(ep);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	CHECK_EQ(test_count_maps("bypass-ipc"), 0);
	return test_pass("ipc/many");
}
