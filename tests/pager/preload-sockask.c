/* SPDX-License-Identifier: MIT */
/*
 * preload-sockask: a thread whose own faults evicted (its write-backs may
 * be in flight: the flag stays set until its next settle) must not pay a
 * getsockopt for the socket's timeout on a receive that does not block
 * (issue 32, step 2's cost: 755dd90 asked on every recv/recvfrom/recvmsg
 * and send/sendto/sendmsg made with the flag set, 154 ns each on the
 * project's VM against a 564 ns 1-byte send+recv pair).
 *
 * Under scope=process a thread faults one page at a time with the budget
 * full of dirty pages, and after each fault sends one byte on a blocking
 * socket pair without timeouts, peeks at it and takes it (recv, recvfrom,
 * recvmsg in turn), and receives on a non-blocking socket with a timeout
 * and nothing queued (EAGAIN).  A seccomp filter on that thread traps
 * getsockopt(SOL_SOCKET, SO_RCVTIMEO / SO_SNDTIMEO) and counts the asks:
 * the sends still ask (a look with MSG_DONTWAIT could send part: see
 * preload/pager/io.c), which proves the flag was set; the receives must
 * not.  Then the paths that do ask: a blocking receive that waits for a
 * byte another thread sends later, and a MSG_WAITALL receive; each must
 * return the bytes sent.  No timing decides a result.
 */
#include "pager/preload-util.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>

#define N (4 * PP_BUDGET)
#define PG 4096ul
#define AREA (2ul << 20)
#define PAGES 64 /* faults, each followed by the calls */

static unsigned char *area, *junk;

/* Asks trapped in the faulting thread: [1] SO_RCVTIMEO, [2] SO_SNDTIMEO. */
static _Atomic long asks[3];

static void on_sys(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	if (si->si_errno == 1 || si->si_errno == 2)
		asks[si->si_errno]++;
#if defined(__x86_64__)
	/* the call returns 0, its timeval left as the caller set it (zero:
	 * no timeout, which every socket here but nb has) */
	((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RAX] = 0;
#else
	(void)ctx;
#endif
}

/* Trap the calling thread's getsockopt of the two timeouts (SECCOMP_RET_DATA
 * 1 or 2 comes as si_errno).  0, or -errno. */
static int trap_asks(void)
{
#if defined(__x86_64__)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getsockopt, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* the low halves of level and name (little-endian) */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOL_SOCKET, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SO_RCVTIMEO, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SO_SNDTIMEO, 2, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | 2),
	};
	struct sock_fprog prog = { .len = (unsigned short)BP_ARRAY_SIZE(f), .filter = f };
	struct sigaction sa = { .sa_sigaction = on_sys, .sa_flags = SA_SIGINFO };
	/* this thread only (no TSYNC): the main thread is not filtered */
	bool ok = !sigaction(SIGSYS, &sa, NULL) && !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
		  !prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
	return ok ? 0 : -errno;
#else
	return -ENOSYS;
#endif
}

struct env {
	int a, b; /* a blocking stream pair, no timeouts: a sends, b receives */
	int nb;   /* non-blocking, SO_RCVTIMEO set, nothing ever sent to it */
	int trapped; /* trap_asks()'s result in the faulting thread */
	long rx_looks, tx_looks; /* asks made by the calls after the faults */
};
static struct env E;

static void take(int i, unsigned char want)
{
	unsigned char got[64] = { 0 };
	ssize_t r;
	switch (i % 3) {
	case 0:
		r = recv(E.b, got, sizeof(got), 0);
		break;
	case 1:
		r = recvfrom(E.b, got, sizeof(got), 0, NULL, NULL);
		break;
	default: {
		struct iovec v = { got, sizeof(got) };
		struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
		r = recvmsg(E.b, &m, 0);
	}
	}
	if (r != 1 || got[0] != want)
		TEST_FAIL("page %d: receive %d returned %zd (%s), byte %u for %u", i, i % 3, r,
			  r < 0 ? strerror(errno) : "", (unsigned)got[0], (unsigned)want);
}

