/* SPDX-License-Identifier: MIT */
/*
 * preload-epwait: the merged wait (queued calls and the program's epoll wait
 * in one io_uring_enter, IORING_OP_EPOLL_WAIT) returns what epoll_wait
 * returns: events and their data, maxevents, timeouts, EINTR from a
 * handler (epoll_wait and epoll_pwait with a mask), errors (EBADF, EINVAL),
 * level- and edge-triggered registrations, EPOLLONESHOT, no event for a
 * socket the program closed while its data was queued, and several threads
 * each with their own epoll.  Every case runs twice: merged (where the
 * kernel has the opcode; the counter proves it was used) and with
 * BYPASS_BATCH_MERGED_WAIT=0 (the old path: submit, then epoll_wait).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <liburing.h>

#include "batch/util.h"
#include <bypass/batch.h>

static void pair(int sv[2])
{
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
}

static void add(int ep, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event e = { .events = events, .data.u64 = data };
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) == 0);
}

/* End the segment now (nothing ready: timeout 0) and start a new one. */
static void boundary(int ep)
{
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0);
}

static void expect(int fd, const char *s)
{
	size_t n = strlen(s);
	char buf[256];
	CHECK_EQ(read_full(fd, buf, n), n);
	if (memcmp(buf, s, n))
		TEST_FAIL("expected \"%s\", got \"%.*s\"", s, (int)n, buf);
}

