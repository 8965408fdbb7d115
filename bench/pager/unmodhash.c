/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified's hash-table program (issue 32, item 5): this binary
 * itself, run with BYPASS_BENCH_UNMODIFIED_HASH set, when a constructor
 * runs it and exits before bypass-bench's main (as unmodprog.c's C
 * program).  Only libc: an ordinary program that never calls bypass.
 *
 * A chained hash table of N nodes of 64 bytes (a 64-bit key, the next
 * pointer, a 48-byte value derived from the key), each node its own
 * malloc, the bucket array a power of two at least N; then L lookups of
 * keys drawn at random, half of them present, half never inserted.  The
 * build writes the nodes in allocation order (the buckets at random); the
 * lookups read a bucket and its chain's nodes at random: the random
 * accesses are the point.  Output: nodes, lookups, hits and a checksum of
 * the values read.  The nodes are not freed at exit (as many programs do
 * not: freeing would read every node back).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hnode {
	uint64_t key;
	struct hnode *next;
	unsigned char val[48];
};

static uint64_t hash_mix(uint64_t x) /* splitmix64's finalizer */
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* BYPASS_BENCH_UNMODIFIED_HASH=<nodes> <lookups> */
static void hash_main(const char *spec)
{
	unsigned long long n, lookups;
	if (sscanf(spec, "%llu %llu", &n, &lookups) != 2 || !n)
		_exit(3);
	uint64_t nb = 1;
	while (nb < n)
		nb <<= 1;
	struct hnode **b = calloc(nb, sizeof(*b));
	if (!b) {
		perror("hash program: calloc");
		_exit(2);
	}
	for (uint64_t i = 0; i < n; i++) {
		struct hnode *p = malloc(sizeof(*p));
		if (!p) {
			perror("hash program: malloc");
			_exit(2);
		}
		p->key = hash_mix(i);
		for (size_t k = 0; k < sizeof(p->val); k += 8) {
			uint64_t v = hash_mix(p->key + k);
			memcpy(p->val + k, &v, 8);
		}
		uint64_t h = p->key & (nb - 1);
		p->next = b[h];
		b[h] = p;
	}
	uint64_t x = 0x2545f4914f6cdd1dull, hits = 0, sum = 0;
	for (unsigned long long q = 0; q < lookups; q++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t key = hash_mix(x % (2 * n)); /* below n: inserted */
		for (struct hnode *p = b[key & (nb - 1)]; p; p = p->next)
			if (p->key == key) {
				hits++;
				sum = sum * 31 + p->val[key % sizeof(p->val)];
				break;
			}
	}
	printf("nodes %llu buckets %llu lookups %llu hits %llu sum %016llx\n", n,
	       (unsigned long long)nb, lookups, (unsigned long long)hits,
	       (unsigned long long)sum);
	exit(0); /* not _exit: the preload writes its statistics at exit */
}

__attribute__((constructor)) static void hash_hook(void)
{
	const char *spec = getenv("BYPASS_BENCH_UNMODIFIED_HASH");
	if (spec && *spec)
		hash_main(spec);
}
