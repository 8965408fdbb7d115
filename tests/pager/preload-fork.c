/* SPDX-License-Identifier: MIT */
/*
 * preload-fork: what a child sees.  A forked child has every byte of the
 * parent's memory, large regions and the heap's small blocks alike, most
 * of it evicted at the fork: it reads it, writes it (privately: the parent
 * and the other children keep their data), reallocs and frees it, forks
 * again, and pages its own new memory with a pager of its own.  Several
 * children are alive at once while the parent rewrites (and evicts) its
 * memory: each still sees what was there at its fork.  A child execs an
 * argv built with malloc before the fork.  The parent's data is intact and
 * it is back within its budget after each fork; no process goes above its
 * budget (issue 32: the fork reads nothing back, the children read the
 * parent's swap slots).  Each process that exits
 * through exit() appends its own statistics line.  The heap is engaged
 * from the start (BYPASS_PAGER_HEAP_AFTER=0) where the preload has one.
 */
#include "pager/preload-util.h"

#define N (4 * PP_BUDGET)
#define NBLK 8000u /* small blocks: about 4 MiB, most of them evicted too */
#define NKIDS 3

static unsigned char *blk[NBLK];

static size_t blk_size(size_t i)
{
	return 64 + (i * 37) % 900;
}

static void blk_fill(size_t k)
{
	for (size_t i = 0; i < NBLK; i++)
		pp_fill(blk[i], blk_size(i), k + i);
}

static void blk_check(const char *who, size_t k)
{
	for (size_t i = 0; i < NBLK; i++)
		if (pp_check(blk[i], blk_size(i), k + i) != blk_size(i))
			TEST_FAIL("%s: small block %zu is not version %zu", who, i, k);
}

static unsigned char *big(void)
{
	unsigned char *m;
	if (pp_malloc_reaches_preload()) {
		m = malloc(N);
		CHECK(m && ((uintptr_t)m & 4095) == 0);
	} else {
		m = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(m != MAP_FAILED);
	}
	return m;
}

static void drop(unsigned char *m)
{
	if (pp_malloc_reaches_preload())
		free(m);
	else
		CHECK_EQ(munmap(m, N), 0);
}

static void work(unsigned char *m, size_t k)
{
	pp_fill(m, N, k);
	CHECK_EQ(pp_check(m, N, k), N);
}

static long resident_pages(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = -1;
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = -1;
		fclose(f);
	}
	return res;
}

/* A child of the fork at version k: every byte, then its own writes. */
static void child(unsigned char *a, size_t k, int go_fd)
{
	CHECK_EQ(pp_check(a, N, k), N);
	blk_check("child", 1000 * k);
	if (go_fd >= 0) { /* the parent rewrites meanwhile */
		char c;
		CHECK_EQ(read(go_fd, &c, 1), 1);
		CHECK_EQ(pp_check(a, N, k), N);
		blk_check("child after the parent's writes", 1000 * k);
		_exit(0);
	}
	work(a, 7);
	blk_fill(7000);
	pid_t g = fork();
	CHECK(g >= 0);
	if (!g) {
		CHECK_EQ(pp_check(a, N, 7), N);
		blk_check("grandchild", 7000);
		_exit(0);
	}
	wait_child(g);
	blk_check("child after its child", 7000);
	/* realloc and free what the parent allocated */
	for (size_t i = 0; i < NBLK; i += 2) {
		unsigned char *q = realloc(blk[i], 3 * blk_size(i));
		CHECK(q);
		CHECK_EQ(pp_check(q, blk_size(i), 7000 + i), blk_size(i));
		free(q);
	}
	for (size_t i = 1; i < NBLK; i += 2)
		free(blk[i]);
	if (pp_malloc_reaches_preload()) {
		unsigned char *r = realloc(a, N + 4096); /* a region's copy: moved */
		CHECK(r);
		CHECK_EQ(pp_check(r, N, 7), N);
		free(r);
	} else {
		drop(a);
	}
	unsigned char *b = big();
	work(b, 2);
	drop(b);
	exit(0); /* its own statistics line */
}

