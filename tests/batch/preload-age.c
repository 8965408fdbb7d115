/* SPDX-License-Identifier: MIT */
/*
 * preload-age: the segment age limit, BYPASS_BATCH_MAX_DELAY_US.
 *
 * How the age flush runs: there is no timer, thread or signal behind it.
 * The preload looks at the segment's age only when the program queues more
 * (check_age in preload/batch/defer.c, from bp_bt_tx_room: a write, send,
 * writev, sendmsg or sendfile that would be deferred).  If the segment is
 * older than the limit, that call submits it first, then queues its own
 * data in a fresh segment.  A program that defers a write and then blocks
 * in something the preload does not see (a sleep, a futex) keeps the write
 * until it calls in again, whatever the limit; this test checks what the
 * preload really does.
 *
 * The test runs itself again under libbypass-batch.so (the child) with two
 * socket pairs and two control pipes from the parent (which is not under
 * the preload and holds the peers).  The child starts a segment (epoll_wait),
 * writes "A" on the first socket, sleeps 20 ms with a raw system call (the
 * preload sees nothing: at least 20 ms pass, so a 2 ms limit is always
 * exceeded, however fast or slow the machine), writes "B" on the second
 * socket, tells the parent with a raw write on a pipe, and blocks in a raw
 * read of the other pipe.  Then:
 *  - with BYPASS_BATCH_MAX_DELAY_US=2000 the write of "B" submitted the old
 *    segment: "A" reaches the peer although the child makes no further call
 *    (10 s bound, a hang guard only), and "B" is still deferred;
 *  - with 0 (no limit) both stay deferred until the child's next epoll_wait;
 *  - a bad value (negative, not a number, too large for the counter or for
 *    nanoseconds) is ignored with a warning that names the variable
 *    (BYPASS_LOG=warn), and the default (1000 us) applies: the write of "B"
 *    20 ms later submits "A", as with 2000.
 * In every case, after the parent says go, the child's epoll_wait submits
 * what is left and both peers get their byte.  Nothing here fails because the
 * machine is slow or fast: the only waits are the 20 ms sleep (a lower
 * bound) and the 10 s hang guards.
 */
#include <poll.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>

#include "batch/util.h"

#define GUARD_MS 10000

/* ------------------------------------------------------------ the child */

static void raw_write(int fd, char c)
{
	if (syscall(SYS_write, fd, &c, 1) != 1)
		_exit(3);
}

static void child(const char *fds)
{
	int s1, s2, done, go;
	if (sscanf(fds, "%d,%d,%d,%d", &s1, &s2, &done, &go) != 4)
		_exit(4);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0); /* a segment starts */
	CHECK_EQ(write(s1, "A", 1), 1);
	/* Past any limit under 20 ms, with no call into the preload. */
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	while (syscall(SYS_nanosleep, &ts, &ts) != 0)
		CHECK(errno == EINTR);
	CHECK_EQ(write(s2, "B", 1), 1); /* queues more: the age is checked */
	raw_write(done, 'd');
	char c;
	if (syscall(SYS_read, go, &c, 1) != 1) /* blocks, unseen by the preload */
		_exit(5);
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0); /* the flush point */
	raw_write(done, 'e');
	if (syscall(SYS_read, go, &c, 1) < 0)
		_exit(6);
	_exit(0);
}

/* ------------------------------------------------------------ the parent */

