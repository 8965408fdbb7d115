/* SPDX-License-Identifier: MIT */
/*
 * preload-reset: clients that reset their connections while the server
 * (under the preload) writes large responses to them.  The deferred writes
 * fail after the calls returned; the errors reach the server on its next
 * call on those sockets, the server neither crashes nor loses track, and the
 * clients that stay get every byte, before and after the resets.
 */
#include "batch/util.h"

int main(int argc, char **argv)
{
	(void)argc;
	char dir[256], files[1024];
	preload_setup("reset", dir, sizeof(dir), files, sizeof(files));
	const char *resets[] = { "--files", files, "--conns", "8", "--requests", "30",
				 "--reset-every", "2", "--rcvbuf", "8192", NULL };
	/* 9 per connection: connection k starts at file k, so the four cover
	 * all 12 sizes; more only repeats the multi-MB ones through a 16 KB
	 * send buffer (24 per connection took 30 s). */
	const char *good[] = { "--files", files, "--conns", "4", "--requests", "9", NULL };
	const char *bodies[] = { "writev", "send", "sendfile" };
	const char *copy[] = { "BYPASS_BATCH_SENDFILE=copy", "BYPASS_BATCH_SENDFILE_MAX=65536", NULL };
	long reported = 0, errors_total = 0;
	for (int i = 0; i < 3; i++) {
		const char *sargs[] = { "--body", bodies[i], "--sndbuf", "16384", NULL };
		struct server s;
		server_start(&s, argv[0], dir, sargs, i == 2 ? copy : NULL);
		/* Resets and good clients at the same time. */
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			int rc = run_client(argv[0], s.port, dir, resets);
			_exit(rc);
		}
		int rc = run_client(argv[0], s.port, dir, good);
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_EQ(rc, 0);
		/* The server still serves after all that. */
		CHECK_EQ(run_client(argv[0], s.port, dir, good), 0);
		long errors = 0, served = server_stop(&s, &errors);
		long rep = stats_sum(dir, "reported"), err = stats_sum(dir, "errors");
		TEST_LOG("%-8s served %ld, connections ended by errors %ld, deferred "
			 "calls failed %ld, reported %ld", bodies[i], served, errors, err, rep);
		CHECK(served > 0);
		/* the resets were seen: a connection a client reset ends in an
		 * error the server met (120 of 120 in every run here) */
		CHECK(errors > 0);
		reported += rep;
		errors_total += err;
	}
	/* Every deferred failure was reported or belonged to a closed socket;
	 * and the check cannot hold vacuously: deferred calls did fail (about
	 * 330 in all per run here) and some of those failures reached the
	 * server's next call (about 40: send and sendfile 20 each, writev's
	 * bodies 0-3, since most of its resets land on a socket the server
	 * then closes). */
	CHECK(errors_total > 0);
	CHECK(reported > 0);
	CHECK(reported <= errors_total);
	TEST_LOG("deferred failures %ld, reported to the server %ld", errors_total, reported);
	rm_tree(dir);
	return test_pass("batch/preload-reset");
}
