/* SPDX-License-Identifier: MIT */
/*
 * ipc-echo-bypass: the epoll echo server of ipc-echo-unix.c converted to
 * bypass: the listening socket becomes a service, accepted connections are
 * registered with bypass_ipc_epoll_ctl, the loop calls bypass_ipc_epoll_wait, and
 * messages are read in place and echoed with one copy.  The loop makes no
 * system call while clients keep it busy.
 *
 * One thread serves every client, so no send may wait long: an echo waits
 * at most 1 ms for room, and a client that leaves its replies unread that
 * long is dropped (a server that must keep it would defer the reply instead:
 * keep it, stop reading that client, and retry when its ring has room).
 *
 *   ipc-echo-bypass NAME [COUNT]  serve COUNT clients (default 1), then exit
 *
 * ipc-echo-client bypass NAME talks to it.
 */
#include <bypass/ipc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s NAME [CLIENTS]\n", argv[0]);
		return 2;
	}
	int clients = argc > 2 ? atoi(argv[2]) : 1;

	bypass_ipc_service *svc;
	int r = bypass_ipc_listen(argv[1], NULL, &svc);
	if (r < 0) {
		fprintf(stderr, "listen: %s\n", strerror(-r));
		return 1;
	}
	int lfd = bypass_ipc_service_fd(svc);
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);

	int done = 0;
	while (done < clients) {
		struct epoll_event events[16];
		int k = bypass_ipc_epoll_wait(epfd, events, 16, BYPASS_FOREVER);
		if (k < 0 && k != -EINTR) {
			fprintf(stderr, "bypass_ipc_epoll_wait: %s\n", strerror(-k));
			return 1;
		}
		for (int i = 0; i < k; i++) {
			if (events[i].data.ptr == NULL) {
				bypass_ipc_conn *c;
				if (bypass_ipc_accept(svc, &c, 0) < 0)
					continue;
				struct epoll_event cev = { .events = EPOLLIN, .data.ptr = c };
				bypass_ipc_epoll_ctl(epfd, EPOLL_CTL_ADD, c, &cev);
				continue;
			}
			bypass_ipc_conn *c = events[i].data.ptr;
			struct bypass_ipc_msg m;
			r = bypass_ipc_recv(c, &m, 0);
			if (r == -EAGAIN)
				continue;
			if (r < 0) {
				bypass_ipc_close(c);
				done++;
				continue;
			}
			/* At most 1 ms for room: a client that does not read
			 * must not stall the others. */
			r = bypass_ipc_send(c, m.data, m.len, BYPASS_MS);
			bypass_ipc_release(c, &m);
			if (r < 0) {
				fprintf(stderr, "dropping a client: %s\n", strerror(-r));
				bypass_ipc_close(c);
				done++;
			}
		}
	}
	close(epfd);
	bypass_ipc_service_close(svc);
	return 0;
}
