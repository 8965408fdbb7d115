/* SPDX-License-Identifier: MIT */
/*
 * preload-eintr: the calls the kernel does not restart after task work,
 * made by a thread whose own faults just evicted (issue 32, item 3).  Under
 * scope=process a fault that needs room evicts a batch of dirty pages and
 * returns with their writes in flight; their completions come back to the
 * faulting thread as task work that wakes it as a signal would, and a wait
 * in semop, semtimedop, sigwaitinfo, sigtimedwait, io_getevents, or a
 * socket's recv/recvfrom/recvmsg/accept/accept4/read/readv under
 * SO_RCVTIMEO or send/sendto/sendmsg/connect/write/writev under SO_SNDTIMEO
 * ended with EINTR though no signal was sent (read, readv, write, writev:
 * 4 of 4 failed before the preload asked their timeout; mq_timedreceive
 * and mq_timedsend are here to show that the kernel restarts them).
 * (epoll_wait's case is preload-poll's.)
 *
 * Each kind: a thread faults on one page at a time (about one fault in a
 * batch evicts) and after each fault makes the call on nothing ready with a
 * short timeout (or, for the calls without one, with another thread posting
 * now and then): it must time out or succeed, never fail with EINTR.  Then
 * a real signal (a handler without SA_RESTART) must still end the call with
 * EINTR.  A write slower than the wait only makes that call prove nothing;
 * no timing decides a result.
 */
#include "pager/preload-util.h"

#include <dlfcn.h>
#include <linux/aio_abi.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>

#define N (4 * PP_BUDGET)
#define PG 4096ul
#define AREA (2ul << 20)
#define PAGES 64   /* faults (and calls) per round */
#define ROUNDS 2
#define WAIT_MS 5

static unsigned char *area, *junk;
static size_t cursor;

/* The budget full of dirty pages: a quarter of junk. */
static void dirty(void)
{
	pp_dirty(junk, N);
}

enum kind { K_SEMOP, K_SEMTIMEDOP, K_SIGWAITINFO, K_SIGTIMEDWAIT, K_IO_GETEVENTS, K_RECV,
	    K_RECVFROM, K_RECVMSG, K_ACCEPT, K_ACCEPT4, K_SEND, K_SENDTO, K_SENDMSG,
	    K_CONNECT, K_READ, K_READV, K_WRITE, K_WRITEV, K_MQ_TIMEDRECEIVE, K_MQ_TIMEDSEND,
	    K_N };
static const char *const names[] = { "semop", "semtimedop", "sigwaitinfo", "sigtimedwait",
				     "io_getevents", "recv", "recvfrom", "recvmsg", "accept",
				     "accept4", "send", "sendto", "sendmsg", "connect",
				     "read", "readv", "write", "writev", "mq_timedreceive",
				     "mq_timedsend" };

typedef int (*getevents_fn)(aio_context_t, long, long, struct io_event *, struct timespec *);

struct env {
	int sem;                  /* one semaphore, 0 */
	aio_context_t aio;        /* no I/O submitted */
	getevents_fn getevents;   /* the preload's, in front of libaio's */
	int rx;                   /* a socket nothing is sent to (SO_RCVTIMEO) */
	int tx;                   /* a socket whose send buffer is full (SO_SNDTIMEO) */
	int lis;                  /* a listening socket nobody connects to (SO_RCVTIMEO) */
	struct sockaddr_un full;  /* a listening socket whose backlog is full */
	mqd_t mq_empty, mq_full;  /* message queues of one 64-byte message, or -1 */
	pid_t waiter;             /* the thread the poster feeds */
	_Atomic bool stop;
};
static struct env E;

static struct timeval tv_of(int ms)
{
	return (struct timeval){ ms / 1000, (ms % 1000) * 1000 };
}

static void set_timeout(int fd, int opt, int ms)
{
	struct timeval tv = tv_of(ms);
	CHECK_EQ(setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv)), 0);
}

static int timed_socket(int type, int opt, int ms)
{
	int fd = socket(AF_UNIX, type, 0);
	CHECK(fd >= 0);
	set_timeout(fd, opt, ms);
	return fd;
}

