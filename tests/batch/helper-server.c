/* SPDX-License-Identifier: MIT */
/*
 * helper-server: a small static-file HTTP/1.1 server in the style of nginx
 * (non-blocking sockets, edge-triggered epoll, header then body, keep-alive),
 * run by the batch tests under the preload.  It uses the calls the preload
 * defers, in the ways real servers do.
 *
 *   helper-server --root DIR --port-file FILE [--workers N] [--threads N]
 *                 [--body sendfile|write|writev|send] [--cork] [--sndbuf B]
 *                 [--loop epoll|poll|select] [--shutdown]
 *
 * It writes its port to FILE once listening, serves until SIGTERM, then
 * prints "served R errors E" (R responses completed, E connections that
 * ended in an error such as a reset) and exits 0.  --workers forks N
 * processes after listening (like nginx), --threads runs N event loops.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

enum { BODY_SENDFILE, BODY_WRITE, BODY_WRITEV, BODY_SEND };
enum { LOOP_EPOLL, LOOP_POLL, LOOP_SELECT };

static const char *root = ".";
static int body_mode = BODY_SENDFILE, loop_mode = LOOP_EPOLL;
static bool cork, use_shutdown;
static int sndbuf;
static int lfd;
static volatile sig_atomic_t stop;
static _Atomic long served, errors;

#define MAXC 1024

struct conn {
	int fd;
	char in[4096];
	size_t inlen;
	/* the response in progress */
	bool busy, keepalive;
	char hdr[256];
	size_t hlen, hoff;
	int file;
	off_t foff, fsize;
	char *map; /* body bytes for the write modes */
};

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void conn_free(struct conn *c, bool error)
{
	if (c->file >= 0)
		close(c->file);
	free(c->map);
	if (use_shutdown && !error)
		shutdown(c->fd, SHUT_WR);
	close(c->fd);
	if (error)
		atomic_fetch_add(&errors, 1);
	free(c);
}

/* Parse one request from c->in; start the response.  0 = need more, 1 =
 * started, -1 = bad request. */
