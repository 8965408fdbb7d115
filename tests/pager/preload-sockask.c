/* SPDX-License-Identifier: MIT */
/*
 * preload-sockask: a thread whose own faults evicted (its write-backs may
 * be in flight: src/pager/writeback.c's count per thread) must not pay a
 * getsockopt for the socket's timeout on a receive that does not block
 * (issue 32, step 2's cost: 755dd90 asked on every recv/recvfrom/recvmsg
 * and send/sendto/sendmsg made with the flag set, 154 ns each on the
 * project's VM against a 564 ns 1-byte send+recv pair).
 *
 * Under scope=process a thread faults one page at a time with the budget
 * full of dirty pages, and after each fault sends one byte on a blocking
 * socket pair without timeouts, peeks at it and takes it (recv, recvfrom,
 * recvmsg in turn), and receives on a non-blocking socket with a timeout
 * and nothing queued (EAGAIN).  A seccomp filter on that thread traps
 * getsockopt(SOL_SOCKET, SO_RCVTIMEO / SO_SNDTIMEO) and counts the asks:
 * the sends still ask (a look with MSG_DONTWAIT could send part: see
 * preload/pager/io.c), which proves the flag was set; the receives must
 * not.  Then the paths that do ask: a blocking receive that waits for a
 * byte another thread sends later, and a MSG_WAITALL receive; each must
 * return the bytes sent.  No timing decides a result.
 */
#include "pager/preload-util.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#define N (4 * PP_BUDGET)
#define PG 4096ul
#define AREA (2ul << 20)
#define PAGES 64 /* faults, each followed by the calls */

static unsigned char *area, *junk;

struct env {
	int a, b; /* a blocking stream pair, no timeouts: a sends, b receives */
	int nb;   /* non-blocking, SO_RCVTIMEO set, nothing ever sent to it */
	long rx_looks, tx_looks; /* asks made by the calls after the faults */
};
static struct env E;

static void take(int i, unsigned char want)
{
	unsigned char got[64] = { 0 };
	ssize_t r;
	switch (i % 3) {
	case 0:
		r = recv(E.b, got, sizeof(got), 0);
		break;
	case 1:
		r = recvfrom(E.b, got, sizeof(got), 0, NULL, NULL);
		break;
	default: {
		struct iovec v = { got, sizeof(got) };
		struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
		r = recvmsg(E.b, &m, 0);
	}
	}
	if (r != 1 || got[0] != want)
		TEST_FAIL("page %d: receive %d returned %zd (%s), byte %u for %u", i, i % 3, r,
			  r < 0 ? strerror(errno) : "", (unsigned)got[0], (unsigned)want);
}

/* Send 0xa5 (and 0x5a if arg says 2), a moment apart. */
static void *later(void *arg)
{
	static const unsigned char two[2] = { 0xa5, 0x5a };
	for (intptr_t i = 0; i < (intptr_t)arg; i++) {
		test_sleep_ms(20);
		CHECK_EQ(send(E.a, two + i, 1, 0), 1);
	}
	return NULL;
}

static void faulter(void)
{
	for (int i = 0; i < PAGES; i++) {
		area[(size_t)i * PG]++; /* a fault that needs room */
		unsigned char b = (unsigned char)(i * 7 + 1), got[64] = { 0 };
		long rx0 = pp_asks()[1], tx0 = pp_asks()[2];
		CHECK_EQ(send(E.a, &b, 1, 0), 1);
		E.tx_looks += pp_asks()[2] - tx0;
		ssize_t r = recv(E.b, got, sizeof(got), MSG_PEEK);
		if (r != 1 || got[0] != b)
			TEST_FAIL("page %d: peek returned %zd, byte %u for %u", i, r,
				  (unsigned)got[0], (unsigned)b);
		take(i, b);
		r = recv(E.nb, got, sizeof(got), 0);
		if (r != -1 || (errno != EAGAIN && errno != EWOULDBLOCK))
			TEST_FAIL("page %d: receive on the non-blocking socket returned %zd (%s)", i,
				  r, r < 0 ? strerror(errno) : "");
		E.rx_looks += pp_asks()[1] - rx0;
	}
	/* The asking paths: a receive that waits (for a byte sent later), and
	 * one with MSG_WAITALL (for two bytes sent apart). */
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, later, (void *)1), 0);
	unsigned char got[2] = { 0 };
	ssize_t r = recv(E.b, got, 1, 0);
	if (r != 1 || got[0] != 0xa5)
		TEST_FAIL("the receive that waits returned %zd (%s), byte %u", r,
			  r < 0 ? strerror(errno) : "", (unsigned)got[0]);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_create(&t, NULL, later, (void *)2), 0);
	r = recv(E.b, got, 2, MSG_WAITALL);
	if (r != 2 || got[0] != 0xa5 || got[1] != 0x5a)
		TEST_FAIL("the MSG_WAITALL receive returned %zd (%s)", r,
			  r < 0 ? strerror(errno) : "");
	CHECK_EQ(pthread_join(t, NULL), 0);
}

static void run(void)
{
	area = pp_region(AREA);
	junk = pp_region(N);
	pp_pair(&E.a, &E.b);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	E.nb = sv[0]; /* sv[1] stays open: nothing queued, no end */
	struct timeval tv = { 1, 0 };
	CHECK_EQ(setsockopt(E.nb, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	pp_dirty(junk, N);
	pp_run_trapped(faulter);
	TEST_LOG("after %d faults: sends asked %ld times, receives %ld", PAGES, E.tx_looks,
		 E.rx_looks);
	if (!E.tx_looks)
		SKIP("no send found the thread's write-back flag set: proves nothing");
	if (E.rx_looks)
		TEST_FAIL("receives that did not block asked for the timeout %ld times "
			  "(with the flag set)", E.rx_looks);
}

int main(int argc, char **argv)
{
	(void)argc;
	return pp_main_process(argv, run, "pager/preload-sockask");
}
