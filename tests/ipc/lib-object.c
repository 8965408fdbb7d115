/* SPDX-License-Identifier: MIT */
/*
 * lib-object: the object a client runs is the one the server loaded
 * (issue 31 item 6).  The server's object file is rewritten in place
 * after listen (as cp over it does: same inode), with a build whose
 * TS_ECHO answers -ENOSYS: new clients, in library mode, with the
 * fallback and in message mode, still run the handlers the server loaded
 * (a sealed memfd copy made at listen); on 95741d6 they ran the new file.
 * A service listened anew runs the new file.
 */
#include "libutil.h"

static void echo_is(bypass_ipc_lib *l, int want)
{
	char out[8];
	int r = bypass_ipc_lib_call(l, TS_ECHO, "abc", 3, out, sizeof(out));
	if (r != want)
		TEST_FAIL("echo answered %d, want %d", r, want);
	if (want == 3)
		CHECK(!memcmp(out, "abc", 3));
}

static void rewrite(const char *path, const char *from)
{
	struct stat a, b;
	CHECK_EQ(stat(path, &a), 0);
	int in = open(from, O_RDONLY | O_CLOEXEC), out = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	CHECK(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		CHECK_EQ(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	CHECK_EQ(stat(path, &b), 0);
	CHECK_EQ(a.st_ino, b.st_ino); /* in place */
}

int main(void)
{
	test_timeout(60);
	char so[256], alt[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_lib_so("tests/ipc", "testsvc-alt.so", alt, sizeof(alt));
	test_svc_name(name, sizeof(name), "object");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	bypass_ipc_lib *before = test_lib_open(name, NULL);
	echo_is(before, 3);
	rewrite(so, alt);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	CHECK_EQ(test_lib_mode(l), BYPASS_IPC_LIB_MODE_LIBRARY);
	echo_is(l, 3);
	bypass_ipc_lib *f = test_lib_open(name, &(struct bypass_ipc_lib_opts){
							.flags = BYPASS_IPC_LIB_FALLBACK });
	echo_is(f, 3);
	bypass_ipc_lib *m = test_lib_open(name, &(struct bypass_ipc_lib_opts){
							.flags = BYPASS_IPC_LIB_MESSAGE });
	echo_is(m, 3);
	echo_is(before, 3);
	/* What this process runs is the server's sealed copy. */
	CHECK(test_count_maps("memfd:bypass-ipc-lib-object") > 0);
	bypass_ipc_lib_close(before);
	bypass_ipc_lib_close(l);
	bypass_ipc_lib_close(f);
	bypass_ipc_lib_close(m);
	test_lib_stop(srv);
	/* Listened anew: the new file. */
	test_svc_name(name, sizeof(name), "object2");
	srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	l = test_lib_open(name, NULL);
	echo_is(l, -ENOSYS);
	bypass_ipc_lib_close(l);
	test_lib_stop(srv);
	return test_pass("ipc/lib-object");
}
