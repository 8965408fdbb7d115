/* SPDX-License-Identifier: MIT */
/*
 * heap-pack-fork: forks while other threads carve the packer's slabs and
 * grow jemalloc's part of the heap, under the preload (the real fork
 * handlers, in their real order: the packer's, holding its class locks,
 * the pool's and its carve lock, then jemalloc's, then the pager's).  Two
 * threads allocate 16 KiB blocks (a new slab every 16, a new pager region
 * every 8 slabs) and one allocates 20-64 KiB blocks (jemalloc's extents),
 * each block filled with a pattern, none freed until the end, past the budget; meanwhile
 * the main thread forks NFORK children, each of which reads a block of
 * every thread's, allocates packed and jemalloc blocks of its own (new
 * slabs and extents in the child) and frees them.  A child that has not
 * ended within a minute is a hang: it is killed and the test fails.  At
 * the end every block still holds its pattern.  The packer's own fork case,
 * a carve caught half done, is heap-pack-unit's (stubbed, where it can be
 * seen); this one is the lock order of the real handlers (it passes before
 * the carve lock too: it guards against a hang, it does not show the
 * half-done carve).  How many forks fell while the threads still allocated
 * is logged, not checked (7-12 of 24 in 8 runs at load ~10).  Skips where the
 * preload was built without jemalloc, and under the sanitizers.
 * TEST_LABELS: threads
 */
#include "pager/heap-util.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#define NFORK 24
#define NBIG 400 /* jemalloc blocks */
#define NPACK 2000 /* packed blocks a carving thread (125 slabs) */

static unsigned char *packed_blk[2][NPACK], *big_blk[NBIG];
static _Atomic unsigned done_pack[2], done_big;
static _Atomic bool stop;

static size_t big_size(unsigned i)
{
	return 20480 + (i * 2654435761u) % 45056;
}

static void *carver(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < NPACK && !atomic_load(&stop); i++) {
		unsigned char *b = malloc(16384);
		CHECK(b);
		pp_fill(b, 16384, t * NPACK + i);
		packed_blk[t][i] = b;
		atomic_store(&done_pack[t], i + 1);
	}
	return NULL;
}

static void *grower(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < NBIG && !atomic_load(&stop); i++) {
		unsigned char *b = malloc(big_size(i));
		CHECK(b);
		pp_fill(b, big_size(i), 7 * i);
		big_blk[i] = b;
		atomic_store(&done_big, i + 1);
	}
	return NULL;
}

static int child(void)
{
	for (unsigned t = 0; t < 2; t++) {
		unsigned n = atomic_load(&done_pack[t]);
		if (n && pp_check(packed_blk[t][n - 1], 16384, t * NPACK + n - 1) != 16384)
			return 2;
	}
	unsigned nb = atomic_load(&done_big);
	if (nb && pp_check(big_blk[nb - 1], big_size(nb - 1), 7 * (nb - 1)) != big_size(nb - 1))
		return 2;
	unsigned char *mine[64];
	for (unsigned i = 0; i < 64; i++) {
		size_t n = i % 2 ? 16384 : big_size(i);
		if (!(mine[i] = malloc(n)))
			return 3;
		pp_fill(mine[i], n, i);
	}
	for (unsigned i = 0; i < 64; i++) {
		size_t n = i % 2 ? 16384 : big_size(i);
		if (pp_check(mine[i], n, i) != n)
			return 2;
		free(mine[i]);
	}
	return 0;
}

/* waitpid within a minute, else kill it: a hang */
static int wait_or_kill(pid_t pid)
{
	for (int ms = 0; ms < 60000; ms += 10) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		CHECK(r >= 0);
		if (r == pid)
			return st;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	TEST_FAIL("fork child %d did not end within a minute (a hang in the fork handlers?)",
		  (int)pid);
}

static void body(void)
{
	pthread_t t[3];
	CHECK_EQ(pthread_create(&t[0], NULL, carver, (void *)0), 0);
	CHECK_EQ(pthread_create(&t[1], NULL, carver, (void *)1), 0);
	CHECK_EQ(pthread_create(&t[2], NULL, grower, NULL), 0);
	int during = 0; /* forks while a thread still allocated */
	for (int k = 0; k < NFORK; k++) {
		usleep(2000);
		fflush(NULL);
		during += atomic_load(&done_pack[0]) < NPACK || atomic_load(&done_pack[1]) < NPACK ||
			  atomic_load(&done_big) < NBIG;
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (!pid)
			_exit(child());
		int st = wait_or_kill(pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			TEST_FAIL("fork child %d: status %#x", k, st);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	TEST_LOG("%d forks, %d of them while the threads allocated (%u + %u packed, %u jemalloc "
		 "blocks)", NFORK, during, atomic_load(&done_pack[0]), atomic_load(&done_pack[1]),
		 atomic_load(&done_big));
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < atomic_load(&done_pack[k]); i++) {
			if (pp_check(packed_blk[k][i], 16384, k * NPACK + i) != 16384)
				TEST_FAIL("packed block %u of thread %u lost its data", i, k);
			free(packed_blk[k][i]);
		}
	for (unsigned i = 0; i < atomic_load(&done_big); i++) {
		if (pp_check(big_blk[i], big_size(i), 7 * i) != big_size(i))
			TEST_FAIL("block %u of %zu bytes lost its data", i, big_size(i));
		free(big_blk[i]);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	heap_run(argv, 280, body);
	long long heap = pp_stat("heap", NULL), carved = pp_stat("pack_slabs_carved", NULL);
	TEST_LOG("heap %lld, slabs carved %lld, evictions %lld", heap, carved,
		 pp_stat("evictions", NULL));
	if (heap == 0)
		SKIP("the preload was built without jemalloc (libjemalloc-dev): no heap");
	CHECK(carved >= 10);
	return test_pass("pager/heap-pack-fork");
}
