/* SPDX-License-Identifier: MIT */
/*
 * The library's own threads on stacks of their own (internal.h, "threads").
 */
#include "core/internal.h"
#include "core/syscall.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* As glibc's default for a process with the usual 8 MiB stack limit:
 * address space only, touched as used (the fault path of the pager's
 * handlers, LZ4 and the sanitizers' frames fit with room). */
#define BP_THREAD_STACK (8u << 20)

static void *bp_thread_main(void *v)
{
	struct bp_thread *t = v;
	void *(*fn)(void *) = t->fn;
	void *arg = t->arg;
	atomic_store(&t->started, 1);
	bp_futex_wake(&t->started, 1, false);
	return fn(arg);
}

int bp_thread_start(struct bp_thread *t, void *(*fn)(void *), void *arg)
{
	size_t guard = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = BP_THREAD_STACK + guard;
	void *m = bp_sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	if (bp_sys_mprotect(m, guard, PROT_NONE) != 0) {
		int e = -errno;
		bp_sys_munmap(m, len);
		return e;
	}
	pthread_attr_t at;
	int e = pthread_attr_init(&at);
	if (!e)
		e = pthread_attr_setstack(&at, (char *)m + guard, BP_THREAD_STACK);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	t->fn = fn;
	t->arg = arg;
	atomic_store(&t->started, 0);
	if (!e)
		e = pthread_create(&t->id, &at, bp_thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (e) {
		bp_sys_munmap(m, len);
		return -e;
	}
	t->stack = m;
	t->len = len;
	t->live = true;
	while (!atomic_load(&t->started))
		bp_futex_wait(&t->started, 0, -1, false);
	return 0;
}

void bp_thread_join(struct bp_thread *t)
{
	if (!t->live)
		return;
	pthread_join(t->id, NULL);
	bp_thread_forget(t);
}

void bp_thread_forget(struct bp_thread *t)
{
	if (t->stack)
		bp_sys_munmap(t->stack, t->len);
	memset(t, 0, sizeof(*t));
}
