/* SPDX-License-Identifier: MIT */
/* Helpers shared by the batch tests: sockets, files, servers under the preload. */
#ifndef BYPASS_TEST_BATCH_UTIL_H
#define BYPASS_TEST_BATCH_UTIL_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "core/testutil.h"

/* A connected TCP pair on 127.0.0.1 (port picked by the kernel). */
static inline void tcp_pair(int sv[2])
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(l, 1) == 0);
	CHECK(getsockname(l, (struct sockaddr *)&a, &al) == 0);
	sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(sv[0] >= 0);
	CHECK(connect(sv[0], (struct sockaddr *)&a, sizeof(a)) == 0);
	sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(sv[1] >= 0);
	close(l);
}

/* Read exactly len bytes (or until EOF); returns the count read. */
static inline size_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* Deterministic pattern byte for position i of stream s. */
static inline unsigned char pat(uint64_t s, uint64_t i)
{
	uint64_t x = (s + 1) * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (unsigned char)(x ^ (x >> 17));
}

static inline void fill_pat(unsigned char *b, size_t len, uint64_t s, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(s, off + i);
}

/* A fresh temporary directory (removed by rm_tree). */
static inline void make_tmpdir(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/tmp/bypass-batch-%s-XXXXXX", tag);
	CHECK(mkdtemp(buf) != NULL);
}

static inline void rm_tree(const char *dir)
{
	if (!dir || !*dir || strncmp(dir, "/tmp/bypass-batch-", 18))
		return;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	int r = system(cmd);
	(void)r;
}

/* Write a file of len pattern bytes (stream s). */
static inline void write_pat_file(const char *path, size_t len, uint64_t s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	unsigned char buf[65536];
	for (size_t off = 0; off < len;) {
		size_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		fill_pat(buf, n, s, off);
		CHECK(write(fd, buf, n) == (ssize_t)n);
		off += n;
	}
	close(fd);
}

/* The preload library in the build tree. */
static inline const char *preload_path(void)
{
	static char buf[1024];
	const char *b = getenv("BYPASS_BUILD");
	snprintf(buf, sizeof(buf), "%s/libbypass-batch.so", b && *b ? b : ".");
	return buf;
}

#endif
