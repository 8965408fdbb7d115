/* SPDX-License-Identifier: MIT */
/*
 * ipc-echo-unix: an epoll echo server over Unix sockets, the "before" of
 * ipc-echo-bypass.c (diff the two files: the conversion is a few lines).
 *
 *   ipc-echo-unix NAME [COUNT]    serve COUNT clients (default 1), then exit
 *
 * NAME is a socket in the abstract namespace; ipc-echo-client unix NAME
 * talks to it.
 *
 * One thread serves every client, so no send may wait long: an echo waits
 * at most 1 ms for room, and a client that leaves its replies unread that
 * long is dropped (a server that must keep it would defer the reply instead:
 * keep it, stop reading that client, and retry when its socket has room).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s NAME [CLIENTS]\n", argv[0]);
		return 2;
	}
	int clients = argc > 2 ? atoi(argv[2]) : 1;

	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "echo:%s", argv[1]);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa_family_t) + 1 + n) < 0 ||
	    listen(lfd, 16) < 0) {
		perror("listen");
		return 1;
	}
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd };
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);

	int done = 0;
	while (done < clients) {
		struct epoll_event events[16];
		int k = epoll_wait(epfd, events, 16, -1);
		if (k < 0 && errno != EINTR) {
			perror("epoll_wait");
			return 1;
		}
		for (int i = 0; i < k; i++) {
			if (events[i].data.fd == lfd) {
				int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
				if (cfd < 0)
					continue;
				struct timeval ms = { .tv_usec = 1000 }; /* see below */
				setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &ms, sizeof(ms));
				struct epoll_event cev = { .events = EPOLLIN, .data.fd = cfd };
				epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &cev);
				continue;
			}
			int cfd = events[i].data.fd;
			char buf[4096];
			ssize_t len = read(cfd, buf, sizeof(buf));
			if (len <= 0) {
				close(cfd);
				done++;
				continue;
			}
			/* At most 1 ms for room: a client that does not read
			 * must not stall the others. */
			ssize_t r = send(cfd, buf, (size_t)len, MSG_NOSIGNAL);
			if (r != len) {
				fprintf(stderr, "dropping a client: %s\n",
					strerror(r < 0 ? errno : EAGAIN));
				close(cfd);
				done++;
			}
		}
	}
	close(epfd);
	close(lfd);
	return 0;
}
