/* SPDX-License-Identifier: MIT */
/*
 * pkey: with BYPASS_IPC_PKEY on both sides, every path of the library runs
 * with the arena tagged by a protection key and write-disabled outside it:
 * the rings are pre-faulted all the same (populate before the key), sends
 * by copy and by loan, receives read in place, calls and replies (request
 * and answer built in loans), a loan cancelled, bypass_ipc_arm with poll,
 * epoll's arming and sleep, a peer that closes and a peer (with lazily
 * faulted rings) that is killed.  Stray writes from application code fault with
 * SEGV_PKUERR: into a received message, into a loan already sent, into the
 * rings' other pages, and into a loan from a thread that did not take it.
 * Where protection keys are absent (CPU without PKU, OS without OSPKE,
 * pkey_alloc refused), listen and connect refuse the flag with -EOPNOTSUPP
 * and the test skips with the reason.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/prctl.h>

#include "util.h"

#define RING 65536

static __thread sigjmp_buf jb;
static __thread volatile int fault_code;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_code = si->si_code;
	siglongjmp(jb, 1);
}

static inline uint32_t rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static inline void wrpkru(uint32_t v)
{
	__asm__ __volatile__(".byte 0x0f,0x01,0xef" : : "a"(v), "c"(0), "d"(0) : "memory");
}

/*
 * Write one byte at p: the si_code of the fault, or 0 if the write went
 * through.  A signal handler runs with the kernel's default PKRU, which
 * siglongjmp leaves in place: restore the thread's own afterwards.
 */
static int stray_write(void *p)
{
	uint32_t pkru = rdpkru();
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO }, old;
	fault_code = 0;
	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(jb, 1))
		*(volatile char *)p = 'X';
	sigaction(SIGSEGV, &old, NULL);
	wrpkru(pkru);
	return fault_code;
}

/* A thread started before the loan (a new thread inherits its creator's
 * PKRU, open while it holds a loan): it writes where it is told. */
static int to_thread[2];

static void *thread_writes(void *unused)
{
	(void)unused;
	void *p;
	if (read(to_thread[0], &p, sizeof(p)) != sizeof(p))
		return (void *)-1;
	return (void *)(intptr_t)stray_write(p);
}

/* Both rings (and the control page) are resident: pre-faulted. */
static void check_populated(const void *in_arena)
{
	long kb = test_rss_kb(in_arena);
	if (kb < 2 * RING / 1024)
		TEST_FAIL("arena resident %ld kB, want >= %d (the rings pre-faulted)", kb,
			  2 * RING / 1024);
}

static void client(const char *name)
{
	struct bypass_ipc_opts o = { .flags = BYPASS_IPC_PKEY };
	bypass_ipc_conn *c = test_connect(name, &o);
	/* a send by copy */
	CHECK_ERR(bypass_ipc_send(c, "hello", 6, BYPASS_FOREVER), 0);
	/* a call whose request is built in a loan; the answer read in place */
	void *loan;
	CHECK_ERR(bypass_ipc_loan(c, 32, &loan, BYPASS_FOREVER), 0);
	memcpy(loan, "ping", 5);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_call(c, loan, 5, &m, 10 * BYPASS_SEC), 0);
	CHECK_EQ(m.len, 5);
	CHECK(!memcmp(m.data, "pong", 5));
	check_populated(m.data);
	CHECK_EQ(stray_write(m.data), SEGV_PKUERR);     /* a received message */
	CHECK_EQ(stray_write(loan), SEGV_PKUERR);       /* a loan already sent */
	CHECK(!memcmp(m.data, "pong", 5));
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	/* a loan: its thread writes, another thread's write faults */
	pthread_t t;
	void *res;
	CHECK(pipe(to_thread) == 0);
	CHECK(pthread_create(&t, NULL, thread_writes, NULL) == 0);
	CHECK_ERR(bypass_ipc_loan(c, 32, &loan, BYPASS_FOREVER), 0);
	CHECK(write(to_thread[1], &loan, sizeof(loan)) == sizeof(loan));
	CHECK(pthread_join(t, &res) == 0);
	CHECK_EQ((intptr_t)res, SEGV_PKUERR);
	memcpy(loan, "thread-ok", 10);
	CHECK_ERR(bypass_ipc_send(c, loan, 10, 0), 0);
	/* a loan given back unsent closes the key again */
	CHECK_ERR(bypass_ipc_loan(c, 32, &loan, BYPASS_FOREVER), 0);
	memcpy(loan, "never", 6);
	CHECK_ERR(bypass_ipc_loan_cancel(c, loan), 0);
	CHECK_EQ(stray_write(loan), SEGV_PKUERR);
	/* the low-level route: arm, poll the descriptor, receive; a late wake
	 * byte (for the answer already read) may make it readable early:
	 * then recv says -EAGAIN and we arm again */
	for (int tries = 0;; tries++) {
		CHECK(tries < 100);
		int a = bypass_ipc_arm(c);
		CHECK(a == 0 || a == 1);
		struct pollfd pfd = { .fd = bypass_ipc_fd(c), .events = POLLIN };
		if (a == 0)
			CHECK_EQ(poll(&pfd, 1, 10000), 1);
		int r = bypass_ipc_recv(c, &m, 0);
		if (r == 0)
			break;
		CHECK_ERR(r, -EAGAIN);
	}
	CHECK(!memcmp(m.data, "armed", 6));
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	/* epoll: nothing yet, so it arms the connection and sleeps */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 5 }, ev[2];
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, c, &e), 0);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 2, 10 * BYPASS_SEC), 1);
	CHECK_EQ(ev[0].data.u64, 5);
	CHECK_ERR(bypass_ipc_recv(c, &m, 0), 0);
	CHECK(!memcmp(m.data, "late", 5));
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL), 0);
	close(ep);
	/* what the server sent before closing arrives, then the end */
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK(!memcmp(m.data, "bye", 4));
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), -ECONNRESET);
	CHECK_ERR(bypass_ipc_send(c, "x", 1, 0), -EPIPE);
	CHECK_ERR(bypass_ipc_close(c), 0);
	_exit(0);
}

