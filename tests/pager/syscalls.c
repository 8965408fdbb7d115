/* SPDX-License-Identifier: MIT */
/*
 * System calls on region buffers: read, write, pread, recv and send with a
 * buffer that was never touched, was evicted, or is clean (write-protected).
 *
 * Upcall mode: the kernel cannot upcall for its own accesses, so such a call
 * fails with EFAULT (never with wrong data), and no data is lost: what a
 * failed read or recv did not deliver is still there.  After
 * bypass_pager_pin() every call works.  A region mapped with
 * BYPASS_PAGER_MAP_HANDLER, and a handler-mode pager, serve the kernel's
 * faults: every call works without pinning.
 */
#include "util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#define BUDGET_PAGES 32ul
#define NPAGES (4 * BUDGET_PAGES)
#define MSG "the quick brown fox jumps over the lazy dog"
#define MLEN (sizeof(MSG) - 1)

static char *m;

/* Push the first pages out: read, then write, the last 2 budgets' worth
 * of pages (a read then a write makes a page referenced twice, so these
 * also age the active list, where a buffer that was written may sit). */
static void churn(void)
{
	for (uint64_t i = NPAGES - 2 * BUDGET_PAGES; i < NPAGES; i++) {
		/* two bytes, so that no compiler fuses them into one
		 * read-modify-write instruction (which faults as a write) */
		char c = ((volatile char *)m)[i * PAGE];
		((volatile char *)m)[i * PAGE + 1] = (char)(c + 1);
	}
}

static int present(void *addr)
{
	unsigned char v;
	CHECK_EQ(mincore((void *)((uintptr_t)addr & ~(PAGE - 1)), PAGE, &v), 0);
	return v & 1;
}

/* Churn until addr's page is out (its write-back is asynchronous: the
 * page leaves when a later eviction round reaps the write). */
static void evict(void *addr)
{
	for (int i = 0; i < 100; i++) {
		churn();
		if (!present(addr))
			return;
	}
	TEST_FAIL("page %p stays resident", addr);
}

/* A connected TCP pair on 127.0.0.1 (a port the kernel picks). */
static void tcp_pair(int *a, int *b)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	CHECK_EQ(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(l, 1), 0);
	CHECK_EQ(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_EQ(connect(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(*b >= 0);
	close(l);
}

/* Whether pipe fd holds a byte to read.  Not poll(): Linux 6.1 keeps an
 * empty buffer in a pipe whose write failed with EFAULT (6.18 does not),
 * and poll() says POLLIN though there is nothing to read. */
static int readable(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
	char c;
	ssize_t n = read(fd, &c, 1);
	CHECK(n == 1 || (n < 0 && errno == EAGAIN));
	CHECK(fcntl(fd, F_SETFL, fl) == 0);
	return n == 1;
}

/*
 * Each call on buffer `buf` (in state: untouched, evicted or clean).
 * expect_ok: the call must work; else it must fail with EFAULT and lose
 * nothing.
 */
static void calls(bypass_pager *p, char *buf, int expect_ok, const char *what)
{
	int pp[2], ta, tb;
	CHECK_EQ(pipe(pp), 0);
	tcp_pair(&ta, &tb);
	char tmp[128];
	char path[128];
	snprintf(path, sizeof(path), "%s/data", tmpdir());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, MSG, MLEN), (long)MLEN);
	(void)p;

	/* read() into buf */
	CHECK_EQ(write(pp[1], MSG, MLEN), (long)MLEN);
	ssize_t n = read(pp[0], buf, MLEN);
	if (expect_ok) {
		if (n != (ssize_t)MLEN || memcmp(buf, MSG, MLEN))
			TEST_FAIL("%s: read: %zd %s", what, n, n < 0 ? strerror(errno) : "");
	} else {
		if (!(n < 0 && errno == EFAULT))
			TEST_FAIL("%s: read: %zd, want EFAULT", what, n);
		CHECK_EQ(read(pp[0], tmp, sizeof(tmp)), (long)MLEN); /* not lost */
		CHECK(!memcmp(tmp, MSG, MLEN));
	}

	/* pread() into buf */
	n = pread(fd, buf, MLEN, 0);
	if (expect_ok)
		CHECK(n == (ssize_t)MLEN && !memcmp(buf, MSG, MLEN));
	else if (!(n < 0 && errno == EFAULT))
		TEST_FAIL("%s: pread: %zd, want EFAULT", what, n);

	/* recv() into buf */
	CHECK_EQ(send(ta, MSG, MLEN, 0), (long)MLEN);
	struct pollfd pf = { .fd = tb, .events = POLLIN };
	CHECK_EQ(poll(&pf, 1, 10000), 1);
	n = recv(tb, buf, MLEN, MSG_DONTWAIT);
	if (expect_ok) {
		CHECK(n == (ssize_t)MLEN && !memcmp(buf, MSG, MLEN));
	} else {
		if (!(n < 0 && errno == EFAULT))
			TEST_FAIL("%s: recv: %zd, want EFAULT", what, n);
		CHECK_EQ(recv(tb, tmp, sizeof(tmp), MSG_DONTWAIT), (long)MLEN);
		CHECK(!memcmp(tmp, MSG, MLEN));
	}
	close(fd);
	close(pp[0]);
	close(pp[1]);
	close(ta);
	close(tb);
}

