/* SPDX-License-Identifier: MIT */
/*
 * The iceoryx2 row of ipc.oneway: bench/ipc/iceoryx2-peer (our small Rust
 * program depending on the iceoryx2 crate) is built with cargo into the
 * build directory, only if cargo is present; nothing of iceoryx2 is kept in
 * the source tree.  Skipped with --smoke (the first build takes minutes) or
 * --param iceoryx2=0; --quick uses it only once it is built (by a full run
 * or --param iceoryx2=build).  Built once per run; each round of ipc.oneway starts
 * the peer's two processes afresh, in its turn among the other rows.
 */
#include "ipc_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char why[512];

static const char *build(char *bin, size_t len)
{
	const char *bdir = bench_build_dir(), *sdir = bench_source_dir();
	snprintf(bin, len, "%s/iceoryx2-peer/release/bypass-iceoryx2-peer", bdir);
	if (system("command -v cargo >/dev/null 2>&1") != 0)
		return "cargo is not installed";
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "CARGO_TARGET_DIR='%s/iceoryx2-peer' cargo build --release --quiet "
		 "--manifest-path '%s/bench/ipc/iceoryx2-peer/Cargo.toml' "
		 ">'%s/iceoryx2-peer.log' 2>&1",
		 bdir, sdir, bdir);
	if (system(cmd) != 0) {
		snprintf(why, sizeof(why),
			 "cargo could not build the peer (registry unreachable?): see %s/iceoryx2-peer.log",
			 bdir);
		return why;
	}
	if (access(bin, X_OK) != 0)
		return "the peer binary is missing after the build";
	return NULL;
}

const char *ipcb_iceoryx2_prepare(struct bench_ctx *c)
{
	static char bin_path[1024];
	static const char *state; /* NULL: not tried; "" ready; else why not */
	(void)bin_path;
	if (bench_smoke(c))
		return "not built in --smoke runs (the first cargo build takes minutes)";
	const char *want = bench_param(c, "iceoryx2", "1");
	if (!strcmp(want, "0"))
		return "--param iceoryx2=0";
	/* The quick suite must finish within 300 s on a fresh clone: it uses
	 * the peer once it is built but does not pay for its first cargo
	 * build (about 45 s here, most of what a fresh clone's make bench
	 * ran over); the full suite builds it, or iceoryx2=build. */
	if (!state && bench_quick(c) && strcmp(want, "build")) {
		snprintf(bin_path, sizeof(bin_path), "%s/iceoryx2-peer/release/bypass-iceoryx2-peer",
			 bench_build_dir());
		if (access(bin_path, X_OK) != 0)
			state = "not built yet, and the quick suite does not spend its time budget on "
				"the first cargo build (about 45 s): the full suite builds it, or "
				"bypass-bench ipc --quick --param iceoryx2=build; later quick runs use it";
	}
	if (!state) {
		const char *e = build(bin_path, sizeof(bin_path));
		state = e ? e : "";
	}
	return *state ? state : NULL;
}

/* Read a file of u64 samples; the count, or 0. */
static size_t read_samples(const char *path, uint64_t **v)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	size_t cnt = 0;
	*v = NULL;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
		cnt = (size_t)st.st_size / 8;
		*v = malloc(cnt * 8);
		if (!*v || read(fd, *v, cnt * 8) != (ssize_t)(cnt * 8))
			cnt = 0;
	}
	if (fd >= 0)
		close(fd);
	return cnt;
}

static int wait_cpu(pid_t pid, uint64_t *cpu_ns)
{
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			return -1;
	*cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
		  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int ipcb_iceoryx2_run(struct bench_ctx *c, size_t n, uint64_t *ow, uint64_t *rtt,
		      uint64_t *cpu_client_ns, uint64_t *cpu_server_ns)
{
	if (ipcb_iceoryx2_prepare(c))
		return -1;
	char bin[1024];
	snprintf(bin, sizeof(bin), "%s/iceoryx2-peer/release/bypass-iceoryx2-peer",
		 bench_build_dir());
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	char dir[] = "/tmp/bypass-iox-XXXXXX";
	if (!mkdtemp(dir))
		return -1;
	static unsigned seq;
	char out[1100], cout[1100], ready[1200], name[64], cnt[32], a[16], b[16];
	snprintf(out, sizeof(out), "%s/samples", dir);
	snprintf(cout, sizeof(cout), "%s/rtt", dir);
	snprintf(ready, sizeof(ready), "%s.ready", out);
	snprintf(name, sizeof(name), "bypass-bench-%d-%u", (int)getpid(), seq++);
	snprintf(cnt, sizeof(cnt), "%zu", n);
	snprintf(a, sizeof(a), "%d", ca);
	snprintf(b, sizeof(b), "%d", cb);
	int res = -1;
	pid_t srv = fork();
	if (srv == 0) {
		execl(bin, bin, "server", name, cnt, b, out, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000 && access(ready, F_OK) != 0; i++)
		usleep(10000);
	pid_t cli = fork();
	if (cli == 0) {
		execl(bin, bin, "client", name, cnt, a, cout, (char *)NULL);
		_exit(127);
	}
	int rc = wait_cpu(cli, cpu_client_ns);
	if (wait_cpu(srv, cpu_server_ns) == 0 && rc == 0) {
		uint64_t *v, *w;
		size_t nv = read_samples(out, &v), nw = read_samples(cout, &w);
		if (nv == n && nw == n) {
			memcpy(ow, v, n * 8);
			memcpy(rtt, w, n * 8);
			res = 0;
		}
		free(v);
		free(w);
	}
	unlink(out);
	unlink(cout);
	unlink(ready);
	rmdir(dir);
	return res;
}
