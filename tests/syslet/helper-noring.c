/* SPDX-License-Identifier: MIT */
/*
 * helper-noring PROGRAM [ARGS]: run PROGRAM with io_uring refused (a
 * seccomp filter: io_uring_setup fails with EPERM, as under container
 * runtimes' default profiles).  Used by refused-all.sh.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/testutil.h"

static int refuse_io_uring(void)
{
	static const int nrs[] = { SYS_io_uring_setup };
	return test_seccomp_refuse(nrs, 1, EPERM);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: helper-noring PROGRAM [ARGS]\n");
		return 2;
	}
	int r = refuse_io_uring();
	if (r) {
		printf("SKIP: cannot install a seccomp filter: %s\n", strerror(-r));
		return 77;
	}
	execv(argv[1], argv + 1);
	perror(argv[1]);
	return 1;
}
