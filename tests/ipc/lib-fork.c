/* SPDX-License-Identifier: MIT */
/*
 * lib-fork: a client forks.  The child's copy of a library-mode handle
 * works (the arena is shared, mapped at the same address, the object
 * loaded): it sees the parent's changes and the parent sees its own.  A
 * message-mode handle belongs to the process that opened it: in the child
 * its calls return -EBADF and it can only be closed.  Closing in the child
 * changes nothing for the parent.
 */
#include "libutil.h"

int main(void)
{
	test_timeout(60);
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "libfork");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct bypass_ipc_lib_opts mo = { .flags = BYPASS_IPC_LIB_MESSAGE };
	bypass_ipc_lib *m = test_lib_open(name, &mo);
	CHECK_EQ(test_lib_add(l, 10), 10);
	for (int round = 0; round < 3; round++) {
		pid_t ch = fork();
		if (ch == 0) {
			CHECK_EQ(test_lib_add(l, 1), 11 + 2 * round);
			struct ts_where w;
			int what = 0;
			CHECK_ERR(bypass_ipc_lib_call(l, TS_WHERE, &what, sizeof(what), &w,
						      sizeof(w)), (int)sizeof(w));
			CHECK_EQ(w.pid, getpid());
			CHECK_ERR(test_lib_add(m, 1), -EBADF);
			/* a library-mode handle opened in the child works too */
			bypass_ipc_lib *own = test_lib_open(name, NULL);
			CHECK_EQ(test_lib_add(own, 0), 11 + 2 * round);
			CHECK_ERR(bypass_ipc_lib_close(own), 0);
			CHECK_ERR(bypass_ipc_lib_close(m), 0);
			CHECK_ERR(bypass_ipc_lib_close(l), 0);
			_exit(0);
		}
		wait_child(ch);
		CHECK_EQ(test_lib_add(m, 1), 12 + 2 * round); /* the child's add is there */
	}
	char out[8];
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, "ok", 3, out, sizeof(out)), 3);
	CHECK_ERR(bypass_ipc_lib_close(m), 0);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);
	return test_pass("lib-fork");
}
