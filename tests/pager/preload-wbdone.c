/* SPDX-License-Identifier: MIT */
/*
 * preload-wbdone: a thread whose write-backs have completed pays nothing
 * in the pager preload's wrappers (issue 32: the read-through's largest
 * finding).  Until the per-thread count of write-backs in flight
 * (src/pager/writeback.c), a thread that evicted kept a flag until its
 * next settle, which only a wrapped call that would block makes: a thread
 * that then only sent and received asked getsockopt for the socket's
 * timeout before every send, long after its I/O was done.
 *
 * Under scope=process a thread faults one page at a time with the budget
 * full of dirty pages (it evicts and writes back itself), sending one byte
 * on a blocking socket pair without timeouts after each fault and taking
 * it.  A seccomp filter on that thread counts getsockopt(SO_SNDTIMEO): a
 * send made while its write-backs are in flight asks (io.c), which proves
 * it had some (else the test skips).  Then, with no more faults, it sends
 * and takes a byte every millisecond until a send does not ask (its
 * write-backs completed and were reaped: by the wrapper itself, whose
 * completions are there to reap), at most PATIENCE of them: the flag asked
 * on every one.  Then 256 more pairs must not ask at all.  The bound is a
 * count of sends with the disk given PATIENCE ms to finish a few writes:
 * no timing decides a result.
 */
#include "pager/preload-util.h"

#include <pthread.h>
#include <sys/socket.h>

#define N (4 * PP_BUDGET)
#define PG 4096ul
#define AREA (2ul << 20)
#define PAGES 64      /* faults, each followed by a send */
#define PATIENCE 20000 /* sends, 1 ms apart, for the write-backs to finish */
#define AFTER 256     /* sends that must not ask */

static unsigned char *area, *junk;

struct env {
	int a, b;        /* a blocking stream pair, no timeouts: a sends, b receives */
	long faulting;   /* asks made by the sends after each fault */
	long waited;     /* sends until one did not ask */
	long after;      /* asks made by the AFTER sends then */
};
static struct env E;

/* Send a byte and take it; the asks the send made. */
static long pair(unsigned char b)
{
	unsigned char got[8] = { 0 };
	long tx0 = pp_asks()[2];
	CHECK_EQ(send(E.a, &b, 1, 0), 1);
	long asked = pp_asks()[2] - tx0;
	ssize_t r = recv(E.b, got, sizeof(got), 0);
	if (r != 1 || got[0] != b)
		TEST_FAIL("receive returned %zd (%s), byte %u for %u", r,
			  r < 0 ? strerror(errno) : "", (unsigned)got[0], (unsigned)b);
	return asked;
}

static void faulter(void)
{
	for (int i = 0; i < PAGES; i++) {
		area[(size_t)i * PG]++; /* a fault that needs room */
		E.faulting += pair((unsigned char)(i * 7 + 1));
	}
	E.waited = 0;
	while (E.waited < PATIENCE && pair((unsigned char)E.waited)) {
		E.waited++;
		test_sleep_ms(1);
	}
	for (int i = 0; i < AFTER; i++)
		E.after += pair((unsigned char)(i * 3 + 2));
}

static void run(void)
{
	area = pp_region(AREA);
	junk = pp_region(N);
	pp_pair(&E.a, &E.b);
	pp_dirty(junk, N);
	pp_run_trapped(faulter);
	TEST_LOG("after %d faults: %ld sends asked; then %ld sends asked before one did "
		 "not; %ld asks in %d sends after",
		 PAGES, E.faulting, E.waited, E.after, AFTER);
	if (!E.faulting)
		SKIP("no send found write-backs of the thread in flight: proves nothing");
	if (E.waited >= PATIENCE)
		TEST_FAIL("every one of %d sends asked for the timeout after the thread's last "
			  "fault: its write-backs long done, it still pays",
			  PATIENCE);
	if (E.after)
		TEST_FAIL("%ld of %d sends asked for the timeout with no write-back of the "
			  "thread in flight",
			  E.after, AFTER);
}

int main(int argc, char **argv)
{
	(void)argc;
	return pp_main_process(argv, run, "pager/preload-wbdone");
}
