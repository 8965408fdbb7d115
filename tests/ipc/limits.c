/* SPDX-License-Identifier: MIT */
/*
 * limits: what a peer may make the other side hold.
 *
 * 1. Options: reserved fields and out-of-range bounds are refused.
 * 2. A client bounds the rings it accepts (opts.max_ring, 16 MiB by
 *    default): a server offering more gets -EFBIG, not a 2 GiB pre-fault.
 * 3. A server bounds connections per client process and per uid
 *    (-EUSERS on both sides); a connection it closed while the client is
 *    still connected keeps counting until the client leaves.
 * 4. A client that keeps the arena's memfd after leaving holds no server
 *    memory: the server punches the pages out when it closes (at once if
 *    the client has left, else at the first accept after it leaves); once
 *    the service is closed, lingering arenas are left to their clients.
 *    A connection whose socket the application took with bypass_ipc_fd
 *    (perhaps into its own epoll set) never lingers.
 * 5. BYPASS_IPC_LAZY: the server's arena is not pre-faulted.
 * Descriptors come back to where they were.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ipc/ipc_internal.h"
#include "util.h"

/* A client speaking the handshake by hand: it can keep the memfd. */
static int raw_connect(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "bypass-ipc:%s", name);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	CHECK(connect(s, (struct sockaddr *)&sa,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0);
	return s;
}

/* The hello's status; *memfd the arena (or -1). */
static int raw_hello(int s, int *memfd)
{
	struct ipc_hello h;
	int fds[2];
	unsigned n = 2;
	memset(&h, 0, sizeof(h));
	int r = bypass_recv_fds(s, fds, &n, &h, sizeof(h));
	CHECK_EQ(r, sizeof(h));
	CHECK_EQ(h.magic, IPC_MAGIC);
	CHECK(n <= 1);
	*memfd = n ? fds[0] : -1;
	return h.status;
}

static long long blocks_kb(int fd)
{
	struct stat st;
	CHECK(fstat(fd, &st) == 0);
	return (long long)st.st_blocks / 2;
}

static void bad_opts(void)
{
	char name[64];
	test_svc_name(name, sizeof(name), "lim0");
	bypass_ipc_service *svc;
	bypass_ipc_conn *c;
	struct bypass_ipc_opts o = { .reserved = { 0, 0, 0, 1 } };
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_connect(name, &o, &c), -EINVAL);
	o = (struct bypass_ipc_opts){ .max_ring = 4095 };
	CHECK_ERR(bypass_ipc_connect(name, &o, &c), -EINVAL);
	o = (struct bypass_ipc_opts){ .max_ring = 2ull << 30 };
	CHECK_ERR(bypass_ipc_connect(name, &o, &c), -EINVAL);
	o = (struct bypass_ipc_opts){ .flags = 0x80 };
	CHECK_ERR(bypass_ipc_listen(name, &o, &svc), -EINVAL);
}

/* A server in a child accepts n clients and closes each. */
static pid_t serve(const char *name, const struct bypass_ipc_opts *o, int n)
{
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, o, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < n; i++) {
			bypass_ipc_conn *c = test_accept(svc);
			struct bypass_ipc_msg m;
			bypass_ipc_recv(c, &m, 5 * BYPASS_SEC); /* until it leaves */
			bypass_ipc_close(c);
		}
		bypass_ipc_service_close(svc);
		_exit(0);
	}
	bypass_ipc_service_close(svc);
	return pid;
}

static void client_bound(void)
{
	char name[64];
	test_svc_name(name, sizeof(name), "lim1");
	struct bypass_ipc_opts so = { .ring_size = 65536 };
	pid_t pid = serve(name, &so, 2);
	bypass_ipc_conn *c = NULL;
	struct bypass_ipc_opts co = { .max_ring = 16384 };
	int r;
	for (int i = 0; i < 500; i++) {
		r = bypass_ipc_connect(name, &co, &c);
		if (r != -ECONNREFUSED && r != -ENOENT)
			break;
		usleep(10000);
	}
	CHECK_ERR(r, -EFBIG);
	co.max_ring = 65536;
	c = test_connect(name, &co);
	CHECK_ERR(bypass_ipc_close(c), 0);
	wait_child(pid);
	/* The default bound: 16 MiB (a server that offers 32 MiB rings is
	 * refused unless the client raises it). */
	test_svc_name(name, sizeof(name), "lim2");
	so = (struct bypass_ipc_opts){ .ring_size = 32u << 20, .flags = BYPASS_IPC_LAZY };
	pid = serve(name, &so, 2);
	for (int i = 0; i < 500; i++) {
		r = bypass_ipc_connect(name, NULL, &c);
		if (r != -ECONNREFUSED && r != -ENOENT)
			break;
		usleep(10000);
	}
	CHECK_ERR(r, -EFBIG);
	co = (struct bypass_ipc_opts){ .max_ring = 32u << 20, .flags = BYPASS_IPC_LAZY };
	c = test_connect(name, &co);
	CHECK_ERR(bypass_ipc_close(c), 0);
	wait_child(pid);
}

