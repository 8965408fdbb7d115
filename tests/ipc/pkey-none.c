/* SPDX-License-Identifier: MIT */
/*
 * pkey-none: where no protection key can be had, BYPASS_IPC_PKEY is
 * refused with -EOPNOTSUPP and bypass_ipc_pkey_supported says why.  On a
 * machine with PKU this test takes every key first (pkey_alloc until it
 * fails), so the refusal path runs here too; on one without, the library
 * refuses for the CPU's or the OS's reason.  Connections without the flag
 * still work.
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include "util.h"

int main(void)
{
	test_timeout(30);
	/* Before the library's probe: take every key this process can get. */
	int taken = 0;
	while (syscall(SYS_pkey_alloc, 0, 0) >= 0)
		taken++;
	TEST_LOG("took %d protection keys first", taken);
	const char *why = NULL;
	CHECK_EQ(bypass_ipc_pkey_supported(&why), 0);
	CHECK(why != NULL && *why);
	TEST_LOG("refused: %s", why);
	if (taken)
		CHECK(strstr(why, "pkey_alloc failed") != NULL);
	char name[64];
	test_svc_name(name, sizeof(name), "pkn");
	struct bypass_ipc_opts o = { .flags = BYPASS_IPC_PKEY };
	bypass_ipc_service *svc;
	bypass_ipc_conn *c;
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), -EOPNOTSUPP);
	CHECK_ERR(bypass_ipc_connect(name, &o, &c), -EOPNOTSUPP);
	/* without the flag, all is as usual */
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		c = test_connect(name, NULL);
		CHECK_ERR(bypass_ipc_send(c, "plain", 6, BYPASS_FOREVER), 0);
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	c = test_accept(svc);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK(!memcmp(m.data, "plain", 6));
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_close(c), 0);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	return test_pass("ipc/pkey-none");
}
