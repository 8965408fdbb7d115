/* SPDX-License-Identifier: MIT */
/*
 * helper-client: fetch files over HTTP/1.1 from 127.0.0.1 and check every
 * byte against the files on disk.  Used by the batch tests against the
 * helper server, nginx and lighttpd (all under the preload).
 *
 *   helper-client --port P --root DIR --files a,b,c [--conns N]
 *                 [--requests R] [--close] [--pipeline K] [--slow]
 *                 [--rcvbuf B] [--reset-every K]
 *
 * N connections (threads) each make R requests, cycling through the files
 * from a different start.  --close sends "Connection: close" and expects the
 * server to close after each response.  --pipeline sends K requests before
 * reading K responses.  --slow reads bodies a few KB at a time with pauses
 * (and a small receive buffer) so that the server's writes come up short.
 * --reset-every K aborts every K-th request with a TCP reset instead of
 * reading the response.  Exits 0 when every response matched.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int port, conns = 4, requests = 20, pipeline = 1, rcvbuf, reset_every;
static bool close_each, slow;
static const char *root;
static char *names[256];
static char *data[256];
static size_t sizes[256];
static int nfiles;
static _Atomic long ok_count, fail_count, reset_count;

static void fail(int id, const char *fmt, const char *what, long a, long b)
{
	fprintf(stderr, "helper-client[%d]: ", id);
	fprintf(stderr, fmt, what, a, b);
	fputc('\n', stderr);
	atomic_fetch_add(&fail_count, 1);
}

static int connect_one(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	for (int tries = 0; tries < 200; tries++) {
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		if (errno != ECONNREFUSED && errno != EAGAIN && errno != EINTR)
			break;
		usleep(10000);
	}
	close(fd);
	return -1;
}

static bool send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

struct rd {
	int fd;
	char buf[65536];
	size_t len, off;
};

/* Up to n buffered or fresh bytes into dst; 0 at EOF, -1 on error. */
static ssize_t rd_get(struct rd *r, char *dst, size_t n)
{
	if (r->off == r->len) {
		size_t want = slow ? 3000 : sizeof(r->buf);
		if (slow) {
			struct timespec ts = { 0, 200000 };
			nanosleep(&ts, NULL);
		}
		ssize_t k;
		do
			k = recv(r->fd, r->buf, want, 0);
		while (k < 0 && errno == EINTR);
		if (k <= 0)
			return k;
		r->len = (size_t)k;
		r->off = 0;
	}
	size_t k = r->len - r->off < n ? r->len - r->off : n;
	memcpy(dst, r->buf + r->off, k);
	r->off += k;
	return (ssize_t)k;
}

