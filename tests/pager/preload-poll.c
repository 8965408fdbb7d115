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
 * (/proc/self/task/TID/syscall names it, state S), evicts everything (4
 * budgets of other pages), then makes the pipe readable.  No timing in any
 * assertion.
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

static void *region(size_t n)
{
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	return m;
}

/* Push everything else out: the budget is a quarter of junk. */
static void evict(void)
{
	for (size_t i = 0; i < N; i += PG)
		junk[i]++;
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

/* Is thread tid blocked (state S) in one of the system calls nr[]? */
static bool blocked(pid_t tid, const long *nr, int n)
{
	char path[128], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char *p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	if (!p || p[1] != ' ' || p[2] != 'S')
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	long got = -1;
	int ok = fscanf(f, "%ld", &got);
	fclose(f);
	for (int i = 0; ok == 1 && i < n; i++)
		if (got == nr[i])
			return true;
	return false;
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
	while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) &&
	       (!__atomic_load_n(&j->tid, __ATOMIC_ACQUIRE) || !blocked(j->tid, nr, n))) {
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
	CHECK_EQ(pthread_cancel(t), 0);
	void *res;
	CHECK_EQ(pthread_join(t, &res), 0);
	CHECK(res == PTHREAD_CANCELED);
	close(p[0]);
	close(p[1]);
	evict(); /* the pages of the array can go again */
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		area = region(1ul << 20);
		junk = region(N);
		for (int k = 0; k < K_NKINDS; k++)
			one((enum kind)k);
		cancelled();
		return 0;
	}
	(void)argc;
	pp_run_ok(argv, "run", NULL);
	int lines;
	long long ev = pp_stat("evictions", &lines), pinned = pp_stat("pinned_pages", NULL);
	TEST_LOG("stats lines %d, evictions %lld, pinned at exit %lld", lines, ev, pinned);
	CHECK_EQ(lines, 1);
	CHECK(ev > 0);
	CHECK_EQ(pinned, 0);
	return test_pass("pager/preload-poll");
}
