/* SPDX-License-Identifier: MIT */
/*
 * syscall-layer: core/syscall.h's wrappers return what the libc functions
 * of the same names return (the result, or -1 and errno; MAP_FAILED), so a
 * call converts by its name alone; bp_syscallN returns -errno and leaves
 * errno alone.  bp_sys_sigaction installs handlers through rt_sigaction
 * with a restorer of its own: the handler runs with its mask, returns to
 * where the signal came (twice in a row), SA_RESETHAND and the old action
 * read back as libc's sigaction reads them (both ways), glibc's own signals
 * and bad numbers are -1/EINVAL, and an unwinder walks through the signal
 * frame as it does through libc's: backtrace() from the handler finds the
 * same frames, the restorer's aside, for a handler installed either way.
 */
#include "harness.h"
#include "core/syscall.h"

#include <execinfo.h>
#include <pthread.h>
#include <string.h>

/* ------------------------------------------------------------ wrappers */

static void wrappers(void)
{
	errno = 0;
	CHECK_EQ(bp_sys_close(-1), -1);
	CHECK_EQ(errno, EBADF);
	errno = 0;
	CHECK_EQ(bp_syscall1(SYS_close, -1), -EBADF);
	CHECK_EQ(errno, 0);
	CHECK(bp_sys_mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, -1, 0) == MAP_FAILED);
	CHECK_EQ(errno, EBADF);

	char path[] = "/tmp/bypass-syscall-layer.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(bp_sys_pwrite(fd, "abcdef", 6, 10), 6);
	char b[16] = { 0 };
	CHECK_EQ(bp_sys_pread(fd, b, 3, 12), 3);
	CHECK(!memcmp(b, "cde", 3));
	struct iovec iov[2] = { { b, 2 }, { b + 8, 2 } };
	CHECK_EQ(bp_sys_preadv(fd, iov, 2, 10), 4);
	CHECK(!memcmp(b, "ab", 2) && !memcmp(b + 8, "cd", 2));
	CHECK_EQ(bp_sys_pwritev(fd, iov, 2, 0), 4);
	CHECK_EQ(bp_sys_lseek(fd, 0, SEEK_CUR), 0); /* positioned: no move */
	CHECK_EQ(bp_sys_read(fd, b, 4), 4);
	CHECK(!memcmp(b, "abcd", 4));
	struct stat st;
	CHECK_EQ(bp_sys_fstat(fd, &st), 0);
	CHECK_EQ(st.st_size, 16);
	CHECK_EQ(bp_sys_pread(fd, b, 1, -1), -1);
	CHECK_EQ(errno, EINVAL);
	bp_sys_close(fd);

	void *p = bp_sys_mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	CHECK_EQ(bp_sys_mprotect(p, 4096, PROT_READ), 0);
	CHECK_EQ(bp_sys_pkey_mprotect(p, 4096, PROT_READ | PROT_WRITE, -1), 0);
	CHECK_EQ(bp_sys_madvise(p, 8192, MADV_DONTNEED), 0);
	CHECK_EQ(bp_sys_madvise(p, 8192, 12345), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(bp_sys_munmap(p, 8192), 0);

	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(bp_sys_send(sv[0], "ping", 4, MSG_NOSIGNAL), 4);
	int avail = 0;
	CHECK_EQ(bp_sys_ioctl(sv[1], FIONREAD, &avail), 0);
	CHECK_EQ(avail, 4);
	int ep = bp_sys_epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 7 };
	CHECK_EQ(bp_sys_epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev), 0);
	CHECK_EQ(bp_sys_epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev), -1);
	CHECK_EQ(errno, EEXIST);
	memset(&ev, 0, sizeof(ev));
	CHECK_EQ(bp_sys_epoll_wait(ep, &ev, 1, 0), 1);
	CHECK_EQ(ev.data.u32, 7);
	CHECK_EQ(bp_sys_recv(sv[1], b, sizeof(b), MSG_DONTWAIT), 4);
	CHECK_EQ(bp_sys_recv(sv[1], b, sizeof(b), MSG_DONTWAIT), -1);
	CHECK_EQ(errno, EAGAIN);
	struct pollfd pf = { .fd = sv[1], .events = POLLIN };
	CHECK_EQ(bp_sys_poll(&pf, 1, 0), 0);
	int one = 1;
	socklen_t len = sizeof(one);
	CHECK_EQ(bp_sys_setsockopt(sv[0], SOL_SOCKET, SO_KEEPALIVE, &one, len), 0);
	one = 0;
	CHECK_EQ(bp_sys_getsockopt(sv[0], SOL_SOCKET, SO_KEEPALIVE, &one, &len), 0);
	CHECK_EQ(one, 1);
	CHECK_EQ(bp_sys_shutdown(sv[0], SHUT_WR), 0);
	CHECK_EQ(bp_sys_recv(sv[1], b, sizeof(b), 0), 0);
	bp_sys_close(ep);
	bp_sys_close(sv[0]);
	bp_sys_close(sv[1]);

	/* as glibc's: 0 and the tail of the set zeroed, not the byte count */
	cpu_set_t mine, libc;
	memset(&mine, 0xff, sizeof(mine));
	memset(&libc, 0xff, sizeof(libc));
	CHECK_EQ(bp_sys_sched_getaffinity(0, sizeof(mine), &mine), 0);
	CHECK_EQ(sched_getaffinity(0, sizeof(libc), &libc), 0);
	CHECK(!memcmp(&mine, &libc, sizeof(mine)));
	struct rlimit r1, r2;
	CHECK_EQ(bp_sys_getrlimit(RLIMIT_NOFILE, &r1), 0);
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &r2), 0);
	CHECK(r1.rlim_cur == r2.rlim_cur && r1.rlim_max == r2.rlim_max);
	CHECK_EQ(bp_sys_getpid(), getpid());
	CHECK_EQ(bp_sys_gettid(), gettid());
	CHECK_EQ(bp_sys_getuid(), getuid());
	CHECK_EQ(bp_sys_kill(getpid(), 0), 0);
	CHECK_EQ(bp_sys_tgkill(getpid(), gettid(), 0), 0);
	char link[64];
	CHECK_EQ(bp_sys_readlink("/proc/self/fd/-1", link, sizeof(link)), -1);
	CHECK_EQ(errno, ENOENT);
}