int main(int argc, char **argv)
{
	pp_start(120);
	if (pp_preloaded() && !strcmp(argv[1], "exec-child")) {
		CHECK(argc == 4 && !strcmp(argv[2], "built-with-malloc") &&
		      !strcmp(argv[3], "before-the-fork"));
		unsigned char *m = big();
		work(m, 9);
		drop(m);
		return 0;
	}
	if (pp_preloaded()) {
		/* an argv built with malloc, evicted by what follows */
		char **av = malloc(5 * sizeof(char *));
		CHECK(av);
		av[0] = strdup(argv[0]);
		av[1] = strdup("exec-child");
		av[2] = strdup("built-with-malloc");
		av[3] = strdup("before-the-fork");
		av[4] = NULL;
		CHECK(av[0] && av[1] && av[2] && av[3]);
		unsigned char *a = big();
		for (size_t i = 0; i < NBLK; i++)
			CHECK((blk[i] = malloc(blk_size(i))));
		blk_fill(1000);
		work(a, 1);
		long page = sysconf(_SC_PAGESIZE);
		long before = resident_pages();

		pid_t c = fork();
		CHECK(c >= 0);
		if (!c)
			child(a, 1, -1);
		wait_child(c);
		CHECK_EQ(pp_check(a, N, 1), N);
		blk_check("parent", 1000);
		long after = resident_pages();
		TEST_LOG("resident %ld KiB before the fork, %ld KiB after it", before * page >> 10,
			 after * page >> 10);

		/* children alive at once; the parent rewrites meanwhile */
		int go[2];
		CHECK_EQ(pipe(go), 0);
		pid_t kid[NKIDS];
		fflush(NULL);
		for (int i = 0; i < NKIDS; i++) {
			kid[i] = fork();
			CHECK(kid[i] >= 0);
			if (!kid[i]) {
				close(go[1]);
				child(a, 1, go[0]);
			}
		}
		close(go[0]);
		work(a, 3);
		blk_fill(3000);
		CHECK_EQ(write(go[1], "xxx", NKIDS), NKIDS);
		close(go[1]);
		for (int i = 0; i < NKIDS; i++)
			wait_child(kid[i]);
		CHECK_EQ(pp_check(a, N, 3), N);
		blk_check("parent", 3000);

		fflush(NULL);
		c = fork();
		CHECK(c >= 0);
		if (!c) {
			execv("/proc/self/exe", av);
			_exit(127);
		}
		wait_child(c);
		work(a, 4);
		drop(a);
		for (size_t i = 0; i < NBLK; i++)
			free(blk[i]);
		for (int i = 0; i < 4; i++)
			free(av[i]);
		free(av);
		return 0;
	}
	const char *env[] = { "BYPASS_PAGER_HEAP_AFTER=0", NULL };
	pp_run_ok(argv, "run", env);
	int lines;
	long long ev = pp_stat("evictions", &lines), mapped = pp_stat("mapped_pages", NULL);
	long long heap = pp_stat("heap", NULL), in = pp_stat("faults_swapin", NULL);
	TEST_LOG("stats lines %d (parent, forked child, exec'd child), evictions %lld, "
		 "swap-ins %lld, mapped at exit %lld, heap engaged in %lld", lines, ev, in, mapped,
		 heap);
	CHECK_EQ(lines, 3);
	CHECK(ev > 3 * (long long)(N - PP_BUDGET) / 4096);
	if (heap <= 0)
		CHECK_EQ(mapped, 0); /* the heap's regions stay to the end */
	/* every line has its own pid and evictions; every process is within
	 * its budget at exit, and was all along: no fork read the evicted
	 * pages back (issue 32; the parent's peak was all it had evicted) */
	char path[256], line[8192];
	pp_stats_path(path, sizeof(path));
	FILE *f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		char *e = strstr(line, "\"evictions\":");
		CHECK(e && atoll(e + 12) > 0);
		CHECK(strstr(line, "{\"module\":\"pager\",\"pid\":") == line);
		char *r = strstr(line, "\"resident_pages\":");
		CHECK(r && atoll(r + 17) <= (long long)(PP_BUDGET / 4096));
		char *pk = strstr(line, "\"resident_peak\":");
		CHECK(pk);
		if (atoll(pk + 16) > (long long)(PP_BUDGET / 4096))
			TEST_FAIL("a process was %lld pages resident at its peak, budget %lu: %.60s",
				  atoll(pk + 16), PP_BUDGET / 4096, line);
	}
	fclose(f);
	return test_pass("pager/preload-fork");
}