/* Read one response and check it against file f.  0 ok, -1 failed. */
static int read_response(int id, struct rd *r, int f, bool *server_closes)
{
	char hdr[4096];
	size_t h = 0;
	while (h < 4 || memcmp(hdr + h - 4, "\r\n\r\n", 4)) {
		if (h == sizeof(hdr) - 1) {
			fail(id, "%s header too long %ld %ld", names[f], 0, 0);
			return -1;
		}
		ssize_t k = rd_get(r, hdr + h, 1);
		if (k <= 0) {
			fail(id, "%s: connection ended in the header (%ld bytes, errno %ld)",
			     names[f], (long)h, k < 0 ? errno : 0);
			return -1;
		}
		h++;
	}
	hdr[h] = 0;
	int status = 0;
	if (sscanf(hdr, "HTTP/1.%*d %d", &status) != 1 || status != 200) {
		fail(id, "%s: status %ld %ld", names[f], status, 0);
		return -1;
	}
	long clen = -1;
	for (char *p = hdr; (p = strchr(p, '\n')); p++)
		if (!strncasecmp(p + 1, "Content-Length:", 15))
			clen = atol(p + 16);
		else if (!strncasecmp(p + 1, "Connection: close", 17))
			*server_closes = true;
	if (clen != (long)sizes[f]) {
		fail(id, "%s: Content-Length %ld, file has %ld", names[f], clen, (long)sizes[f]);
		return -1;
	}
	char chunk[8192];
	size_t got = 0;
	while (got < sizes[f]) {
		size_t want = sizes[f] - got < sizeof(chunk) ? sizes[f] - got : sizeof(chunk);
		ssize_t k = rd_get(r, chunk, want);
		if (k <= 0) {
			fail(id, "%s: body ended at %ld of %ld", names[f], (long)got, (long)sizes[f]);
			return -1;
		}
		if (memcmp(chunk, data[f] + got, (size_t)k)) {
			fail(id, "%s: body differs near byte %ld (of %ld)", names[f], (long)got,
			     (long)sizes[f]);
			return -1;
		}
		got += (size_t)k;
	}
	return 0;
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	struct rd *r = malloc(sizeof(*r));
	int fd = -1, next = id % nfiles;
	for (int done = 0; done < requests && !atomic_load(&fail_count);) {
		if (fd < 0) {
			fd = connect_one();
			if (fd < 0) {
				fail(id, "%s: connect failed (errno %ld) %ld", "server", errno, 0);
				break;
			}
			r->fd = fd;
			r->len = r->off = 0;
		}
		int k = pipeline;
		if (k > requests - done)
			k = requests - done;
		int fs[64];
		char req[64 * 600];
		size_t rl = 0;
		for (int i = 0; i < k; i++) {
			fs[i] = next;
			next = (next + 1) % nfiles;
			rl += (size_t)snprintf(req + rl, sizeof(req) - rl,
					       "GET /%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n",
					       names[fs[i]], close_each ? "Connection: close\r\n" : "");
		}
		if (!send_all(fd, req, rl)) {
			fail(id, "%s: send failed (errno %ld) %ld", "request", errno, 0);
			break;
		}
		if (reset_every && (done + 1) % reset_every == 0) {
			/* Go away with a reset while the server answers. */
			struct linger lg = { 1, 0 };
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(fd);
			fd = -1;
			done += k;
			atomic_fetch_add(&reset_count, 1);
			continue;
		}
		bool closes = false;
		for (int i = 0; i < k; i++) {
			if (read_response(id, r, fs[i], &closes) < 0)
				goto out;
			atomic_fetch_add(&ok_count, 1);
		}
		done += k;
		if (close_each || closes) {
			char c;
			ssize_t e = rd_get(r, &c, 1);
			if (e != 0) {
				fail(id, "%s: expected EOF after the response, got %ld (errno %ld)",
				     "close", (long)e, e < 0 ? errno : 0);
				goto out;
			}
			close(fd);
			fd = -1;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(r);
	return NULL;
}

static char *list_copy;

static void load(const char *list)
{
	char *s = list_copy = strdup(list), *save = NULL;
	for (char *t = strtok_r(s, ",", &save); t && nfiles < 256; t = strtok_r(NULL, ",", &save)) {
		char path[1200];
		snprintf(path, sizeof(path), "%s/%s", root, t);
		int fd = open(path, O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st)) {
			fprintf(stderr, "helper-client: %s: %s\n", path, strerror(errno));
			exit(2);
		}
		names[nfiles] = t;
		sizes[nfiles] = (size_t)st.st_size;
		data[nfiles] = malloc(sizes[nfiles] + 1);
		if (sizes[nfiles] && pread(fd, data[nfiles], sizes[nfiles], 0) != (ssize_t)sizes[nfiles])
			exit(2);
		close(fd);
		nfiles++;
	}
}

int main(int argc, char **argv)
{
	const char *files = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
		if (!strcmp(a, "--port"))
			port = atoi(v), i++;
		else if (!strcmp(a, "--root"))
			root = v, i++;
		else if (!strcmp(a, "--files"))
			files = v, i++;
		else if (!strcmp(a, "--conns"))
			conns = atoi(v), i++;
		else if (!strcmp(a, "--requests"))
			requests = atoi(v), i++;
		else if (!strcmp(a, "--pipeline"))
			pipeline = atoi(v), i++;
		else if (!strcmp(a, "--rcvbuf"))
			rcvbuf = atoi(v), i++;
		else if (!strcmp(a, "--reset-every"))
			reset_every = atoi(v), i++;
		else if (!strcmp(a, "--close"))
			close_each = true;
		else if (!strcmp(a, "--slow"))
			slow = true;
		else {
			fprintf(stderr, "helper-client: unknown option %s\n", a);
			return 2;
		}
	}
	if (!port || !root || !files || conns < 1 || conns > 1000 || pipeline < 1 ||
	    pipeline > 64)
		return 2;
	load(files);
	pthread_t *t = calloc((size_t)conns, sizeof(*t));
	for (int i = 0; i < conns; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(long)i))
			return 2;
	for (int i = 0; i < conns; i++)
		pthread_join(t[i], NULL);
	free(t);
	for (int i = 0; i < nfiles; i++)
		free(data[i]);
	free(list_copy);
	printf("helper-client: %ld responses ok, %ld resets, %ld failures\n",
	       atomic_load(&ok_count), atomic_load(&reset_count), atomic_load(&fail_count));
	return atomic_load(&fail_count) ? 1 : 0;
}