static int start_request(struct conn *c)
{
	char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
	if (!end)
		return c->inlen >= sizeof(c->in) ? -1 : 0;
	size_t reqlen = (size_t)(end - c->in) + 4;
	char path[512];
	if (sscanf(c->in, "GET /%500s HTTP/1.1", path) != 1)
		return -1;
	c->keepalive = !memmem(c->in, reqlen, "Connection: close", 17);
	memmove(c->in, c->in + reqlen, c->inlen - reqlen);
	c->inlen -= reqlen;
	char full[1100];
	snprintf(full, sizeof(full), "%s/%s", root, path);
	c->file = open(full, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (c->file < 0 || fstat(c->file, &st) < 0) {
		c->hlen = (size_t)snprintf(c->hdr, sizeof(c->hdr),
					   "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n%s\r\n",
					   c->keepalive ? "" : "Connection: close\r\n");
		if (c->file >= 0)
			close(c->file);
		c->file = -1;
		c->fsize = 0;
	} else {
		c->fsize = st.st_size;
		c->hlen = (size_t)snprintf(c->hdr, sizeof(c->hdr),
					   "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n%s\r\n",
					   (long long)st.st_size,
					   c->keepalive ? "" : "Connection: close\r\n");
		if (body_mode != BODY_SENDFILE && c->fsize) {
			c->map = malloc((size_t)c->fsize);
			if (!c->map || pread(c->file, c->map, (size_t)c->fsize, 0) != c->fsize)
				return -1;
		}
	}
	c->hoff = 0;
	c->foff = 0;
	c->busy = true;
	if (cork) {
		int one = 1;
		setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
	}
	return 1;
}

/* Write what can be written: 1 = response done, 0 = EAGAIN, -1 = error. */
static int write_some(struct conn *c)
{
	while (c->hoff < c->hlen) {
		ssize_t n;
		if (body_mode == BODY_WRITEV && c->foff < c->fsize) {
			/* Header and body in one writev, like nginx without sendfile. */
			struct iovec v[2] = { { c->hdr + c->hoff, c->hlen - c->hoff },
					      { c->map + c->foff, (size_t)(c->fsize - c->foff) } };
			n = writev(c->fd, v, 2);
			if (n > 0) {
				size_t h = c->hlen - c->hoff;
				if ((size_t)n >= h) {
					c->hoff = c->hlen;
					c->foff += (off_t)((size_t)n - h);
				} else {
					c->hoff += (size_t)n;
				}
				continue;
			}
		} else if (body_mode == BODY_SEND) {
			n = send(c->fd, c->hdr + c->hoff, c->hlen - c->hoff, MSG_NOSIGNAL);
		} else {
			n = write(c->fd, c->hdr + c->hoff, c->hlen - c->hoff);
		}
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		c->hoff += (size_t)n;
	}
	while (c->foff < c->fsize) {
		size_t chunk = (size_t)(c->fsize - c->foff);
		if (chunk > 65536)
			chunk = 65536;
		ssize_t n;
		switch (body_mode) {
		case BODY_SENDFILE:
			n = sendfile(c->fd, c->file, &c->foff, chunk);
			if (n > 0)
				continue;
			break;
		case BODY_SEND:
			n = send(c->fd, c->map + c->foff, chunk, MSG_NOSIGNAL);
			break;
		case BODY_WRITEV: {
			struct iovec v[2] = { { c->map + c->foff, chunk / 2 },
					      { c->map + c->foff + chunk / 2, chunk - chunk / 2 } };
			n = writev(c->fd, v, 2);
			break;
		}
		default:
			n = write(c->fd, c->map + c->foff, chunk);
		}
		if (n == 0)
			return -1;
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		if (body_mode != BODY_SENDFILE)
			c->foff += n;
	}
	if (cork) {
		int zero = 0;
		setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
	}
	if (c->file >= 0)
		close(c->file);
	c->file = -1;
	free(c->map);
	c->map = NULL;
	c->busy = false;
	atomic_fetch_add(&served, 1);
	return 1;
}

/* Drive a connection as far as it goes: false when it is finished. */
static bool drive(struct conn *c)
{
	for (;;) {
		if (c->busy) {
			int w = write_some(c);
			if (w < 0) {
				conn_free(c, true);
				return false;
			}
			if (w == 0)
				return true; /* wait for room */
			if (!c->keepalive) {
				conn_free(c, false);
				return false;
			}
		}
		int s = start_request(c);
		if (s < 0) {
			conn_free(c, true);
			return false;
		}
		if (s == 1)
			continue;
		ssize_t n = read(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen);
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n == 0 && c->inlen == 0) {
			conn_free(c, false);
			return false;
		}
		if (n <= 0) {
			conn_free(c, true);
			return false;
		}
		c->inlen += (size_t)n;
	}
}

static struct conn *accept_one(void)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (sndbuf)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->file = -1;
	return c;
}

static void *loop_epoll(void *arg)
{
	(void)arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL };
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	struct epoll_event evs[64];
	while (!stop) {
		int n = epoll_wait(ep, evs, 64, 100);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (!c) {
				while ((c = accept_one())) {
					struct epoll_event e = { .events = EPOLLIN | EPOLLOUT |
									   EPOLLRDHUP | EPOLLET,
								 .data.ptr = c };
					epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e);
					drive(c);
				}
				continue;
			}
			drive(c);
		}
	}
	close(ep);
	return NULL;
}

