/* SPDX-License-Identifier: MIT */
/*
 * preload-epexcl: EPOLLEXCLUSIVE keeps its meaning under the preload.  Two
 * threads, each with its own epoll watching the same listening socket with
 * EPOLLEXCLUSIVE (nginx's workers do this), each with a write queued (so
 * that its wait would be merged), both asleep in epoll_wait; one connection
 * must wake one of them, not both.  The kernel ends an exclusive wake-up at
 * the first epoll with a thread asleep in epoll_wait; a merged wait
 * (IORING_OP_EPOLL_WAIT) polls the epoll file instead, which does not
 * count, so before the preload kept such epolls out of the merged wait
 * every connection woke both threads (preload/batch/epwait.c).
 *
 * A merged wait's wake-up is not always seen by the program: the kernel
 * wakes the thread, runs the wait request again in it, finds the connection
 * taken by the other thread and sleeps again inside io_uring_enter (a wake-up
 * that costs a context switch and one of the request's 128 poll arms:
 * tests/batch/epwait-stale).  So the test counts the thread's context
 * switches (/proc's status file) as well as its returns from epoll_wait: the
 * thread that did not take the connection must have neither.
 *
 * Both threads are seen asleep in a wait system call (/proc's syscall
 * file) before the connection is made.  After the first wake-up the other
 * thread is given 300 ms to show one as well: a slow machine can only hide
 * the fault, never invent one.  Runs with the merged wait on and off,
 * several rounds each.  A connection that woke nobody is a failure too.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "batch/util.h"

#define ROUNDS 4
#define TAG_LISTEN 1
#define TAG_END 2

struct worker {
	pthread_t t;
	int ep, lfd, end, sv[2];
	_Atomic pid_t tid;
	atomic_int woke;     /* 1: the listening socket's event came */
	atomic_int accepted; /* 1: its accept took the connection */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	struct epoll_event e;
	CHECK(epoll_wait(w->ep, &e, 1, 0) >= 0); /* a segment opens */
	CHECK_EQ(write(w->sv[0], "q", 1), 1);    /* queued: the wait may merge */
	for (;;) {
		int n = epoll_wait(w->ep, &e, 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		CHECK_EQ(n, 1);
		if (e.data.u64 == TAG_END)
			break;
		CHECK_EQ(e.data.u64, TAG_LISTEN);
		atomic_store(&w->woke, 1);
		int c = accept4(w->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c >= 0) {
			atomic_store(&w->accepted, 1);
			close(c);
		} else {
			CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
		}
		/* One event of the listening socket per round is all we
		 * count: wait for the end now. */
		struct epoll_event d = { 0 };
		CHECK(epoll_ctl(w->ep, EPOLL_CTL_DEL, w->lfd, &d) == 0);
	}
	char c;
	CHECK_EQ(read_full(w->sv[1], &c, 1), 1); /* the queued write went */
	CHECK_EQ(c, 'q');
	return NULL;
}

/* Whether tid sleeps in a wait system call (epoll's or io_uring_enter);
 * the call's number into *nrp. */
static bool asleep_in_wait(pid_t tid, long *nrp)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	long nr = strtol(buf, NULL, 10);
	*nrp = nr;
	bool wait_call = nr == SYS_epoll_pwait ||
#ifdef SYS_epoll_wait
			 nr == SYS_epoll_wait ||
#endif
#ifdef SYS_epoll_pwait2
			 nr == SYS_epoll_pwait2 ||
#endif
			 nr == SYS_io_uring_enter;
	if (!wait_call)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* tid's voluntary context switches so far. */
