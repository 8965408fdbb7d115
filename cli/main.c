/* SPDX-License-Identifier: MIT */
/* bypass: the command's entry point, help, version, and where files are. */
#include "cli.h"

#include <bypass/core.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BYPASS_CLI_LIBDIR_REL
#define BYPASS_CLI_LIBDIR_REL "../lib"
#endif

const char *cli_prog = "bypass";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bypass <command> [options]\n"
		"\n"
		"  doctor [--json]      what this kernel and CPU offer to each module, and why not\n"
		"  run [--batch] [--pager SIZE[,swap=PATH]] [--report FILE] [--stats=json FILE] [--]\n"
		"      PROGRAM [ARGS...]\n"
		"                       run an unmodified program under libbypass-batch.so and/or\n"
		"                       libbypass-pager.so, and report what they did at its end\n"
		"                       (bypass run --help for every option)\n"
		"  bench [MODULE|all] [ARGS...]\n"
		"                       the benchmark driver (bypass-bench; --help lists its options)\n"
		"  heat [--watch] [--count N] FILE\n"
		"                       print a pager's access-heat view (BYPASS_PAGER_HEAT_FILE)\n"
		"  --help, -h           this text\n"
		"  --version            the library's version\n"
		"\n"
		"exit status: doctor 0 (a missing feature is an answer, not an error); run the\n"
		"program's own status (128+N if signal N ended it, 126 not executable, 127 not\n"
		"found); 1 the command failed; 2 bad usage.  See bypass(1) and bypass(7).\n");
}

static int self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -errno;
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	return 0;
}

int cli_find(const char *name, char *buf, size_t len)
{
	char dir[PATH_MAX];
	if (self_dir(dir, sizeof(dir)))
		snprintf(dir, sizeof(dir), ".");
	/* next to the command (build tree root, or an install's bin/), the
	 * build tree's bench/, the install's library directory, and its
	 * private bypass/ directory (the Debian package's preloads) */
	static const char libdir[] = "/" BYPASS_CLI_LIBDIR_REL;
	static const char privdir[] = "/" BYPASS_CLI_LIBDIR_REL "/bypass";
	const char *sub[] = { "", "/bench", libdir, privdir };
	size_t off = 0;
	char tried[4 * PATH_MAX] = "";
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		char p[PATH_MAX];
		int n = snprintf(p, sizeof(p), "%s%s/%s", dir, sub[i], name);
		if (n <= 0 || (size_t)n >= sizeof(p))
			continue;
		if (access(p, R_OK) == 0) {
			char real[PATH_MAX];
			snprintf(buf, len, "%s", realpath(p, real) ? real : p);
			return 0;
		}
		off += (size_t)snprintf(tried + off, sizeof(tried) - off, "%s%s",
					off ? ", " : "", p);
		if (off >= sizeof(tried))
			off = sizeof(tried) - 1;
	}
	snprintf(buf, len, "%s", tried);
	return -ENOENT;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("bypass %s\n", bypass_version());
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "doctor"))
		return cli_doctor(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cli_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "bench"))
		return cli_bench(argc - 1, argv + 1);
	if (!strcmp(cmd, "heat"))
		return cli_heat(argc - 1, argv + 1);
	fprintf(stderr, "bypass: unknown command '%s' (doctor, run, bench, heat; see bypass --help)\n",
		cmd);
	return CLI_EXIT_USAGE;
}
