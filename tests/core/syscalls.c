/* SPDX-License-Identifier: MIT */
/*
 * syscalls: the library's own I/O and mapping calls are system calls
 * (core/syscall.h), never the libc functions a preload replaces.  This
 * program defines write, read, close, mmap, munmap, fcntl, fstat,
 * ftruncate, memfd_create, eventfd, sendmsg and recvmsg itself, as a
 * preload would (linked statically, the library would call them): each
 * counts the calls made while the test is inside a library call.  Logging,
 * arenas (create, open, close), descriptor passing and doorbells (shared
 * page, eventfd, ring, arm, try, send, receive) must leave every count at
 * zero.  And the per-thread depth inside bypass nests.
 */
#include <bypass/bypass.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "harness.h"
#include "core/internal.h"
#include "core/syscall.h"

static int in_library;
static int caught;
static const char *first;

static void seen(const char *name)
{
	if (in_library && !caught++)
		first = name;
}

/* The stand-ins forward to the kernel. */
ssize_t write(int fd, const void *b, size_t n)
{
	seen("write");
	return syscall(SYS_write, fd, b, n);
}

ssize_t read(int fd, void *b, size_t n)
{
	seen("read");
	return syscall(SYS_read, fd, b, n);
}

int close(int fd)
{
	seen("close");
	return (int)syscall(SYS_close, fd);
}

void *mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
	seen("mmap");
	return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

int munmap(void *a, size_t len)
{
	seen("munmap");
	return (int)syscall(SYS_munmap, a, len);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);
	va_end(ap);
	seen("fcntl");
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

int fstat(int fd, struct stat *st)
{
	seen("fstat");
	return (int)syscall(SYS_fstat, fd, st);
}

int ftruncate(int fd, off_t len)
{
	seen("ftruncate");
	return (int)syscall(SYS_ftruncate, fd, len);
}

int memfd_create(const char *name, unsigned flags)
{
	seen("memfd_create");
	return (int)syscall(SYS_memfd_create, name, flags);
}

int eventfd(unsigned v, int flags)
{
	seen("eventfd");
	return (int)syscall(SYS_eventfd2, v, flags);
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	seen("sendmsg");
	return syscall(SYS_sendmsg, fd, m, flags);
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	seen("recvmsg");
	return syscall(SYS_recvmsg, fd, m, flags);
}

#define LIB(expr)                                                             \
	({                                                                    \
		in_library = 1;                                               \
		__typeof__(expr) r_ = (expr);                                 \
		in_library = 0;                                               \
		if (caught)                                                   \
			TEST_FAIL("%s called %s() (%d libc calls a preload "  \
				  "would have caught)", #expr, first, caught); \
		r_;                                                           \
	})

int main(void)
{
	test_timeout(30);
	if (BP_SYS_LIBC)
		SKIP("built with ThreadSanitizer: core/syscall.h calls libc on purpose");

	/* The depth: nested, and back to 0. */
	CHECK(!bp_inside());
	bp_enter();
	bp_enter();
	CHECK(bp_inside());
	bp_leave();
	CHECK(bp_inside());
	bp_leave();
	CHECK(!bp_inside());

	/* A log line (to a pipe instead of stderr). */
	int pf[2];
	CHECK(pipe(pf) == 0);
	int saved = dup(2);
	CHECK(saved >= 0 && dup2(pf[1], 2) == 2);
	LIB(bypass_set_log_level(BYPASS_LOG_ERROR));
	in_library = 1;
	bp_err("syscalls: a line");
	in_library = 0;
	CHECK(dup2(saved, 2) == 2);
	if (caught)
		TEST_FAIL("bp_err called %s()", first);
	syscall(SYS_close, saved);
	char buf[256];
	ssize_t n = syscall(SYS_read, pf[0], buf, sizeof(buf) - 1);
	CHECK(n > 0);
	buf[n] = 0;
	CHECK(strstr(buf, "syscalls: a line"));
	bypass_set_log_level(BYPASS_LOG_NONE);

	/* Arenas. */
	bypass_arena *a, *b;
	struct bypass_arena_opts ao = { .name = "bypass-syscalls" };
	int r = LIB(bypass_arena_create(&ao, &a));
	CHECK_ERR(r, 0);
	pid_t pid = fork(); /* opened at the creator's address: in a child */
	CHECK(pid >= 0);
	if (pid == 0) {
		int fd = dup(bypass_arena_fd(a));
		CHECK(fd >= 0);
		LIB(bypass_arena_close(a)); /* the parent's mapping, inherited */
		r = LIB(bypass_arena_open(fd, &b));
		CHECK_ERR(r, 0);
		LIB(bypass_arena_close(b));
		_exit(0);
	}
	wait_child(pid);

	/* Descriptor passing. */
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	int one = bypass_arena_fd(a), got = -1;
	unsigned ngot = 1;
	char c = 'x';
	r = LIB(bypass_send_fds(sv[0], &one, 1, &c, 1));
	CHECK_ERR(r, 1);
	r = LIB(bypass_recv_fds(sv[1], &got, &ngot, &c, 1));
	CHECK_ERR(r, 1);
	CHECK(ngot == 1 && got >= 0);
	syscall(SYS_close, got);
	LIB(bypass_arena_close(a));

#if BYPASS_WITH_NOTIFY /* the notify module is built (CMakeLists.txt) */
	/* Doorbells: the shared page, its eventfd, ring, arm, try, pass. */
	bypass_doorbell *db, *db2;
	struct bypass_notify_opts o = { .flags = BYPASS_NOTIFY_EVENTFD };
	r = LIB(bypass_notify_create(&o, &db));
	CHECK_ERR(r, 0);
	CHECK(LIB(bypass_notify_fd(db)) >= 0);
	CHECK_ERR(LIB(bypass_notify_arm(db)), 0);
	CHECK_ERR(LIB(bypass_notify_ring(db)), 0);
	CHECK_EQ(LIB(bypass_notify_try(db)), 1);
	CHECK_ERR(LIB(bypass_notify_send(sv[0], db)), 0);
	CHECK_ERR(LIB(bypass_notify_recv(sv[1], &db2)), 0);
	CHECK_ERR(LIB(bypass_notify_close(db2)), 0);
	CHECK_ERR(LIB(bypass_notify_destroy(db)), 0);
#endif
	syscall(SYS_close, sv[0]);
	syscall(SYS_close, sv[1]);

	/* The stand-ins do catch the library when it calls libc. */
	in_library = 1;
	CHECK(write(pf[1], "x", 1) == 1);
	in_library = 0;
	CHECK(caught == 1 && !strcmp(first, "write"));
	return test_pass("core/syscalls");
}
