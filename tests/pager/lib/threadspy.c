/* SPDX-License-Identifier: MIT */
/*
 * For tests/pager/preload-heap-engage: loaded first in LD_PRELOAD, before
 * the pager preload, it wraps mmap and pthread_create.  Every mmap call of
 * the process (jemalloc's included) passes through it on its way to the
 * preload's, so a pthread_create made while an mmap is under way on the
 * same thread is a thread the library started from inside the allocator:
 * counted.  At exit it writes "threads N inside-mmap M" to the file named
 * by BYPASS_TEST_SPY_FILE.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static __thread int in_mmap;
static _Atomic unsigned long threads, inside;

void *mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	static void *(*next)(void *, size_t, int, int, int, off_t);
	if (!next)
		next = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	in_mmap++;
	void *r = next(a, l, p, f, fd, o);
	in_mmap--;
	return r;
}

int pthread_create(pthread_t *t, const pthread_attr_t *at, void *(*fn)(void *), void *arg)
{
	static int (*next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!next)
		next = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				void *))dlsym(RTLD_NEXT, "pthread_create");
	threads++;
	if (in_mmap)
		inside++;
	return next(t, at, fn, arg);
}

__attribute__((destructor)) static void spy_report(void)
{
	const char *f = getenv("BYPASS_TEST_SPY_FILE");
	if (!f)
		return;
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "threads %lu inside-mmap %lu\n",
			 (unsigned long)threads, (unsigned long)inside);
	int fd = open(f, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		if (write(fd, buf, (size_t)n) != n)
			n = -1;
		close(fd);
	}
}
