/* SPDX-License-Identifier: MIT */
/*
 * Logging and the version string.  BYPASS_LOG is the one variable the
 * library reads: the default level, until bypass_set_log_level sets one.
 */
#include "core/internal.h"
#include "core/syscall.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static _Atomic int log_level = -1;

static int parse_level(const char *s)
{
	static const char *names[] = { "none", "error", "warn", "info", "debug" };
	if (!s || !*s)
		return BYPASS_LOG_NONE;
	for (int i = 0; i < 5; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 0)
		return BYPASS_LOG_NONE;
	return v > BYPASS_LOG_DEBUG ? BYPASS_LOG_DEBUG : (int)v;
}

int bp_log_level(void)
{
	int l = atomic_load_explicit(&log_level, memory_order_relaxed);
	if (bp_likely(l >= 0))
		return l;
	l = parse_level(getenv("BYPASS_LOG"));
	atomic_store(&log_level, l);
	return l;
}

int bypass_set_log_level(int level)
{
	int old = bp_log_level();
	if (level < BYPASS_LOG_NONE)
		level = BYPASS_LOG_NONE;
	if (level > BYPASS_LOG_DEBUG)
		level = BYPASS_LOG_DEBUG;
	atomic_store(&log_level, level);
	return old;
}

void bp_log_emit(int level, const char *fmt, ...)
{
	static const char *tag[] = { "", "error", "warn", "info", "debug" };
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "[bypass %d %s] ", (int)bp_pid(),
			 tag[level < 0 || level > 4 ? 0 : level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	buf[len++] = '\n';
	/* One write, so lines from several processes do not interleave. */
	ssize_t r = bp_sys_write(STDERR_FILENO, buf, len);
	(void)r;
}

const char *bypass_version(void)
{
#define BP_STR2(x) #x
#define BP_STR(x) BP_STR2(x)
	return BP_STR(BYPASS_VERSION_MAJOR) "." BP_STR(BYPASS_VERSION_MINOR);
}
