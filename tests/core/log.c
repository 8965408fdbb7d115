/* SPDX-License-Identifier: MIT */
/*
 * log: the log level.  Proves BYPASS_LOG is parsed (names in any case,
 * numbers, clamped above, nonsense = none), bypass_set_log_level returns
 * the old level and clamps, the library prints nothing at level none even
 * on an error, and at level error prints one line naming the taken address
 * (bypass_arena_open's -EEXIST).  Also bypass_version().
 */
#include <bypass/core.h>
#include <fcntl.h>
#include <stdint.h>

#include "harness.h"
#include "core/testutil.h"

/* In a fresh child: BYPASS_LOG=value (NULL = unset) gives level want. */
static void parse_case(const char *value, int want)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (value)
			setenv("BYPASS_LOG", value, 1);
		else
			unsetenv("BYPASS_LOG");
		int got = bypass_set_log_level(BYPASS_LOG_NONE);
		if (got != want)
			TEST_FAIL("BYPASS_LOG=%s: level %d, want %d", value ? value : "(unset)",
				  got, want);
		_exit(0);
	}
	wait_child(pid);
}

/* What a child writes to stderr on a failing attach, at the given level. */
static void capture(int level, char *out, size_t len)
{
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		bypass_set_log_level(level);
		bypass_arena *a, *b;
		CHECK_ERR(bypass_arena_create(NULL, &a), 0);
		/* Logs the address of the taken range (at level error). */
		int saved = dup(2);
		dup2(p[1], 2);
		int r = bypass_arena_open(bypass_arena_fd(a), &b);
		dup2(saved, 2);
		CHECK_ERR(r, -EEXIST);
		/* Tell the parent the address: after the log, on the pipe. */
		char tag[64];
		int n = snprintf(tag, sizeof(tag), "@%#llx",
				 (unsigned long long)(uintptr_t)bypass_arena_base(a));
		CHECK_EQ(write(p[1], tag, (size_t)n), n);
		CHECK_ERR(bypass_arena_close(a), 0);
		_exit(0);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < len && (r = read(p[0], out + got, len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(p[0]);
	wait_child(pid);
}

int main(void)
{
	test_timeout(30);
	CHECK(!strcmp(bypass_version(), "0.1"));

	parse_case(NULL, BYPASS_LOG_NONE);
	parse_case("", BYPASS_LOG_NONE);
	parse_case("none", BYPASS_LOG_NONE);
	parse_case("error", BYPASS_LOG_ERROR);
	parse_case("WARN", BYPASS_LOG_WARN);
	parse_case("Info", BYPASS_LOG_INFO);
	parse_case("debug", BYPASS_LOG_DEBUG);
	parse_case("0", BYPASS_LOG_NONE);
	parse_case("3", BYPASS_LOG_INFO);
	parse_case("9", BYPASS_LOG_DEBUG);
	parse_case("-1", BYPASS_LOG_NONE);
	parse_case("loud", BYPASS_LOG_NONE);
	parse_case("2x", BYPASS_LOG_NONE);

	/* set returns the old level; out-of-range values are clamped. */
	int first = bypass_set_log_level(BYPASS_LOG_WARN);
	CHECK(first >= BYPASS_LOG_NONE && first <= BYPASS_LOG_DEBUG);
	CHECK_EQ(bypass_set_log_level(BYPASS_LOG_INFO), BYPASS_LOG_WARN);
	CHECK_EQ(bypass_set_log_level(99), BYPASS_LOG_INFO);
	CHECK_EQ(bypass_set_log_level(-5), BYPASS_LOG_DEBUG);
	CHECK_EQ(bypass_set_log_level(BYPASS_LOG_ERROR), BYPASS_LOG_NONE);
	CHECK_EQ(bypass_set_log_level(first), BYPASS_LOG_ERROR);

	/* Silent at level none; one line with the address at level error. */
	char buf[2048];
	capture(BYPASS_LOG_NONE, buf, sizeof(buf));
	CHECK(buf[0] == '@');
	capture(BYPASS_LOG_ERROR, buf, sizeof(buf));
	char *at = strrchr(buf, '@');
	CHECK(at != NULL && at != buf);
	*at = 0;
	TEST_LOG("logged: %s", buf);
	CHECK(strstr(buf, "[bypass ") == buf);
	CHECK(strstr(buf, "error") != NULL);
	CHECK(strstr(buf, at + 1) != NULL); /* the address */
	CHECK(strchr(buf, '\n') == buf + strlen(buf) - 1); /* one line */
	return test_pass("core/log");
}
