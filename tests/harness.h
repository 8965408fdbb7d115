/* SPDX-License-Identifier: MIT */
/*
 * A small assertion harness in the spirit of the kernel's kselftest: each
 * test is a standalone program; exit 0 = pass, 1 = fail, 77 = skip.
 *
 *   CHECK(cond)             fail (with file:line and the expression) unless cond
 *   CHECK_EQ(a, b)          fail unless a == b, printing both as long long
 *   CHECK_ERR(expr, -EXXX)  fail unless expr returns that negative errno
 *   SKIP("why %d", x)       exit 77 with the reason
 *   test_timeout(sec)       the whole program fails (not hangs) after sec seconds
 *
 * Checks work in forked children too: a failing child exits 1, and
 * wait_child() turns that into a failure of the parent.
 */
#ifndef BYPASS_TEST_HARNESS_H
#define BYPASS_TEST_HARNESS_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_FAIL(fmt, ...)                                                   \
	do {                                                                  \
		fflush(stdout); /* what TEST_LOG said before, piped or not */ \
		fprintf(stderr, "FAIL %s:%d: " fmt "\n", __FILE__, __LINE__,  \
			##__VA_ARGS__);                                       \
		fflush(stderr);                                               \
		_exit(1);                                                     \
	} while (0)

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond))                                                  \
			TEST_FAIL("%s", #cond);                               \
	} while (0)

#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long _a = (long long)(a), _b = (long long)(b);           \
		if (_a != _b)                                                 \
			TEST_FAIL("%s == %s: %lld != %lld", #a, #b, _a, _b);  \
	} while (0)

#define CHECK_ERR(expr, err)                                                  \
	do {                                                                  \
		long long _r = (long long)(expr);                             \
		if (_r != (long long)(err))                                   \
			TEST_FAIL("%s: got %lld (%s), want %s", #expr, _r,    \
				  _r < 0 ? strerror((int)-_r) : "not an error", \
				  #err);                                      \
	} while (0)

#define SKIP(fmt, ...)                                                        \
	do {                                                                  \
		printf("SKIP: " fmt "\n", ##__VA_ARGS__);                     \
		exit(77);                                                     \
	} while (0)

#define TEST_LOG(fmt, ...) printf("  " fmt "\n", ##__VA_ARGS__)

static void test_alarm_(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: test timed out (a hang)\n";
	ssize_t r = write(2, m, sizeof(m) - 1);
	(void)r;
	_exit(1);
}

/* Fail instead of hanging: the whole program gets sec seconds, times
 * BYPASS_TEST_TIMEOUT_SCALE when that is a positive integer (a slower
 * machine, such as make check-kernel's emulated VM; CTest's limits scale
 * with it, tools/ctest-timeout-scale.cmake). */
static inline void test_timeout(unsigned sec)
{
	const char *s = getenv("BYPASS_TEST_TIMEOUT_SCALE");
	unsigned long k = s ? strtoul(s, NULL, 10) : 1;
	if (k >= 1 && k <= 1000)
		sec = (unsigned)(sec * k);
	signal(SIGALRM, test_alarm_);
	alarm(sec);
}

/* Wait for a child; fail unless it exited with status 0. */
static inline void wait_child(pid_t pid)
{
	int st;
	pid_t r;
	do
		r = waitpid(pid, &st, 0);
	while (r < 0 && errno == EINTR);
	if (r != pid)
		TEST_FAIL("waitpid(%d): %s", (int)pid, strerror(errno));
	if (WIFSIGNALED(st))
		TEST_FAIL("child %d killed by signal %d", (int)pid, WTERMSIG(st));
	if (WEXITSTATUS(st) == 77)
		SKIP("child skipped");
	if (WEXITSTATUS(st) != 0)
		TEST_FAIL("child %d exited with %d", (int)pid, WEXITSTATUS(st));
}

static inline int test_pass(const char *name)
{
	printf("PASS %s\n", name);
	return 0;
}

#endif