static long switches(pid_t tid)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0);
	buf[n] = 0;
	const char *p = strstr(buf, "\nvoluntary_ctxt_switches:");
	CHECK(p != NULL);
	return strtol(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One round: returns how many threads the one connection woke. */
static int round_once(int lfd, const struct sockaddr_in *addr, long nr[2])
{
	struct worker w[2];
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 2; i++) {
		w[i].lfd = lfd;
		w[i].ep = epoll_create1(EPOLL_CLOEXEC);
		CHECK(w[i].ep >= 0);
		w[i].end = eventfd(0, EFD_CLOEXEC);
		CHECK(w[i].end >= 0);
		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, w[i].sv) == 0);
		struct epoll_event e = { .events = EPOLLIN | EPOLLEXCLUSIVE,
					 .data.u64 = TAG_LISTEN };
		CHECK(epoll_ctl(w[i].ep, EPOLL_CTL_ADD, lfd, &e) == 0);
		e.events = EPOLLIN;
		e.data.u64 = TAG_END;
		CHECK(epoll_ctl(w[i].ep, EPOLL_CTL_ADD, w[i].end, &e) == 0);
		CHECK(pthread_create(&w[i].t, NULL, worker_main, &w[i]) == 0);
	}
	/* Both asleep in their waits (bounded: a machine this slow skips). */
	int seen = 0;
	for (int tries = 0; tries < 2000 && seen < 2; tries++) {
		seen = 0;
		for (int i = 0; i < 2; i++) {
			pid_t tid = atomic_load(&w[i].tid);
			seen += tid && asleep_in_wait(tid, &nr[i]);
		}
		if (seen < 2)
			sleep_ms(5);
	}
	if (seen < 2)
		SKIP("the two threads were not both seen asleep in their waits in 10 s");
	sleep_ms(20); /* a second look: still asleep, not passing through */
	for (int i = 0; i < 2; i++)
		if (!asleep_in_wait(atomic_load(&w[i].tid), &nr[i]))
			SKIP("a thread left its wait before the connection");
	long sw[2];
	for (int i = 0; i < 2; i++)
		sw[i] = switches(atomic_load(&w[i].tid));

	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(c >= 0);
	CHECK(connect(c, (const struct sockaddr *)addr, sizeof(*addr)) == 0);
	int woke = 0;
	for (int tries = 0; tries < 2000 && !woke; tries++) {
		woke = atomic_load(&w[0].woke) + atomic_load(&w[1].woke);
		if (!woke)
			sleep_ms(5);
	}
	if (!woke)
		TEST_FAIL("a connection woke neither thread in 10 s");
	sleep_ms(300); /* time for a second, wrong wake-up to show */
	woke = atomic_load(&w[0].woke) + atomic_load(&w[1].woke);
	int accepted = atomic_load(&w[0].accepted) + atomic_load(&w[1].accepted);
	/* The thread that did not take the connection: woken in the kernel? */
	int other = atomic_load(&w[0].accepted) ? 1 : 0;
	if (woke == 1 && !atomic_load(&w[other].woke) &&
	    switches(atomic_load(&w[other].tid)) != sw[other])
		woke = 2;
	for (int i = 0; i < 2; i++) {
		uint64_t one = 1;
		CHECK_EQ(write(w[i].end, &one, sizeof(one)), (ssize_t)sizeof(one));
	}
	for (int i = 0; i < 2; i++) {
		CHECK(pthread_join(w[i].t, NULL) == 0);
		close(w[i].ep);
		close(w[i].end);
		close(w[i].sv[0]);
		close(w[i].sv[1]);
	}
	close(c);
	CHECK_EQ(accepted, 1);
	return woke;
}

int main(int argc, char **argv)
{
	(void)argc;
	if (!getenv("BT_TEST_PRELOADED")) {
		const char *modes[] = { "1", "0" };
		for (int i = 0; i < 2; i++) {
			pid_t pid = fork();
			CHECK(pid >= 0);
			if (pid == 0) {
				setenv("BYPASS_BATCH_MERGED_WAIT", modes[i], 1);
				preload_reexec(argv, 90);
				_exit(1);
			}
			int st;
			CHECK(waitpid(pid, &st, 0) == pid);
			if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
				return 77;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				TEST_FAIL("BYPASS_BATCH_MERGED_WAIT=%s: status %#x", modes[i], st);
		}
		return test_pass("batch/preload-epexcl");
	}
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CHECK(lfd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
	socklen_t len = sizeof(a);
	CHECK(getsockname(lfd, (struct sockaddr *)&a, &len) == 0);
	CHECK(listen(lfd, 16) == 0);
	const char *m = getenv("BYPASS_BATCH_MERGED_WAIT");
	for (int r = 0; r < ROUNDS; r++) {
		long nr[2];
		int woke = round_once(lfd, &a, nr);
		TEST_LOG("merged wait %s, round %d: the threads asleep in system calls "
			 "%ld and %ld; one connection woke %d thread(s) (a return or a context switch)", m, r, nr[0], nr[1],
			 woke);
		if (woke != 1)
			TEST_FAIL("one connection woke both threads (a return or a context switch), whose epolls watch the "
				  "listening socket with EPOLLEXCLUSIVE (merged wait %s)", m);
	}
	close(lfd);
	return 0;
}
