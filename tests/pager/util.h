/* SPDX-License-Identifier: MIT */
/* Helpers shared by the pager tests. */
#ifndef BYPASS_TEST_PAGER_UTIL_H
#define BYPASS_TEST_PAGER_UTIL_H

#include "harness.h"
#include "core/testutil.h"

#include <bypass/pager.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define PAGE 4096ul

/*
 * A temporary directory for swap files, removed however the test ends: by
 * its own process at exit (atexit; tests also call tmpdir_cleanup() on
 * their paths), and, for the paths that skip atexit (the harness fails
 * through _exit, a child exits through _exit, a signal kills the test), by
 * a janitor process that waits for the end of a pipe only the test and its
 * forked children hold (close-on-exec: a program they exec does not hold
 * it), then removes it.  The directory is made once, by the first call, in
 * the process that calls it: a test that forks children which make pagers
 * calls tmpdir() first, so that they share the parent's; only the process
 * that made it removes it at exit (a child's exit leaves it to its parent).
 */
static char test_dir[64];
static pid_t test_dir_owner;

static inline void tmpdir_rm(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static inline void tmpdir_cleanup(void)
{
	if (test_dir[0] && test_dir_owner == getpid()) {
		tmpdir_rm(test_dir);
		test_dir[0] = 0;
	}
}

static inline void tmpdir_janitor(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		TEST_FAIL("pipe2: %s", strerror(errno));
	/* Forked twice: not a child of the test (whose waits for its own
	 * children must not see it). */
	pid_t pid = fork();
	if (pid < 0)
		TEST_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[1]);
		setsid(); /* outlives a kill of the test's process group */
		if (fork() != 0)
			_exit(0);
		char c;
		for (;;) {
			ssize_t n = read(p[0], &c, 1);
			if (n == 0 || (n < 0 && errno != EINTR))
				break;
		}
		if (access(test_dir, F_OK) == 0)
			tmpdir_rm(test_dir);
		_exit(0);
	}
	close(p[0]); /* p[1] stays open until the test (and its children) end */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static inline const char *tmpdir(void)
{
	if (!test_dir[0]) {
		const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		snprintf(test_dir, sizeof(test_dir), "%s/bypass-pager-XXXXXX", base);
		if (!mkdtemp(test_dir))
			TEST_FAIL("mkdtemp: %s", strerror(errno));
		test_dir_owner = getpid();
		tmpdir_janitor();
		atexit(tmpdir_cleanup);
	}
	return test_dir;
}

/*
 * bypass_pager_create(c) with an unnamed swap file in the test's directory
 * (it vanishes with the pager): the pager, or NULL where handler mode is
 * not allowed here (-EPERM); any other failure fails the test.
 */
static inline bypass_pager *try_pager(struct bypass_pager_config *c)
{
	c->swap_path = tmpdir();
	c->flags |= BYPASS_PAGER_SWAP_TEMP;
	bypass_pager *p = NULL;
	int r = bypass_pager_create(c, &p);
	if (r == -EPERM && c->mode == BYPASS_PAGER_HANDLER)
		return NULL;
	if (r)
		TEST_FAIL("bypass_pager_create: %s", strerror(-r));
	return p;
}

/* A pager with an unnamed swap file; the test skips where its mode is not
 * allowed. */
static inline bypass_pager *new_pager(int mode, size_t budget, size_t swap)
{
	struct bypass_pager_config c = { .budget = budget, .swap_size = swap, .mode = mode };
	bypass_pager *p = try_pager(&c);
	if (!p)
		SKIP("handler mode needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd");
	return p;
}

static inline const char *mode_name(int mode)
{
	return mode == BYPASS_PAGER_UPCALL ? "upcall" : "handler";
}

/* The content of page i at version v: every word depends on both. */
static inline uint64_t pat(uint64_t page, uint64_t v, uint64_t word)
{
	uint64_t x = (page + 1) * 0x9e3779b97f4a7c15ull ^ (v + 1) * 0xc2b2ae3d27d4eb4full;
	x ^= word * 0x165667b19e3779f9ull;
	x ^= x >> 29;
	return x;
}

static inline void fill_page(void *pg, uint64_t page, uint64_t v)
{
	uint64_t *w = pg;
	for (uint64_t i = 0; i < PAGE / 8; i++)
		w[i] = pat(page, v, i);
}

/* 1 if page holds version v of page `page`. */
static inline int page_ok(const void *pg, uint64_t page, uint64_t v)
{
	const uint64_t *w = pg;
	for (uint64_t i = 0; i < PAGE / 8; i++)
		if (w[i] != pat(page, v, i))
			return 0;
	return 1;
}

static inline int page_zero(const void *pg)
{
	const uint64_t *w = pg;
	for (uint64_t i = 0; i < PAGE / 8; i++)
		if (w[i])
			return 0;
	return 1;
}

/* Pages of [p, p+len) present in the page table (mincore). */
static inline size_t present_pages(void *p, size_t len)
{
	static unsigned char vec[1 << 20];
	size_t n = len / PAGE;
	if (n > sizeof(vec) || mincore(p, len, vec) < 0)
		TEST_FAIL("mincore: %s", n > sizeof(vec) ? "too long" : strerror(errno));
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += vec[i] & 1;
	return c;
}

/* The page at a is not mapped in this process at all. */
static inline int absent(void *a)
{
	unsigned char v;
	return mincore((void *)((uintptr_t)a & ~(PAGE - 1)), PAGE, &v) < 0 && errno == ENOMEM;
}

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static inline struct bypass_pager_stats stats_of(bypass_pager *p)
{
	struct bypass_pager_stats st;
	CHECK_EQ(bypass_pager_stats(p, &st), 0);
	return st;
}

#endif
