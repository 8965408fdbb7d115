/* SPDX-License-Identifier: MIT */
/*
 * arena-alloc-race: bypass_arena_alloc from several processes (forked, so
 * they share the arena) and then several threads at once, with mixed sizes
 * and alignments, until the arena is full.  Proves every block is aligned,
 * inside the arena, disjoint from every other (each owner's fill pattern
 * survives intact), and that the allocator ends with -ENOSPC, never
 * overflowing.
 *
 * TEST_LABELS: threads
 */
#include <bypass/core.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "harness.h"
#include "core/testutil.h"

#define OWNERS 4
#define MAXBLK 20000

struct blk {
	uint32_t off, size;
};

struct owner {
	bypass_arena *a;
	int id;
	struct blk *blk; /* lives in the arena for the forked owners */
	_Atomic int n;
};

static void fill(struct owner *o)
{
	char *base = bypass_arena_base(o->a);
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(o->id + 1);
	for (int i = 0; i < MAXBLK; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t size = 1 + x % 300;
		size_t align = (x >> 20) % 4 == 0 ? 0 : (size_t)1 << ((x >> 24) % 13);
		void *p;
		int r = bypass_arena_alloc(o->a, size, align, &p);
		if (r == -ENOSPC)
			break;
		CHECK_ERR(r, 0);
		if ((uintptr_t)p % (align ? align : 64))
			TEST_FAIL("owner %d: %p not aligned to %zu", o->id, p, align);
		CHECK(bypass_arena_contains(o->a, p, size));
		memset(p, 0x40 + o->id, size);
		o->blk[i] = (struct blk){ (uint32_t)((char *)p - base), (uint32_t)size };
		atomic_store(&o->n, i + 1);
	}
}

static void *thread_main(void *p)
{
	fill(p);
	return NULL;
}

static int cmp(const void *x, const void *y)
{
	const struct blk *a = x, *b = y;
	return a->off < b->off ? -1 : a->off > b->off;
}

static void verify(bypass_arena *a, struct owner *o)
{
	char *base = bypass_arena_base(a);
	size_t total = 0;
	for (int k = 0; k < OWNERS; k++)
		total += (size_t)atomic_load(&o[k].n);
	CHECK(total > 0);
	struct blk *all = calloc(total, sizeof(*all));
	CHECK(all != NULL);
	size_t m = 0;
	for (int k = 0; k < OWNERS; k++) {
		for (int i = 0; i < atomic_load(&o[k].n); i++) {
			struct blk b = o[k].blk[i];
			for (uint32_t j = 0; j < b.size; j++)
				if (base[b.off + j] != (char)(0x40 + k))
					TEST_FAIL("owner %d block %d overwritten", k, i);
			all[m++] = b;
		}
	}
	qsort(all, m, sizeof(*all), cmp);
	for (size_t i = 1; i < m; i++)
		if (all[i - 1].off + all[i - 1].size > all[i].off)
			TEST_FAIL("blocks at %u+%u and %u overlap", all[i - 1].off,
				  all[i - 1].size, all[i].off);
	CHECK(all[m - 1].off + all[m - 1].size <= bypass_arena_size(a));
	TEST_LOG("%zu blocks, disjoint", m);
	free(all);
}

/* What the owners left (less than their last failed request) fills up too. */
static void drain(bypass_arena *a)
{
	void *p;
	int n = 0, r;
	while ((r = bypass_arena_alloc(a, 1, 1, &p)) == 0)
		n++;
	CHECK_ERR(r, -ENOSPC);
	CHECK(n < 4096 + 300);
	CHECK(n == 0 || (char *)p == (char *)bypass_arena_base(a) + bypass_arena_size(a) - 1);
}

int main(void)
{
	test_timeout(120);
	/* Processes first (before any thread). */
	bypass_arena *a;
	struct bypass_arena_opts ao = { .size = 2 << 20 };
	CHECK_ERR(bypass_arena_create(&ao, &a), 0);
	struct owner *po;
	CHECK_ERR(bypass_arena_alloc(a, sizeof(*po) * OWNERS, 0, (void **)&po), 0);
	for (int k = 0; k < OWNERS; k++) {
		po[k].a = a;
		po[k].id = k;
		CHECK_ERR(bypass_arena_alloc(a, sizeof(struct blk) * MAXBLK, 0,
					     (void **)&po[k].blk), 0);
		memset(po[k].blk, 0, sizeof(struct blk) * MAXBLK);
	}
	pid_t pid[OWNERS];
	for (int k = 0; k < OWNERS; k++) {
		pid[k] = fork();
		CHECK(pid[k] >= 0);
		if (pid[k] == 0) {
			fill(&po[k]);
			_exit(0);
		}
	}
	for (int k = 0; k < OWNERS; k++)
		wait_child(pid[k]);
	verify(a, po);
	drain(a);
	CHECK_ERR(bypass_arena_close(a), 0);

	/* Then threads. */
	ao.size = 1 << 20;
	CHECK_ERR(bypass_arena_create(&ao, &a), 0);
	struct owner to[OWNERS];
	pthread_t t[OWNERS];
	for (int k = 0; k < OWNERS; k++) {
		to[k] = (struct owner){ .a = a, .id = k };
		to[k].blk = calloc(MAXBLK, sizeof(struct blk));
		CHECK(to[k].blk != NULL);
		CHECK_EQ(pthread_create(&t[k], NULL, thread_main, &to[k]), 0);
	}
	for (int k = 0; k < OWNERS; k++)
		CHECK_EQ(pthread_join(t[k], NULL), 0);
	verify(a, to);
	drain(a);
	for (int k = 0; k < OWNERS; k++)
		free(to[k].blk);
	CHECK_ERR(bypass_arena_close(a), 0);
	return test_pass("core/arena-alloc-race");
}
