/* SPDX-License-Identifier: MIT */
/*
 * The iceoryx2 row of ipc.oneway: bench/ipc/iceoryx2-peer (our small Rust
 * program depending on the iceoryx2 crate) is built with cargo into the
 * build directory, only if cargo is present; nothing of iceoryx2 is kept in
 * the source tree.  Skipped with --smoke (the first build takes minutes) or
 * --param iceoryx2=0.
 */
#include "ipc_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

const char *ipcb_iceoryx2(struct bench_ctx *c, uint64_t count, struct bench_summary *s)
{
	if (bench_smoke(c))
		return "not built in --smoke runs (the first cargo build takes minutes)";
	if (!strcmp(bench_param(c, "iceoryx2", "1"), "0"))
		return "--param iceoryx2=0";
	char bin[1024];
	const char *e = build(bin, sizeof(bin));
	if (e)
		return e;
	int ca, cb;
	bench_cpus(c, &ca, &cb);
	char dir[] = "/tmp/bypass-iox-XXXXXX";
	if (!mkdtemp(dir))
		return "mkdtemp failed";
	char out[1100], ready[1200], name[64], n[32], a[16], b[16];
	snprintf(out, sizeof(out), "%s/samples", dir);
	snprintf(ready, sizeof(ready), "%s.ready", out);
	snprintf(name, sizeof(name), "bypass-bench-%d", (int)getpid());
	snprintf(n, sizeof(n), "%llu", (unsigned long long)count);
	snprintf(a, sizeof(a), "%d", ca);
	snprintf(b, sizeof(b), "%d", cb);
	const char *res = NULL;
	pid_t srv = fork();
	if (srv == 0) {
		execl(bin, bin, "server", name, n, b, out, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000 && access(ready, F_OK) != 0; i++)
		usleep(10000);
	pid_t cli = fork();
	if (cli == 0) {
		execl(bin, bin, "client", name, n, a, (char *)NULL);
		_exit(127);
	}
	if (ipcb_wait(cli) || ipcb_wait(srv)) {
		res = "the iceoryx2 peer failed";
	} else {
		int fd = open(out, O_RDONLY);
		struct stat st;
		uint64_t *v = NULL;
		size_t cnt = 0;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
			cnt = (size_t)st.st_size / 8;
			v = malloc(cnt * 8);
			if (v && read(fd, v, cnt * 8) != (ssize_t)(cnt * 8))
				cnt = 0;
		}
		if (fd >= 0)
			close(fd);
		size_t warm = cnt / 50;
		if (cnt > warm)
			bench_summarize(v + warm, cnt - warm, s);
		else
			res = "the iceoryx2 peer wrote no samples";
		free(v);
	}
	unlink(out);
	unlink(ready);
	rmdir(dir);
	return res;
}
