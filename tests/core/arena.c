/* SPDX-License-Identifier: MIT */
/*
 * arena: the shared-memory arena within one process.  Proves: option
 * checks (-EINVAL for flags, a non-zero reserved field, misaligned or too
 * large requests, NULL out); sizes round up to pages; a fixed address is
 * honoured, and a taken one is -EEXIST; attaching an arena already mapped here is -EEXIST (and logs the
 * address only when BYPASS_LOG asks), attaching a descriptor that is not an
 * arena is -EINVAL; alloc honours alignment (0 = 64), refuses bad
 * alignments and sizes, returns disjoint blocks, and -ENOSPC when full
 * (and small blocks still fit after a big one failed); roots (set/get,
 * -ENOENT when empty, -EINVAL for bad indexes and pointers outside);
 * contains() at the edges.
 */
#include <bypass/core.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>

#include "harness.h"
#include "core/testutil.h"

static size_t ps;

static void options(void)
{
	bypass_arena *a = (bypass_arena *)0x1;
	CHECK_ERR(bypass_arena_create(NULL, NULL), -EINVAL);
	struct bypass_arena_opts o = { .flags = 1 };
	CHECK_ERR(bypass_arena_create(&o, &a), -EINVAL);
	/* Reserved fields must be zero: each one alone is refused. */
	for (int i = 0; i < 4; i++) {
		o = (struct bypass_arena_opts){ .size = 2 * ps };
		o.reserved[i] = 1ull << (i * 16);
		CHECK_ERR(bypass_arena_create(&o, &a), -EINVAL);
	}
	o = (struct bypass_arena_opts){ .addr = (void *)((16ull << 40) + 1) };
	CHECK_ERR(bypass_arena_create(&o, &a), -EINVAL);
	o = (struct bypass_arena_opts){ .size = (1ull << 40) + 1 };
	CHECK_ERR(bypass_arena_create(&o, &a), -EINVAL);
	o = (struct bypass_arena_opts){ .size = SIZE_MAX };
	CHECK_ERR(bypass_arena_create(&o, &a), -EINVAL);
	CHECK(a == (bypass_arena *)0x1);

	/* Defaults: 1 MiB, a name, an fd. */
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	CHECK_EQ(bypass_arena_size(a), 1 << 20);
	CHECK(bypass_arena_fd(a) >= 0);
	CHECK(((uintptr_t)bypass_arena_base(a) & (ps - 1)) == 0);
	CHECK_ERR(bypass_arena_close(a), 0);

	/* Rounded up to whole pages. */
	o = (struct bypass_arena_opts){ .size = 3 * ps + 1, .name = "rounded" };
	CHECK_ERR(bypass_arena_create(&o, &a), 0);
	CHECK_EQ(bypass_arena_size(a), 4 * ps);
	CHECK_ERR(bypass_arena_close(a), 0);
	o = (struct bypass_arena_opts){ .size = 1 };
	CHECK_ERR(bypass_arena_create(&o, &a), 0);
	CHECK(bypass_arena_size(a) >= ps);
	CHECK_ERR(bypass_arena_close(a), 0);

	/* NULL handles. */
	CHECK_ERR(bypass_arena_close(NULL), -EINVAL);
	CHECK_ERR(bypass_arena_fd(NULL), -EINVAL);
	CHECK(bypass_arena_base(NULL) == NULL);
	CHECK_EQ(bypass_arena_size(NULL), 0);
	CHECK_ERR(bypass_arena_open(-1, &a), -EINVAL);
	CHECK_EQ(bypass_arena_contains(NULL, &a, 1), 0);
}

