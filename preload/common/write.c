/* SPDX-License-Identifier: MIT */
/*
 * What a preload writes of its own (scaffold.h): a line on stderr, the
 * line of counters at exit; and its fork handler's registration.  Through
 * core/syscall.h: when two preloads are loaded together, neither's output
 * passes through the other's wrappers.
 */
#include "common/scaffold.h"
#include "core/syscall.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void bp_pl_complain(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	ssize_t w = bp_sys_write(STDERR_FILENO, buf, (size_t)n);
	(void)w;
}

/* ------------------------------------------------------------ the line */

/* Room kept for the closing "}\n". */
#define CLOSE 2

static void vput(struct bp_pl_line *l, const char *fmt, va_list ap)
{
	size_t room = sizeof(l->buf) - CLOSE - l->n;
	int k = vsnprintf(l->buf + l->n, room + 1, fmt, ap);
	if (k > 0 && (size_t)k <= room)
		l->n += (size_t)k;
	l->buf[l->n] = 0; /* a piece that did not fit is left out whole */
}

void bp_pl_line_put(struct bp_pl_line *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vput(l, fmt, ap);
	va_end(ap);
}

void bp_pl_line_key(struct bp_pl_line *l, const char *key)
{
	bp_pl_line_put(l, l->spaced ? ", \"%s\": " : ",\"%s\":", key);
}

void bp_pl_line_u64(struct bp_pl_line *l, const char *key, uint64_t v)
{
	bp_pl_line_put(l, l->spaced ? ", \"%s\": %llu" : ",\"%s\":%llu", key,
		       (unsigned long long)v);
}

void bp_pl_line_str(struct bp_pl_line *l, const char *key, const char *s)
{
	bp_pl_line_put(l, l->spaced ? ", \"%s\": \"%s\"" : ",\"%s\":\"%s\"", key, s);
}

void bp_pl_line_open(struct bp_pl_line *l, const char *module, bool spaced)
{
	l->n = 0;
	l->spaced = spaced;
	/* the pid from the kernel: right in any child, however it was made */
	bp_pl_line_put(l, spaced ? "{\"module\": \"%s\", \"pid\": %d" : "{\"module\":\"%s\",\"pid\":%d",
		       module, (int)bp_sys_getpid());
}

static void append(const char *path, const char *line, size_t n)
{
	int fd = bp_sys_openat(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	bp_enter();
	ssize_t w = bp_sys_write(fd, line, n);
	bp_leave();
	(void)w;
	bp_sys_close(fd);
}

void bp_pl_line_write(struct bp_pl_line *l, const char *path, const char *also)
{
	l->buf[l->n++] = '}';
	l->buf[l->n++] = '\n';
	if (path && *path)
		append(path, l->buf, l->n);
	if (also && *also && (!path || strcmp(path, also)))
		append(also, l->buf, l->n);
}

/* ------------------------------------------------------------ fork */

void bp_pl_on_fork(void (*child)(void))
{
	pthread_atfork(NULL, NULL, child);
}