/* The call of kind k, waiting at most ms where it has a timeout. */
static int call(enum kind k, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	char buf[64] = { 0 };
	switch (k) {
	case K_SEMOP: {
		struct sembuf op = { 0, -1, 0 };
		return semop(E.sem, &op, 1);
	}
	case K_SEMTIMEDOP: {
		struct sembuf op = { 0, -1, 0 };
		return semtimedop(E.sem, &op, 1, &ts);
	}
	case K_SIGWAITINFO:
	case K_SIGTIMEDWAIT: {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGUSR2);
		siginfo_t si;
		return k == K_SIGWAITINFO ? sigwaitinfo(&s, &si) : sigtimedwait(&s, &si, &ts);
	}
	case K_IO_GETEVENTS: {
		struct io_event ev;
		return E.getevents(E.aio, 1, 1, &ev, &ts);
	}
	case K_RECV:
		return (int)recv(E.rx, buf, sizeof(buf), 0);
	case K_RECVFROM:
		return (int)recvfrom(E.rx, buf, sizeof(buf), 0, NULL, NULL);
	case K_RECVMSG: {
		struct iovec v = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
		return (int)recvmsg(E.rx, &m, 0);
	}
	case K_ACCEPT:
		return accept(E.lis, NULL, NULL);
	case K_ACCEPT4:
		return accept4(E.lis, NULL, NULL, SOCK_CLOEXEC);
	case K_SEND:
		return (int)send(E.tx, buf, sizeof(buf), 0);
	case K_SENDTO:
		return (int)sendto(E.tx, buf, sizeof(buf), 0, NULL, 0);
	case K_SENDMSG: {
		struct iovec v = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
		return (int)sendmsg(E.tx, &m, 0);
	}
	case K_READ:
		return (int)read(E.rx, buf, sizeof(buf));
	case K_WRITE:
		return (int)write(E.tx, buf, sizeof(buf));
	case K_READV:
	case K_WRITEV: {
		struct iovec v = { buf, sizeof(buf) };
		return (int)(k == K_READV ? readv(E.rx, &v, 1) : writev(E.tx, &v, 1));
	}
	case K_MQ_TIMEDRECEIVE:
	case K_MQ_TIMEDSEND: {
		struct timespec at;
		clock_gettime(CLOCK_REALTIME, &at);
		at.tv_nsec += (long)ms * 1000000;
		at.tv_sec += at.tv_nsec / 1000000000;
		at.tv_nsec %= 1000000000;
		if (k == K_MQ_TIMEDSEND)
			return mq_timedsend(E.mq_full, buf, 1, 0, &at);
		return (int)mq_timedreceive(E.mq_empty, buf, sizeof(buf), NULL, &at);
	}
	case K_CONNECT: {
		int fd = timed_socket(SOCK_STREAM, SO_SNDTIMEO, ms);
		int r = connect(fd, (struct sockaddr *)&E.full, sizeof(E.full));
		int e = errno;
		close(fd);
		errno = e;
		return r;
	}
	default:
		errno = EINVAL;
		return -1;
	}
}

/* The calls without a timeout wait for the poster: semop for a post when
 * a waiter is there, sigwaitinfo for a SIGUSR2 (blocked: it stays pending). */
static bool posted(enum kind k)
{
	return k == K_SEMOP || k == K_SIGWAITINFO;
}

static void *poster(void *arg)
{
	enum kind k = (enum kind)(intptr_t)arg;
	struct timespec ts = { 0, WAIT_MS * 1000000l };
	while (!E.stop) {
		nanosleep(&ts, NULL);
		if (k == K_SEMOP && semctl(E.sem, 0, GETNCNT) > 0) {
			struct sembuf op = { 0, 1, 0 };
			CHECK_EQ(semop(E.sem, &op, 1), 0);
		} else if (k == K_SIGWAITINFO && E.waiter) {
			syscall(SYS_tgkill, getpid(), E.waiter, SIGUSR2);
		}
	}
	return NULL;
}

