/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the tests of every module. */
#ifndef BYPASS_TEST_CORE_TESTUTIL_H
#define BYPASS_TEST_CORE_TESTUTIL_H

#include "core/internal.h" /* BP_TSAN */

#include <dirent.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Under ThreadSanitizer everything is ~10x slower: scale iteration counts. */
#define TEST_TSAN BP_TSAN

static inline uint64_t test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void test_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* Number of descriptors open in this process (to spot leaks). */
static inline int test_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/*
 * The descriptors of this process whose /proc/self/fd link names what
 * ("eventpoll", "io_uring", ...): their numbers into out (at most max; out
 * may be NULL with max 0) and how many there are, or -1 if /proc/self/fd
 * cannot be read.
 */
static inline int test_fds_linked(const char *what, int *out, int max)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300], link[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = 0;
		if (!strstr(link, what))
			continue;
		if (n < max)
			out[n] = atoi(e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/*
 * The path of a helper program built into build/tests/<module>/: found
 * through BYPASS_BUILD (set by CTest), else beside argv[0].
 */
static inline void test_helper_path(char *buf, size_t len, const char *argv0,
				    const char *module, const char *name)
{
	const char *b = getenv("BYPASS_BUILD");
	if (b && *b) {
		snprintf(buf, len, "%s/tests/%s/%s", b, module, name);
		if (access(buf, X_OK) == 0)
			return;
	}
	const char *slash = strrchr(argv0, '/');
	if (slash)
		snprintf(buf, len, "%.*s/%s", (int)(slash - argv0), argv0, name);
	else
		snprintf(buf, len, "./%s", name);
}

/*
 * The sanitizer runtime this test was built with, as a path ("" if none):
 * a child run under an LD_PRELOAD library needs it first in LD_PRELOAD.
 */
static inline const char *test_sanitizer_rt(void)
{
	static char rt[1024];
	static int done;
	/* Marked done only once rt is filled: threads that ask at once each
	 * read the maps (and write the same bytes); none sees a half answer.
	 * (It set done first: a second thread got "" while the first was still
	 * reading, and preload-threads took malloc's path for one call and
	 * mmap's for the next.) */
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return rt;
	FILE *m = fopen("/proc/self/maps", "r");
	char line[1400];
	while (m && fgets(line, sizeof(line), m)) {
		char *p = strstr(line, "/");
		if (p && (strstr(p, "libasan.so") || strstr(p, "libtsan.so"))) {
			p[strcspn(p, "\n")] = 0;
			snprintf(rt, sizeof(rt), "%s", p);
			break;
		}
	}
	if (m)
		fclose(m);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	return rt;
}

/*
 * Make the system calls nrs[0..n) (n at most 8) fail with err for this
 * process and everything it execs, with a seccomp filter (as container
 * runtimes refuse io_uring_setup).  Returns 0, or -errno when this machine
 * cannot filter (say why and skip).  x86-64 only; -ENOSYS elsewhere.
 */
static inline int test_seccomp_refuse(const int *nrs, unsigned n, int err)
{
#if defined(__x86_64__)
	if (n > 8)
		return -EINVAL;
	struct sock_filter f[16];
	unsigned k = 0;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (unsigned i = 0; i < n; i++) /* a match jumps to the ERRNO return */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned)nrs[i], (unsigned char)(n - i), 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA));
	struct sock_fprog prog = { .len = (unsigned short)k, .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
#else
	(void)nrs; (void)n; (void)err;
	return -ENOSYS;
#endif
}

#endif
