/* SPDX-License-Identifier: MIT */
/*
 * Eviction progresses when every page is pinned or under write-back and the
 * thread that started those write-backs is itself blocked in a system call
 * waiting for the handler thread.
 *
 * io_uring posts the completion of an O_DIRECT write through the task work
 * of the thread that submitted it, and a thread blocked in a kernel-mode
 * userfaultfd fault (a read() into a handler-served page) does not run its
 * task work until the fault is served.  Here the budget (16 pages) is half
 * pinned, and pinning the 8th page makes the main thread put the other 8
 * under write-back; it then read()s into a page the handler thread must
 * bring in, which needs room that only those write-backs can free.  The
 * pager must not leave a handler-served pager in that state: the read
 * completes, and every byte is there afterwards.
 *
 * A hang here cannot be caught by an alarm (the blocked thread spins in the
 * kernel and takes no signal), so the scenario runs in a child that the
 * parent kills if it does not finish.
 * TEST_LABELS: threads
 */
#include "util.h"

#include <time.h>

#define BUDGET_PAGES 16ul
#define NPAGES 64ul

static void scenario(int mode)
{
	struct bypass_pager_config c = {
		.budget = BUDGET_PAGES * PAGE, .swap_path = tmpdir(),
		.swap_size = 4 * NPAGES * PAGE, .mode = mode,
		.flags = BYPASS_PAGER_SWAP_TEMP,
		/* no eviction until the budget is nearly full, then down to
		 * 7 pages (counting those under write-back): a round takes
		 * every unpinned page */
		.high_watermark = 15 * PAGE, .low_watermark = 7 * PAGE, .batch = 4,
	};
	bypass_pager *p;
	int r = bypass_pager_create(&c, &p);
	if (r == -EPERM)
		SKIP("handler mode needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd");
	CHECK_EQ(r, 0);
	char *a, *b;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&a), 0);
	if (mode == BYPASS_PAGER_UPCALL) {
		r = bypass_pager_map(p, NPAGES * PAGE, BYPASS_PAGER_MAP_HANDLER, (void **)&b);
		if (r == -EPERM)
			SKIP("BYPASS_PAGER_MAP_HANDLER needs CAP_SYS_PTRACE or "
			     "vm.unprivileged_userfaultfd");
		CHECK_EQ(r, 0);
	} else {
		b = a + 32 * PAGE; /* the same handler-served region */
	}
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	CHECK_EQ(write(pfd[1], "hello", 5), 5);

	CHECK_EQ(bypass_pager_pin(p, a, 7 * PAGE, 0), 0);
	for (uint64_t i = 8; i < 16; i++)
		fill_page(a + i * PAGE, i, 1);
	CHECK_EQ(stats_of(p).resident_pages, 15);
	/* Room for the 8th pinned page: all 8 dirty pages go to write-back. */
	CHECK_EQ(bypass_pager_pin(p, a + 7 * PAGE, PAGE, 0), 0);
	/* The kernel faults on b; the handler thread needs a page of room. */
	CHECK_EQ(read(pfd[0], b, 5), 5);
	CHECK(memcmp(b, "hello", 5) == 0);

	CHECK_EQ(bypass_pager_unpin(p, a, 8 * PAGE), 0);
	for (uint64_t i = 8; i < 16; i++)
		CHECK(page_ok(a + i * PAGE, i, 1));
	for (uint64_t i = 0; i < 8; i++)
		CHECK(page_zero(a + i * PAGE));
	struct bypass_pager_stats st = stats_of(p);
	CHECK(st.resident_peak <= BUDGET_PAGES);
	CHECK(st.bytes_written > 0);
	close(pfd[0]);
	close(pfd[1]);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

static void run(int mode)
{
	(void)tmpdir();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		scenario(mode);
		_exit(0);
	}
	/* 60 s for what takes milliseconds: only a hang gets there. */
	for (int i = 0; i < 6000; i++) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid) {
			if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
				SKIP("%s: child skipped", mode_name(mode));
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				tmpdir_cleanup();
				TEST_FAIL("%s: the scenario failed (status %#x)", mode_name(mode), st);
			}
			return;
		}
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	tmpdir_cleanup();
	TEST_FAIL("%s: eviction deadlocked (the read into handler memory never returned)",
		  mode_name(mode));
}

int main(void)
{
	test_timeout(150);
	run(BYPASS_PAGER_UPCALL);
	run(BYPASS_PAGER_HANDLER);
	tmpdir_cleanup();
	return test_pass("pager/writeback-blocked");
}