/* Is r what the call returns on nothing ready (a timeout), or a success? */
static bool quiet_result(enum kind k, int r, int e)
{
	if (posted(k))
		return k == K_SEMOP ? r == 0 : r == SIGUSR2;
	if (k == K_IO_GETEVENTS) /* libaio's: -errno, not -1 */
		return r == 0;
	if (k == K_MQ_TIMEDRECEIVE || k == K_MQ_TIMEDSEND)
		return r < 0 && e == ETIMEDOUT;
	return r < 0 && (e == EAGAIN || e == EWOULDBLOCK || (k == K_CONNECT && e == EINPROGRESS));
}

struct job {
	enum kind k;
	int ms;
	int at, ret, err;
	bool fault; /* fault before each call */
};

static void *faulter(void *arg)
{
	struct job *j = arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	__atomic_store_n(&E.waiter, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (j->at = 0; j->at < PAGES; j->at++) {
		area[(cursor++ % (AREA / PG)) * PG]++; /* a fault that needs room */
		j->ret = call(j->k, j->ms);
		j->err = errno;
		if (!quiet_result(j->k, j->ret, j->err))
			break;
	}
	return NULL;
}

static int failed; /* kinds that failed (all are run, then the test fails) */

static void one(enum kind k)
{
	int before = failed;
	if (k == K_IO_GETEVENTS && !E.getevents) {
		TEST_LOG("%s: no libaio here, not run", names[k]);
		return;
	}
	if ((k == K_MQ_TIMEDRECEIVE || k == K_MQ_TIMEDSEND) && E.mq_empty == (mqd_t)-1) {
		TEST_LOG("%s: no POSIX message queues here, not run", names[k]);
		return;
	}
	E.stop = false;
	E.waiter = 0;
	pthread_t pt;
	if (posted(k))
		CHECK_EQ(pthread_create(&pt, NULL, poster, (void *)(intptr_t)k), 0);
	for (int round = 0; round < ROUNDS; round++) {
		dirty();
		struct job j = { .k = k, .ms = WAIT_MS };
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, faulter, &j), 0);
		CHECK_EQ(pthread_join(t, NULL), 0);
		if (j.at < PAGES) {
			int e = k == K_IO_GETEVENTS && j.ret < 0 ? -j.ret : j.err;
			TEST_LOG("%s, round %d, page %d: returned %d (%s) after a fault: FAILED",
				 names[k], round, j.at, j.ret, j.ret < 0 ? strerror(e) : "");
			failed++;
			break;
		}
	}
	E.stop = true;
	if (posted(k))
		CHECK_EQ(pthread_join(pt, NULL), 0);
	/* a semaphore posted after its waiter left, a pending SIGUSR2 */
	semctl(E.sem, 0, SETVAL, 0);
	if (failed == before)
		TEST_LOG("%s after each of the thread's own faults: ok", names[k]);
}

/* A real signal still ends the call with EINTR (its write-backs settled
 * or not): SIGUSR1's handler has no SA_RESTART; it is sent until the call
 * returns. */
static void on_usr1(int sig)
{
	(void)sig;
}