static bool nothing_yet(int fd)
{
	char c;
	return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A queued write (the segment is open): the peer sees nothing yet. */
static void queue_write(int fd, int peer, const char *s)
{
	CHECK_EQ(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	if (peer >= 0)
		CHECK(nothing_yet(peer));
}

static bool merged_expected;

static void events_and_maxevents(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), a[2], ev[5];
	pair(a);
	add(ep, a[1], EPOLLIN, 1001);
	boundary(ep);
	queue_write(a[0], a[1], "hello");
	struct epoll_event out[8];
	memset(out, 0, sizeof(out));
	CHECK_EQ(epoll_wait(ep, out, 8, 5000), 1);
	CHECK_EQ(out[0].data.u64, 1001);
	CHECK(out[0].events & EPOLLIN);
	expect(a[1], "hello");
	/* maxevents: five ready, two asked for (level-triggered: the same
	 * two again, then the array is never written past maxevents). */
	for (int i = 0; i < 5; i++) {
		ev[i] = eventfd(1, EFD_CLOEXEC);
		add(ep, ev[i], EPOLLIN, 2000 + (uint64_t)i);
	}
	boundary(ep);
	queue_write(a[0], -1, "x");
	memset(out, 0xab, sizeof(out));
	CHECK_EQ(epoll_pwait(ep, out, 2, 5000, NULL), 2);
	for (int i = 0; i < 2; i++)
		CHECK(out[i].data.u64 >= 2000 || out[i].data.u64 == 1001);
	for (size_t i = 2; i < 8; i++)
		CHECK(out[i].data.u64 == 0xababababababababull);
	/* Errors are epoll_wait's, and the queued data still goes. */
	queue_write(a[0], -1, "y");
	CHECK_EQ(epoll_wait(ep, out, 0, 100), -1);
	CHECK_EQ(errno, EINVAL);
	queue_write(a[0], -1, "z");
	CHECK_EQ(epoll_wait(a[0], out, 4, 100), -1);
	CHECK(errno == EINVAL || errno == EBADF);
	queue_write(a[0], -1, "w");
	CHECK_EQ(epoll_wait(ev[0] + 100, out, 4, 100), -1);
	CHECK_EQ(errno, EBADF);
	expect(a[1], "xyzw");
	for (int i = 0; i < 5; i++)
		close(ev[i]);
	close(a[0]);
	close(a[1]);
	close(ep);
}

static void timeouts(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), a[2], idle = eventfd(0, EFD_CLOEXEC);
	pair(a);
	add(ep, idle, EPOLLIN, 7);
	boundary(ep);
	struct epoll_event out[4];
	queue_write(a[0], a[1], "t1");
	uint64_t t0 = now_ms();
	int r0 = epoll_wait(ep, out, 4, 80);
	if (r0 != 0)
		TEST_FAIL("epoll_wait(80 ms): %d (%s)", r0, strerror(errno));
	uint64_t dt = now_ms() - t0;
	if (dt < 75)
		TEST_FAIL("epoll_wait(80 ms) returned after %llu ms", (unsigned long long)dt);
	expect(a[1], "t1");
	/* epoll_pwait2's timespec. */
	queue_write(a[0], a[1], "t2");
	struct timespec ts = { 0, 60 * 1000000 };
	t0 = now_ms();
	CHECK_EQ(epoll_pwait2(ep, out, 4, &ts, NULL), 0);
	CHECK(now_ms() - t0 >= 55);
	expect(a[1], "t2");
	/* Something becomes ready during the wait: returned at once. */
	queue_write(a[0], a[1], "t3");
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		usleep(30000);
		uint64_t one = 1;
		_exit(write(idle, &one, 8) == 8 ? 0 : 1);
	}
	t0 = now_ms();
	CHECK_EQ(epoll_wait(ep, out, 4, 10000), 1);
	CHECK_EQ(out[0].data.u64, 7);
	CHECK(now_ms() - t0 < 5000);
	wait_child(pid);
	expect(a[1], "t3");
	close(idle);
	close(a[0]);
	close(a[1]);
	close(ep);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void signals(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), a[2], idle = eventfd(0, EFD_CLOEXEC);
	pair(a);
	add(ep, idle, EPOLLIN, 7);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART; /* epoll_wait is never restarted */
	CHECK(sigaction(SIGALRM, &sa, &old) == 0);
	boundary(ep);
	struct epoll_event out[4];
	struct itimerval it = { { 0, 0 }, { 0, 40000 } };
	queue_write(a[0], a[1], "s1");
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	CHECK_EQ(epoll_wait(ep, out, 4, -1), -1);
	CHECK_EQ(errno, EINTR);
	CHECK_EQ(alarms, 1);
	expect(a[1], "s1");
	/* epoll_pwait: SIGALRM blocked in the thread, let in by the mask. */
	sigset_t block, mask;
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	CHECK(sigprocmask(SIG_BLOCK, &block, NULL) == 0);
	sigemptyset(&mask);
	queue_write(a[0], a[1], "s2");
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	CHECK_EQ(epoll_pwait(ep, out, 4, 10000, &mask), -1);
	CHECK_EQ(errno, EINTR);
	CHECK_EQ(alarms, 2);
	/* The thread's mask is back: a pending SIGALRM stays pending. */
	sigset_t cur;
	CHECK(sigprocmask(SIG_BLOCK, NULL, &cur) == 0);
	CHECK(sigismember(&cur, SIGALRM));
	expect(a[1], "s2");
	/* With the mask blocking it, the signal does not end the wait. */
	queue_write(a[0], a[1], "s3");
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	CHECK_EQ(epoll_pwait(ep, out, 4, 100, &block), 0);
	CHECK_EQ(alarms, 2);
	CHECK(sigprocmask(SIG_UNBLOCK, &block, NULL) == 0);
	/* Pending, so it runs now (or, on a loaded machine, when the timer
	 * finally fires). */
	for (int i = 0; i < 5000 && alarms < 3; i++)
		usleep(1000);
	CHECK_EQ(alarms, 3);
	expect(a[1], "s3");
	CHECK(sigaction(SIGALRM, &old, NULL) == 0);
	close(idle);
	close(a[0]);
	close(a[1]);
	close(ep);
}

