/* SPDX-License-Identifier: MIT */
/* Process identity (cached across fork), liveness of other processes, and
 * the per-thread depth inside bypass (internal.h). */
#include "core/internal.h"
#include "core/syscall.h"

#include <pthread.h>

static _Atomic pid_t cached_pid;
_Atomic unsigned bp__fork_gen;
static __thread pid_t cached_tid;
static __thread unsigned cached_tid_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
__thread unsigned bp_inside_depth __attribute__((tls_model("initial-exec")));

static void after_fork_child(void)
{
	atomic_store(&cached_pid, bp_sys_getpid());
	atomic_fetch_add(&bp__fork_gen, 1);
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

pid_t bp_pid(void)
{
	pid_t p = atomic_load_explicit(&cached_pid, memory_order_relaxed);
	if (bp_likely(p))
		return p;
	pthread_once(&atfork_once, install_atfork);
	p = bp_sys_getpid();
	atomic_store(&cached_pid, p);
	return p;
}

unsigned bp_fork_gen(void)
{
	pthread_once(&atfork_once, install_atfork);
	return atomic_load_explicit(&bp__fork_gen, memory_order_relaxed);
}

pid_t bp_tid(void)
{
	/* After fork the child's only thread has a new tid. */
	unsigned g = bp_fork_gen();
	if (bp_unlikely(!cached_tid || cached_tid_gen != g)) {
		cached_tid = bp_sys_gettid();
		cached_tid_gen = g;
	}
	return cached_tid;
}

int bp_proc_alive(pid_t pid, int *pidfd_cache)
{
	if (pid <= 0)
		return 0;
	if (pidfd_cache && *pidfd_cache < 0) {
		int fd = bp_sys_pidfd_open(pid, 0);
		if (fd < 0 && errno == ESRCH)
			return 0;
		if (fd >= 0)
			*pidfd_cache = fd;
	}
	if (pidfd_cache && *pidfd_cache >= 0) {
		/* A pidfd polls readable once the process has exited.  A
		 * signal that lands during the poll (EINTR) says nothing about
		 * the process: ask again.  Another failure cannot tell either:
		 * kill(pid, 0) below does. */
		struct pollfd p = { .fd = *pidfd_cache, .events = POLLIN };
		int r;
		do
			r = bp_sys_poll(&p, 1, 0);
		while (r < 0 && errno == EINTR);
		if (r >= 0)
			return r == 0;
	}
	if (bp_sys_kill(pid, 0) == 0 || errno == EPERM)
		return 1;
	return 0;
}

unsigned bp_cpus_allowed(void)
{
	cpu_set_t cpus;
	if (bp_sys_sched_getaffinity(0, sizeof(cpus), &cpus) < 0)
		return 1;
	return (unsigned)CPU_COUNT(&cpus);
}
