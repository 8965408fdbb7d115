/* SPDX-License-Identifier: MIT */
/*
 * preload-poll: poll, ppoll, select, pselect, epoll_wait, epoll_pwait and
 * epoll_pwait2 on arrays in a region (upcall mode) whose pages are evicted
 * while a thread is blocked in the call.  The kernel writes the results
 * when the call returns: without the preload's care the write met an
 * evicted page and the call failed with EFAULT after waiting (issue 32,
 * item 3: Python's multiprocessing Pool blocked in poll on an arena while
 * the tree took the idle process's pages).  The signal masks and
 * epoll_pwait2's timeout lie in evicted region pages too (the kernel reads
 * them when the call starts).  Also: poll on 1,000 entries (more than the
 * preload copies to its stack: pinned instead), and a thread cancelled
 * while blocked there, whose pins must go with it (no page pinned at exit).
 *
 * The main thread waits until the other one is blocked in the call
 * (/proc/self/task/TID/syscall names it, or restart_syscall for a poll the
 * kernel restarted; state S), evicts everything (4 budgets of other pages),
 * then makes the pipe readable.  No timing in any assertion.
 */
#include "pager/preload-util.h"

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>

#define N (4 * PP_BUDGET)
#define PG 4096ul
#define BIG 1000 /* entries of the large poll: more than a stack copy holds */

static unsigned char *area, *junk;

/* Push everything else out: the budget is a quarter of junk. */
static void evict(void)
{
	pp_dirty(junk, N);
}

enum kind { K_POLL, K_PPOLL, K_SELECT, K_PSELECT, K_EPOLL_WAIT, K_EPOLL_PWAIT, K_EPOLL_PWAIT2,
	    K_BIG, K_NKINDS };
static const char *const names[] = { "poll", "ppoll", "select", "pselect", "epoll_wait",
				     "epoll_pwait", "epoll_pwait2", "poll (1000 entries)" };

struct job {
	enum kind k;
	int rfd, epfd;
	pid_t tid;
	int ret, err;
	bool done; /* the call returned */
};

/* The arguments, each on its own page of the area (offsets inside pages). */
#define FDS ((struct pollfd *)(area + 0 * PG + 40))
#define SET ((fd_set *)(area + 1 * PG + 200))
#define EVS ((struct epoll_event *)(area + 8 * PG + 100)) /* MAXEV of them: 3 pages */
#define MASK ((sigset_t *)(area + 3 * PG + 8))
#define TS ((struct timespec *)(area + 4 * PG + 16))
#define BIGFDS ((struct pollfd *)(area + 5 * PG + 3000)) /* across three pages */
#define MAXEV 1000

