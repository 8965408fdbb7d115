/* SPDX-License-Identifier: MIT */
/* Helpers shared by the batch tests: sockets, files, servers under the preload. */
#ifndef BYPASS_TEST_BATCH_UTIL_H
#define BYPASS_TEST_BATCH_UTIL_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "core/testutil.h"

/* 127.0.0.1:port. */
static inline struct sockaddr_in loopback_addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return a;
}

/* A socket of type (SOCK_STREAM: listening) bound to 127.0.0.1 at a port
 * the kernel picks, returned in *port. */
static inline int loopback_socket(int type, int *port)
{
	int l = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	struct sockaddr_in a = loopback_addr(0);
	socklen_t al = sizeof(a);
	CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0);
	if (type == SOCK_STREAM)
		CHECK(listen(l, 16) == 0);
	CHECK(getsockname(l, (struct sockaddr *)&a, &al) == 0);
	*port = ntohs(a.sin_port);
	return l;
}

/* A connected TCP pair on 127.0.0.1 (port picked by the kernel). */
static inline void tcp_pair(int sv[2])
{
	int port;
	int l = loopback_socket(SOCK_STREAM, &port);
	struct sockaddr_in a = loopback_addr(port);
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

/* Write exactly len bytes (unless the descriptor fails); returns the count
 * written. */
static inline size_t write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
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

static inline void rm_tree(const char *dir)
{
	if (!dir || !*dir || strncmp(dir, "/tmp/bypass-batch-", 18))
		return;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	int r = system(cmd);
	(void)r;
}

/*
 * A fresh temporary directory, removed when the test process ends however
 * it ends (a failed check exits at once): a janitor process waits for the
 * end of a pipe only the test holds (close-on-exec, so servers it starts do
 * not hold it), then removes the directory.
 */
static inline void make_tmpdir(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/tmp/bypass-batch-%s-XXXXXX", tag);
	CHECK(mkdtemp(buf) != NULL);
	int p[2];
	CHECK(pipe2(p, O_CLOEXEC) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		setsid();
		char c;
		for (;;) {
			ssize_t n = read(p[0], &c, 1);
			if (n == 0 || (n < 0 && errno != EINTR))
				break;
		}
		rm_tree(buf);
		_exit(0);
	}
	close(p[0]);
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

/*
 * Tests that load the preload skip under ThreadSanitizer: its runtime calls
 * sigaction while it starts, which resolves to the preload's (instrumented)
 * wrapper before the runtime is ready.  tests/batch/threads runs the
 * engine's threaded paths under TSan without the preload.
 */
#define SKIP_UNDER_TSAN()                                                      \
	do {                                                                   \
		if (TEST_TSAN)                                                 \
			SKIP("LD_PRELOAD of a ThreadSanitizer build does not work " \
			     "(tests/batch/threads covers the threads)");      \
	} while (0)

/* The preload library in the build tree. */
static inline const char *preload_path(void)
{
	static char buf[1024];
	const char *b = getenv("BYPASS_BUILD");
	snprintf(buf, sizeof(buf), "%s/libbypass-batch.so", b && *b ? b : ".");
	return buf;
}

/* ------------------------------------------------ servers under the preload */

/*
 * LD_PRELOAD for a child: the preload, after the sanitizer runtime when this
 * test is a sanitizer build (the runtime must come first).
 */
static inline const char *preload_env(void)
{
	static char buf[2048];
	const char *rt = test_sanitizer_rt();
	snprintf(buf, sizeof(buf), "%s%s%s", rt, *rt ? ":" : "", preload_path());
	return buf;
}

/*
 * Run this test program again under the preload (once: the marker variable
 * tells the second run), after the checks every preload test makes: a time
 * limit, no ThreadSanitizer, the library built.  Returns in the preloaded run.
 */
static inline void preload_reexec(char **argv, unsigned timeout_sec)
{
	test_timeout(timeout_sec);
	SKIP_UNDER_TSAN();
	if (getenv("BT_TEST_PRELOADED"))
		return;
	if (access(preload_path(), R_OK))
		SKIP("no %s", preload_path());
	setenv("LD_PRELOAD", preload_env(), 1);
	setenv("BT_TEST_PRELOADED", "1", 1);
	setenv("BYPASS_BATCH", "1", 1);
	/* No age limit on a segment (unless the test sets one): what a test
	 * checks must not depend on how fast it runs (a slow machine, or an
	 * emulated one, takes over the default 1 ms between two calls). */
	setenv("BYPASS_BATCH_MAX_DELAY_US", "0", 0);
	execv("/proc/self/exe", argv);
	TEST_FAIL("re-exec: %s", strerror(errno));
}

struct server {
	pid_t pid;
	int port;
	char dir[256];
};

/*
 * Start helper-server in dir (its root), under the preload unless env holds
 * "BYPASS_BATCH=0"-style overrides only; env is a NULL-terminated list of
 * K=V, args a NULL-terminated list of extra options.
 */
static inline void server_start(struct server *s, const char *argv0, const char *dir,
				const char *const *args, const char *const *env)
{
	char bin[1024], portf[400], out[400], stats[400];
	test_helper_path(bin, sizeof(bin), argv0, "batch", "helper-server");
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	snprintf(portf, sizeof(portf), "%s/port", dir);
	snprintf(out, sizeof(out), "%s/server.out", dir);
	snprintf(stats, sizeof(stats), "%s/stats", dir);
	unlink(portf);
	unlink(stats);
	s->pid = fork();
	CHECK(s->pid >= 0);
	if (s->pid == 0) {
		/* If the test dies (a failed check exits at once), so does it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		const char *av[40] = { bin, "--root", dir, "--port-file", portf };
		int n = 5;
		for (int i = 0; args && args[i] && n < 38; i++)
			av[n++] = args[i];
		av[n] = NULL;
		setenv("LD_PRELOAD", preload_env(), 1);
		setenv("BYPASS_BATCH_STATS", stats, 1);
		setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			close(fd);
		}
		execv(bin, (char *const *)av);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(portf, "r");
		if (f) {
			int ok = fscanf(f, "%d", &s->port);
			fclose(f);
			if (ok == 1)
				return;
		}
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid)
			TEST_FAIL("helper-server exited early (status %d)", st);
		test_sleep_ms(10);
	}
	kill(s->pid, SIGKILL);
	TEST_FAIL("helper-server did not start");
}

/* Stop it; returns the responses it served (all workers), fails on a bad exit. */
static inline long server_stop(struct server *s, long *errors)
{
	kill(s->pid, SIGTERM);
	int st;
	CHECK(waitpid(s->pid, &st, 0) == s->pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("helper-server ended badly (status %#x)", st);
	char out[400], line[256];
	snprintf(out, sizeof(out), "%s/server.out", s->dir);
	FILE *f = fopen(out, "r");
	CHECK(f);
	long served = 0, errs = 0, a, b;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "served %ld errors %ld", &a, &b) == 2) {
			served += a;
			errs += b;
		}
	fclose(f);
	if (errors)
		*errors = errs;
	return served;
}

/* Sum of one counter over the processes that wrote the stats file. */
static inline long stats_sum(const char *dir, const char *key)
{
	char path[400], line[1024], pat[64];
	snprintf(path, sizeof(path), "%s/stats", dir);
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long sum = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, pat);
		if (p)
			sum += atol(p + strlen(pat));
	}
	fclose(f);
	return sum;
}

/* Run helper-client against port with the NULL-terminated extra args. */
static inline int run_client(const char *argv0, int port, const char *root,
			     const char *const *args)
{
	char bin[1024], ps[16];
	test_helper_path(bin, sizeof(bin), argv0, "batch", "helper-client");
	snprintf(ps, sizeof(ps), "%d", port);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		const char *av[40] = { bin, "--port", ps, "--root", root };
		int n = 5;
		for (int i = 0; args && args[i] && n < 38; i++)
			av[n++] = args[i];
		av[n] = NULL;
		unsetenv("LD_PRELOAD");
		execv(bin, (char *const *)av);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The start of every test of the helper server under the preload: a time
 * limit, skips, a temporary directory with the test files. */
static inline void make_files(const char *dir, char *list, size_t len);
static inline void preload_setup(const char *tag, char *dir, size_t dlen, char *files,
				 size_t flen)
{
	test_timeout(240);
	SKIP_UNDER_TSAN();
	if (access(preload_path(), R_OK))
		SKIP("no %s", preload_path());
	make_tmpdir(dir, dlen, tag);
	make_files(dir, files, flen);
}

/* The test files: 0 B to several MB, named by size. */
static const size_t test_sizes[] = { 0, 1, 100, 1000, 4096, 20480, 65535, 65536,
				     65537, 200000, 1 << 20, 3000000 };
static inline void make_files(const char *dir, char *list, size_t len)
{
	list[0] = 0;
	for (size_t i = 0; i < sizeof(test_sizes) / sizeof(test_sizes[0]); i++) {
		char path[400], name[32];
		snprintf(name, sizeof(name), "f%zu", test_sizes[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		write_pat_file(path, test_sizes[i], i + 11);
		snprintf(list + strlen(list), len - strlen(list), "%s%s", i ? "," : "", name);
	}
}

/* A test made of cases: the one named argv[1], or every one. */
struct test_case {
	const char *name;
	void (*fn)(int arg);
	int arg;
};

static inline void run_named_cases(const struct test_case *c, size_t n, int argc, char **argv)
{
	bool any = false;
	for (size_t i = 0; i < n; i++)
		if (argc < 2 || !strcmp(argv[1], c[i].name)) {
			c[i].fn(c[i].arg);
			any = true;
		}
	if (!any)
		TEST_FAIL("no case %s", argv[1]);
}

#endif
