/* SPDX-License-Identifier: MIT */
/*
 * lib-msgargs: bad arguments to a message-mode call (issue 31 item 8).  A
 * request length near SIZE_MAX (on 95741d6 the 8-byte header's length
 * wrapped: a small loan, then a copy of SIZE_MAX bytes), a length just
 * over the ring's limit, a request pointer that faults, a response buffer
 * that is read-only: clear errors (-EMSGSIZE, -EFAULT), the caller alive,
 * and the handle still answers after each.
 */
#include <sys/mman.h>

#include "libutil.h"

static void echo_ok(bypass_ipc_lib *m)
{
	char out[8];
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, "fine", 4, out, sizeof(out)), 4);
	CHECK(!memcmp(out, "fine", 4));
}

int main(void)
{
	test_timeout(60);
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "msgargs");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	struct bypass_ipc_lib_opts o = { .flags = BYPASS_IPC_LIB_MESSAGE,
					 .call_timeout_ns = 10 * BYPASS_SEC };
	bypass_ipc_lib *m = test_lib_open(name, &o);
	echo_ok(m);
	char buf[64] = "x", out[64];
	/* Lengths the ring cannot carry, the largest first. */
	size_t lens[] = { SIZE_MAX, SIZE_MAX - 7, SIZE_MAX - 8, (size_t)1 << 40, 1 << 20 };
	for (size_t i = 0; i < BP_ARRAY_SIZE(lens); i++) {
		CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, buf, lens[i], out, sizeof(out)),
			  -EMSGSIZE);
		echo_ok(m);
	}
	/* The largest that fits is carried (default rings: 1 MiB, messages up
	 * to 256 KiB); one byte more is not. */
	size_t max = (256u << 10) - sizeof(struct lib_wire);
	unsigned char *big = malloc(max + 1), *back = malloc(max);
	CHECK(big && back);
	test_fill(big, max + 1, 5);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, big, max, back, max), (int)max);
	CHECK(test_check(back, max, 5));
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, big, max + 1, back, max), -EMSGSIZE);
	echo_ok(m);
	/* A request that faults, at its start and half-way. */
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, (const void *)16, 8, out, sizeof(out)), -EFAULT);
	echo_ok(m);
	long ps = sysconf(_SC_PAGESIZE);
	unsigned char *two = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
	CHECK(two != MAP_FAILED);
	CHECK_EQ(munmap(two + ps, ps), 0);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, two + ps - 8, 16, out, sizeof(out)), -EFAULT);
	echo_ok(m);
	/* A response buffer that is read-only, and one that is not mapped. */
	CHECK_EQ(mprotect(two, ps, PROT_READ), 0);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, "abcd", 4, two, 4), -EFAULT);
	echo_ok(m);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, "abcd", 4, two + ps, 4), -EFAULT);
	echo_ok(m);
	CHECK_EQ(munmap(two, ps), 0);
	CHECK_EQ(test_lib_add(m, 1), 1);
	free(big);
	free(back);
	bypass_ipc_lib_close(m);
	test_lib_stop(srv);
	return test_pass("ipc/lib-msgargs");
}
