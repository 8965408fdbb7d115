/* SPDX-License-Identifier: MIT */
/*
 * preload-procs: the server forks two workers after the preload is loaded
 * (as nginx does), then runs four event-loop threads; then it runs with
 * poll and with select loops.  Each process and thread gets its own queue,
 * rebuilt after fork; every byte arrives.
 * TEST_LABELS: threads
 */
#include "batch/util.h"

int main(int argc, char **argv)
{
	(void)argc;
	char dir[256], files[1024];
	preload_setup("procs", dir, sizeof(dir), files, sizeof(files));
	const char *ka[] = { "--files", files, "--conns", "12", "--requests", "30", NULL };
	const char *cl[] = { "--files", files, "--conns", "12", "--requests", "20", "--close",
			     NULL };
	static const char *const cfgs[][5] = {
		{ "--workers", "2", NULL },
		{ "--workers", "2", "--threads", "2", NULL },
		{ "--threads", "4", NULL },
		{ "--loop", "poll", NULL },
		{ "--loop", "select", NULL },
		{ "--threads", "3", "--loop", "poll", NULL },
	};
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		for (int k = 0; k < 2; k++) {
			struct server s;
			server_start(&s, argv[0], dir, cfgs[i], NULL);
			int rc = run_client(argv[0], s.port, dir, k ? cl : ka);
			long errors = 0, served = server_stop(&s, &errors);
			long deferred = stats_sum(dir, "deferred");
			TEST_LOG("%s %s %s %s %s: client %d, served %ld, deferred %ld", cfgs[i][0],
				 cfgs[i][1], cfgs[i][2] ? cfgs[i][2] : "", cfgs[i][3] ? cfgs[i][3] : "",
				 k ? "close" : "keep-alive", rc, served, deferred);
			CHECK_EQ(rc, 0);
			CHECK_EQ(errors, 0);
			CHECK(deferred > 0);
		}
	}
	rm_tree(dir);
	return test_pass("batch/preload-procs");
}