static void *waiter(void *arg)
{
	struct job *j = arg;
	__atomic_store_n(&j->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	switch (j->k) {
	case K_POLL:
		j->ret = poll(FDS, 1, -1);
		break;
	case K_PPOLL:
		j->ret = ppoll(FDS, 1, NULL, MASK);
		break;
	case K_SELECT:
		j->ret = select(j->rfd + 1, SET, NULL, NULL, NULL);
		break;
	case K_PSELECT:
		j->ret = pselect(j->rfd + 1, SET, NULL, NULL, NULL, MASK);
		break;
	case K_EPOLL_WAIT:
		j->ret = epoll_wait(j->epfd, EVS, MAXEV, -1);
		break;
	case K_EPOLL_PWAIT:
		j->ret = epoll_pwait(j->epfd, EVS, MAXEV, -1, MASK);
		break;
	case K_EPOLL_PWAIT2:
		j->ret = epoll_pwait2(j->epfd, EVS, MAXEV, TS, MASK);
		break;
	default:
		j->ret = poll(BIGFDS, BIG, -1);
		break;
	}
	j->err = errno;
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Until the thread is blocked in its call, or the call returned (it failed
 * at once: the caller reports it). */
static void wait_blocked(struct job *j)
{
	static const long pollish[] = { SYS_poll, SYS_ppoll };
	static const long selectish[] = { SYS_select, SYS_pselect6 };
	static const long epollish[] = { SYS_epoll_wait, SYS_epoll_pwait, SYS_epoll_pwait2 };
	const long *nr = j->k == K_SELECT || j->k == K_PSELECT ? selectish
			 : j->k >= K_EPOLL_WAIT && j->k <= K_EPOLL_PWAIT2 ? epollish
									   : pollish;
	int n = nr == epollish ? 3 : 2;
	bool restarts = nr == pollish && j->k != K_PPOLL; /* poll: restart_syscall */
	while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) &&
	       (!__atomic_load_n(&j->tid, __ATOMIC_ACQUIRE) ||
		!pp_blocked(j->tid, nr, n, restarts))) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static void one(enum kind k)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	struct job j = { .k = k, .rfd = p[0], .epfd = -1 };
	sigemptyset(MASK);
	sigaddset(MASK, SIGUSR2);
	TS->tv_sec = 3600;
	TS->tv_nsec = 0;
	switch (k) {
	case K_POLL:
	case K_PPOLL:
		*FDS = (struct pollfd){ .fd = p[0], .events = POLLIN, .revents = 0x7777 };
		break;
	case K_SELECT:
	case K_PSELECT:
		FD_ZERO(SET);
		FD_SET(p[0], SET);
		break;
	case K_BIG:
		for (int i = 0; i < BIG; i++)
			BIGFDS[i] = (struct pollfd){ .fd = i % 3 ? -1 : p[0], .events = POLLIN,
						     .revents = 0x7777 };
		break;
	default: {
		j.epfd = epoll_create1(0);
		CHECK(j.epfd >= 0);
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x1234567890abcdefull };
		CHECK_EQ(epoll_ctl(j.epfd, EPOLL_CTL_ADD, p[0], &ev), 0);
		memset(EVS, 0, MAXEV * sizeof(*EVS));
		break;
	}
	}
	evict(); /* the masks and the timeout are read from evicted pages */
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, waiter, &j), 0);
	wait_blocked(&j);
	evict(); /* the results are written to evicted pages */
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	int want = k == K_BIG ? (BIG + 2) / 3 : 1; /* every third entry is the pipe */
	if (j.ret != want)
		TEST_FAIL("%s returned %d (%s), not %d", names[k], j.ret,
			  j.ret < 0 ? strerror(j.err) : "", want);
	switch (k) {
	case K_POLL:
	case K_PPOLL:
		CHECK_EQ(FDS->revents, POLLIN);
		CHECK_EQ(FDS->fd, p[0]);
		break;
	case K_SELECT:
	case K_PSELECT:
		CHECK(FD_ISSET(p[0], SET));
		for (int fd = 0; fd < p[0]; fd++)
			CHECK(!FD_ISSET(fd, SET));
		break;
	case K_BIG:
		for (int i = 0; i < BIG; i++)
			if (BIGFDS[i].revents != (i % 3 ? 0 : POLLIN))
				TEST_FAIL("entry %d: revents %#x", i, BIGFDS[i].revents);
		break;
	default:
		CHECK_EQ(EVS[0].events, EPOLLIN);
		CHECK_EQ(EVS[0].data.u64, 0x1234567890abcdefull);
		close(j.epfd);
		break;
	}
	CHECK_EQ(TS->tv_sec, 3600);
	close(p[0]);
	close(p[1]);
	TEST_LOG("%s: ok", names[k]);
}

/*
 * A thread that evicts (its own faults put dirty pages under write-back:
 * one fault in about a batch, 32 pages) and waits in epoll_wait on nothing
 * after each fault: every call times out (0).  The completions of those
 * write-backs come as the thread's task work, which ended the wait with
 * EINTR, no signal sent (issue 32, item 3; seen above as "epoll_pwait
 * returned -1 (Interrupted system call)", where the waiter faults on the
 * mask's page).  A write slower than the 5 ms wait only makes that call
 * prove nothing; it cannot fail it.
 */
#define QUIET_PAGES 128

struct quiet {
	int epfd;
	int ret, err, at;
};

