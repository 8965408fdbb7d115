/* SPDX-License-Identifier: MIT */
/*
 * preload-killswitch: with BYPASS_BATCH=0 the preload is a pure
 * pass-through: nothing is deferred (not a single io_uring request), no
 * segment is counted, and the server works as without it.
 */
#include "batch/util.h"

int main(int argc, char **argv)
{
	(void)argc;
	char dir[256], files[1024];
	preload_setup("kill", dir, sizeof(dir), files, sizeof(files));
	const char *ka[] = { "--files", files, "--conns", "8", "--requests", "24", NULL };
	const char *values[] = { "BYPASS_BATCH=0", "BYPASS_BATCH=off", "BYPASS_BATCH=1" };
	for (int i = 0; i < 3; i++) {
		const char *env[] = { values[i], "BYPASS_BATCH_SENDFILE=copy", "BYPASS_BATCH_SENDFILE_MAX=65536", NULL };
		struct server s;
		server_start(&s, argv[0], dir, NULL, env);
		int rc = run_client(argv[0], s.port, dir, ka);
		long served = server_stop(&s, NULL);
		long deferred = stats_sum(dir, "deferred"), segs = stats_sum(dir, "segments");
		TEST_LOG("%-16s client %d, served %ld, stats file %s, deferred %ld, segments %ld",
			 values[i], rc, served, deferred < 0 ? "absent" : "present", deferred, segs);
		CHECK_EQ(rc, 0);
		if (i < 2) {
			/* Off: no counters at all (the library does not even
			 * write its stats file). */
			CHECK(deferred <= 0);
			CHECK(segs <= 0);
		} else {
			CHECK(deferred > 0);
		}
	}
	rm_tree(dir);
	return test_pass("batch/preload-killswitch");
}