/* ------------------------------------------------------------ sigaction */

static volatile sig_atomic_t runs, usr2_blocked, usr1_blocked, code;
static void *frames[64];
static volatile int nframes;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	usr1_blocked = sigismember(&cur, SIGUSR1);
	usr2_blocked = sigismember(&cur, SIGUSR2);
	code = si->si_code;
	nframes = backtrace(frames, 64);
	if (sig == SIGUSR1)
		runs++;
}

static void plain(int sig)
{
	if (sig == SIGUSR1)
		runs++;
}

/* One call site for every delivery, so that the frames below it match. */
__attribute__((noinline)) static void deliver(void)
{
	CHECK_EQ(raise(SIGUSR1), 0);
	__asm__ __volatile__("" ::: "memory");
}

static struct sigaction handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	return sa;
}

static void same_action(const struct sigaction *a, const struct sigaction *b)
{
	CHECK(a->sa_sigaction == b->sa_sigaction);
	CHECK_EQ(a->sa_flags, b->sa_flags);
	CHECK(a->sa_restorer == b->sa_restorer);
	for (int s = 1; s < 64; s++)
		CHECK_EQ(sigismember(&a->sa_mask, s), sigismember(&b->sa_mask, s));
}

static void sigaction_raw(void)
{
	struct sigaction sa = handler(), got, old, via_libc;
	CHECK_EQ(bp_sys_sigaction(SIGUSR1, &sa, NULL), 0);
	runs = 0;
	deliver();
	CHECK_EQ(runs, 1);
	CHECK_EQ(usr1_blocked, 1); /* no SA_NODEFER */
	CHECK_EQ(usr2_blocked, 1); /* sa_mask */
	CHECK_EQ(code, SI_TKILL);
	deliver(); /* the restorer returned and restored the mask */
	CHECK_EQ(runs, 2);
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	CHECK(!sigismember(&cur, SIGUSR1) && !sigismember(&cur, SIGUSR2));

	/* read back, ours and libc's, the same */
	CHECK_EQ(bp_sys_sigaction(SIGUSR1, NULL, &got), 0);
	CHECK_EQ(sigaction(SIGUSR1, NULL, &via_libc), 0);
	same_action(&got, &via_libc);
	CHECK(got.sa_sigaction == on_usr1);
	CHECK(got.sa_flags & SA_SIGINFO);
	CHECK(sigismember(&got.sa_mask, SIGUSR2));

	/* frames through ours as through libc's restorer, from one call site */
	void *bt[2][64];
	int nbt[2];
	/* a loop, not unrolled: one call site of deliver() for both (clang
	 * unrolled it, and main's frame differed too) */
#ifdef __clang__
#pragma clang loop unroll(disable)
#endif
	for (int k = 0; k < 2; k++) {
		CHECK_EQ(k ? sigaction(SIGUSR1, &sa, &old) : bp_sys_sigaction(SIGUSR1, &sa, &old), 0);
		same_action(&old, k ? &got : &via_libc);
		deliver();
		nbt[k] = nframes;
		memcpy(bt[k], frames, sizeof(frames));
	}
	CHECK_EQ(runs, 4);
	TEST_LOG("backtrace from the handler: %d frames (our restorer), %d (libc's)",
		 nbt[0], nbt[1]);
	CHECK_EQ(nbt[0], nbt[1]);
	CHECK(nbt[0] >= 5); /* the handler, the restorer, raise's, deliver, main */
	int differ = 0;
	for (int i = 0; i < nbt[0]; i++)
		differ += bt[0][i] != bt[1][i];
	CHECK_EQ(differ, 1); /* the restorer's frame */

	/* installed by libc, read back and replaced by ours */
	CHECK_EQ(sigaction(SIGUSR1, NULL, &via_libc), 0);
	CHECK_EQ(bp_sys_sigaction(SIGUSR1, NULL, &got), 0);
	same_action(&got, &via_libc);

	/* sa_handler form, SA_RESETHAND */
	struct sigaction p;
	memset(&p, 0, sizeof(p));
	p.sa_handler = plain;
	p.sa_flags = SA_RESETHAND;
	sigemptyset(&p.sa_mask);
	CHECK_EQ(bp_sys_sigaction(SIGUSR1, &p, &old), 0);
	CHECK(old.sa_sigaction == on_usr1);
	deliver();
	CHECK_EQ(runs, 5);
	CHECK_EQ(bp_sys_sigaction(SIGUSR1, NULL, &got), 0);
	CHECK(got.sa_handler == SIG_DFL);

	/* bad numbers, glibc's own signals, SIGKILL: -1 and EINVAL */
	int bad[] = { 0, -1, 65, 32, 33, SIGKILL, SIGSTOP };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		CHECK_EQ(bp_sys_sigaction(bad[i], &sa, NULL), -1);
		CHECK_EQ(errno, EINVAL);
	}
	CHECK_EQ(bp_sys_sigaction(SIGUSR1, NULL, NULL), 0);
	signal(SIGUSR1, SIG_DFL);
}

int main(void)
{
	test_timeout(30);
	void *warm[4];
	backtrace(warm, 4); /* loads the unwinder now, not in a handler */
	wrappers();
	sigaction_raw();
	return test_pass("syscall-layer");
}
