/* SPDX-License-Identifier: MIT */
/*
 * pkey: with BYPASS_IPC_PKEY the arena is tagged with a protection key:
 * reading a received message in place works, writing into a loan works,
 * and a stray write from application code faults with SEGV_PKUERR.
 * Where protection keys are absent (CPU without PKU, OS without OSPKE),
 * listen and connect refuse the flag with -EOPNOTSUPP and the test skips
 * with the reason.
 */
#include <setjmp.h>

#include "util.h"

static sigjmp_buf jb;
static volatile int faulted;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	faulted = si->si_code;
	siglongjmp(jb, 1);
}

int main(void)
{
	test_timeout(30);
	const char *why = NULL;
	int ok = bypass_ipc_pkey_supported(&why);
	CHECK(ok == 0 || ok == 1);
	CHECK(why != NULL);
	struct bypass_ipc_opts o = { .flags = BYPASS_IPC_PKEY };
	bypass_ipc_service *svc;
	char name[64];
	test_svc_name(name, sizeof(name), "pkey");
	if (!ok) {
		CHECK_ERR(bypass_ipc_listen(name, &o, &svc), -EOPNOTSUPP);
		bypass_ipc_conn *c;
		CHECK_ERR(bypass_ipc_connect(name, &o, &c), -EOPNOTSUPP);
		SKIP("memory protection keys unavailable: %s", why);
	}
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bypass_ipc_conn *c = test_connect(name, NULL);
		CHECK_ERR(bypass_ipc_send(c, "hello", 6, BYPASS_FOREVER), 0);
		struct bypass_ipc_msg m;
		/* the server's answer arrives, readable in place here too */
		CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
		CHECK_EQ(m.len, 7);
		CHECK(!memcmp(m.data, "answer", 7));
		CHECK_ERR(bypass_ipc_release(c, &m), 0);
		/* then the server closes: the next receive reports it */
		CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), -ECONNRESET);
		_exit(0);
	}
	bypass_ipc_conn *c = test_accept(svc);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK(!memcmp(m.data, "hello", 6));          /* reads in place work */
	void *loan;
	CHECK_ERR(bypass_ipc_loan(c, 16, &loan, 0), 0);
	memcpy(loan, "answer", 7);                   /* writes into a loan work */
	CHECK_ERR(bypass_ipc_send(c, loan, 7, 0), 0);
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	struct sigaction old;
	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(jb, 1))
		*(volatile char *)m.data = 'X';          /* a stray write */
	sigaction(SIGSEGV, &old, NULL);
	CHECK_EQ(faulted, SEGV_PKUERR);
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	CHECK_ERR(bypass_ipc_close(c), 0);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	return test_pass("ipc/pkey");
}