static void server(bypass_ipc_service *svc, pid_t pid)
{
	bypass_ipc_conn *c = test_accept(svc);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK(!memcmp(m.data, "hello", 6));          /* reads in place work */
	check_populated(m.data);
	CHECK_EQ(stray_write(m.data), SEGV_PKUERR);
	/* any page of the rings, here the one after the message's */
	CHECK_EQ(stray_write((char *)m.data + 4096), SEGV_PKUERR);
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK(m.flags & BYPASS_IPC_MSG_CALL);
	CHECK(!memcmp(m.data, "ping", 5));
	void *loan;
	CHECK_ERR(bypass_ipc_loan(c, 16, &loan, 0), 0);
	memcpy(loan, "pong", 5);                     /* writes into a loan work */
	CHECK_ERR(bypass_ipc_reply(c, &m, loan, 5, 0), 0);
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK(!memcmp(m.data, "thread-ok", 10));
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	usleep(100000); /* the client polls its armed descriptor */
	CHECK_ERR(bypass_ipc_send(c, "armed", 6, BYPASS_FOREVER), 0);
	usleep(100000); /* the client goes to sleep in epoll */
	CHECK_ERR(bypass_ipc_send(c, "late", 5, BYPASS_FOREVER), 0);
	CHECK_ERR(bypass_ipc_send(c, "bye", 4, BYPASS_FOREVER), 0);
	CHECK_ERR(bypass_ipc_close(c), 0);
	wait_child(pid);
}

/* A guarded peer that is killed: errors, not a hang, on this guarded side. */
static void killed_peer(const char *name, bypass_ipc_service *svc)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* this client's rings fault in lazily, under the key */
		struct bypass_ipc_opts o = { .flags = BYPASS_IPC_PKEY | BYPASS_IPC_LAZY };
		bypass_ipc_conn *c = test_connect(name, &o);
		CHECK_ERR(bypass_ipc_send(c, "x", 2, BYPASS_FOREVER), 0);
		for (;;)
			pause();
	}
	bypass_ipc_conn *c = test_accept(svc);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 7 }, ev[2];
	CHECK_ERR(bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, c, &e), 0);
	kill(pid, SIGKILL);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_EQ(bypass_ipc_epoll_wait(ep, ev, 2, 10 * BYPASS_SEC), 1);
	CHECK(ev[0].events & EPOLLHUP);
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), -ECONNRESET);
	CHECK_ERR(bypass_ipc_send(c, "y", 2, BYPASS_FOREVER), -EPIPE);
	CHECK_ERR(bypass_ipc_close(c), 0);
	close(ep);
}

int main(void)
{
	test_timeout(30);
	const char *why = NULL;
	int ok = bypass_ipc_pkey_supported(&why);
	CHECK(ok == 0 || ok == 1);
	CHECK(why != NULL);
	struct bypass_ipc_opts o = { .flags = BYPASS_IPC_PKEY, .ring_size = RING };
	bypass_ipc_service *svc;
	char name[64];
	test_svc_name(name, sizeof(name), "pkey");
	if (!ok) {
		CHECK_ERR(bypass_ipc_listen(name, &o, &svc), -EOPNOTSUPP);
		bypass_ipc_conn *c;
		CHECK_ERR(bypass_ipc_connect(name, &o, &c), -EOPNOTSUPP);
		SKIP("memory protection keys unavailable: %s", why);
	}
	TEST_LOG("protection keys: %s", why);
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		client(name);
	server(svc, pid);
	killed_peer(name, svc);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	return test_pass("ipc/pkey");
}