static void *evict_then_wait(void *arg)
{
	struct quiet *q = arg;
	struct epoll_event ev[4];
	for (q->at = 0; q->at < QUIET_PAGES; q->at++) {
		area[(16 + (size_t)q->at) * PG]++; /* the area's unused pages */
		q->ret = epoll_wait(q->epfd, ev, 4, 5);
		q->err = errno;
		if (q->ret)
			break;
	}
	return NULL;
}

static void no_eintr(void)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	struct quiet q = { .epfd = epoll_create1(0) };
	CHECK(q.epfd >= 0);
	struct epoll_event ev = { .events = EPOLLIN };
	CHECK_EQ(epoll_ctl(q.epfd, EPOLL_CTL_ADD, p[0], &ev), 0);
	for (int round = 0; round < 2; round++) {
		evict(); /* the budget full of dirty pages */
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, evict_then_wait, &q), 0);
		CHECK_EQ(pthread_join(t, NULL), 0);
		if (q.ret != 0)
			TEST_FAIL("round %d, page %d: epoll_wait after a fault returned %d (%s), not 0",
				  round, q.at, q.ret, q.ret < 0 ? strerror(q.err) : "");
	}
	close(q.epfd);
	close(p[0]);
	close(p[1]);
	TEST_LOG("epoll_wait after each of the thread's own faults: ok");
}

/*
 * The run's time limit (shorter than its parent's, which would kill it
 * first): before failing, every thread's state, system call and wait
 * channel to stderr, so that a hang says where it hung.  System calls only
 * (the thread it interrupts may hold any lock): open, getdents64, read.
 */
static void put(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
}

static void hang_report(int sig)
{
	(void)sig;
	put("preload-poll: timed out; the threads (stat / syscall / wchan):\n");
	int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
	char ents[4096], path[96], buf[512];
	buf[0] = 0;
	long n;
	while (dir >= 0 && (n = syscall(SYS_getdents64, dir, ents, sizeof(ents))) > 0)
		for (long off = 0; off < n;) {
			struct { unsigned long long ino; long long off; unsigned short len;
				 unsigned char type; char name[]; } *d = (void *)(ents + off);
			off += d->len;
			if (d->name[0] == '.')
				continue;
			static const char *const what[] = { "stat", "syscall", "wchan" };
			for (int w = 0; w < 3; w++) {
				strcpy(path, "/proc/self/task/");
				strncat(path, d->name, 24);
				strcat(path, "/");
				strcat(path, what[w]);
				int fd = open(path, O_RDONLY);
				ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 2) : -1;
				if (fd >= 0)
					close(fd);
				buf[r > 0 ? r : 0] = 0;
				if (r <= 0 || buf[r - 1] != '\n')
					strcat(buf, "\n");
				put("  ");
				put(what[w]);
				put(": ");
				put(buf);
			}
		}
	put("FAIL: test timed out (a hang)\n");
	_exit(1);
}

/* A thread cancelled while blocked in a poll the preload pinned for. */
static void cancelled(void)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	for (int i = 0; i < BIG; i++)
		BIGFDS[i] = (struct pollfd){ .fd = i % 3 ? -1 : p[0], .events = POLLIN };
	struct job j = { .k = K_BIG, .rfd = p[0], .epfd = -1 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, waiter, &j), 0);
	wait_blocked(&j);
	pp_cancel(t);
	close(p[0]);
	close(p[1]);
	evict(); /* the pages of the array can go again */
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		test_timeout(50);
		signal(SIGALRM, hang_report);
		area = pp_region(1ul << 20);
		junk = pp_region(N);
		if (argc > 1 && !strcmp(argv[1], "eintr")) {
			no_eintr();
			return 0;
		}
		for (int k = 0; k < K_NKINDS; k++)
			one((enum kind)k);
		cancelled();
		return 0;
	}
	pp_run_ok(argv, "run", NULL);
	pp_check_evicted_unpinned();
	/* Under scope=process a fault that needs room evicts a batch and
	 * returns with its writes in flight (the tree's scope waits up to
	 * 1 ms for one, so there the EINTR needed a slow disk). */
	static const char *const process[] = { "BYPASS_PAGER_BUDGET_SCOPE=process", NULL };
	pp_run_ok(argv, "eintr", process);
	return test_pass("pager/preload-poll");
}
