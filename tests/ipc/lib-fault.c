/* SPDX-License-Identifier: MIT */
/*
 * lib-fault: a handler that faults (SIGSEGV) returns -EFAULT to its caller,
 * which lives on; the service is then broken for every process (-
 * ENOTRECOVERABLE) until its recover hook has run, and a lock the handler
 * held is released (no other caller hangs on it).  A failing recover hook
 * leaves it broken; a handler that returns holding a lock breaks it too.
 * In message mode the server's thread survives its handler's fault and the
 * client gets -EFAULT.  Where the CPU has protection keys, the thread's
 * PKRU is put back after the fault (the key closed again, other keys as
 * they were: one more key, open, stays open).
 */
#include <sys/syscall.h>

#include "libutil.h"

static void expect_broken(bypass_ipc_lib *l)
{
	char out[8];
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, "x", 1, out, sizeof(out)), -ENOTRECOVERABLE);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_EQ(st.broken, 1);
}

static uint32_t rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

int main(void)
{
	test_timeout(60);
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "libfault");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	bool guarded = st.guarded;
	/* Another key, open in this thread: a fault must leave it open (the
	 * signal handler ran with every key but 0 access-disabled). */
	int other = guarded ? (int)syscall(SYS_pkey_alloc, 0, 0) : -1;
	if (guarded)
		CHECK(other > 0);
	uint32_t pkru_before = guarded ? rdpkru() : 0;
	if (guarded)
		CHECK_EQ(pkru_before & (3u << (2 * other)), 0);

	/* 1. a plain fault */
	CHECK_EQ(test_lib_add(l, 1), 1);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_FAULT, NULL, 0, NULL, 0), -EFAULT);
	if (guarded)
		CHECK_EQ(rdpkru(), pkru_before);
	expect_broken(l);
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_EQ(st.faults, 1);
	/* broken for another process too */
	pid_t ch = fork();
	if (ch == 0) {
		bypass_ipc_lib *o = test_lib_open(name, NULL);
		expect_broken(o);
		bypass_ipc_lib_close(o);
		_exit(0);
	}
	wait_child(ch);
	CHECK_ERR(bypass_ipc_lib_recover(l), 0);
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_EQ(st.broken, 0);
	CHECK_EQ(st.recoveries, 1);
	CHECK_EQ(test_lib_add(l, 1), 2);

	/* 2. a fault while holding the lock, in the middle of a change: the
	 * lock is free again, the recover hook repairs a == b */
	unsigned char how = 2;
	CHECK_ERR(bypass_ipc_lib_call(l, TS_FAULT, &how, 1, NULL, 0), -EFAULT);
	expect_broken(l);
	uint64_t chk[2];
	CHECK_ERR(bypass_ipc_lib_call(l, TS_CHECK, NULL, 0, chk, sizeof(chk)), -ENOTRECOVERABLE);
	/* 3. a recover hook that fails: still broken */
	how = 1;
	CHECK_ERR(bypass_ipc_lib_recover(l), 0);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_RECOVER_FAILS, &how, 1, NULL, 0), 0);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_FAULT, NULL, 0, NULL, 0), -EFAULT);
	CHECK_ERR(bypass_ipc_lib_recover(l), -ENOTRECOVERABLE);
	expect_broken(l);
	CHECK_ERR(bypass_ipc_lib_recover(l), -ENOTRECOVERABLE);
	/* a service whose hook cannot repair it stays broken: a fresh one */
	test_lib_stop(srv);
	bypass_ipc_lib_close(l);
	test_svc_name(name, sizeof(name), "libfault2");
	srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	l = test_lib_open(name, NULL);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_FAULT, &how, 1, NULL, 0), -EFAULT);
	CHECK_ERR(bypass_ipc_lib_recover(l), 0);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_CHECK, NULL, 0, chk, sizeof(chk)), (int)sizeof(chk));
	CHECK_EQ(chk[0], 1);
	CHECK_EQ(test_lib_add(l, 3), 3);

	/* 4. a handler that returns holding the lock */
	CHECK_ERR(bypass_ipc_lib_call(l, TS_LEAK, NULL, 0, NULL, 0), 0);
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_EQ(st.leaked_locks, 1);
	expect_broken(l);
	CHECK_ERR(bypass_ipc_lib_recover(l), 0);
	CHECK_EQ(test_lib_add(l, 1), 4); /* the lock was released */

	/* 5. message mode: the server's thread runs the faulting handler */
	struct bypass_ipc_lib_opts mo = { .flags = BYPASS_IPC_LIB_MESSAGE };
	bypass_ipc_lib *m = test_lib_open(name, &mo);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_FAULT, &how, 1, NULL, 0), -EFAULT);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, "x", 1, chk, sizeof(chk)), -ENOTRECOVERABLE);
	expect_broken(l);
	CHECK_ERR(bypass_ipc_lib_recover(l), 0);
	CHECK_EQ(test_lib_add(m, 1), 5);
	CHECK_EQ(kill(srv, 0), 0); /* the server lives */
	CHECK_ERR(bypass_ipc_lib_close(m), 0);

	/* 6. after all that, the key is closed again outside calls */
	if (guarded)
		CHECK_EQ(rdpkru(), pkru_before);
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_EQ(st.faults, 2);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);
	return test_pass("lib-fault");
}
