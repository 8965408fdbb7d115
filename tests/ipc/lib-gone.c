/* SPDX-License-Identifier: MIT */
/*
 * lib-gone: what a killed server leaves behind, and what a client's stray
 * write can hide (issue 31 item 10).
 *
 *  - relisten: a path-named service whose server was killed (its NAME and
 *    NAME.lib sockets left in the file system) can listen again, in
 *    library mode and in message mode alone (on 95741d6: -EADDRINUSE); a
 *    path where a server still listens, or a file that is not a socket, is
 *    left alone (-EADDRINUSE);
 *  - hidden: a client rewrites the liveness word after the server was
 *    killed (the kernel had marked it); library-mode calls still learn of
 *    the death, within a bounded number of calls (on 95741d6 they went on
 *    for ever: 600,000 calls in the trial);
 *  - fallback: garbage in the object's device and inode in the control
 *    block no longer refuses library mode (on 95741d6: -EPROTO, and the
 *    fallback did not fall back); garbage in the heap's bounds refuses it
 *    with -EPROTO, and with BYPASS_IPC_LIB_FALLBACK the opener gets
 *    message mode.
 */
#include "libutil.h"

static void relisten(void)
{
	char so[256], path[96], p2[128];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	snprintf(path, sizeof(path), "%s/svc", test_lib_dir);
	int err;
	pid_t srv = test_lib_server(path, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	bypass_ipc_lib *l = test_lib_open(path, NULL);
	CHECK_EQ(test_lib_add(l, 1), 1);
	bypass_ipc_lib_close(l);
	test_lib_stop(srv);
	struct stat st;
	snprintf(p2, sizeof(p2), "%s.lib", path);
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)); /* left behind */
	CHECK(lstat(p2, &st) == 0 && S_ISSOCK(st.st_mode));
	srv = test_lib_server(path, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	l = test_lib_open(path, NULL);
	CHECK_EQ(test_lib_add(l, 1), 1); /* a new service: a new counter */
	/* A path where a server listens is not taken. */
	bypass_ipc_lib_service *svc;
	CHECK_ERR(bypass_ipc_lib_listen(path, so, NULL, &svc), -EADDRINUSE);
	CHECK_EQ(test_lib_add(l, 1), 2);
	bypass_ipc_lib *m = test_lib_open(path, &(struct bypass_ipc_lib_opts){
							.flags = BYPASS_IPC_LIB_MESSAGE });
	CHECK_EQ(test_lib_add(m, 1), 3);
	bypass_ipc_lib_close(m);
	bypass_ipc_lib_close(l);
	test_lib_stop(srv);

	/* Message mode alone. */
	snprintf(p2, sizeof(p2), "%s/msg", test_lib_dir);
	int pp[2];
	CHECK(pipe(pp) == 0);
	pid_t ch = fork();
	CHECK(ch >= 0);
	if (ch == 0) {
		bypass_ipc_service *s;
		int r = bypass_ipc_listen(p2, NULL, &s);
		if (write(pp[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK_EQ(read(pp[0], &err, sizeof(err)), (ssize_t)sizeof(err));
	CHECK_ERR(err, 0);
	kill(ch, SIGKILL);
	CHECK_EQ(waitpid(ch, NULL, 0), ch);
	bypass_ipc_service *s;
	CHECK_ERR(bypass_ipc_listen(p2, NULL, &s), 0);
	CHECK_ERR(bypass_ipc_service_close(s), 0);
	CHECK(lstat(p2, &st) < 0 && errno == ENOENT);
	/* Anything but a socket is left alone. */
	int fd = open(p2, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK_ERR(bypass_ipc_listen(p2, NULL, &s), -EADDRINUSE);
	CHECK(lstat(p2, &st) == 0 && S_ISREG(st.st_mode));
	unlink(p2);
	close(pp[0]);
	close(pp[1]);
}

static void hidden(void)
{
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "gone");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct lib_ctl *c = test_lib_ctl(l);
	CHECK_EQ(test_lib_add(l, 1), 1);
	test_lib_stop(srv); /* SIGKILL, reaped: the kernel marked the word */
	_Atomic uint32_t *live = (_Atomic uint32_t *)(void *)&c->live;
	CHECK(atomic_load(live) & LIB_FUTEX_OWNER_DIED);
	atomic_store(live, 0x1234u); /* "alive" again: a thread id, no mark */
	uint64_t end = test_now_ns() + 20 * (uint64_t)BYPASS_SEC, n = 0;
	int64_t r = 0;
	while (r != -EPIPE && n < 50000000 && test_now_ns() < end) {
		r = test_lib_add(l, 1);
		n++;
		if (r != -EPIPE && r < 0)
			TEST_FAIL("call %llu: %s", (unsigned long long)n, strerror((int)-r));
	}
	if (r != -EPIPE)
		TEST_FAIL("%llu calls after the server's death, none said -EPIPE",
			  (unsigned long long)n);
	TEST_LOG("the death seen at call %llu after it", (unsigned long long)n);
	CHECK_ERR(test_lib_add(l, 1), -EPIPE); /* and stays so */
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, "x", 1, (char[4]){ 0 }, 4), -EPIPE);
	bypass_ipc_lib_close(l);
}

static void fallback(void)
{
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "gone-fb");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct lib_ctl *c = test_lib_ctl(l);
	c->dev = 0x4141414141414141ull;
	c->ino = 0x4242424242424242ull;
	struct bypass_ipc_lib_opts fb = { .flags = BYPASS_IPC_LIB_FALLBACK };
	bypass_ipc_lib *l2 = NULL;
	CHECK_ERR(bypass_ipc_lib_open(name, NULL, &l2), 0);
	CHECK_EQ(test_lib_mode(l2), BYPASS_IPC_LIB_MODE_LIBRARY);
	CHECK_EQ(test_lib_add(l2, 1), 1);
	bypass_ipc_lib_close(l2);
	uint64_t ho = c->heap_off;
	c->heap_off = 12345;
	CHECK_ERR(bypass_ipc_lib_open(name, NULL, &l2), -EPROTO);
	CHECK_ERR(bypass_ipc_lib_open(name, &fb, &l2), 0);
	CHECK_EQ(test_lib_mode(l2), BYPASS_IPC_LIB_MODE_MESSAGE);
	CHECK_EQ(test_lib_add(l2, 1), 2);
	bypass_ipc_lib_close(l2);
	c->heap_off = ho;
	CHECK_EQ(test_lib_add(l, 1), 3);
	bypass_ipc_lib_close(l);
	test_lib_stop(srv);
}

int main(int argc, char **argv)
{
	test_timeout(120); /* a hang, not a timing */
	static const struct test_part parts[] = {
		{ "relisten", relisten }, { "hidden", hidden }, { "fallback", fallback },
	};
	test_parts(argc, argv, parts, BP_ARRAY_SIZE(parts));
	return test_pass("ipc/lib-gone");
}