/* Send 0xa5 (and 0x5a if arg says 2), a moment apart. */
static void *later(void *arg)
{
	static const unsigned char two[2] = { 0xa5, 0x5a };
	for (intptr_t i = 0; i < (intptr_t)arg; i++) {
		test_sleep_ms(20);
		CHECK_EQ(send(E.a, two + i, 1, 0), 1);
	}
	return NULL;
}

static void *faulter(void *arg)
{
	(void)arg;
	E.trapped = trap_asks();
	if (E.trapped)
		return NULL;
	for (int i = 0; i < PAGES; i++) {
		area[(size_t)i * PG]++; /* a fault that needs room */
		unsigned char b = (unsigned char)(i * 7 + 1), got[64] = { 0 };
		long rx0 = asks[1], tx0 = asks[2];
		CHECK_EQ(send(E.a, &b, 1, 0), 1);
		E.tx_looks += asks[2] - tx0;
		ssize_t r = recv(E.b, got, sizeof(got), MSG_PEEK);
		if (r != 1 || got[0] != b)
			TEST_FAIL("page %d: peek returned %zd, byte %u for %u", i, r,
				  (unsigned)got[0], (unsigned)b);
		take(i, b);
		r = recv(E.nb, got, sizeof(got), 0);
		if (r != -1 || (errno != EAGAIN && errno != EWOULDBLOCK))
			TEST_FAIL("page %d: receive on the non-blocking socket returned %zd (%s)", i,
				  r, r < 0 ? strerror(errno) : "");
		E.rx_looks += asks[1] - rx0;
	}
	/* The asking paths: a receive that waits (for a byte sent later), and
	 * one with MSG_WAITALL (for two bytes sent apart). */
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, later, (void *)1), 0);
	unsigned char got[2] = { 0 };
	ssize_t r = recv(E.b, got, 1, 0);
	if (r != 1 || got[0] != 0xa5)
		TEST_FAIL("the receive that waits returned %zd (%s), byte %u", r,
			  r < 0 ? strerror(errno) : "", (unsigned)got[0]);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_create(&t, NULL, later, (void *)2), 0);
	r = recv(E.b, got, 2, MSG_WAITALL);
	if (r != 2 || got[0] != 0xa5 || got[1] != 0x5a)
		TEST_FAIL("the MSG_WAITALL receive returned %zd (%s)", r,
			  r < 0 ? strerror(errno) : "");
	CHECK_EQ(pthread_join(t, NULL), 0);
	return NULL;
}

static void run(void)
{
	area = pp_region(AREA);
	junk = pp_region(N);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	E.a = sv[0];
	E.b = sv[1];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	E.nb = sv[0]; /* sv[1] stays open: nothing queued, no end */
	struct timeval tv = { 1, 0 };
	CHECK_EQ(setsockopt(E.nb, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	pp_dirty(junk, N);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, faulter, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	if (E.trapped)
		SKIP("seccomp unavailable (%s): the asks cannot be counted", strerror(-E.trapped));
	TEST_LOG("after %d faults: sends asked %ld times, receives %ld", PAGES, E.tx_looks,
		 E.rx_looks);
	if (!E.tx_looks)
		SKIP("no send found the thread's write-back flag set: proves nothing");
	if (E.rx_looks)
		TEST_FAIL("receives that did not block asked for the timeout %ld times "
			  "(with the flag set)", E.rx_looks);
}

int main(int argc, char **argv)
{
	(void)argc;
	pp_start(120);
	if (pp_preloaded()) {
		run();
		return 0;
	}
	static const char *const process[] = { "BYPASS_PAGER_BUDGET_SCOPE=process", NULL };
	pp_run_ok(argv, "run", process);
	pp_check_evicted_unpinned();
	return test_pass("pager/preload-sockask");
}
