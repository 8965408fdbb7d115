/* SPDX-License-Identifier: MIT */
/*
 * lowbase: the server chooses the address at which the client maps the
 * arena (the same address in both).  A hostile server must not be able to
 * make the client map memory it can write at a low address - the NULL page
 * (allowed to root), or where a program's own image and heap live - where
 * the client's stray NULL-based accesses would silently read and write the
 * server's data.  An arena below 4 GiB is refused with -EPROTO.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ipc/ipc_internal.h"
#include "util.h"

#define LOW 0x10000ul

int main(void)
{
	test_timeout(30);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "lowbase");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "bypass-ipc:%s", name);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(ls >= 0);
	CHECK(bind(ls, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0);
	CHECK(listen(ls, 4) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* A well-formed arena, at a low address of the server's choice. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		size_t ps = (size_t)sysconf(_SC_PAGESIZE);
		uint64_t cap = 65536;
		struct bypass_arena_opts ao = { .size = 2 * ps + 2 * cap, .addr = (void *)LOW };
		bypass_arena *a;
		CHECK_ERR(bypass_arena_create(&ao, &a), 0);
		struct ipc_shared *sh = (void *)(LOW + ps);
		sh->magic = IPC_MAGIC;
		sh->version = IPC_VERSION;
		struct ipc_hello h = { .magic = IPC_MAGIC, .version = IPC_VERSION,
				       .pid = (int32_t)getpid(), .ring_size = cap,
				       .max_msg = 1024, .off_shared = ps, .off_c2s = 2 * ps,
				       .off_s2c = 2 * ps + cap };
		int s = accept(ls, NULL, NULL);
		CHECK(s >= 0);
		int afd = bypass_arena_fd(a);
		CHECK(bypass_send_fds(s, &afd, 1, &h, sizeof(h)) > 0);
		char x;
		CHECK(read(s, &x, 1) >= 0); /* until the client hangs up */
		_exit(0);
	}
	bypass_ipc_conn *c = NULL;
	int r = bypass_ipc_connect(name, NULL, &c);
	if (!r)
		bypass_ipc_close(c);
	wait_child(pid);
	close(ls);
	CHECK_ERR(r, -EPROTO);
	CHECK_EQ(test_count_maps("bypass-arena"), 0);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/lowbase");
}
