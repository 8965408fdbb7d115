/* SPDX-License-Identifier: MIT */
/*
 * preload-io: system calls on region buffers whose pages were evicted just
 * before (upcall mode: without the preload's pins each would fail with
 * EFAULT, and a datagram would be lost): write/pwrite/writev/pwritev to a
 * file and read/pread/readv/preadv back, fwrite/fread, a pipe, TCP
 * send/recv/sendmsg/recvmsg of 8 MiB (four budgets) between two threads,
 * and UDP sendto/recvfrom/recvmsg of 300 datagrams, each into its own
 * evicted page: every byte checked, no datagram lost.
 */
#include "pager/preload-util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define MB (1ul << 20)
#define N (4 * PP_BUDGET)

static unsigned char *buf, *dst, *junk;

static void *region(size_t n)
{
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	return m;
}

/* Push everything else out: the budget is a quarter of junk. */
static void evict(void)
{
	for (size_t i = 0; i < N; i += 4096)
		junk[i]++;
}

static void files(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/data", pp_tmpdir());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	evict();
	CHECK_EQ(write(fd, buf, N), (ssize_t)N);
	memset(dst, 0, N);
	evict();
	CHECK_EQ(pread(fd, dst, N, 0), (ssize_t)N);
	CHECK_EQ(pp_check(dst, N, 1), N);
	/* vectors: a stack buffer between two region parts */
	unsigned char mid[1000];
	struct iovec v[3] = { { dst + 5, 3 * MB }, { mid, sizeof(mid) }, { dst + 8 * MB, 2 * MB } };
	evict();
	CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	CHECK_EQ(readv(fd, v, 3), (ssize_t)(5 * MB + sizeof(mid)));
	CHECK_EQ(pp_check(dst + 5, 3 * MB, 1), 3 * MB);
	for (size_t i = 0; i < sizeof(mid); i++)
		CHECK_EQ(mid[i], pp_pat(1, 3 * MB + i));
	for (size_t i = 0; i < 2 * MB; i++)
		if (dst[8 * MB + i] != pp_pat(1, 3 * MB + sizeof(mid) + i))
			TEST_FAIL("readv byte %zu", i);
	evict();
	CHECK_EQ(pwritev(fd, v, 3, N), (ssize_t)(5 * MB + sizeof(mid)));
	memset(dst, 0, 6 * MB);
	evict();
	struct iovec w = { dst, 6 * MB };
	CHECK_EQ(preadv(fd, &w, 1, N), (ssize_t)(5 * MB + sizeof(mid)));
	CHECK_EQ(pp_check(dst, 3 * MB + sizeof(mid), 1), 3 * MB + sizeof(mid));
	evict();
	CHECK_EQ(pwrite(fd, buf, MB, 0), (ssize_t)MB);
	close(fd);
	/* stdio: fwrite from and fread into evicted pages */
	FILE *f = fopen(path, "w+");
	CHECK(f);
	evict();
	CHECK_EQ(fwrite(buf, 1, N, f), N);
	CHECK_EQ(fflush(f), 0);
	rewind(f);
	memset(dst, 0, N);
	evict();
	CHECK_EQ(fread(dst, 4, N / 4, f), N / 4);
	CHECK_EQ(pp_check(dst, N, 1), N);
	fclose(f);
	unlink(path);
}

static void pipes(void)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	evict();
	CHECK_EQ(write(p[1], buf + 3 * MB, 60000), 60000);
	memset(dst, 0, 65536);
	evict();
	CHECK_EQ(read(p[0], dst, 65536), 60000);
	for (size_t i = 0; i < 60000; i++)
		CHECK_EQ(dst[i], pp_pat(1, 3 * MB + i));
	close(p[0]);
	close(p[1]);
}

static int tcp_fd[2];