static void fixed_addresses(void)
{
	/* Find a free, aligned range, then ask for it. */
	size_t len = 16 * ps;
	void *probe = mmap(NULL, len * 2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(probe != MAP_FAILED);
	void *want = (void *)(((uintptr_t)probe + len - 1) & ~(uintptr_t)(len - 1));
	CHECK_EQ(munmap(probe, len * 2), 0);
	struct bypass_arena_opts o = { .size = len, .addr = want };
	bypass_arena *a, *b;
	CHECK_ERR(bypass_arena_create(&o, &a), 0);
	CHECK(bypass_arena_base(a) == want);
	/* Taken now: by the arena itself, or overlapping it. */
	int old = bypass_set_log_level(BYPASS_LOG_NONE);
	CHECK_ERR(bypass_arena_create(&o, &b), -EEXIST);
	o.addr = (char *)want + len - ps;
	CHECK_ERR(bypass_arena_create(&o, &b), -EEXIST);
	/* Attach of an arena already mapped in this process: -EEXIST. */
	CHECK_ERR(bypass_arena_open(bypass_arena_fd(a), &b), -EEXIST);
	bypass_set_log_level(old);
	CHECK_ERR(bypass_arena_close(a), 0);
}

static void not_arenas(void)
{
	bypass_arena *a;
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_ERR(bypass_arena_open(p[0], &a), -EINVAL);
	close(p[0]);
	close(p[1]);
	int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK_ERR(bypass_arena_open(dn, &a), -EINVAL);
	close(dn);
	int dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_ERR(bypass_arena_open(dir, &a), -EINVAL);
	close(dir);
	/* Shared memory that is no arena: too small, then zeroes, then junk. */
	int m = memfd_create("not-an-arena", MFD_CLOEXEC);
	CHECK(m >= 0);
	CHECK_ERR(bypass_arena_open(m, &a), -EINVAL);
	CHECK_EQ(ftruncate(m, (off_t)(4 * ps)), 0);
	CHECK_ERR(bypass_arena_open(m, &a), -EINVAL);
	char junk[256];
	memset(junk, 0xa5, sizeof(junk));
	CHECK_EQ(pwrite(m, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	CHECK_ERR(bypass_arena_open(m, &a), -EINVAL);
	close(m);
	/* An arena's header with a wrong size (the file grew): -EINVAL. */
	bypass_arena *real;
	CHECK_ERR(bypass_arena_create(NULL, &real), 0);
	int fd = bypass_arena_fd(real);
	CHECK_EQ(ftruncate(fd, (off_t)(bypass_arena_size(real) + ps)), 0);
	CHECK_ERR(bypass_arena_open(fd, &a), -EINVAL);
	CHECK_ERR(bypass_arena_open(fd, NULL), -EINVAL);
	CHECK_ERR(bypass_arena_close(real), 0);
}

static void alloc(void)
{
	struct bypass_arena_opts o = { .size = 64 * ps };
	bypass_arena *a;
	CHECK_ERR(bypass_arena_create(&o, &a), 0);
	char *base = bypass_arena_base(a);
	size_t size = bypass_arena_size(a);
	void *p;
	CHECK_ERR(bypass_arena_alloc(NULL, 8, 0, &p), -EINVAL);
	CHECK_ERR(bypass_arena_alloc(a, 8, 0, NULL), -EINVAL);
	CHECK_ERR(bypass_arena_alloc(a, 0, 0, &p), -EINVAL);
	CHECK_ERR(bypass_arena_alloc(a, 8, 3, &p), -EINVAL);
	CHECK_ERR(bypass_arena_alloc(a, 8, 48, &p), -EINVAL);
	CHECK_ERR(bypass_arena_alloc(a, 8, 8192, &p), -EINVAL);
	CHECK_ERR(bypass_arena_alloc(a, size + 1, 0, &p), -ENOSPC);
	CHECK_ERR(bypass_arena_alloc(a, SIZE_MAX, 0, &p), -ENOSPC);

	/* Alignment: 0 means 64; every power of two up to 4096. */
	char *prev_end = NULL;
	for (size_t al = 0; al <= 4096; al = al ? al * 2 : 1) {
		for (int k = 0; k < 3; k++) {
			size_t sz = 1 + (size_t)k * 37;
			CHECK_ERR(bypass_arena_alloc(a, sz, al, &p), 0);
			size_t want = al ? al : 64;
			if ((uintptr_t)p % want)
				TEST_FAIL("align %zu: %p", al, p);
			CHECK(bypass_arena_contains(a, p, sz));
			/* Blocks follow one another without overlap. */
			CHECK((char *)p >= prev_end);
			prev_end = (char *)p + sz;
			memset(p, 0x11, sz);
		}
	}
	/* The header page is never handed out. */
	CHECK((char *)p >= base + 4096);

	/* Fill it up: -ENOSPC, yet a small block still fits after. */
	size_t left = (size_t)(base + size - prev_end);
	CHECK_ERR(bypass_arena_alloc(a, left + 1, 1, &p), -ENOSPC);
	CHECK_ERR(bypass_arena_alloc(a, left - 64, 1, &p), 0);
	CHECK_ERR(bypass_arena_alloc(a, 64, 4096, &p), -ENOSPC);
	CHECK_ERR(bypass_arena_alloc(a, 64, 1, &p), 0);
	CHECK((char *)p + 64 == base + size);
	CHECK_ERR(bypass_arena_alloc(a, 1, 1, &p), -ENOSPC);
	CHECK_ERR(bypass_arena_close(a), 0);
}

static void roots(void)
{
	bypass_arena *a, *other;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	CHECK_ERR(bypass_arena_create(NULL, &other), 0);
	void *p, *q, *got;
	CHECK_ERR(bypass_arena_alloc(a, 100, 0, &p), 0);
	CHECK_ERR(bypass_arena_alloc(a, 100, 0, &q), 0);
	for (unsigned i = 0; i < BYPASS_ARENA_ROOTS; i++)
		CHECK_ERR(bypass_arena_get_root(a, i, &got), -ENOENT);
	CHECK_ERR(bypass_arena_set_root(a, 0, p), 0);
	CHECK_ERR(bypass_arena_set_root(a, BYPASS_ARENA_ROOTS - 1, q), 0);
	CHECK_ERR(bypass_arena_get_root(a, 0, &got), 0);
	CHECK(got == p);
	CHECK_ERR(bypass_arena_get_root(a, BYPASS_ARENA_ROOTS - 1, &got), 0);
	CHECK(got == q);
	CHECK_ERR(bypass_arena_get_root(a, 1, &got), -ENOENT);
	CHECK_ERR(bypass_arena_set_root(a, 0, q), 0); /* replace */
	CHECK_ERR(bypass_arena_get_root(a, 0, &got), 0);
	CHECK(got == q);

	/* Bad index, bad pointers. */
	CHECK_ERR(bypass_arena_set_root(a, BYPASS_ARENA_ROOTS, p), -EINVAL);
	CHECK_ERR(bypass_arena_get_root(a, BYPASS_ARENA_ROOTS, &got), -EINVAL);
	CHECK_ERR(bypass_arena_get_root(a, ~0u, &got), -EINVAL);
	CHECK_ERR(bypass_arena_get_root(a, 0, NULL), -EINVAL);
	CHECK_ERR(bypass_arena_set_root(NULL, 0, p), -EINVAL);
	CHECK_ERR(bypass_arena_get_root(NULL, 0, &got), -EINVAL);
	int local;
	CHECK_ERR(bypass_arena_set_root(a, 2, &local), -EINVAL);
	void *op;
	CHECK_ERR(bypass_arena_alloc(other, 8, 0, &op), 0);
	CHECK_ERR(bypass_arena_set_root(a, 2, op), -EINVAL);
	CHECK_ERR(bypass_arena_set_root(a, 2, bypass_arena_base(a)), -EINVAL); /* header */
	CHECK_ERR(bypass_arena_set_root(a, 2, (char *)bypass_arena_base(a) +
					       bypass_arena_size(a)), -EINVAL);
	CHECK_ERR(bypass_arena_get_root(a, 2, &got), -ENOENT);
	CHECK_ERR(bypass_arena_close(other), 0);
	CHECK_ERR(bypass_arena_close(a), 0);
}

static void contains(void)
{
	bypass_arena *a;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	char *b = bypass_arena_base(a);
	size_t n = bypass_arena_size(a);
	CHECK_EQ(bypass_arena_contains(a, b, 1), 1);
	CHECK_EQ(bypass_arena_contains(a, b, n), 1);
	CHECK_EQ(bypass_arena_contains(a, b, n + 1), 0);
	CHECK_EQ(bypass_arena_contains(a, b + n - 1, 1), 1);
	CHECK_EQ(bypass_arena_contains(a, b + n - 1, 2), 0);
	CHECK_EQ(bypass_arena_contains(a, b + n, 1), 0);
	CHECK_EQ(bypass_arena_contains(a, b - 1, 1), 0);
	CHECK_EQ(bypass_arena_contains(a, b + 1, SIZE_MAX), 0);
	CHECK_EQ(bypass_arena_contains(a, NULL, 1), 0);
	int local;
	CHECK_EQ(bypass_arena_contains(a, &local, sizeof(local)), 0);
	CHECK_ERR(bypass_arena_close(a), 0);
}

int main(void)
{
	test_timeout(60);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	options();
	fixed_addresses();
	not_arenas();
	alloc();
	roots();
	contains();
	return test_pass("core/arena");
}
