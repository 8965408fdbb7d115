/* SPDX-License-Identifier: MIT */
/*
 * preload-refused: where io_uring is refused (container runtimes block
 * io_uring_setup with seccomp by default; kernel.io_uring_disabled does the
 * same machine-wide), the preload notices, says so once at BYPASS_LOG=info,
 * and passes every call through: the server under it serves every request
 * byte for byte, and nothing is deferred.
 *
 * The refusal is real: a seccomp filter makes io_uring_setup fail with
 * EPERM (or ENOSYS) for the server, as Docker's default profile does.  The
 * sysctl is not touched: it is machine-wide, and would fail the io_uring
 * users of every other test running at the same time.
 */
#include <stddef.h>
#include <sys/syscall.h>

#include "batch/util.h"

/* io_uring_setup fails with err for this process and what it execs. */
static void refuse_io_uring(int err)
{
	static const int nrs[] = { __NR_io_uring_setup };
	int r = test_seccomp_refuse(nrs, 1, err);
	if (r)
		SKIP("seccomp filters unavailable here: %s", strerror(-r));
	CHECK_EQ(syscall(__NR_io_uring_setup, 4, NULL), -1);
	CHECK_EQ(errno, err);
}

static int count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

static void one(char *argv0, const char *dir, const char *files, int err)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid) {
		wait_child(pid);
		return;
	}
	/* In a child: the filter stays with it and what it starts. */
	refuse_io_uring(err);
	char errpath[400];
	snprintf(errpath, sizeof(errpath), "%s/server.err", dir);
	int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && saved >= 0);
	const char *ka[] = { "--files", files, "--conns", "8", "--requests", "24", NULL };
	const char *cl[] = { "--files", files, "--conns", "4", "--requests", "12", "--close", NULL };
	const char *env[] = { "BYPASS_LOG=info", "BYPASS_BATCH_SENDFILE=copy",
			      "BYPASS_BATCH_SENDFILE_MAX=65536", NULL };
	const char *sargs[] = { "--threads", "2", NULL };
	struct server s;
	dup2(fd, 2); /* the server's standard error */
	server_start(&s, argv0, dir, sargs, env);
	dup2(saved, 2);
	CHECK_EQ(run_client(argv0, s.port, dir, ka), 0);
	CHECK_EQ(run_client(argv0, s.port, dir, cl), 0);
	long served = server_stop(&s, NULL);
	long deferred = stats_sum(dir, "deferred");
	int said = count_lines(errpath, "io_uring unavailable");
	TEST_LOG("io_uring_setup -> %s: served %ld, deferred %ld, said so %d time(s)",
		 strerror(err), served, deferred, said);
	CHECK_EQ(served, 8 * 24 + 4 * 12);
	CHECK(deferred <= 0);
	CHECK_EQ(said, 1);
	close(fd);
	_exit(0);
}

int main(int argc, char **argv)
{
	(void)argc;
	char dir[256], files[1024];
	preload_setup("refused", dir, sizeof(dir), files, sizeof(files));
	one(argv[0], dir, files, EPERM);
	one(argv[0], dir, files, ENOSYS);
	rm_tree(dir);
	return test_pass("batch/preload-refused");
}