static void triggers(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), a[2], lt[2], et[2], os[2];
	pair(a);
	pair(lt);
	pair(et);
	pair(os);
	add(ep, lt[1], EPOLLIN, 1);
	add(ep, et[1], EPOLLIN | EPOLLET, 2);
	add(ep, os[1], EPOLLIN | EPOLLONESHOT, 3);
	CHECK_EQ(write(lt[0], "L", 1), 1); /* before the segment: not queued */
	CHECK_EQ(write(et[0], "E", 1), 1);
	CHECK_EQ(write(os[0], "O", 1), 1);
	struct epoll_event out[8];
	CHECK_EQ(epoll_wait(ep, out, 8, 0), 3); /* opens the segment */
	unsigned seen = 0;
	for (int round = 0; round < 3; round++) {
		queue_write(a[0], -1, "r");
		int n = epoll_wait(ep, out, 8, 50);
		/* Level: reported every time; edge and one-shot: not again. */
		CHECK_EQ(n, 1);
		CHECK_EQ(out[0].data.u64, 1);
		seen++;
	}
	CHECK_EQ(seen, 3);
	/* A new edge, and the one-shot re-armed. */
	queue_write(et[0], -1, "E");
	struct epoll_event re = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 3 };
	CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, os[1], &re) == 0);
	/* The queued byte may arrive after the wait looked (then the edge
	 * comes with the next wait): collect over a few waits. */
	unsigned mask = 0;
	for (int i = 0; i < 3 && (mask & 0xc) != 0xc; i++) {
		int n = epoll_wait(ep, out, 8, 1000);
		CHECK(n >= 1);
		for (int j = 0; j < n; j++)
			mask |= 1u << out[j].data.u64;
	}
	CHECK_EQ(mask & 0xc, 0xc);
	expect(a[1], "rrr");
	int fds[] = { a[0], a[1], lt[0], lt[1], et[0], et[1], os[0], os[1], ep };
	for (size_t i = 0; i < BP_ARRAY_SIZE(fds); i++)
		close(fds[i]);
}

/* A socket closed by the program while its data is queued is never reported
 * again (the program may have freed what its event's data points to). */
static void closed_while_queued(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), x[2], y[2];
	for (int round = 0; round < 20; round++) {
		pair(x);
		pair(y);
		add(ep, x[0], EPOLLIN | EPOLLOUT | EPOLLRDHUP, 0xdead0000u + (unsigned)round);
		add(ep, y[1], EPOLLIN, 0xbeef);
		/* x[0] is always writable: reported by every wait while it is
		 * registered (unread data would make its close a reset). */
		boundary(ep);
		queue_write(x[0], x[1], "bye");
		CHECK_EQ(close(x[0]), 0);
		if (round & 1)
			queue_write(y[0], y[1], "other"); /* another chain too */
		else
			CHECK_EQ(write(y[0], "other", 5), 5);
		struct epoll_event out[8];
		int n = epoll_wait(ep, out, 8, 1000);
		CHECK(n >= 1);
		for (int i = 0; i < n; i++)
			if ((out[i].data.u64 & 0xffff0000u) == 0xdead0000u)
				TEST_FAIL("round %d: event %#x for a closed socket", round,
					  out[i].events);
		expect(x[1], "bye");
		char c;
		CHECK_EQ(read(x[1], &c, 1), 0); /* then EOF: closed after the data */
		expect(y[1], "other");
		close(x[1]);
		close(y[0]);
		CHECK(epoll_ctl(ep, EPOLL_CTL_DEL, y[1], NULL) == 0);
		close(y[1]);
	}
	close(ep);
}

#define THREADS 4
#define ITERS 300

static void *worker(void *arg)
{
	long id = (long)arg;
	int ep = epoll_create1(EPOLL_CLOEXEC), a[2], b[2];
	pair(a);
	pair(b);
	add(ep, a[1], EPOLLIN, (uint64_t)id);
	add(ep, b[0], EPOLLIN, 100 + (uint64_t)id);
	boundary(ep);
	char msg[32], buf[32];
	for (int i = 0; i < ITERS; i++) {
		int n = snprintf(msg, sizeof(msg), "t%ld-%d;", id, i);
		CHECK_EQ(write(a[0], msg, (size_t)n), n);
		struct epoll_event out[4];
		int got = epoll_wait(ep, out, 4, 5000);
		CHECK_EQ(got, 1);
		CHECK_EQ(out[0].data.u64, (uint64_t)id);
		CHECK_EQ(read_full(a[1], buf, (size_t)n), n);
		CHECK(!memcmp(buf, msg, (size_t)n));
		/* Echo back through the other pair, read on the next round. */
		CHECK_EQ(write(b[1], "k", 1), 1);
		got = epoll_wait(ep, out, 4, 5000);
		CHECK_EQ(got, 1);
		CHECK_EQ(out[0].data.u64, 100 + (uint64_t)id);
		CHECK_EQ(read(b[0], buf, 1), 1);
	}
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(ep);
	return NULL;
}

