/* SPDX-License-Identifier: MIT */
/*
 * bp_proc_alive (src/core/proc.c): a live process is alive, a dead one is
 * not, through a pidfd and through kill(pid, 0); and a signal that lands
 * while the check polls the pidfd (the poll fails with EINTR) never makes
 * a live process dead (it did: notify's doorbell took such a peer for
 * dead).  A fast interval timer interrupts the checks; its handler counts
 * the system calls it interrupted with EINTR (the interrupted context's
 * return value), and the checks go on until several have, within a bound
 * (skipped if no signal landed inside a poll by then: not a failure).
 */
#include "harness.h"
#include "core/internal.h"
#include "core/testutil.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>

static volatile sig_atomic_t ticks, eintrs;

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	ticks++;
	/* Interrupted right after a syscall instruction that now returns
	 * -EINTR: a system call the signal cut short. */
	if (uc->uc_mcontext.gregs[REG_RAX] == -EINTR && ip[-2] == 0x0f && ip[-1] == 0x05)
		eintrs++;
}

static pid_t live_child(void)
{
	pid_t c = fork();
	if (c == 0) {
		for (;;)
			pause();
	}
	CHECK(c > 0);
	return c;
}

int main(void)
{
	test_timeout(60); /* a hang, not a timing */

	/* Bad and plain cases. */
	CHECK_EQ(bp_proc_alive(0, NULL), 0);
	CHECK_EQ(bp_proc_alive(-1, NULL), 0);
	CHECK_EQ(bp_proc_alive(getpid(), NULL), 1);
	pid_t c = live_child();
	int fd = -1;
	CHECK_EQ(bp_proc_alive(c, NULL), 1);
	CHECK_EQ(bp_proc_alive(c, &fd), 1);
	bool pidfd = fd >= 0;
	if (!pidfd)
		TEST_LOG("no pidfd here: the kill(pid, 0) path only");

	/* Signals every 20 us while checking, until 20 checks were cut short
	 * by one (or 5 s). */
	struct sigaction sa = { .sa_sigaction = on_tick, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	timer_t t;
	CHECK_EQ(timer_create(CLOCK_MONOTONIC, &sev, &t), 0);
	struct itimerspec it = { .it_interval = { 0, 20000 }, .it_value = { 0, 20000 } };
	CHECK_EQ(timer_settime(t, 0, &it, NULL), 0);
	uint64_t end = test_now_ns() + 5000000000ull, checks = 0;
	while (eintrs < 20 && test_now_ns() < end) {
		if (!bp_proc_alive(c, &fd))
			TEST_FAIL("a live process reported dead after %llu checks (%d of them "
				  "cut short by a signal, %d signals)",
				  (unsigned long long)checks, (int)eintrs, (int)ticks);
		checks++;
	}
	CHECK_EQ(timer_delete(t), 0);
	TEST_LOG("%llu checks, %d signals, %d system calls cut short by one",
		 (unsigned long long)checks, (int)ticks, (int)eintrs);

	/* Dead: killed, and once reaped. */
	CHECK_EQ(kill(c, SIGKILL), 0);
	int st;
	CHECK_EQ(waitpid(c, &st, 0), c);
	CHECK_EQ(bp_proc_alive(c, &fd), 0);
	int fd2 = -1;
	CHECK_EQ(bp_proc_alive(c, &fd2), 0);
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
	if (!eintrs)
		SKIP("no signal landed inside a check's poll in 5 s (%d signals)", (int)ticks);
	return test_pass("proc-alive");
}
