/* SPDX-License-Identifier: MIT */
/*
 * epwait-stale: the merged wait never fails with EAGAIN, which epoll_wait
 * never returns (nginx logs "epoll_wait() failed (11: Resource temporarily
 * unavailable)" when it does).
 *
 * The kernel's IORING_OP_EPOLL_WAIT completes with -EAGAIN after 128
 * wake-ups of the epoll file that left nothing to deliver (each one spends
 * one of the request's poll arms; then the request runs once more on an
 * io-wq worker and finds nothing: preload/batch/epwait.c says more).  In
 * nginx such a wake-up is a ready listening socket whose connection the
 * other worker accepted first; here it is made without a race: the wait's
 * epoll watches a signalfd for SIGUSR2, and another thread sends itself
 * SIGUSR1 (blocked, taken back at once with sigtimedwait) again and again.
 * Each signal wakes the signalfd's waiters with no event mask, so the epoll
 * puts the signalfd on its ready list and wakes the wait, which then finds
 * the signalfd not readable (no SIGUSR2 pending): a wake-up that delivers
 * nothing, every time, whoever runs first.  The signals are paced (a short
 * sleep between them) so that most find the wait armed again; their number
 * is far above 128.
 *
 * 1. No time limit: after the signals the thread writes to a pipe the
 *    epoll also watches: the wait returns that one event.
 * 2. 200 ms, signals all along, nothing ready: the wait returns 0.
 * Each wait has a send queued (driven in-process through the decision
 * layer), so that it is merged, and the send must arrive.  Skips where the
 * kernel has no IORING_OP_EPOLL_WAIT or the merged wait is off.  No time is
 * judged: only what the waits return.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <bypass/batch.h>

#include "batch/util.h"
#include "batch/defer.h"

#define SIGNALS 3000     /* wake-ups sent during the first wait */
#define SIGNALS_MAX 1000000 /* the bound of the second (it ends them) */
#define TAG_SIGNALFD 1
#define TAG_PIPE 2

static int sink[2], pfd[2];
static atomic_bool wait_over;
static atomic_ulong sent;

struct storm {
	unsigned signals;
	bool then_pipe; /* write the pipe's byte after the signals */
};

/* Signals to itself until the count or the end of the wait, then perhaps
 * the pipe's byte. */
static void *signaller(void *arg)
{
	const struct storm *s = arg;
	sigset_t u1;
	sigemptyset(&u1);
	sigaddset(&u1, SIGUSR1);
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	struct timespec zero = { 0, 0 };
	for (unsigned i = 0; i < s->signals && !atomic_load(&wait_over); i++) {
		if (syscall(SYS_tgkill, pid, tid, SIGUSR1))
			return (void *)1;
		if (sigtimedwait(&u1, NULL, &zero) != SIGUSR1)
			return (void *)2;
		atomic_fetch_add(&sent, 1);
		usleep(100);
	}
	if (s->then_pipe) {
		char b = 'p';
		if (write(pfd[1], &b, 1) != 1)
			return (void *)3;
	}
	return NULL;
}

/* One merged wait with a send queued, during a storm; returns what the
 * wait returned (events or -errno). */
static long wait_in_storm(int ep, struct epoll_event *out, int max, int64_t timeout_ns,
			  struct storm *s)
{
	struct bypass_batch_stats before, after;
	CHECK_ERR(bypass_batch_stats(&before), 0);
	atomic_store(&wait_over, false);
	atomic_store(&sent, 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, signaller, s) == 0);
	bp_bt_segment_begin();
	char c = 'q';
	struct iovec v = { &c, 1 };
	long n = bp_bt_tx_data(sink[0], &v, 1, 0, NULL);
	if (n == BT_PASS)
		TEST_FAIL("the send was not queued: the wait would not be merged");
	CHECK_EQ(n, 1);
	long r = bp_bt_epoll_wait(ep, out, max, timeout_ns, NULL);
	atomic_store(&wait_over, true);
	void *ret;
	CHECK(pthread_join(t, &ret) == 0);
	if (ret)
		TEST_FAIL("the signalling thread failed at step %ld", (long)(uintptr_t)ret);
	if (r == BT_PASS)
		TEST_FAIL("the wait was not merged");
	CHECK_ERR(bypass_batch_stats(&after), 0);
	CHECK_EQ(after.merged_waits, before.merged_waits + 1);
	char got = 0;
	CHECK_EQ(read(sink[1], &got, 1), 1); /* the queued send went */
	CHECK_EQ(got, 'q');
	TEST_LOG("wait (timeout %lld ms): %ld, %lu signals sent during it",
		 timeout_ns < 0 ? -1ll : (long long)(timeout_ns / 1000000), r,
		 atomic_load(&sent));
	if (r == -EAGAIN)
		TEST_FAIL("the merged wait failed with EAGAIN (%lu signals sent, each a "
			  "wake-up that delivers nothing): epoll_wait never does",
			  atomic_load(&sent));
	return r;
}

int main(void)
{
	test_timeout(120);
	struct bt_thread *th;
	int r = bp_bt_self_make(&th); /* this thread's ring */
	if (r == -ENOSYS || r == -EPERM || r == -EOPNOTSUPP)
		SKIP("io_uring unavailable: %s", strerror(-r));
	CHECK_ERR(r, 0);
	if (!bp_bt_merged_wait_available())
		SKIP("no IORING_OP_EPOLL_WAIT here: no merged wait to test");
	if (!bp_bt_cfg.merged_wait)
		SKIP("BYPASS_BATCH_MERGED_WAIT=0: no merged wait to test");

	/* SIGUSR1 blocked everywhere (the threads inherit the mask): it only
	 * ever waits, pending, for the sigtimedwait that takes it back. */
	sigset_t u1;
	sigemptyset(&u1);
	sigaddset(&u1, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &u1, NULL) == 0);
	sigset_t u2;
	sigemptyset(&u2);
	sigaddset(&u2, SIGUSR2);
	int sfd = signalfd(-1, &u2, SFD_CLOEXEC | SFD_NONBLOCK);
	CHECK(sfd >= 0);
	CHECK(pipe2(pfd, O_CLOEXEC | O_NONBLOCK) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sink) == 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = TAG_SIGNALFD };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &e) == 0);
	e.data.u64 = TAG_PIPE;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &e) == 0);

	/* 1: no time limit; the pipe's byte ends it. */
	struct epoll_event out[4];
	memset(out, 0, sizeof(out));
	struct storm s1 = { SIGNALS, true };
	long n = wait_in_storm(ep, out, 4, -1, &s1);
	CHECK_EQ(n, 1);
	CHECK_EQ(out[0].data.u64, TAG_PIPE);
	CHECK(out[0].events & EPOLLIN);
	char b;
	CHECK_EQ(read(pfd[0], &b, 1), 1);

	/* 2: 200 ms of signals, nothing ready: a timeout, 0. */
	struct storm s2 = { SIGNALS_MAX, false };
	CHECK_EQ(wait_in_storm(ep, out, 4, 200 * 1000000ll, &s2), 0);

	close(ep);
	close(sfd);
	close(pfd[0]);
	close(pfd[1]);
	close(sink[0]);
	close(sink[1]);
	return test_pass("batch/epwait-stale");
}