/* poll and select loops: level-triggered, a small table of connections. */
static void *loop_poll(void *arg)
{
	(void)arg;
	struct conn *cs[MAXC] = { 0 };
	int nc = 0;
	while (!stop) {
		struct pollfd p[MAXC + 1];
		fd_set rs, ws;
		FD_ZERO(&rs);
		FD_ZERO(&ws);
		int maxfd = lfd;
		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		FD_SET(lfd, &rs);
		for (int i = 0; i < nc; i++) {
			short evm = cs[i]->busy ? POLLOUT : POLLIN;
			p[i + 1] = (struct pollfd){ .fd = cs[i]->fd, .events = evm };
			if (cs[i]->fd < FD_SETSIZE) {
				FD_SET(cs[i]->fd, cs[i]->busy ? &ws : &rs);
				if (cs[i]->fd > maxfd)
					maxfd = cs[i]->fd;
			}
		}
		int n;
		if (loop_mode == LOOP_POLL) {
			n = poll(p, (nfds_t)nc + 1, 100);
		} else {
			struct timeval tv = { 0, 100000 };
			n = select(maxfd + 1, &rs, &ws, NULL, &tv);
			for (int i = 0; n > 0 && i <= nc; i++) {
				int fd = p[i].fd;
				p[i].revents = fd < FD_SETSIZE && (FD_ISSET(fd, &rs) || FD_ISSET(fd, &ws))
						       ? p[i].events : 0;
			}
		}
		if (n <= 0)
			continue;
		int keep = 0;
		for (int i = 0; i < nc; i++) {
			if (!p[i + 1].revents || drive(cs[i]))
				cs[keep++] = cs[i];
		}
		nc = keep;
		if (p[0].revents) {
			struct conn *c;
			while (nc < MAXC && (c = accept_one())) {
				if (drive(c))
					cs[nc++] = c;
			}
		}
	}
	for (int i = 0; i < nc; i++)
		conn_free(cs[i], false);
	return NULL;
}

static void serve(int threads)
{
	void *(*fn)(void *) = loop_mode == LOOP_EPOLL ? loop_epoll : loop_poll;
	pthread_t t[64];
	for (int i = 1; i < threads; i++)
		pthread_create(&t[i], NULL, fn, NULL);
	fn(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	const char *port_file = NULL;
	int workers = 0, threads = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(a, "--root"))
			root = v, i++;
		else if (!strcmp(a, "--port-file"))
			port_file = v, i++;
		else if (!strcmp(a, "--workers"))
			workers = atoi(v), i++;
		else if (!strcmp(a, "--threads"))
			threads = atoi(v), i++;
		else if (!strcmp(a, "--sndbuf"))
			sndbuf = atoi(v), i++;
		else if (!strcmp(a, "--cork"))
			cork = true;
		else if (!strcmp(a, "--shutdown"))
			use_shutdown = true;
		else if (!strcmp(a, "--body")) {
			body_mode = !strcmp(v, "write") ? BODY_WRITE
				    : !strcmp(v, "writev") ? BODY_WRITEV
				    : !strcmp(v, "send") ? BODY_SEND : BODY_SENDFILE;
			i++;
		} else if (!strcmp(a, "--loop")) {
			loop_mode = !strcmp(v, "poll") ? LOOP_POLL
				    : !strcmp(v, "select") ? LOOP_SELECT : LOOP_EPOLL;
			i++;
		} else {
			fprintf(stderr, "helper-server: unknown option %s\n", a);
			return 2;
		}
	}
	if (threads < 1 || threads > 64 || !port_file)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 512) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al)) {
		perror("helper-server: listen");
		return 1;
	}
	pid_t kids[64];
	for (int i = 0; i < workers && i < 64; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* the master's fate */
			serve(threads);
			printf("served %ld errors %ld\n", atomic_load(&served), atomic_load(&errors));
			fflush(stdout);
			exit(0);
		}
	}
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", ntohs(a.sin_port));
	fclose(f);
	rename(tmp, port_file);
	if (workers) {
		while (!stop)
			pause();
		int bad = 0;
		for (int i = 0; i < workers && i < 64; i++) {
			int st;
			kill(kids[i], SIGTERM);
			if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) ||
			    WEXITSTATUS(st))
				bad = 1;
		}
		return bad;
	}
	serve(threads);
	printf("served %ld errors %ld\n", atomic_load(&served), atomic_load(&errors));
	fflush(stdout);
	return 0;
}
