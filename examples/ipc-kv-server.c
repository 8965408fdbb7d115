/* SPDX-License-Identifier: MIT */
/*
 * ipc-kv-server: serve the key-value service of examples/ipc-kv/ (its
 * handlers in ipc-kv.so) in both modes.  Library-mode clients run the
 * handlers in their own threads and never wake this server; message-mode
 * clients are served here, with the same handlers.  The loop also takes
 * the events handlers post: KV_SAVE runs in the caller's process, which
 * has no business writing this server's log, so it posts KV_EV_SAVE and
 * this loop writes the line.
 *
 *   ipc-kv-server NAME OBJECT [SECONDS]   (OBJECT: build/examples/ipc-kv.so)
 *
 * The object must be owned by this user (or root) and not writable by
 * group or others.  ipc-kv-client talks to it.
 */
#include <bypass/ipc.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "ipc-kv/kv.h"

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s NAME OBJECT [SECONDS]\n", argv[0]);
		return 2;
	}
	int secs = argc > 3 ? atoi(argv[3]) : 0;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	bypass_ipc_lib_service *svc;
	int r = bypass_ipc_lib_listen(argv[1], argv[2], NULL, &svc);
	if (r < 0) {
		fprintf(stderr, "listen: %s\n", strerror(-r));
		return 1;
	}
	struct bypass_ipc_lib_stats st;
	bypass_ipc_lib_service_stats(svc, &st);
	printf("serving %s: handlers %s\n", argv[1],
	       st.guarded ? "behind the protection-key gate" : "unguarded (no protection keys)");
	fflush(stdout);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(ep, EPOLL_CTL_ADD, bypass_ipc_lib_service_fd(svc), &ev);
	time_t end = secs ? time(NULL) + secs : 0;
	while (!stop && (!end || time(NULL) < end)) {
		struct epoll_event evs[16];
		int n = bypass_ipc_epoll_wait(ep, evs, 16, 100 * BYPASS_MS);
		for (int i = 0; i < n; i++) {
			bypass_ipc_conn *c = evs[i].data.ptr;
			if (!c) {
				/* new clients: library-mode openers need nothing
				 * more (r == 1), message-mode ones join the loop */
				while ((r = bypass_ipc_lib_accept(svc, &c, 0)) >= 0) {
					struct epoll_event ce = { .events = EPOLLIN, .data.ptr = c };
					if (c)
						bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
				}
				/* events posted by handlers, then arm for more */
				do {
					struct bypass_ipc_event e;
					while (bypass_ipc_lib_event(svc, &e) == 0) {
						if (e.type != KV_EV_SAVE)
							continue;
						/* the server's own log: here, stdout */
						bypass_ipc_lib_service_stats(svc, &st);
						printf("save asked by pid %d: %llu bytes of state in use\n",
						       e.pid, (unsigned long long)st.arena_used);
						fflush(stdout);
					}
				} while (bypass_ipc_lib_arm(svc) == 1);
				continue;
			}
			while ((r = bypass_ipc_lib_serve(svc, c, 0)) == 1)
				;
			if (r != -EAGAIN) { /* the client left (or misbehaved) */
				bypass_ipc_epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL);
				bypass_ipc_close(c);
			}
		}
		bypass_ipc_lib_service_stats(svc, &st);
		if (st.broken && bypass_ipc_lib_service_recover(svc) == 0)
			printf("the service was broken (a handler faulted or died "
			       "holding a lock): recovered\n");
	}
	bypass_ipc_lib_service_close(svc);
	return 0;
}