static void threads(void)
{
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
}

static void run_cases(void)
{
	CHECK(dlopen(preload_path(), RTLD_NOLOAD | RTLD_NOW) != NULL);
	const char *m = getenv("BYPASS_BATCH_MERGED_WAIT");
	/* Merged where the kernel has IORING_OP_EPOLL_WAIT (Linux 6.15). */
	struct io_uring probe_ring;
	bool have = false;
	if (io_uring_queue_init(4, &probe_ring, 0) == 0) {
		struct io_uring_probe *p = io_uring_get_probe_ring(&probe_ring);
		have = p && io_uring_opcode_supported(p, 59);
		if (p)
			io_uring_free_probe(p);
		io_uring_queue_exit(&probe_ring);
	}
	merged_expected = have && !(m && !strcmp(m, "0"));
	TEST_LOG("merged wait %s", merged_expected ? "in use"
			  : have ? "off (BYPASS_BATCH_MERGED_WAIT=0)"
				 : "not in this kernel (old path)");
	events_and_maxevents();
	timeouts();
	signals();
	triggers();
	closed_while_queued();
	threads();
	/* The parent checks the counter in the stats line written at exit. */
	printf("merged-expected %d\n", merged_expected);
}

/* The merged_waits counter in the stats line the child wrote at exit. */
static long merged_from(const char *path)
{
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	char line[2048];
	long v = 0;
	int lines = 0;
	while (fgets(line, sizeof(line), f)) {
		lines++;
		CHECK(strstr(line, "\"module\": \"batch\"") != NULL);
		char *p = strstr(line, "\"merged_waits\": ");
		CHECK(p != NULL);
		v += atol(p + strlen("\"merged_waits\": "));
	}
	fclose(f);
	/* The test's process, and the child timeouts() forks (zero: a child
	 * starts with its own counters). */
	CHECK_EQ(lines, 2);
	return v;
}

int main(int argc, char **argv)
{
	(void)argc;
	test_timeout(60);
	SKIP_UNDER_TSAN();
	if (getenv("BT_TEST_PRELOADED")) {
		run_cases();
		return 0;
	}
	if (access(preload_path(), R_OK))
		SKIP("no %s", preload_path());
	const char *modes[] = { "1", "0" };
	char stats[64];
	snprintf(stats, sizeof(stats), "/tmp/bt-epwait-%d.stats", (int)getpid());
	for (int i = 0; i < 2; i++) {
		unlink(stats);
		int out[2];
		CHECK(pipe(out) == 0);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			dup2(out[1], 1);
			close(out[0]);
			setenv("BYPASS_BATCH_MERGED_WAIT", modes[i], 1);
			setenv("BYPASS_STATS_FILE", stats, 1);
			preload_reexec(argv, 60);
			_exit(1);
		}
		close(out[1]);
		char buf[4096];
		size_t got = 0;
		ssize_t n;
		while (got < sizeof(buf) - 1 && (n = read(out[0], buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)n;
		buf[got] = 0;
		close(out[0]);
		fputs(buf, stdout);
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			TEST_FAIL("BYPASS_BATCH_MERGED_WAIT=%s: status %#x", modes[i], st);
		long merged = merged_from(stats);
		TEST_LOG("BYPASS_BATCH_MERGED_WAIT=%s: %ld merged waits", modes[i], merged);
		if (strstr(buf, "merged-expected 1"))
			CHECK(merged >= 6 * ITERS);
		else
			CHECK_EQ(merged, 0);
	}
	unlink(stats);
	return test_pass("batch/preload-epwait");
}
