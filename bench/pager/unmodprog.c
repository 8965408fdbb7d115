/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified's C program (unmodified.c): this binary itself, run with
 * BYPASS_BENCH_UNMODIFIED_PROG set, when a constructor runs it and exits
 * before bypass-bench's main.  Only libc, only malloc and system calls: an
 * ordinary program that never calls bypass (the preload is what pages it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int prog_fail(const char *what)
{
	fprintf(stderr, "unmodified program: %s: %s\n", what, strerror(errno));
	_exit(2);
}

/*
 * plant=pager.unmodified.orphan (tests/pager/bench-plant.sh): a child that
 * outlives the program, as a pool's worker outlives its parent killed by
 * the OOM killer: its pid appended to the file BYPASS_BENCH_UNMODIFIED_ORPHAN
 * names (the program goes on after that), a little CPU (50 ms), then it waits for ever with the program's
 * stdout open.  The bench must kill and reap it when the program ends.
 */
static void plant_orphan(void)
{
	const char *path = getenv("BYPASS_BENCH_UNMODIFIED_ORPHAN");
	if (!path || !*path)
		return;
	int ready[2];
	if (pipe(ready))
		prog_fail("pipe");
	fflush(NULL);
	pid_t p = fork();
	if (p) { /* the program goes on once its pid is written */
		char b;
		close(ready[1]);
		while (p > 0 && read(ready[0], &b, 1) < 0 && errno == EINTR)
			;
		close(ready[0]);
		return;
	}
	close(ready[0]);
	FILE *f = fopen(path, "a");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	close(ready[1]);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 50000000L);
	for (;;)
		pause();
}

/*
 * BYPASS_BENCH_UNMODIFIED_PROG=<input> <output> <bytes> <updates>: only
 * libc, only malloc and system calls.
 */
static void prog_main(const char *spec)
{
	char in[512], out[512];
	unsigned long long size, updates;
	if (sscanf(spec, "%511s %511s %llu %llu", in, out, &size, &updates) != 4)
		_exit(3);
	size_t n = (size_t)size, grow = n / 4;
	unsigned char *a = malloc(n);
	if (!a)
		prog_fail("malloc");
	int fd = open(in, O_RDONLY);
	if (fd < 0)
		prog_fail(in);
	for (size_t done = 0; done < n;) { /* one read() asks for it all */
		ssize_t r = read(fd, a + done, n - done);
		if (r <= 0)
			prog_fail("read");
		done += (size_t)r;
	}
	close(fd);
	unsigned char *b = malloc(n);
	if (!b)
		prog_fail("malloc");
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(a[n - 1 - i] ^ 0x5a);
	b = realloc(b, n + grow);
	if (!b)
		prog_fail("realloc");
	for (size_t i = 0; i < grow; i++)
		b[n + i] = (unsigned char)(a[i] + b[i]);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (unsigned long long k = 0; k < updates; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t i = (size_t)(x % n);
		a[i] = (unsigned char)(a[i] + b[(i * 7) % (n + grow)]);
	}
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		prog_fail(out);
	if (write(fd, b, n + grow) != (ssize_t)(n + grow) ||
	    pwrite(fd, a, n, (off_t)(n + grow)) != (ssize_t)n)
		prog_fail("write");
	/* read the first part back over b and compare with what was written */
	unsigned char *c = malloc(n);
	if (!c)
		prog_fail("malloc");
	if (pread(fd, c, n, 0) != (ssize_t)n)
		prog_fail("pread");
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i] != b[i]) {
			errno = EIO;
			prog_fail("the file does not hold what was written");
		}
		sum = sum * 31 + a[i];
	}
	close(fd);
	free(c);
	free(b);
	free(a);
	plant_orphan();
	printf("%016llx\n", (unsigned long long)sum);
	exit(0); /* not _exit: the preload writes its statistics at exit */
}

__attribute__((constructor)) static void prog_hook(void)
{
	const char *spec = getenv("BYPASS_BENCH_UNMODIFIED_PROG");
	if (spec && *spec)
		prog_main(spec);
}