static void server_bounds(void)
{
	char name[64];
	test_svc_name(name, sizeof(name), "lim3");
	struct bypass_ipc_opts so = { .ring_size = 16384, .max_per_pid = 2 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	bypass_ipc_conn *s1, *s2, *s3, *x;
	int m1, m2, m3, mx;
	int c1 = raw_connect(name), c2 = raw_connect(name), c3 = raw_connect(name);
	CHECK_ERR(bypass_ipc_accept(svc, &s1, BYPASS_SEC), 0);
	CHECK_ERR(bypass_ipc_accept(svc, &s2, BYPASS_SEC), 0);
	CHECK_ERR(bypass_ipc_accept(svc, &x, BYPASS_SEC), -EUSERS);
	CHECK_EQ(raw_hello(c1, &m1), 0);
	CHECK_EQ(raw_hello(c2, &m2), 0);
	CHECK_EQ(raw_hello(c3, &mx), EUSERS);
	CHECK_EQ(mx, -1);
	close(c3);
	/* pre-faulted: both rings resident in the memfd */
	CHECK(blocks_kb(m1) >= 2 * 16);
	/* The server closes s1 while its client is still there: the client
	 * may read what was sent, the connection still counts. */
	CHECK_ERR(bypass_ipc_close(s1), 0);
	int c4 = raw_connect(name);
	CHECK_ERR(bypass_ipc_accept(svc, &x, BYPASS_SEC), -EUSERS);
	CHECK_EQ(raw_hello(c4, &mx), EUSERS);
	close(c4);
	CHECK(blocks_kb(m1) >= 2 * 16);
	/* It leaves but keeps the memfd: the next accept punches the arena
	 * and counts the client one connection lighter. */
	close(c1);
	int c5 = raw_connect(name);
	CHECK_ERR(bypass_ipc_accept(svc, &s3, BYPASS_SEC), 0);
	CHECK_EQ(raw_hello(c5, &m3), 0);
	CHECK_EQ(blocks_kb(m1), 0);
	/* A client that leaves first: the server's close punches at once. */
	close(c2);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(s2, &m, 5 * BYPASS_SEC), -ECONNRESET);
	CHECK(blocks_kb(m2) >= 2 * 16);
	CHECK_ERR(bypass_ipc_close(s2), 0);
	CHECK_EQ(blocks_kb(m2), 0);
	/* Closing the service leaves a lingering arena to its client. */
	CHECK_ERR(bypass_ipc_close(s3), 0);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK(blocks_kb(m3) >= 2 * 16);
	close(c5);
	close(m1);
	close(m2);
	close(m3);

	/* Per uid. */
	test_svc_name(name, sizeof(name), "lim4");
	so = (struct bypass_ipc_opts){ .ring_size = 16384, .max_per_pid = UINT32_MAX,
				       .max_per_uid = 1 };
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	c1 = raw_connect(name);
	c2 = raw_connect(name);
	CHECK_ERR(bypass_ipc_accept(svc, &s1, BYPASS_SEC), 0);
	CHECK_ERR(bypass_ipc_accept(svc, &x, BYPASS_SEC), -EUSERS);
	CHECK_EQ(raw_hello(c1, &m1), 0);
	CHECK_EQ(raw_hello(c2, &mx), EUSERS);
	close(c1);
	close(c2);
	CHECK_ERR(bypass_ipc_close(s1), 0);
	CHECK_EQ(blocks_kb(m1), 0);
	close(m1);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
}

/* A connection whose socket the application took (bypass_ipc_fd, maybe
 * into its own epoll set) never lingers: closing it closes the socket. */
static void fd_given(void)
{
	char name[64];
	test_svc_name(name, sizeof(name), "lim6");
	struct bypass_ipc_opts so = { .ring_size = 16384, .max_per_pid = 1 };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	bypass_ipc_conn *s1, *s2;
	int m1, m2, c1 = raw_connect(name);
	CHECK_ERR(bypass_ipc_accept(svc, &s1, BYPASS_SEC), 0);
	CHECK_EQ(raw_hello(c1, &m1), 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 }, ev[2];
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, bypass_ipc_fd(s1), &e) == 0);
	CHECK_ERR(bypass_ipc_close(s1), 0);
	/* not counted any more: the same process connects again */
	int c2 = raw_connect(name);
	CHECK_ERR(bypass_ipc_accept(svc, &s2, BYPASS_SEC), 0);
	CHECK_EQ(raw_hello(c2, &m2), 0);
	/* its client leaving reports nothing in the application's set */
	close(c1);
	CHECK_EQ(epoll_wait(ep, ev, 2, 50), 0);
	close(ep);
	close(c2);
	CHECK_ERR(bypass_ipc_close(s2), 0);
	close(m1);
	close(m2);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
}

static void lazy(void)
{
	char name[64];
	test_svc_name(name, sizeof(name), "lim5");
	struct bypass_ipc_opts so = { .ring_size = 1u << 20, .flags = BYPASS_IPC_LAZY };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	bypass_ipc_conn *s;
	int fd, c = raw_connect(name);
	CHECK_ERR(bypass_ipc_accept(svc, &s, BYPASS_SEC), 0);
	CHECK_EQ(raw_hello(c, &fd), 0);
	CHECK(blocks_kb(fd) < 64); /* the header pages only, not 2 MiB */
	close(c);
	CHECK_ERR(bypass_ipc_close(s), 0);
	close(fd);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
}

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	bad_opts();
	client_bound();
	server_bounds();
	fd_given();
	lazy();
	CHECK_EQ(test_count_fds(), fds);
	CHECK_EQ(test_count_maps("bypass-ipc"), 0);
	return test_pass("ipc/limits");
}
