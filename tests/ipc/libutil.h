/* SPDX-License-Identifier: MIT */
/* Helpers for the library-mode tests (tests/ipc/lib-*.c). */
#ifndef BYPASS_TEST_IPC_LIBUTIL_H
#define BYPASS_TEST_IPC_LIBUTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "ipc/lib.h"
#include "testsvc.h"
#include "util.h"
/* examples/ipc-kv/kv.h, the key-value example's protocol (the path comes
 * from tests/ipc/extra.cmake) */
#include BYPASS_IPC_KV_H
#include <poll.h>

/* A private copy of a built service object, mode 0755 (the build's umask
 * may have made it group-writable, which library mode refuses). */
static char test_lib_dir[64];
static pid_t test_lib_owner;

static void test_lib_cleanup(void)
{
	if (!test_lib_dir[0] || getpid() != test_lib_owner)
		return;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", test_lib_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", test_lib_dir);
}

/* Copies left by tests that failed (a failing test exits without its
 * atexit handlers): those of processes that no longer exist. */
static void test_lib_reap_stale(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int pid;
		char rest;
		if (sscanf(e->d_name, "bypass-libtest-%d%c", &pid, &rest) != 1 || pid <= 0 ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf /tmp/bypass-libtest-%d", pid);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove /tmp/bypass-libtest-%d\n", pid);
	}
	if (d)
		closedir(d);
}

/* The object file in the build tree's directory dir ("tests/ipc",
 * "examples"); returns the copy. */
static inline const char *test_lib_so(const char *dir, const char *file, char *out, size_t n)
{
	/* The build tree: $BYPASS_BUILD (CTest), else three levels above this
	 * program (build/tests/ipc/NAME). */
	static char exe[512];
	const char *b = getenv("BYPASS_BUILD");
	if (!b || !*b) {
		ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[k > 0 ? k : 0] = 0;
		for (int up = 0; up < 3; up++) {
			char *sl = strrchr(exe, '/');
			if (sl)
				*sl = 0;
		}
		b = exe;
	}
	if (!test_lib_dir[0]) {
		test_lib_reap_stale();
		snprintf(test_lib_dir, sizeof(test_lib_dir), "/tmp/bypass-libtest-%d", (int)getpid());
		if (mkdir(test_lib_dir, 0755) && errno != EEXIST)
			TEST_FAIL("mkdir %s: %s", test_lib_dir, strerror(errno));
		test_lib_owner = getpid();
		atexit(test_lib_cleanup);
	}
	char src[1024];
	snprintf(src, sizeof(src), "%.500s/%.200s/%.200s", b, dir, file);
	snprintf(out, n, "%s/%s", test_lib_dir, file);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		TEST_FAIL("%s: %s (build it first)", src, strerror(errno));
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0)
		TEST_FAIL("%s: %s", out, strerror(errno));
	char buf[65536];
	ssize_t k;
	while ((k = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)k) != k)
			TEST_FAIL("copy %s: %s", out, strerror(errno));
	fchmod(fd, 0755);
	close(fd);
	close(in);
	return out;
}

/*
 * The tests' server, in a child process: listen, then accept both modes,
 * serve message-mode calls and forward every posted event to evout (if
 * >= 0), until killed.  Returns its pid once it listens; *err gets
 * listen's result (the child is then reaped and 0 returned).
 */
static void test_lib_loop(bypass_ipc_lib_service *svc, int evout)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, bypass_ipc_lib_service_fd(svc), &ev))
		_exit(3);
	for (;;) {
		struct epoll_event evs[16];
		int n = bypass_ipc_epoll_wait(ep, evs, 16, BYPASS_FOREVER);
		for (int i = 0; i < n; i++) {
			bypass_ipc_conn *c = evs[i].data.ptr;
			if (!c) {
				int r;
				while ((r = bypass_ipc_lib_accept(svc, &c, 0)) >= 0) {
					struct epoll_event ce = { .events = EPOLLIN, .data.ptr = c };
					if (c && bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce))
						bypass_ipc_close(c);
				}
				do {
					struct bypass_ipc_event e;
					while (bypass_ipc_lib_event(svc, &e) == 0)
						if (evout >= 0 && write(evout, &e, sizeof(e)) != sizeof(e))
							_exit(4);
				} while (bypass_ipc_lib_arm(svc) == 1);
				continue;
			}
			int r;
			while ((r = bypass_ipc_lib_serve(svc, c, 0)) == 1)
				;
			if (r != -EAGAIN) {
				bypass_ipc_epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL);
				bypass_ipc_close(c);
			}
		}
	}
}

static inline pid_t test_lib_server(const char *name, const char *so,
				    const struct bypass_ipc_lib_opts *o, int evout, int *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		TEST_FAIL("pipe: %s", strerror(errno));
	pid_t parent = getpid(), pid = fork();
	if (pid < 0)
		TEST_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		/* Dies with the test (a failing test must not leave it behind,
		 * nor keep CTest waiting on its output). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(5);
		close(p[0]);
		bypass_ipc_lib_service *svc = NULL;
		int r = bypass_ipc_lib_listen(name, so, o, &svc);
		if (write(p[1], &r, sizeof(r)) != sizeof(r) || r)
			_exit(r ? 0 : 2);
		close(p[1]);
		test_lib_loop(svc, evout);
		_exit(0);
	}
	close(p[1]);
	int r = -EIO;
	if (read(p[0], &r, sizeof(r)) != sizeof(r))
		TEST_FAIL("the server died before listening");
	close(p[0]);
	*err = r;
	if (r) {
		wait_child(pid);
		return 0;
	}
	return pid;
}

/* Stop a server started above. */
static inline void test_lib_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* Open within a few seconds, retrying while the server is not there. */
static inline bypass_ipc_lib *test_lib_open(const char *name, const struct bypass_ipc_lib_opts *o)
{
	bypass_ipc_lib *l = NULL;
	int r = bypass_ipc_lib_open(name, o, &l);
	if (r)
		TEST_FAIL("bypass_ipc_lib_open %s: %s", name, strerror(-r));
	return l;
}

static inline int test_lib_mode(bypass_ipc_lib *l)
{
	struct bypass_ipc_lib_stats st;
	if (bypass_ipc_lib_stats(l, &st))
		TEST_FAIL("stats");
	return st.mode;
}

/* The control block of the service l has open in library mode (tests
 * write into it as a stray client would). */
static inline struct lib_ctl *test_lib_ctl(bypass_ipc_lib *l)
{
	struct bypass_ipc_lib_stats st;
	if (bypass_ipc_lib_stats(l, &st) || st.mode != BYPASS_IPC_LIB_MODE_LIBRARY)
		TEST_FAIL("not a library-mode handle");
	long ps = sysconf(_SC_PAGESIZE);
	for (int k = 1; k < 16; k++) {
		struct lib_ctl *c = (struct lib_ctl *)(uintptr_t)(st.arena_base + (uint64_t)k * ps);
		if (c->magic == LIB_MAGIC)
			return c;
	}
	TEST_FAIL("no control block in the arena");
}

/* TS_ADD: counter += v; the new value, or -errno. */
static inline int64_t test_lib_add(bypass_ipc_lib *l, uint64_t v)
{
	uint64_t out = 0;
	int r = bypass_ipc_lib_call(l, TS_ADD, &v, sizeof(v), &out, sizeof(out));
	if (r < 0)
		return r;
	if (r != sizeof(out))
		TEST_FAIL("TS_ADD answered %d bytes", r);
	return (int64_t)out;
}

#endif