static void *signalled_call(void *arg)
{
	struct job *j = arg;
	__atomic_store_n(&E.waiter, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	area[(cursor++ % (AREA / PG)) * PG]++;
	j->ret = call(j->k, j->ms);
	j->err = errno;
	__atomic_store_n(&j->at, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void real_signal(enum kind k)
{
	enum { LONG_MS = 20000 };
	set_timeout(E.rx, SO_RCVTIMEO, LONG_MS);
	set_timeout(E.lis, SO_RCVTIMEO, LONG_MS);
	dirty();
	E.waiter = 0;
	struct job j = { .k = k, .ms = LONG_MS };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, signalled_call, &j), 0);
	while (!__atomic_load_n(&j.at, __ATOMIC_ACQUIRE)) {
		pid_t w = __atomic_load_n(&E.waiter, __ATOMIC_ACQUIRE);
		if (w)
			syscall(SYS_tgkill, getpid(), w, SIGUSR1);
		struct timespec ts = { 0, 20 * 1000000l };
		nanosleep(&ts, NULL);
	}
	CHECK_EQ(pthread_join(t, NULL), 0);
	if (k == K_IO_GETEVENTS && j.ret < 0) { /* libaio's: -errno */
		j.err = -j.ret;
		j.ret = -1;
	}
	if (j.ret != -1 || j.err != EINTR)
		TEST_FAIL("%s interrupted by SIGUSR1 returned %d (%s), not EINTR", names[k], j.ret,
			  j.ret < 0 ? strerror(j.err) : "");
	set_timeout(E.rx, SO_RCVTIMEO, WAIT_MS);
	set_timeout(E.lis, SO_RCVTIMEO, WAIT_MS);
	TEST_LOG("%s: a real signal's EINTR reaches the program", names[k]);
}

static void setup(void)
{
	E.sem = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	CHECK(E.sem >= 0);
	CHECK_EQ(semctl(E.sem, 0, SETVAL, 0), 0);
	if (syscall(SYS_io_setup, 4, &E.aio))
		TEST_FAIL("io_setup: %s", strerror(errno));
	if (dlopen("libaio.so.1", RTLD_NOW | RTLD_GLOBAL))
		E.getevents = (getevents_fn)dlsym(RTLD_DEFAULT, "io_getevents");
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	E.rx = sv[0];
	set_timeout(E.rx, SO_RCVTIMEO, WAIT_MS);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	E.tx = sv[0];
	set_timeout(E.tx, SO_SNDTIMEO, WAIT_MS);
	char fill[4096] = { 0 };
	while (send(E.tx, fill, sizeof(fill), MSG_DONTWAIT) > 0)
		;
	CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
	/* sv[1] stays open, unread */
	E.lis = timed_socket(SOCK_STREAM, SO_RCVTIMEO, WAIT_MS);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/lis", pp_tmpdir());
	CHECK_EQ(bind(E.lis, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(E.lis, 4), 0);
	/* backlog 0: the first connection waits in it, the next ones block */
	int full = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(full >= 0);
	E.full = (struct sockaddr_un){ .sun_family = AF_UNIX };
	snprintf(E.full.sun_path, sizeof(E.full.sun_path), "%s/full", pp_tmpdir());
	CHECK_EQ(bind(full, (struct sockaddr *)&E.full, sizeof(E.full)), 0);
	CHECK_EQ(listen(full, 0), 0);
	int first = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK_EQ(connect(first, (struct sockaddr *)&E.full, sizeof(E.full)), 0);
	/* two queues of one message: one empty, one full */
	struct mq_attr qa = { .mq_maxmsg = 1, .mq_msgsize = 64 };
	char qn[64];
	snprintf(qn, sizeof(qn), "/bypass-eintr-%d", (int)getpid());
	E.mq_empty = mq_open(qn, O_RDWR | O_CREAT | O_EXCL, 0600, &qa);
	mq_unlink(qn);
	E.mq_full = mq_open(qn, O_RDWR | O_CREAT | O_EXCL, 0600, &qa);
	mq_unlink(qn);
	if (E.mq_full != (mqd_t)-1)
		CHECK_EQ(mq_send(E.mq_full, "x", 1, 0), 0);
	else
		E.mq_empty = (mqd_t)-1;
	struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART */
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
}

int main(int argc, char **argv)
{
	pp_start(120);
	if (pp_preloaded()) {
		area = pp_region(AREA);
		junk = pp_region(N);
		setup();
		for (int k = 0; k < K_N; k++)
			one((enum kind)k);
		static const enum kind interrupted[] = { K_SEMTIMEDOP, K_SIGTIMEDWAIT, K_RECV,
							 K_ACCEPT, K_IO_GETEVENTS, K_READ };
		for (size_t i = 0; i < BP_ARRAY_SIZE(interrupted); i++)
			if (interrupted[i] != K_IO_GETEVENTS || E.getevents)
				real_signal(interrupted[i]);
		semctl(E.sem, 0, IPC_RMID);
		if (failed)
			TEST_FAIL("%d of %d kinds failed with EINTR that no signal explained",
				  failed, (int)K_N);
		return 0;
	}
	/* Under scope=process a fault that needs room evicts a batch and
	 * returns with its writes in flight (the tree's scope waits up to
	 * 1 ms for one, so there the EINTR needs a slow disk). */
	static const char *const process[] = { "BYPASS_PAGER_BUDGET_SCOPE=process", NULL };
	pp_run_ok(argv, "run", process);
	pp_check_evicted_unpinned();
	return test_pass("pager/preload-eintr");
}
