/* SPDX-License-Identifier: MIT */
/*
 * helper-stacked-faults MIB [ROUNDS]: started by tests/pager/preload-stacked-faults.sh
 * under `bypass run --batch --pager SIZE`.  One private anonymous mapping
 * of MIB MiB (a region of the pager preload's), every page written with a
 * pattern of its own, then read back and checked ROUNDS times (default 3)
 * in order: with a budget below MIB, the first pass faults (zero pages)
 * and evicts, the next ones swap in.  MIB 0: the idle run (nothing
 * mapped, nothing faulted).  Prints "ok PAGES" and exits 0, or prints the
 * first wrong page and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s MIB [ROUNDS]\n", argv[0]);
		return 2;
	}
	size_t mib = strtoul(argv[1], NULL, 10);
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = mib << 20, n = len / pg;
	if (!mib) {
		printf("ok 0\n");
		return 0;
	}
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t o = 0; o < pg; o += 512)
			*(uint64_t *)(m + i * pg + o) = (uint64_t)i * 0x9e3779b97f4a7c15ull + o;
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < n; i++)
			for (size_t o = 0; o < pg; o += 512)
				if (*(uint64_t *)(m + i * pg + o) !=
				    (uint64_t)i * 0x9e3779b97f4a7c15ull + o) {
					printf("page %zu offset %zu wrong in round %d\n", i, o, r);
					return 1;
				}
	munmap(m, len);
	printf("ok %zu\n", n);
	return 0;
}
