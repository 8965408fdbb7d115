/* SPDX-License-Identifier: MIT */
/*
 * badargs: every bad argument gets a clear error and loses no data: NULLs,
 * bad names and options, negative timeouts, oversized messages, a second
 * loan, foreign messages, replies to plain messages, a connection used in a
 * forked child, a taken name, a missing service; a file-system service is
 * unlinked when closed.  After each refused call the connection still works.
 */
#include <sys/stat.h>

#include "util.h"

int main(void)
{
	test_timeout(30);
	int fds = test_count_fds();
	bypass_ipc_service *svc;
	bypass_ipc_conn *c;
	struct bypass_ipc_opts o;
	char longname[200];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;

	/* Services. */
	CHECK_ERR(bypass_ipc_listen(NULL, NULL, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_listen("", NULL, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_listen(longname, NULL, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_listen("x", NULL, NULL), -EINVAL);
	o = (struct bypass_ipc_opts){ .ring_size = 5000 };
	CHECK_ERR(bypass_ipc_listen("x", &o, &svc), -EINVAL);
	o = (struct bypass_ipc_opts){ .ring_size = 2048 };
	CHECK_ERR(bypass_ipc_listen("x", &o, &svc), -EINVAL);
	o = (struct bypass_ipc_opts){ .ring_size = 4096, .max_msg = 4096 };
	CHECK_ERR(bypass_ipc_listen("x", &o, &svc), -EINVAL);
	o = (struct bypass_ipc_opts){ .mode = 7 };
	CHECK_ERR(bypass_ipc_listen("x", &o, &svc), -EINVAL);
	o = (struct bypass_ipc_opts){ .flags = 0x80 };
	CHECK_ERR(bypass_ipc_listen("x", &o, &svc), -EINVAL);
	o = (struct bypass_ipc_opts){ .nallow = 2 };
	CHECK_ERR(bypass_ipc_listen("x", &o, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_accept(NULL, &c, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_service_fd(NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_service_close(NULL), -EINVAL);

	/* Connecting to nothing. */
	char name[64];
	test_svc_name(name, sizeof(name), "nothing");
	CHECK_ERR(bypass_ipc_connect(name, NULL, &c), -ECONNREFUSED);
	CHECK_ERR(bypass_ipc_connect("/nonexistent/dir/svc", NULL, &c), -ENOENT);
	CHECK_ERR(bypass_ipc_connect(name, NULL, NULL), -EINVAL);
	o = (struct bypass_ipc_opts){ .handshake_timeout_ns = -5 };
	CHECK_ERR(bypass_ipc_connect(name, &o, &c), -EINVAL);

	/* A file-system service: the name is taken while it lives, and gone after. */
	char path[128];
	snprintf(path, sizeof(path), "/tmp/bypass-test-%d.sock", (int)getpid());
	o = (struct bypass_ipc_opts){ .ring_size = 4096, .max_msg = 1024 };
	CHECK_ERR(bypass_ipc_listen(path, &o, &svc), 0);
	bypass_ipc_service *svc2;
	CHECK_ERR(bypass_ipc_listen(path, NULL, &svc2), -EADDRINUSE);
	CHECK_ERR(bypass_ipc_accept(svc, &c, 0), -EAGAIN);
	CHECK_ERR(bypass_ipc_accept(svc, &c, 1000000), -ETIMEDOUT);
	CHECK_ERR(bypass_ipc_accept(svc, &c, -2), -EINVAL);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bypass_ipc_conn *k = test_connect(path, NULL);
		struct bypass_ipc_msg m;
		/* Everything the parent sent arrives, despite its refused calls. */
		for (int i = 0; i < 3; i++) {
			CHECK_ERR(bypass_ipc_recv(k, &m, BYPASS_FOREVER), 0);
			CHECK_EQ(m.len, (size_t)i + 1);
			CHECK_ERR(bypass_ipc_release(k, &m), 0);
		}
		CHECK_ERR(bypass_ipc_send(k, "plain", 6, BYPASS_FOREVER), 0);
		CHECK_ERR(bypass_ipc_recv(k, &m, BYPASS_FOREVER), -ECONNRESET);
		CHECK_ERR(bypass_ipc_close(k), 0);
		_exit(0);
	}
	c = test_accept(svc);
	void *loan, *loan2;
	struct bypass_ipc_msg m, fake;
	CHECK_ERR(bypass_ipc_loan(NULL, 1, &loan, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_loan(c, 1, NULL, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_loan(c, 1, &loan, -7), -EINVAL);
	CHECK_ERR(bypass_ipc_loan(c, 1025, &loan, 0), -EMSGSIZE);
	CHECK_ERR(bypass_ipc_send(c, "x", 1025, 0), -EMSGSIZE);
	CHECK_ERR(bypass_ipc_send(c, NULL, 5, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_send(c, "a", 1, 0), 0);                 /* 1 */
	CHECK_ERR(bypass_ipc_loan(c, 16, &loan, 0), 0);
	CHECK_ERR(bypass_ipc_loan(c, 16, &loan2, 0), -EBUSY);
	CHECK_ERR(bypass_ipc_send(c, "zz", 2, 0), -EBUSY);          /* a loan is out */
	CHECK_ERR(bypass_ipc_send(c, loan, 17, 0), -EINVAL);         /* more than loaned */
	CHECK_ERR(bypass_ipc_loan_cancel(c, (char *)loan + 1), -EINVAL);
	CHECK_ERR(bypass_ipc_loan_cancel(c, loan), 0);
	CHECK_ERR(bypass_ipc_loan_cancel(c, loan), -EINVAL);
	CHECK_ERR(bypass_ipc_send(c, "bb", 2, 0), 0);                /* 2 */
	CHECK_ERR(bypass_ipc_loan(c, 16, &loan, 0), 0);
	memcpy(loan, "ccc", 3);
	CHECK_ERR(bypass_ipc_send(c, loan, 3, 0), 0);                /* 3, in place */
	CHECK_ERR(bypass_ipc_recv(c, NULL, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_recv(c, &m, -3), -EINVAL);
	CHECK_ERR(bypass_ipc_call(c, "q", 1, &m, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_call(c, "q", 1, NULL, -1), -EINVAL);
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), 0);
	CHECK_EQ(m.len, 6);
	CHECK_ERR(bypass_ipc_reply(c, &m, "r", 1, 0), -EINVAL);     /* not a request */
	CHECK_ERR(bypass_ipc_reply(c, NULL, "r", 1, 0), -EINVAL);
	fake = m;
	fake.priv_pos += 64;
	CHECK_ERR(bypass_ipc_release(c, &fake), -EINVAL);
	CHECK_ERR(bypass_ipc_release(NULL, &m), -EINVAL);
	CHECK_ERR(bypass_ipc_set_mode(c, 9, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_set_mode(NULL, 0, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_peer(NULL, NULL, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_max_msg(c, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_fd(NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_arm(NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_epoll_ctl(-1, EPOLL_CTL_ADD, c, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_epoll_ctl(3, EPOLL_CTL_ADD, NULL, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_release(c, &m), 0);
	/* In a forked child the connection is not usable, only closable. */
	pid_t k = fork();
	CHECK(k >= 0);
	if (k == 0) {
		CHECK_ERR(bypass_ipc_send(c, "no", 2, 0), -EBADF);
		CHECK_ERR(bypass_ipc_recv(c, &m, 0), -EBADF);
		size_t mx;
		CHECK_ERR(bypass_ipc_set_mode(c, BYPASS_WAIT_SLEEP, 0), -EBADF);
		CHECK_ERR(bypass_ipc_peer(c, NULL, NULL), -EBADF);
		CHECK_ERR(bypass_ipc_max_msg(c, &mx), -EBADF);
		CHECK_ERR(bypass_ipc_fd(c), -EBADF);
		CHECK_ERR(bypass_ipc_arm(c), -EBADF);
		CHECK_ERR(bypass_ipc_loan(c, 1, &loan, 0), -EBADF);
		CHECK_ERR(bypass_ipc_call(c, "q", 1, &m, -1), -EBADF);
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	wait_child(k);
	CHECK_ERR(bypass_ipc_close(c), 0);
	CHECK_ERR(bypass_ipc_close(NULL), -EINVAL);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	struct stat st;
	CHECK(stat(path, &st) < 0 && errno == ENOENT);
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/badargs");
}
