/* SPDX-License-Identifier: MIT */
/*
 * lib-epipe: the server process dies (SIGKILL) or closes its service, and
 * the next call of a client returns -EPIPE, in library mode without a
 * system call (a child proves it under a seccomp filter that kills it at
 * its first system call but exit), in message mode through the ring.  A
 * service closed from the thread that listened, or from another, clears
 * the liveness word.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "libutil.h"

/* Any system call but exit_group kills the process (SIGSYS). */
static int forbid_syscalls(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { .len = BP_ARRAY_SIZE(f), .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

static pid_t start(char *name, size_t n, const char *so, const char *tag)
{
	test_svc_name(name, n, tag);
	int err;
	pid_t p = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	return p;
}

static void *close_elsewhere(void *svc)
{
	return (void *)(intptr_t)bypass_ipc_lib_service_close(svc);
}

int main(void)
{
	test_timeout(60);
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	struct bypass_ipc_lib_opts mo = { .flags = BYPASS_IPC_LIB_MESSAGE };

	/* 1. the server is killed */
	pid_t srv = start(name, sizeof(name), so, "libepipe");
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	bypass_ipc_lib *m = test_lib_open(name, &mo);
	CHECK_EQ(test_lib_add(l, 1), 1);
	CHECK_EQ(test_lib_add(m, 1), 2);
	test_lib_stop(srv); /* SIGKILL, reaped: its robust list was walked */
	pid_t ch = fork();
	if (ch == 0) {
		/* Sanitizer runtimes may make system calls of their own. */
		bool strict = !test_sanitizer_rt()[0];
		if (strict && forbid_syscalls())
			_exit(77);
		int r = (int)test_lib_add(l, 1);
		syscall(SYS_exit_group, r == -EPIPE ? 0 : 1);
	}
	int st;
	CHECK_EQ(waitpid(ch, &st, 0), ch);
	if (WIFSIGNALED(st))
		TEST_FAIL("the call after the server's death made a system call (signal %d)",
			  WTERMSIG(st));
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		TEST_LOG("no seccomp here: the no-system-call check was skipped");
	else
		CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK_ERR(test_lib_add(l, 1), -EPIPE);
	CHECK_ERR(test_lib_add(l, 1), -EPIPE); /* and stays so */
	CHECK_ERR(bypass_ipc_lib_recover(l), -EPIPE);
	CHECK_ERR(test_lib_add(m, 1), -EPIPE);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	CHECK_ERR(bypass_ipc_lib_close(m), 0);
	/* opening a dead service is refused */
	bypass_ipc_lib *x = NULL;
	int r = bypass_ipc_lib_open(name, NULL, &x);
	CHECK(r == -ECONNREFUSED || r == -ENOENT);

	/* 2. the service is closed cleanly, in this process */
	test_svc_name(name, sizeof(name), "libepipe2");
	bypass_ipc_lib_service *svc;
	CHECK_ERR(bypass_ipc_lib_listen(name, so, NULL, &svc), 0);
	/* the opener needs the server's loop: a child opens, we accept */
	int p[2], q[2];
	CHECK(pipe(p) == 0 && pipe(q) == 0);
	ch = fork();
	if (ch == 0) {
		close(p[1]);
		close(q[0]);
		bypass_ipc_lib *c = test_lib_open(name, NULL);
		CHECK_EQ(test_lib_add(c, 2), 2);
		char b = 'c';
		CHECK_EQ(write(q[1], &b, 1), 1);
		CHECK_EQ(read(p[0], &b, 1), 1); /* the service is closed */
		CHECK_ERR(test_lib_add(c, 1), -EPIPE);
		bypass_ipc_lib_close(c);
		_exit(0);
	}
	close(p[0]);
	close(q[1]);
	bypass_ipc_conn *c;
	CHECK_ERR(bypass_ipc_lib_accept(svc, &c, 10 * BYPASS_SEC), 1);
	CHECK(c == NULL);
	char b;
	CHECK_EQ(read(q[0], &b, 1), 1); /* it called */
	CHECK_ERR(bypass_ipc_lib_service_close(svc), 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	wait_child(ch);
	close(p[1]);
	close(q[0]);

	/* 3. closed from a thread that did not listen: clients see -EPIPE
	 * all the same */
	test_svc_name(name, sizeof(name), "libepipe3");
	CHECK_ERR(bypass_ipc_lib_listen(name, so, NULL, &svc), 0);
	pthread_t t;
	void *res;
	CHECK_EQ(pthread_create(&t, NULL, close_elsewhere, svc), 0);
	CHECK_EQ(pthread_join(t, &res), 0);
	CHECK_EQ((intptr_t)res, 0);
	CHECK_ERR(bypass_ipc_lib_open(name, NULL, &x), -ECONNREFUSED);
	return test_pass("lib-epipe");
}
