/* SPDX-License-Identifier: MIT */
/*
 * preload-stats: the contract with `bypass run --stats`.  With
 * BYPASS_STATS_FILE=<path>, libbypass-batch.so appends at process exit one
 * JSON object per line, {"module": "batch", "pid": <pid>, every counter of
 * struct bypass_batch_stats by name, then "from_bypass" (0 here: no other
 * libbypass object is loaded)}: the process that ran, a forked child that
 * exits normally, and one that leaves by _exit each write their own line
 * (appended: an existing line stays), and the counters are the process's
 * own (the child's queued write is counted in its line only).
 */
#include <sys/epoll.h>

#include "batch/util.h"

static const char *const counters[] = { "segments", "deferred", "direct", "enters",
					 "submitted", "bytes", "partial", "eagain",
					 "errors", "reported", "merged_waits", "spliced",
					 "from_bypass" };

static void work(int ep, int fd, int peer)
{
	struct epoll_event e;
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0); /* a segment opens */
	CHECK_EQ(write(fd, "abc", 3), 3);      /* queued */
	CHECK(epoll_wait(ep, &e, 1, 0) >= 0); /* submitted */
	char buf[3];
	CHECK_EQ(read_full(peer, buf, 3), 3);
}

static long field(const char *line, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *p = strstr(line, pat);
	return p ? atol(p + strlen(pat)) : -1;
}

int main(int argc, char **argv)
{
	(void)argc;
	char path[128];
	if (!getenv("BT_TEST_PRELOADED")) {
		snprintf(path, sizeof(path), "/tmp/bt-stats-%d.jsonl", (int)getpid());
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		fputs("{\"module\": \"other\", \"pid\": 1}\n", f); /* another module's line */
		fclose(f);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("BYPASS_STATS_FILE", path, 1);
			preload_reexec(argv, 30);
			_exit(1);
		}
		wait_child(pid);
		f = fopen(path, "r");
		CHECK(f != NULL);
		char line[2048];
		int batch = 0, other = 0;
		long pids[3] = { 0 }, deferred_sum = 0;
		while (fgets(line, sizeof(line), f)) {
			CHECK(line[0] == '{' && strchr(line, '}') && line[strlen(line) - 1] == '\n');
			if (strstr(line, "\"module\": \"other\"")) {
				other++;
				continue;
			}
			CHECK(strstr(line, "{\"module\": \"batch\", \"pid\": ") == line);
			CHECK(batch < 3);
			pids[batch++] = field(line, "pid");
			for (size_t i = 0; i < BP_ARRAY_SIZE(counters); i++)
				if (field(line, counters[i]) < 0)
					TEST_FAIL("no counter \"%s\" in %s", counters[i], line);
			deferred_sum += field(line, "deferred");
			CHECK_EQ(field(line, "deferred"), 1);
			/* no libbypass object is loaded besides the preload */
			CHECK_EQ(field(line, "from_bypass"), 0);
		}
		fclose(f);
		unlink(path);
		TEST_LOG("%d lines of the batch module (pids %ld %ld %ld), other lines kept: %d",
			 batch, pids[0], pids[1], pids[2], other);
		CHECK_EQ(other, 1);
		CHECK_EQ(batch, 3);
		CHECK(pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2]);
		CHECK_EQ(deferred_sum, 3);
		return test_pass("batch/preload-stats");
	}
	int ep = epoll_create1(EPOLL_CLOEXEC), sv[2];
	CHECK(ep >= 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	/* Each process queues exactly one write, then exits its own way. */
	for (int k = 0; k < 2; k++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			work(ep, sv[0], sv[1]);
			if (k == 0)
				exit(0);
			_exit(0);
		}
		wait_child(pid);
	}
	work(ep, sv[0], sv[1]);
	return 0;
}
