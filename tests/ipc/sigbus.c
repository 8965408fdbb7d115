/* SPDX-License-Identifier: MIT */
/*
 * sigbus: memory of the peer that vanishes, and arenas that could.
 *
 * 1. Recovery: the arena under a live connection is replaced by a mapping
 *    of an empty, unsealed memfd (what a truncated memfd looks like): every
 *    access raises SIGBUS inside the library, which its recovery point turns
 *    into -EFAULT; the connection stays dead (sticky), the process lives,
 *    and close cleans up.  Again with the client's arena guarded by a
 *    protection key (where the CPU has them): after the recovered fault the
 *    thread's PKRU is what it was before the call (the signal handler's,
 *    every key access-disabled, is not left in place).
 * 2. A fake server offers an arena memfd that is not sealed against
 *    shrinking (it could truncate it under us), or one on hugetlbfs: connect
 *    refuses it with -EPROTO.  So does a hello with bad magic, sizes or
 *    offsets, or an arena larger than its rings need.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "ipc/ipc_internal.h"
#include "util.h"

static uint32_t rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static void recovery(bool pkey)
{
	char name[64];
	test_svc_name(name, sizeof(name), "bus");
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bypass_ipc_conn *s = test_accept(svc);
		struct bypass_ipc_msg m;
		CHECK_ERR(bypass_ipc_recv(s, &m, BYPASS_FOREVER), 0);
		CHECK_ERR(bypass_ipc_release(s, &m), 0);
		/* The client's arena vanished on its side; ours is intact. */
		CHECK_ERR(bypass_ipc_recv(s, &m, 10000000000ll), -ECONNRESET);
		CHECK_ERR(bypass_ipc_close(s), 0);
		_exit(0);
	}
	/* Another key, open in this thread: the recovered fault must leave it
	 * open (the signal handler ran with it access-disabled). */
	int other = pkey ? (int)syscall(SYS_pkey_alloc, 0, 0) : -1;
	if (pkey)
		CHECK(other > 0);
	struct bypass_ipc_opts o = { .flags = pkey ? BYPASS_IPC_PKEY : 0 };
	bypass_ipc_conn *c = test_connect(name, &o);
	CHECK_ERR(bypass_ipc_send(c, "first", 6, BYPASS_FOREVER), 0);
	uint32_t pkru = pkey ? rdpkru() : 0;
	/* Replace the arena with a mapping past the end of an empty file. */
	int fd = memfd_create("vanished", MFD_CLOEXEC);
	CHECK(fd >= 0);
	void *p = mmap((void *)c->lo, c->len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED, fd, 0);
	CHECK(p == (void *)c->lo);
	close(fd);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, BYPASS_FOREVER), -EFAULT);
	if (pkey) {
		CHECK_EQ(rdpkru(), pkru);
		CHECK_EQ(rdpkru() & (3u << (2 * other)), 0);
	}
	CHECK_ERR(bypass_ipc_recv(c, &m, 0), -EFAULT);
	CHECK_ERR(bypass_ipc_send(c, "x", 1, 0), -EFAULT);
	void *b;
	CHECK_ERR(bypass_ipc_loan(c, 8, &b, 0), -EFAULT);
	CHECK_ERR(bypass_ipc_call(c, "x", 1, &m, 1000000), -EFAULT);
	CHECK_ERR(bypass_ipc_close(c), 0);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	if (pkey) {
		syscall(SYS_pkey_free, other);
		return;
	}
	/* A fault outside any recovery point still kills (not swallowed): the
	 * dispatcher passes it on; checked in a child. */
	pid = fork();
	if (pid == 0) {
		int f = memfd_create("vanished2", MFD_CLOEXEC);
		volatile char *q = mmap(NULL, 4096, PROT_READ, MAP_SHARED, f, 0);
		(void)q[0];
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	/* Killed by SIGBUS, or (under AddressSanitizer, whose handler came
	 * first) reported and aborted: never survived. */
	CHECK((WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS) ||
	      (WIFEXITED(st) && WEXITSTATUS(st) != 0));
}

/* A fake server: answer one connection with hello h and descriptors fds. */
static int fake_connect_fds(const char *name, const struct ipc_hello *h, const int *fds,
			    unsigned nfds)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "bypass-ipc:%s", name);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(ls >= 0);
	CHECK(bind(ls, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0);
	CHECK(listen(ls, 4) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int s = accept(ls, NULL, NULL);
		CHECK(s >= 0);
		CHECK(bypass_send_fds(s, nfds ? fds : NULL, nfds, h, sizeof(*h)) > 0);
		char x;
		CHECK(read(s, &x, 1) >= 0); /* until the client hangs up */
		_exit(0);
	}
	bypass_ipc_conn *c = NULL;
	int r = bypass_ipc_connect(name, NULL, &c);
	if (!r)
		bypass_ipc_close(c);
	wait_child(pid);
	close(ls);
	return r;
}