/* write() and send() from buf, which holds MSG (resident, evicted...). */
static void out_calls(char *buf, int expect_ok, const char *what)
{
	int pp[2], ta, tb;
	CHECK_EQ(pipe(pp), 0);
	tcp_pair(&ta, &tb);
	char tmp[128];
	ssize_t n = write(pp[1], buf, MLEN);
	if (expect_ok) {
		CHECK_EQ(n, (long)MLEN);
		CHECK_EQ(read(pp[0], tmp, sizeof(tmp)), (long)MLEN);
		CHECK(!memcmp(tmp, MSG, MLEN));
	} else {
		if (!(n < 0 && errno == EFAULT))
			TEST_FAIL("%s: write: %zd, want EFAULT", what, n);
		CHECK(!readable(pp[0])); /* nothing half-written */
	}
	n = send(ta, buf, MLEN, 0);
	if (expect_ok) {
		CHECK_EQ(n, (long)MLEN);
		struct pollfd pf = { .fd = tb, .events = POLLIN };
		CHECK_EQ(poll(&pf, 1, 10000), 1);
		CHECK_EQ(recv(tb, tmp, sizeof(tmp), 0), (long)MLEN);
		CHECK(!memcmp(tmp, MSG, MLEN));
	} else {
		if (!(n < 0 && errno == EFAULT))
			TEST_FAIL("%s: send: %zd, want EFAULT", what, n);
	}
	close(pp[0]);
	close(pp[1]);
	close(ta);
	close(tb);
}

static void upcall_region(bypass_pager *p)
{
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	char *buf = m + 3 * PAGE + 100;

	/* Never touched: the kernel's access fails, the data stays. */
	calls(p, buf, 0, "upcall untouched");
	CHECK(!present(buf));

	/* Clean and write-protected (read once): reads into it fail. */
	CHECK_EQ(buf[0], 0);
	CHECK(present(buf));
	calls(p, buf, 0, "upcall clean");

	/* Evicted with MSG in it: writes from it fail. */
	memcpy(buf, MSG, MLEN);
	evict(buf);
	out_calls(buf, 0, "upcall evicted");
	calls(p, buf, 0, "upcall evicted");
	CHECK(!memcmp(buf, MSG, MLEN)); /* the data survived all that */

	/* Pinned: every call works, also after churn. */
	evict(buf);
	CHECK_EQ(bypass_pager_pin(p, buf, MLEN, BYPASS_PAGER_PIN_WRITE), 0);
	churn();
	CHECK(present(buf));
	out_calls(buf, 1, "upcall pinned");
	calls(p, buf, 1, "upcall pinned");
	CHECK_EQ(bypass_pager_unpin(p, buf, MLEN), 0);

	/* A read-only pin of an evicted page makes it readable by the
	 * kernel (write, send) without dirtying it. */
	evict(buf);
	CHECK_EQ(bypass_pager_pin(p, buf, MLEN, 0), 0);
	out_calls(buf, 1, "upcall pinned read-only");
	CHECK_EQ(bypass_pager_unpin(p, buf, MLEN), 0);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
}

static void handler_region(bypass_pager *p, unsigned flags, const char *what)
{
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, flags, (void **)&m), 0);
	char *buf = m + 5 * PAGE + 7;
	calls(p, buf, 1, what); /* untouched */
	evict(buf);
	calls(p, buf, 1, what); /* evicted */
	CHECK_EQ(buf[0], MSG[0]);
	calls(p, buf, 1, what); /* clean */
	evict(buf);
	out_calls(buf, 1, what); /* evicted, holding MSG */
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
}

int main(void)
{
	test_timeout(60);
	bypass_pager *p = new_pager(BYPASS_PAGER_UPCALL, BUDGET_PAGES * PAGE, 4 * NPAGES * PAGE);
	upcall_region(p);
	/* The same pager can serve a region in its handler thread. */
	int r = bypass_pager_map(p, NPAGES * PAGE, BYPASS_PAGER_MAP_HANDLER, (void **)&m);
	if (r == -EPERM) {
		TEST_LOG("MAP_HANDLER refused (no privilege for kernel faults): skipped");
	} else {
		CHECK_EQ(r, 0);
		CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
		handler_region(p, BYPASS_PAGER_MAP_HANDLER, "upcall pager, handler region");
	}
	CHECK_EQ(bypass_pager_destroy(p), 0);

	p = new_pager(BYPASS_PAGER_HANDLER, BUDGET_PAGES * PAGE, 4 * NPAGES * PAGE);
	handler_region(p, 0, "handler pager");
	CHECK_EQ(bypass_pager_destroy(p), 0);
	tmpdir_cleanup();
	return test_pass("pager/syscalls");
}
