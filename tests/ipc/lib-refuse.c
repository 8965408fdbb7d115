/* SPDX-License-Identifier: MIT */
/*
 * lib-refuse: what library mode refuses, and the fallback.
 *  - the scan: WRPKRU (0f 01 ef) and XRSTOR with a memory operand
 *    (0f ae /5) at every byte offset, LFENCE (0f ae e8) and FXRSTOR
 *    (0f ae /1) not; an object holding WRPKRU or XRSTOR in its code is
 *    refused by listen (-EPERM) unless BYPASS_IPC_LIB_ALLOW_WRPKRU, and by
 *    an opener that does not allow it (-EPERM; message mode with
 *    BYPASS_IPC_LIB_FALLBACK);
 *  - an object writable by group or others (-EACCES), not an ELF object
 *    or of another ABI (-ENOEXEC), owned by another uid (-EACCES; as root
 *    only: we chown it);
 *  - the arena's address range already taken in the opener (-EEXIST, or
 *    message mode with the fallback, where the same calls work).
 */
#include <sys/mman.h>

#include "libutil.h"

static void scan_unit(void)
{
	unsigned char b[64];
	memset(b, 0x90, sizeof(b));
	CHECK_EQ(bp_ipc_lib_scan(b, sizeof(b), NULL), 0);
	/* WRPKRU at every offset, including the last three bytes */
	for (size_t at = 0; at + 3 <= sizeof(b); at++) {
		memset(b, 0x90, sizeof(b));
		b[at] = 0x0f, b[at + 1] = 0x01, b[at + 2] = 0xef;
		size_t first = 99;
		CHECK_EQ(bp_ipc_lib_scan(b, sizeof(b), &first), 1);
		CHECK_EQ(first, at);
		/* cut short: the sequence no longer fits */
		CHECK_EQ(bp_ipc_lib_scan(b, at + 2, NULL), 0);
	}
	/* XRSTOR (%rax) = 0f ae 28; xrstor 8(%rsp) = 0f ae 6c 24 08; LFENCE
	 * = 0f ae e8 (mod 3); FXRSTOR (%rax) = 0f ae 08 (reg 1) */
	const unsigned char xr[] = { 0x0f, 0xae, 0x28 }, xr2[] = { 0x0f, 0xae, 0x6c, 0x24, 0x08 };
	const unsigned char lf[] = { 0x0f, 0xae, 0xe8 }, fx[] = { 0x0f, 0xae, 0x08 };
	CHECK_EQ(bp_ipc_lib_scan(xr, sizeof(xr), NULL), 1);
	CHECK_EQ(bp_ipc_lib_scan(xr2, sizeof(xr2), NULL), 1);
	CHECK_EQ(bp_ipc_lib_scan(lf, sizeof(lf), NULL), 0);
	CHECK_EQ(bp_ipc_lib_scan(fx, sizeof(fx), NULL), 0);
	/* overlapping candidates: 0f 0f 01 ef */
	const unsigned char ov[] = { 0x0f, 0x0f, 0x01, 0xef };
	CHECK_EQ(bp_ipc_lib_scan(ov, sizeof(ov), NULL), 1);
}

/* The first address of the service's arena mapped here, from its stats. */
static uint64_t arena_of(const char *name)
{
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	return st.arena_base;
}

int main(void)
{
	test_timeout(60);
	scan_unit();
	char so[256], wr[256], xr[256], bad[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_lib_so("tests/ipc", "testsvc-wrpkru.so", wr, sizeof(wr));
	test_lib_so("tests/ipc", "testsvc-xrstor.so", xr, sizeof(xr));
	test_lib_so("tests/ipc", "testsvc-badabi.so", bad, sizeof(bad));
	bypass_ipc_lib_service *svc = NULL;
	test_svc_name(name, sizeof(name), "librefuse");

	/* the object's file, checked by listen */
	CHECK_ERR(bp_ipc_lib_check_object(-1, getuid(), false), -EBADF);
	CHECK_ERR(bypass_ipc_lib_listen(name, wr, NULL, &svc), -EPERM);
	CHECK_ERR(bypass_ipc_lib_listen(name, xr, NULL, &svc), -EPERM);
	CHECK_ERR(bypass_ipc_lib_listen(name, bad, NULL, &svc), -ENOEXEC);
	CHECK_ERR(bypass_ipc_lib_listen(name, "/proc/self/status", NULL, &svc), -ENOEXEC);
	CHECK_ERR(bypass_ipc_lib_listen(name, "/tmp", NULL, &svc), -EACCES);
	CHECK_EQ(chmod(so, 0775), 0);
	CHECK_ERR(bypass_ipc_lib_listen(name, so, NULL, &svc), -EACCES);
	CHECK_EQ(chmod(so, 0757), 0);
	CHECK_ERR(bypass_ipc_lib_listen(name, so, NULL, &svc), -EACCES);
	CHECK_EQ(chmod(so, 0755), 0);
	if (geteuid() == 0) {
		CHECK_EQ(chown(so, 65534, 65534), 0);
		CHECK_ERR(bypass_ipc_lib_listen(name, so, NULL, &svc), -EACCES);
		CHECK_EQ(chown(so, 0, 0), 0); /* root's own: accepted */
	} else {
		TEST_LOG("not root: the owner check is not exercised (we cannot chown)");
	}
	CHECK(svc == NULL);

	/* allowed by the server, refused by an opener that does not allow it */
	struct bypass_ipc_lib_opts allow = { .flags = BYPASS_IPC_LIB_ALLOW_WRPKRU };
	int err;
	pid_t srv = test_lib_server(name, wr, &allow, -1, &err);
	CHECK_ERR(err, 0);
	bypass_ipc_lib *l = NULL;
	CHECK_ERR(bypass_ipc_lib_open(name, NULL, &l), -EPERM);
	CHECK(l == NULL);
	struct bypass_ipc_lib_opts fb = { .flags = BYPASS_IPC_LIB_FALLBACK };
	l = test_lib_open(name, &fb);
	CHECK_EQ(test_lib_mode(l), BYPASS_IPC_LIB_MODE_MESSAGE);
	CHECK_EQ(test_lib_add(l, 3), 3);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	l = test_lib_open(name, &allow);
	CHECK_EQ(test_lib_mode(l), BYPASS_IPC_LIB_MODE_LIBRARY);
	CHECK_EQ(test_lib_add(l, 1), 4);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);

	/* the arena's range is taken here */
	test_svc_name(name, sizeof(name), "librefuse2");
	srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	uint64_t base = arena_of(name);
	l = NULL;
	void *squat = mmap((void *)base, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
			   MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(squat == (void *)base);
	CHECK_ERR(bypass_ipc_lib_open(name, NULL, &l), -EEXIST);
	CHECK(l == NULL);
	l = test_lib_open(name, &fb);
	CHECK_EQ(test_lib_mode(l), BYPASS_IPC_LIB_MODE_MESSAGE);
	CHECK_EQ(test_lib_add(l, 5), 5);
	char out[8];
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, "abc", 3, out, sizeof(out)), 3);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	CHECK_EQ(munmap(squat, 4096), 0);
	l = test_lib_open(name, NULL);
	CHECK_EQ(test_lib_mode(l), BYPASS_IPC_LIB_MODE_LIBRARY);
	CHECK_EQ(test_lib_add(l, 1), 6);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);
	return test_pass("lib-refuse");
}
