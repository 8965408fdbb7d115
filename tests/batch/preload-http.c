/* SPDX-License-Identifier: MIT */
/*
 * preload-http: an nginx-like server (non-blocking sockets, edge-triggered
 * epoll) runs under libbypass-batch.so while many concurrent clients fetch
 * files of 0 B to 3 MB, with keep-alive and without, pipelined or not, the
 * body sent with sendfile (run directly, and deferred by copy), write,
 * writev and send, with and without TCP_CORK; every byte is checked.  The
 * server's counters prove that calls were deferred.
 */
#include "batch/util.h"

static char dir[256], files[1024];
static const char *argv0;

static void one(const char *what, const char *const *sargs, const char *const *env,
		const char *const *cargs)
{
	struct server s;
	server_start(&s, argv0, dir, sargs, env);
	int rc = run_client(argv0, s.port, dir, cargs);
	long errors = 0;
	long served = server_stop(&s, &errors);
	long deferred = stats_sum(dir, "deferred");
	TEST_LOG("%-34s client %d, served %ld, server errors %ld, deferred %ld", what, rc,
		 served, errors, deferred);
	if (rc != 0)
		TEST_FAIL("%s: the client saw wrong bytes or a failure", what);
	CHECK(served > 0);
	CHECK_EQ(errors, 0);
	CHECK(deferred > 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	argv0 = argv[0];
	preload_setup("http", dir, sizeof(dir), files, sizeof(files));
	const char *ka[] = { "--files", files, "--conns", "16", "--requests", "36", NULL };
	const char *cl[] = { "--files", files, "--conns", "16", "--requests", "24", "--close", NULL };
	const char *pl[] = { "--files", files, "--conns", "8", "--requests", "48",
			     "--pipeline", "4", NULL };
	const char *copy[] = { "BYPASS_BATCH_SENDFILE=copy", "BYPASS_BATCH_SENDFILE_MAX=65536", NULL };
	const char *sync[] = { "BYPASS_BATCH_SENDFILE=sync", NULL };
	const char *all[] = { "BYPASS_BATCH_CLOSE=all", NULL };

	one("sendfile, defaults, keep-alive", NULL, NULL, ka);
	one("sendfile, defaults, pipelined", NULL, NULL, pl);
	one("sendfile (direct), keep-alive", NULL, sync, ka);
	one("sendfile (direct), close", NULL, sync, cl);
	one("sendfile (copy), keep-alive", NULL, copy, ka);
	one("sendfile (copy), pipelined", NULL, copy, pl);
	one("sendfile (copy), close, cork", (const char *[]){ "--cork", NULL }, copy, cl);
	one("write, keep-alive", (const char *[]){ "--body", "write", NULL }, NULL, ka);
	one("writev, close, close=all", (const char *[]){ "--body", "writev", NULL }, all, cl);
	one("send, pipelined, cork", (const char *[]){ "--body", "send", "--cork", NULL }, NULL, pl);
	one("send, close, shutdown", (const char *[]){ "--body", "send", "--shutdown", NULL },
	    NULL, cl);
	rm_tree(dir);
	return test_pass("batch/preload-http");
}
