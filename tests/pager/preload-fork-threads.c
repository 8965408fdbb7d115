/* SPDX-License-Identifier: MIT */
/*
 * preload-fork-threads: a threaded program forks under the preload, as a
 * Redis server does for BGSAVE.  glibc keeps the stacks of ended threads
 * in a cache, and in a forked child the stacks of the parent's other
 * threads join it; the next pthread_create() reuses one and clears its TLS
 * vector, which the program's calloc made: with the heap engaged, memory
 * the pager may have evicted.  The child's pager starts its handler
 * threads in the atfork handler; if one of them took a cached stack, the
 * child hung there on a fault that only that thread could serve (found with
 * Redis's test suite, unit/expire, at a 1 MiB budget).  Here: threads that
 * ended and threads alive at the fork, their vectors evicted by what
 * follows, then forks whose children start threads of their own and read
 * everything.  A child that has not ended within a minute is a hang: it is
 * killed and the test fails.
 */
#include "pager/preload-util.h"

#include <pthread.h>

#define N (4 * PP_BUDGET)
#define NBLK 4000u
#define NTHR 6
#define NFORK 4

static unsigned char *blk[NBLK];
static int park[2]; /* the threads alive at the fork wait on it */

static size_t blk_size(size_t i)
{
	return 64 + (i * 53) % 700;
}

static void *ended(void *arg)
{
	volatile unsigned char buf[512];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)i;
	return arg;
}

static void *parked(void *arg)
{
	char c;
	ssize_t n = read(park[0], &c, 1);
	(void)n;
	return arg;
}

static void *child_thread(void *arg)
{
	size_t k = (size_t)(uintptr_t)arg;
	for (size_t i = 0; i < NBLK; i++)
		if (pp_check(blk[i], blk_size(i), k + i) != blk_size(i))
			return (void *)1;
	return NULL;
}

/* Wait for a child for at most a minute; a hung one is killed. */
static void wait_bounded(pid_t pid)
{
	for (int i = 0; i < 600; i++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		CHECK(r >= 0 || errno == EINTR);
		if (r == pid) {
			if (WIFSIGNALED(st))
				TEST_FAIL("child killed by signal %d", WTERMSIG(st));
			if (WEXITSTATUS(st))
				TEST_FAIL("child exit %d", WEXITSTATUS(st));
			return;
		}
		usleep(100 * 1000);
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "cat /proc/%d/wchan /proc/%d/stack >&2", (int)pid, (int)pid);
	if (system(cmd) != 0)
		fprintf(stderr, "(no kernel stack)\n");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	TEST_FAIL("a forked child did not end within a minute: hung (in the pager's fork "
		  "handler, starting its threads?)");
}

int main(int argc, char **argv)
{
	pp_start(240);
	(void)argc;
	if (pp_preloaded()) {
		if (!pp_malloc_reaches_preload())
			SKIP("the heap is the sanitizer's here");
		pthread_t t[NTHR];
		/* threads that came and went: their stacks are in the cache */
		for (int i = 0; i < NTHR; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, ended, NULL), 0);
		for (int i = 0; i < NTHR; i++)
			CHECK_EQ(pthread_join(t[i], NULL), 0);
		/* threads alive at every fork: in the child, theirs join it */
		CHECK_EQ(pipe(park), 0);
		for (int i = 0; i < NTHR; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, parked, NULL), 0);
		/* the heap's early pages (the vectors among them) go cold and
		 * are evicted by these */
		for (size_t i = 0; i < NBLK; i++)
			CHECK((blk[i] = malloc(blk_size(i))));
		for (size_t i = 0; i < NBLK; i++)
			pp_fill(blk[i], blk_size(i), 100 + i);
		unsigned char *a = malloc(N);
		CHECK(a);
		for (int f = 0; f < NFORK; f++) {
			pp_fill(a, N, (size_t)f);
			fflush(NULL);
			pid_t c = fork();
			CHECK(c >= 0);
			if (!c) {
				pthread_t ct;
				void *bad = (void *)1;
				CHECK_EQ(pthread_create(&ct, NULL, child_thread,
							(void *)(uintptr_t)100), 0);
				CHECK_EQ(pthread_join(ct, &bad), 0);
				CHECK(bad == NULL);
				CHECK_EQ(pp_check(a, N, (size_t)f), N);
				_exit(0);
			}
			wait_bounded(c);
		}
		CHECK_EQ(write(park[1], "xxxxxxxx", NTHR), NTHR);
		for (int i = 0; i < NTHR; i++)
			CHECK_EQ(pthread_join(t[i], NULL), 0);
		free(a);
		for (size_t i = 0; i < NBLK; i++)
			free(blk[i]);
		return 0;
	}
	const char *env[] = { "BYPASS_PAGER_HEAP_AFTER=0", NULL };
	pp_run_ok(argv, "run", env);
	long long ev = pp_stat("evictions", NULL);
	TEST_LOG("evictions %lld", ev);
	CHECK(ev > (long long)(N - PP_BUDGET) / 4096);
	return test_pass("pager/preload-fork-threads");
}
