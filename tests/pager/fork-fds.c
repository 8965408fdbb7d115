/* SPDX-License-Identifier: MIT */
/*
 * A fork child does not keep the parent's handler threads' descriptors.
 * Each handler thread sleeps in an epoll instance of its own (dispatch.c);
 * a child has none of the parent's threads, and kept every one of their
 * epoll descriptors for ever (one per handler thread per fork).  A pager
 * in handler mode with 4 threads, its pages written through a budget of
 * 16, then a fork:
 *   - a swap file the child cannot share (a named one: the fork reads
 *     back, the child's regions are ordinary memory, it runs no handler
 *     thread): the child holds no epoll descriptor at all;
 *   - SWAP_TEMP's (the child keeps the pager and starts threads of its
 *     own): after a fault of the child's, served by one of its threads,
 *     the child holds no more epoll descriptors than it has threads.
 * The child's data is checked too.  The parent must hold at least one
 * (the test's premise).
 * TEST_LABELS: threads
 */
#include "util.h"

#include <sys/wait.h>

#define BUDGET_PAGES 16ul
#define NPAGES 64ul
#define THREADS 4u

/* The epoll descriptors open in this process. */
static int epoll_fds(void)
{
	int n = test_fds_linked("eventpoll", NULL, 0);
	CHECK(n >= 0);
	return n;
}

static void run(bool named)
{
	struct bypass_pager_config c = { .budget = BUDGET_PAGES * PAGE,
					 .swap_size = NPAGES * PAGE * 2,
					 .mode = BYPASS_PAGER_HANDLER,
					 .threads = THREADS };
	char path[128];
	bypass_pager *p = NULL;
	if (named) {
		snprintf(path, sizeof(path), "%s/swap", tmpdir());
		c.swap_path = path;
		c.flags = BYPASS_PAGER_SWAP_CREATE;
		int r = bypass_pager_create(&c, &p);
		if (r == -EPERM)
			SKIP("handler mode needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd");
		CHECK_EQ(r, 0);
	} else {
		p = try_pager(&c);
		if (!p)
			SKIP("handler mode needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd");
	}
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	for (uint64_t i = 0; i < NPAGES; i++) /* every page read back once */
		CHECK(page_ok(m + i * PAGE, i, 1));
	int mine = epoll_fds();
	if (mine < 1)
		SKIP("the handler threads hold no epoll descriptor (poll() instead)");
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int got;
		if (named) {
			got = epoll_fds(); /* no thread here: none is ours */
			if (got)
				TEST_FAIL("named swap file (read back): the child holds %d epoll "
					  "descriptors, the parent's threads' (want 0)", got);
		}
		for (uint64_t i = 0; i < NPAGES; i++) /* evicted ones served here */
			if (!page_ok(m + i * PAGE, i, 1))
				TEST_FAIL("child: page %lu wrong", (unsigned long)i);
		got = epoll_fds();
		if (got > (int)THREADS)
			TEST_FAIL("%s: the child holds %d epoll descriptors for its %u handler "
				  "threads (the parent's threads' kept)",
				  named ? "named swap file" : "SWAP_TEMP", got, THREADS);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK_EQ(epoll_fds(), mine); /* the parent's own stay */
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
	if (named)
		unlink(path);
	printf("  %s: the parent's %d epoll descriptors not in the child\n",
	       named ? "named swap file (read back)" : "SWAP_TEMP (kept)", mine);
}

int main(void)
{
	tmpdir();
	run(true);
	run(false);
	printf("fork-fds: no handler thread's epoll descriptor leaks into a fork child\n");
	return 0;
}