/* The same with one descriptor (afd >= 0) or none. */
static int fake_connect(const char *name, const struct ipc_hello *h, int afd)
{
	return fake_connect_fds(name, h, &afd, afd >= 0 ? 1 : 0);
}

static void hostile_servers(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t cap = 65536;
	size_t size = 2 * ps + 2 * cap;
	struct ipc_hello good = { .magic = IPC_MAGIC, .version = IPC_VERSION,
				  .pid = (int32_t)getpid(), .ring_size = cap, .max_msg = 1024,
				  .off_shared = ps, .off_c2s = 2 * ps, .off_s2c = 2 * ps + cap };
	char name[64];
	/* Unsealed memfd of the right shape: refused. */
	int fd = memfd_create("unsealed", MFD_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
	test_svc_name(name, sizeof(name), "fake1");
	CHECK_ERR(fake_connect(name, &good, fd), -EPROTO);
	close(fd);
	/* Sealed but on hugetlbfs (holes punched in it raise SIGBUS in the
	 * application's in-place reads): refused; where huge memfds cannot be
	 * created, this part is skipped. */
	fd = memfd_create("huge", MFD_CLOEXEC | MFD_HUGETLB | MFD_ALLOW_SEALING);
	if (fd >= 0 && ftruncate(fd, (off_t)(2u << 20)) == 0 &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0) {
		struct ipc_hello huge = good;
		test_svc_name(name, sizeof(name), "fakeh");
		CHECK_ERR(fake_connect(name, &huge, fd), -EPROTO);
	} else {
		TEST_LOG("no hugetlbfs memfd here: that case not exercised");
	}
	if (fd >= 0)
		close(fd);
	/* Sealed, but lying: offsets past the end, bad ring size, bad magic. */
	struct bypass_arena *a;
	struct bypass_arena_opts ao = { .size = size };
	CHECK_ERR(bypass_arena_create(&ao, &a), 0);
	int afd = bypass_arena_fd(a);
	struct ipc_hello bad = good;
	bad.off_s2c = size - ps;
	test_svc_name(name, sizeof(name), "fake2");
	CHECK_ERR(fake_connect(name, &bad, afd), -EPROTO);
	bad = good;
	bad.ring_size = 65535;
	test_svc_name(name, sizeof(name), "fake3");
	CHECK_ERR(fake_connect(name, &bad, afd), -EPROTO);
	bad = good;
	bad.max_msg = cap;
	test_svc_name(name, sizeof(name), "fake4");
	CHECK_ERR(fake_connect(name, &bad, afd), -EPROTO);
	bad = good;
	bad.magic ^= 1;
	test_svc_name(name, sizeof(name), "fake5");
	CHECK_ERR(fake_connect(name, &bad, afd), -EPROTO);
	/* A hello without a descriptor, or with more than one (none of them
	 * may stay open here: checked at the end). */
	test_svc_name(name, sizeof(name), "fake6");
	CHECK_ERR(fake_connect(name, &good, -1), -EPROTO);
	int many[16];
	for (unsigned i = 0; i < 16; i++)
		many[i] = afd;
	test_svc_name(name, sizeof(name), "fake6b");
	CHECK_ERR(fake_connect_fds(name, &good, many, 2), -EPROTO);
	test_svc_name(name, sizeof(name), "fake6c");
	CHECK_ERR(fake_connect_fds(name, &good, many, 16), -EPROTO);
	/* An arena far larger than its rings need (the client maps all of
	 * it): refused. */
	struct bypass_arena *big;
	struct bypass_arena_opts bo = { .size = size + (64u << 20) };
	CHECK_ERR(bypass_arena_create(&bo, &big), 0);
	test_svc_name(name, sizeof(name), "fake8");
	CHECK_ERR(fake_connect(name, &good, bypass_arena_fd(big)), -EPROTO);
	CHECK_ERR(bypass_arena_close(big), 0);
	/* A refusal, and a refusal for the server's per-client limits. */
	bad = good;
	bad.status = EACCES;
	test_svc_name(name, sizeof(name), "fake7");
	CHECK_ERR(fake_connect(name, &bad, -1), -EACCES);
	bad.status = EUSERS;
	test_svc_name(name, sizeof(name), "fake9");
	CHECK_ERR(fake_connect(name, &bad, -1), -EUSERS);
	CHECK_ERR(bypass_arena_close(a), 0);
	CHECK_EQ(test_count_maps("bypass-ipc"), 0);
}

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	recovery(false);
	const char *why;
	if (bypass_ipc_pkey_supported(&why))
		recovery(true);
	else
		TEST_LOG("the guarded variant is skipped: %s", why);
	hostile_servers();
	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/sigbus");
}
