/* SPDX-License-Identifier: MIT */
/*
 * preload-cancel: a thread cancelled while blocked in read, readv, recv or
 * recvmsg on a buffer in a region.  The preload pins the buffer's pages for
 * the call (upcall mode: the kernel cannot have a fault served); read and
 * recv are cancellation points, and without a cleanup handler a thread
 * cancelled there left its pages pinned for good: resident, outside the
 * budget's reach, counted in pinned_pages at exit.  After each
 * cancellation the pages must be evictable again (pushing four budgets of
 * other pages through takes them out: mincore says none is resident) and
 * none is pinned at exit.  No timing in any assertion.
 */
#include "pager/preload-util.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#define N (4 * PP_BUDGET)
#define PG 4096ul
#define LEN (64ul << 10) /* the buffer: 16 pages, under the pin limit */

static unsigned char *area, *junk;

enum kind { K_READ, K_READV, K_RECV, K_RECVMSG, K_N };
static const char *const names[] = { "read", "readv", "recv", "recvmsg" };

struct job {
	enum kind k;
	int fd;
	unsigned char *buf;
	pid_t tid;
};

static void *reader(void *arg)
{
	struct job *j = arg;
	__atomic_store_n(&j->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	struct iovec v[2] = { { j->buf, LEN / 2 }, { j->buf + LEN / 2, LEN / 2 } };
	struct msghdr m = { .msg_iov = v, .msg_iovlen = 2 };
	ssize_t r;
	switch (j->k) {
	case K_READ: r = read(j->fd, j->buf, LEN); break;
	case K_READV: r = readv(j->fd, v, 2); break;
	case K_RECV: r = recv(j->fd, j->buf, LEN, 0); break;
	default: r = recvmsg(j->fd, &m, 0); break;
	}
	TEST_FAIL("%s returned %zd: nothing was ever sent", names[j->k], r);
	return NULL;
}

/* Resident pages of [b, b + len), by mincore. */
static size_t resident(const unsigned char *b, size_t len)
{
	unsigned char vec[LEN / PG];
	CHECK_EQ(mincore((void *)b, len, vec), 0);
	size_t n = 0;
	for (size_t i = 0; i < len / PG; i++)
		n += vec[i] & 1;
	return n;
}

static void one(enum kind k)
{
	int p[2];
	if (k == K_RECV || k == K_RECVMSG)
		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
	else
		CHECK_EQ(pipe(p), 0);
	struct job j = { .k = k, .fd = p[0], .buf = area + (size_t)k * 2 * LEN };
	memset(j.buf, 1, LEN);
	pp_dirty(junk, N); /* the buffer evicted: the pins read it back */
	static const long nr[K_N][2] = { { SYS_read, SYS_read }, { SYS_readv, SYS_readv },
					 { SYS_recvfrom, SYS_recvfrom },
					 { SYS_recvmsg, SYS_recvmsg } };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, reader, &j), 0);
	while (!__atomic_load_n(&j.tid, __ATOMIC_ACQUIRE) || !pp_blocked(j.tid, nr[k], 2, false)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	size_t in_call = resident(j.buf, LEN);
	pp_cancel(t);
	close(p[0]);
	close(p[1]);
	/* Pinned pages stay resident whatever passes through; unpinned ones
	 * go with the rest (a round or two: the policy may keep a page it
	 * has just seen). */
	size_t left = LEN / PG;
	int rounds;
	for (rounds = 1; rounds <= 8 && left; rounds++) {
		pp_dirty(junk, N);
		left = resident(j.buf, LEN);
	}
	TEST_LOG("%s: %zu of %zu pages resident in the call, %zu after cancelling and %d rounds "
		 "of eviction", names[k], in_call, LEN / PG, left, rounds - 1);
	if (left)
		TEST_FAIL("%s: %zu pages of the buffer stay resident after the thread was cancelled "
			  "(pinned)", names[k], left);
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		(void)argc;
		area = pp_region(2 * K_N * LEN);
		junk = pp_region(N);
		for (int k = 0; k < K_N; k++)
			one((enum kind)k);
		return 0;
	}
	pp_run_ok(argv, "run", NULL);
	pp_check_evicted_unpinned();
	return test_pass("pager/preload-cancel");
}