static bool nothing_yet(int fd)
{
	char c;
	return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* One byte from fd within the hang guard, or -1 (EOF, error, or none). */
static int byte_within_guard(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;
	do
		r = poll(&p, 1, GUARD_MS);
	while (r < 0 && errno == EINTR);
	if (r != 1)
		return -1;
	unsigned char c;
	return read(fd, &c, 1) == 1 ? c : -1;
}

struct age_case {
	const char *value;  /* BYPASS_BATCH_MAX_DELAY_US */
	bool age_flush;     /* "B" 20 ms after "A" submits "A" */
	bool warns;         /* ignored with a warning naming the variable */
};

static void run_case(char **argv, const struct age_case *k)
{
	int a[2], b[2], done[2], go[2], err[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	CHECK(pipe(done) == 0 && pipe(go) == 0 && pipe(err) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(a[1]);
		close(b[1]);
		close(done[0]);
		close(go[1]);
		close(err[0]);
		dup2(err[1], 2);
		close(err[1]);
		char fds[64];
		snprintf(fds, sizeof(fds), "%d,%d,%d,%d", a[0], b[0], done[1], go[0]);
		setenv("BT_AGE_FDS", fds, 1);
		setenv("LD_PRELOAD", preload_env(), 1);
		setenv("BYPASS_BATCH", "1", 1);
		setenv("BYPASS_LOG", "warn", 1);
		setenv("BYPASS_BATCH_MAX_DELAY_US", k->value, 1);
		setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(a[0]);
	close(b[0]);
	close(done[1]);
	close(go[0]);
	close(err[1]);

	if (byte_within_guard(done[0]) != 'd')
		TEST_FAIL("MAX_DELAY_US=%s: the child did not reach its sleep", k->value);
	if (k->age_flush) {
		/* The child is blocked in a raw read: only the write of "B"
		 * can have submitted "A". */
		if (byte_within_guard(a[1]) != 'A')
			TEST_FAIL("MAX_DELAY_US=%s: a write 20 ms after a deferred one "
				  "did not submit it (age limit not applied)", k->value);
		CHECK(nothing_yet(b[1])); /* "B" waits in the new segment */
	} else {
		if (!nothing_yet(a[1]))
			TEST_FAIL("MAX_DELAY_US=%s: \"A\" was sent before the flush point",
				  k->value);
		CHECK(nothing_yet(b[1]));
	}
	raw_write(go[1], 'g');
	if (byte_within_guard(done[0]) != 'e')
		TEST_FAIL("MAX_DELAY_US=%s: the child did not reach its epoll_wait", k->value);
	if (!k->age_flush)
		CHECK_EQ(byte_within_guard(a[1]), 'A');
	CHECK_EQ(byte_within_guard(b[1]), 'B');
	CHECK(nothing_yet(a[1]));
	CHECK(nothing_yet(b[1]));
	raw_write(go[1], 'x');
	wait_child(pid);

	char msg[8192];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(msg) - 1 && (r = read(err[0], msg + n, sizeof(msg) - 1 - n)) > 0)
		n += (size_t)r;
	while (n && msg[n - 1] == '\n')
		n--;
	msg[n] = 0;
	TEST_LOG("MAX_DELAY_US=%-28s flushed by age: %s, stderr: %s", k->value,
		 k->age_flush ? "yes" : "no", n ? msg : "(none)");
	bool warned = strstr(msg, "BYPASS_BATCH_MAX_DELAY_US") && strstr(msg, "ignoring");
	if (k->warns && !warned)
		TEST_FAIL("MAX_DELAY_US=%s: no warning naming the variable", k->value);
	if (!k->warns && strstr(msg, "BYPASS_BATCH_MAX_DELAY_US"))
		TEST_FAIL("MAX_DELAY_US=%s: an unexpected warning", k->value);
	close(a[1]);
	close(b[1]);
	close(done[0]);
	close(go[1]);
	close(err[0]);
}

int main(int argc, char **argv)
{
	(void)argc;
	test_timeout(120);
	SKIP_UNDER_TSAN();
	const char *fds = getenv("BT_AGE_FDS");
	if (fds) {
		child(fds);
		return 1;
	}
	if (access(preload_path(), R_OK))
		SKIP("no %s", preload_path());
	const struct age_case cases[] = {
		{ "2000", true, false },
		{ "0", false, false },
		{ "-5", true, true },
		{ "-0", true, true },
		{ "soon", true, true },
		{ "2ms", true, true },
		{ "99999999999999999999999", true, true }, /* over 2^64 */
		{ "18446744073709552", true, true },     /* x1000 wraps to 384 ns */
		{ "2305843009213693952", true, true },   /* 2^61: x1000 wraps to 0 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(argv, &cases[i]);
	return test_pass("batch/preload-age");
}
