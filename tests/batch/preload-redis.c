/* SPDX-License-Identifier: MIT */
/*
 * preload-redis: redis-server (Debian's package) under libbypass-batch.so,
 * driven by 8 clients at once that check every reply byte for byte: SET,
 * GET, APPEND, INCR and DEL of binary values from 0 B to 200 KB (above the
 * preload's copy limit too), one at a time and in pipelines of 16.  The
 * server must exit cleanly, and its counters must show the preload queued
 * its replies.  Redis's own test suite (from Debian's source package) runs
 * in make realworld (tools/realworld/redis.sh), outside make check.  Skips
 * (with the reason) where redis-server is not installed (tools/deps.sh
 * installs it).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "batch/util.h"

#define REDIS "/usr/bin/redis-server"
#define CLIENTS 8
#define OPS 160

static int port;

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		CHECK(b->p != NULL);
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put(b, tmp, (size_t)n);
}

/* A command: *N\r\n then each argument as a bulk string. */
static void cmd(struct buf *b, int argc, const char *const *argv, const size_t *lens)
{
	putf(b, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++) {
		size_t n = lens ? lens[i] : strlen(argv[i]);
		putf(b, "$%zu\r\n", n);
		put(b, argv[i], n);
		put(b, "\r\n", 2);
	}
}

static void bulk(struct buf *b, const char *v, size_t n)
{
	putf(b, "$%zu\r\n", n);
	put(b, v, n);
	put(b, "\r\n", 2);
}

static int test_free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int p = 0;
	if (s >= 0 && !bind(s, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(s, (struct sockaddr *)&a, &al))
		p = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return p;
}

static int connect_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
		return s;
	if (s >= 0)
		close(s);
	return -1;
}

static size_t value_len(unsigned x)
{
	static const size_t sizes[] = { 0, 1, 3, 100, 1000, 4096, 20000, 65535, 70000, 200000 };
	return sizes[x % (sizeof(sizes) / sizeof(sizes[0]))];
}

static void fill(char *v, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		v[i] = (char)(x >> 16);
	}
}

static void *client(void *arg)
{
	long id = (long)arg;
	int s = connect_port();
	CHECK(s >= 0);
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	char *v = malloc(2 * 200000 + 16), *got = NULL;
	size_t gotcap = 0;
	long counter = 0;
	for (int op = 0; op < OPS;) {
		int depth = (op / 16) % 2 ? 16 : 1;
		struct buf req = { 0 }, want = { 0 };
		for (int k = 0; k < depth && op < OPS; k++, op++) {
			char key[64], ckey[64];
			snprintf(key, sizeof(key), "c%ld:k%d", id, op);
			snprintf(ckey, sizeof(ckey), "c%ld:counter", id);
			size_t n = value_len((unsigned)(op * 7 + id));
			fill(v, n, (unsigned)(op * 131 + id));
			const char *set[] = { "SET", key, v };
			size_t setl[] = { 3, strlen(key), n };
			cmd(&req, 3, set, setl);
			put(&want, "+OK\r\n", 5);
			const char *get[] = { "GET", key };
			cmd(&req, 2, get, NULL);
			bulk(&want, v, n);
			if (op % 3 == 0) {
				/* APPEND doubles it: the length, then the value twice. */
				const char *ap[] = { "APPEND", key, v };
				size_t apl[] = { 6, strlen(key), n };
				cmd(&req, 3, ap, apl);
				putf(&want, ":%zu\r\n", 2 * n);
				memcpy(v + n, v, n);
				cmd(&req, 2, get, NULL);
				bulk(&want, v, 2 * n);
			}
			const char *inc[] = { "INCR", ckey };
			cmd(&req, 2, inc, NULL);
			putf(&want, ":%ld\r\n", ++counter);
			const char *del[] = { "DEL", key };
			cmd(&req, 2, del, NULL);
			put(&want, ":1\r\n", 4);
			cmd(&req, 2, get, NULL);
			put(&want, "$-1\r\n", 5);
		}
		CHECK_EQ(write_full(s, req.p, req.len), req.len);
		if (gotcap < want.len) {
			gotcap = want.len;
			got = realloc(got, gotcap);
		}
		CHECK_EQ(read_full(s, got, want.len), want.len);
		if (memcmp(got, want.p, want.len)) {
			size_t at = 0;
			while (got[at] == want.p[at])
				at++;
			TEST_FAIL("client %ld, ops before %d: reply differs at byte %zu of %zu",
				  id, op, at, want.len);
		}
		free(req.p);
		free(want.p);
	}
	close(s);
	free(v);
	free(got);
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	char dir[256], files[1024];
	preload_setup("redis", dir, sizeof(dir), files, sizeof(files));
	if (access(REDIS, X_OK))
		SKIP("%s is not installed (tools/deps.sh installs redis-server)", REDIS);
	char stats[400], out[400], ps[16];
	snprintf(stats, sizeof(stats), "%s/stats", dir);
	snprintf(out, sizeof(out), "%s/redis.out", dir);
	pid_t pid = -1;
	for (int tries = 0; tries < 5 && pid < 0; tries++) {
		port = test_free_port();
		snprintf(ps, sizeof(ps), "%d", port);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			setenv("LD_PRELOAD", preload_env(), 1);
			setenv("BYPASS_STATS_FILE", stats, 1);
			setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
			execl(REDIS, "redis-server", "--port", ps, "--bind", "127.0.0.1", "--save",
			      "", "--appendonly", "no", "--daemonize", "no", "--dir", dir,
			      "--protected-mode", "no", (char *)NULL);
			_exit(127);
		}
		int up = 0;
		for (int i = 0; i < 500 && !up; i++) {
			int s = connect_port();
			if (s >= 0) {
				close(s);
				up = 1;
				break;
			}
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid) {
				pid = -1;
				break;
			}
			test_sleep_ms(10);
		}
		if (!up && pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			pid = -1;
		}
	}
	if (pid < 0)
		TEST_FAIL("redis-server did not start (see %s)", out);
	pthread_t t[CLIENTS];
	for (long i = 0; i < CLIENTS; i++)
		CHECK(pthread_create(&t[i], NULL, client, (void *)i) == 0);
	for (int i = 0; i < CLIENTS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	kill(pid, SIGTERM);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("redis-server ended badly (status %#x, see %s)", st, out);
	long deferred = stats_sum(dir, "deferred"), merged = stats_sum(dir, "merged_waits");
	TEST_LOG("%d clients x %d checked operations; the preload queued %ld calls, "
		 "%ld merged waits", CLIENTS, OPS, deferred, merged);
	CHECK(deferred > 0);
	rm_tree(dir);
	return test_pass("batch/preload-redis");
}