static void *tcp_sender(void *arg)
{
	(void)arg;
	size_t off = 0;
	int k = 0;
	while (off < N) {
		size_t n = N - off < 3 * MB ? N - off : 3 * MB;
		ssize_t r;
		if (k++ % 2) {
			struct iovec v = { buf + off, n };
			struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
			r = sendmsg(tcp_fd[0], &m, 0);
		} else {
			r = send(tcp_fd[0], buf + off, n, 0);
		}
		if (r <= 0)
			TEST_FAIL("send: %s", strerror(errno));
		off += (size_t)r;
	}
	return NULL;
}

static void tcp(void)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	CHECK_EQ(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(l, 1), 0);
	CHECK_EQ(getsockname(l, (struct sockaddr *)&a, &al), 0);
	tcp_fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_EQ(connect(tcp_fd[0], (struct sockaddr *)&a, sizeof(a)), 0);
	tcp_fd[1] = accept(l, NULL, NULL);
	CHECK(tcp_fd[1] >= 0);
	memset(dst, 0, N);
	evict();
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, tcp_sender, NULL), 0);
	size_t off = 0;
	int k = 0;
	while (off < N) {
		ssize_t r;
		if (k++ % 2) {
			struct iovec v = { dst + off, N - off };
			struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
			r = recvmsg(tcp_fd[1], &m, 0);
		} else {
			r = recv(tcp_fd[1], dst + off, N - off, 0);
		}
		if (r <= 0)
			TEST_FAIL("recv at %zu: %zd %s", off, r, strerror(errno));
		off += (size_t)r;
		if (k % 8 == 0)
			evict();
	}
	pthread_join(t, NULL);
	CHECK_EQ(pp_check(dst, N, 1), N);
	close(tcp_fd[0]);
	close(tcp_fd[1]);
	close(l);
}

static void udp(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0), r = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int big = 4 << 20;
	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	CHECK_EQ(bind(r, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(getsockname(r, (struct sockaddr *)&a, &al), 0);
	const int total = 300, burst = 50;
	const size_t len = 1400;
	memset(dst, 0, N);
	for (int done = 0; done < total; done += burst) {
		evict();
		for (int i = done; i < done + burst; i++) {
			/* each datagram from its own page of buf */
			CHECK_EQ(sendto(s, buf + (size_t)i * 4 * 4096 + 100, len, 0,
					(struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
		}
		evict();
		for (int i = done; i < done + burst; i++) {
			unsigned char *d = dst + (size_t)i * 4 * 4096 + 100;
			ssize_t n;
			if (i % 2) {
				struct sockaddr_in from;
				socklen_t fl = sizeof(from);
				n = recvfrom(r, d, 2000, 0, (struct sockaddr *)&from, &fl);
				CHECK_EQ(fl, sizeof(from));
			} else {
				struct iovec v = { d, 2000 };
				struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
				n = recvmsg(r, &m, 0);
				CHECK_EQ(m.msg_flags & MSG_TRUNC, 0);
			}
			if (n != (ssize_t)len)
				TEST_FAIL("datagram %d: %zd (%s)", i, n, strerror(errno));
			for (size_t j = 0; j < len; j++)
				if (d[j] != pp_pat(1, (size_t)i * 4 * 4096 + 100 + j))
					TEST_FAIL("datagram %d byte %zu", i, j);
		}
	}
	close(s);
	close(r);
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		buf = region(N);
		dst = region(N);
		junk = region(N);
		pp_fill(buf, N, 1);
		files();
		pipes();
		tcp();
		udp();
		return 0;
	}
	(void)argc;
	pp_run_ok(argv, "run", NULL);
	int lines;
	long long in = pp_stat("faults_swapin", &lines), pinned = pp_stat("pinned_pages", NULL);
	TEST_LOG("stats lines %d, swap-ins %lld, pinned at exit %lld", lines, in, pinned);
	CHECK_EQ(lines, 1);
	CHECK(in > 0);
	CHECK_EQ(pinned, 0);
	return test_pass("pager/preload-io");
}
