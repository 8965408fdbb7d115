/* SPDX-License-Identifier: MIT */
/*
 * preload-partial: deferred writes that the socket cannot take at once.  The
 * server's send buffer is 4 KB and the clients read slowly through 4 KB
 * receive buffers, so deferred sends come up short and wait in io_uring:
 * the library finishes them, answers later writes with EAGAIN while data
 * waits (the program gets an EPOLLOUT edge when it drains), and every byte
 * arrives, in order.
 */
#include "batch/util.h"

int main(int argc, char **argv)
{
	(void)argc;
	char dir[256], files[1024];
	preload_setup("partial", dir, sizeof(dir), files, sizeof(files));
	const char *slow[] = { "--files", files, "--conns", "6", "--requests", "14", "--slow",
			       "--rcvbuf", "4096", NULL };
	const char *slowpl[] = { "--files", files, "--conns", "4", "--requests", "16", "--slow",
				 "--rcvbuf", "4096", "--pipeline", "4", NULL };
	/* The server closes while its last response still waits for room:
	 * the close goes behind the data, the socket leaves epoll. */
	const char *slowcl[] = { "--files", files, "--conns", "6", "--requests", "13", "--slow",
				 "--rcvbuf", "4096", "--close", NULL };
	const char *copy[] = { "BYPASS_BATCH_SENDFILE=copy", "BYPASS_BATCH_SENDFILE_MAX=65536", NULL };
	static const struct {
		const char *what;
		const char *body;
		const char *const *env;
		const char *const *client;
	} runs[] = {
		{ "writev", "writev", NULL, NULL },
		{ "send, pipelined", "send", NULL, NULL },
		{ "sendfile (copy)", "sendfile", NULL, NULL },
		{ "write, pipelined", "write", NULL, NULL },
		{ "send, close", "send", NULL, NULL },
		{ "sendfile, close", "sendfile", NULL, NULL },
	};
	long partial = 0, eagain = 0;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		const char *sargs[] = { "--body", runs[i].body, "--sndbuf", "4096", NULL };
		struct server s;
		server_start(&s, argv[0], dir, sargs, i == 2 ? copy : NULL);
		int rc = run_client(argv[0], s.port, dir, i >= 4 ? slowcl : i % 2 ? slowpl : slow);
		long errors = 0, served = server_stop(&s, &errors);
		long p = stats_sum(dir, "partial"), e = stats_sum(dir, "eagain");
		TEST_LOG("%-18s client %d, served %ld, errors %ld, deferred %ld, partial %ld, "
			 "eagain %ld", runs[i].what, rc, served, errors,
			 stats_sum(dir, "deferred"), p, e);
		CHECK_EQ(rc, 0);
		CHECK_EQ(errors, 0);
		CHECK(stats_sum(dir, "deferred") > 0);
		partial += p;
		eagain += e;
	}
	/* The point of the test: deferred data did wait for the socket. */
	CHECK(partial + eagain > 0);
	rm_tree(dir);
	return test_pass("batch/preload-partial");
}
