/* SPDX-License-Identifier: MIT */
/*
 * badargs: every public notify function refuses bad input with the
 * documented -errno, never a crash or a hang: NULL handles and out
 * pointers, bad modes and flags, unknown backends (-EINVAL, "uintr" among
 * them: no data path, no backend), a full arena (-ENOSPC),
 * addresses that are not doorbells, and messages that are not doorbells
 * (-EPROTO, descriptors not leaked) or a closed socket (-ECONNRESET).
 */
#include <bypass/notify.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "harness.h"
#include "core/testutil.h"
#include "notify/notify_internal.h"

static void cb(bypass_doorbell *db, unsigned n, void *arg)
{
	(void)db, (void)n, (void)arg;
}

static void create_opts(void)
{
	bypass_doorbell *db = (bypass_doorbell *)0x1;
	CHECK_ERR(bypass_notify_create(NULL, NULL), -EINVAL);
	struct bypass_notify_opts o = { .mode = 3 };
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	o.mode = -1;
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	o.mode = BYPASS_WAIT_ADAPTIVE;
	o.flags = 0x2;
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	o.flags = 0x80000000u | BYPASS_NOTIFY_EVENTFD;
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	o.flags = 0;
	o.backend = "bogus";
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	o.backend = "";
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	o.backend = "FUTEX";
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	o.backend = NULL;
	/* reserved must be zero, every word of it (room for new options) */
	for (size_t i = 0; i < sizeof(o.reserved) / sizeof(o.reserved[0]); i++) {
		o.reserved[i] = 1;
		CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
		o.reserved[i] = 0;
	}
	CHECK(db == (bypass_doorbell *)0x1); /* untouched on failure */
	/* spin_ns 0 is 20 us: the library reads no environment. */
	setenv("BYPASS_NOTIFY_SPIN_NS", "1", 1);
	CHECK_ERR(bypass_notify_create(&o, &db), 0);
	CHECK_EQ(db->spin_ns, 20000);
	CHECK_ERR(bypass_notify_close(db), 0);
	unsetenv("BYPASS_NOTIFY_SPIN_NS");
	db = (bypass_doorbell *)0x1;

	/* Backends. */
	CHECK_ERR(bypass_notify_backend_available(NULL), -EINVAL);
	CHECK_ERR(bypass_notify_backend_available("bogus"), -EINVAL);
	CHECK_EQ(bypass_notify_backend_available("futex"), 1);
	CHECK_EQ(bypass_notify_backend_available("auto"), 1);
	/* User interrupts are not a backend (no data path): an unknown name. */
	CHECK_ERR(bypass_notify_backend_available("uintr"), -EINVAL);
	o.backend = "uintr";
	CHECK_ERR(bypass_notify_create(&o, &db), -EINVAL);
	bypass_arena *a;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	CHECK_ERR(bypass_notify_create_in(a, &o, &db), -EINVAL);
	CHECK_ERR(bypass_arena_close(a), 0);
	o.backend = NULL;
	CHECK(db == (bypass_doorbell *)0x1);
	CHECK(bypass_notify_backend(NULL) == NULL);
}

static void null_handles(void)
{
	CHECK_ERR(bypass_notify_close(NULL), -EINVAL);
	CHECK_ERR(bypass_notify_destroy(NULL), -EINVAL);
	CHECK_ERR(bypass_notify_ring(NULL), -EINVAL);
	CHECK_ERR(bypass_notify_wait(NULL, 0), -EINVAL);
	CHECK_ERR(bypass_notify_wait(NULL, BYPASS_FOREVER), -EINVAL);
	CHECK_ERR(bypass_notify_try(NULL), -EINVAL);
	CHECK_ERR(bypass_notify_set_mode(NULL, BYPASS_WAIT_SLEEP, 0), -EINVAL);
	CHECK_ERR(bypass_notify_fd(NULL), -EINVAL);
	CHECK_ERR(bypass_notify_arm(NULL), -EINVAL);
	CHECK_ERR(bypass_notify_set_handler(NULL, cb, NULL), -EINVAL);
	CHECK_ERR(bypass_notify_set_handler(NULL, NULL, NULL), -EINVAL);
	CHECK_ERR(bypass_notify_peer_alive(NULL), -EINVAL);
	CHECK(bypass_notify_addr(NULL) == NULL);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_ERR(bypass_notify_send(sv[0], NULL), -EINVAL);
	CHECK_ERR(bypass_notify_recv(sv[1], NULL), -EINVAL);
	close(sv[0]);
	close(sv[1]);
}

static void bad_values(void)
{
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create(NULL, &db), 0);
	CHECK_ERR(bypass_notify_wait(db, -2), -EINVAL);
	CHECK_ERR(bypass_notify_wait(db, INT64_MIN), -EINVAL);
	CHECK_ERR(bypass_notify_set_mode(db, 3, 0), -EINVAL);
	CHECK_ERR(bypass_notify_set_mode(db, -1, 0), -EINVAL);
	CHECK_ERR(bypass_notify_set_mode(db, 1000, 1000), -EINVAL);
	bypass_doorbell *out = NULL;
	CHECK_ERR(bypass_notify_send(-1, db), -EINVAL);
	CHECK_ERR(bypass_notify_recv(-1, &out), -EINVAL);
	/* A descriptor that is not a socket. */
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK(bypass_notify_send(p[1], db) < 0);
	close(p[0]);
	close(p[1]);
	CHECK(out == NULL);
	/* Still a working doorbell. */
	CHECK_ERR(bypass_notify_ring(db), 0);
	CHECK_EQ(bypass_notify_wait(db, 0), 1);
	CHECK_ERR(bypass_notify_close(db), 0);
}

static void arena_cases(void)
{
	bypass_doorbell *db;
	CHECK_ERR(bypass_notify_create_in(NULL, NULL, &db), -EINVAL);
	bypass_arena *a, *b;
	CHECK_ERR(bypass_arena_create(NULL, &a), 0);
	CHECK_ERR(bypass_arena_create(NULL, &b), 0);
	CHECK_ERR(bypass_notify_create_in(a, NULL, NULL), -EINVAL);
	struct bypass_notify_opts o = { .mode = 7 };
	CHECK_ERR(bypass_notify_create_in(a, &o, &db), -EINVAL);
	CHECK_ERR(bypass_notify_create_in(a, NULL, &db), 0);
	void *addr = bypass_notify_addr(db);
	bypass_doorbell *h;
	CHECK_ERR(bypass_notify_open(NULL, addr, &h), -EINVAL);
	CHECK_ERR(bypass_notify_open(a, NULL, &h), -EINVAL);
	CHECK_ERR(bypass_notify_open(a, addr, NULL), -EINVAL);
	CHECK_ERR(bypass_notify_open(b, addr, &h), -EINVAL);     /* other arena */
	CHECK_ERR(bypass_notify_open(a, (char *)addr + 1, &h), -EINVAL);
	CHECK_ERR(bypass_notify_open(a, (char *)addr + 4096, &h), -EINVAL);
	int local;
	CHECK_ERR(bypass_notify_open(a, &local, &h), -EINVAL);  /* outside */
	void *plain;
	CHECK_ERR(bypass_arena_alloc(a, 256, 64, &plain), 0);
	CHECK_ERR(bypass_notify_open(a, plain, &h), -EINVAL);   /* zeroes */
	CHECK_ERR(bypass_notify_open(a, addr, &h), 0);
	CHECK_ERR(bypass_notify_close(h), 0);
	CHECK_ERR(bypass_notify_close(db), 0);

	/* A full arena: -ENOSPC, and nothing leaked. */
	bypass_arena *small;
	struct bypass_arena_opts ao = { .size = 8192 };
	CHECK_ERR(bypass_arena_create(&ao, &small), 0);
	bypass_doorbell *dbs[64];
	int n = 0, r;
	while ((r = bypass_notify_create_in(small, NULL, &dbs[n])) == 0)
		CHECK(++n < 64);
	CHECK_ERR(r, -ENOSPC);
	CHECK(n >= 1);
	for (int i = 0; i < n; i++)
		CHECK_ERR(bypass_notify_close(dbs[i]), 0);
	CHECK_ERR(bypass_arena_close(small), 0);
	CHECK_ERR(bypass_arena_close(a), 0);
	CHECK_ERR(bypass_arena_close(b), 0);
}

/* Messages that are not doorbells. */
static void bad_messages(void)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	int fds0 = test_count_fds();
	bypass_doorbell *h = NULL;

	/* Too short, no descriptor. */
	CHECK_EQ(bypass_send_fds(sv[0], NULL, 0, "hello", 5), 5);
	CHECK_ERR(bypass_notify_recv(sv[1], &h), -EPROTO);

	/* The right size, garbage, with descriptors: they are closed. */
	char junk[24];
	memset(junk, 0x5a, sizeof(junk));
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(devnull >= 0);
	int two[2] = { devnull, devnull };
	CHECK_EQ(bypass_send_fds(sv[0], two, 2, junk, sizeof(junk)), (int)sizeof(junk));
	CHECK_ERR(bypass_notify_recv(sv[1], &h), -EPROTO);
	CHECK_EQ(bypass_send_fds(sv[0], two, 1, junk, sizeof(junk)), (int)sizeof(junk));
	CHECK_ERR(bypass_notify_recv(sv[1], &h), -EPROTO);

	/* A well-formed header naming a descriptor that is not shared memory. */
	struct {
		uint32_t magic, version;
		uint64_t offset, efd_id;
	} w = { 0x42504442u, 1, 0, 0 };
	CHECK_EQ(bypass_send_fds(sv[0], &devnull, 1, &w, sizeof(w)), (int)sizeof(w));
	CHECK_ERR(bypass_notify_recv(sv[1], &h), -EPROTO);
	/* Or shared memory that holds no doorbell. */
	int mfd = memfd_create("not-a-doorbell", MFD_CLOEXEC);
	CHECK(mfd >= 0);
	CHECK_EQ(ftruncate(mfd, 4096), 0);
	CHECK_EQ(bypass_send_fds(sv[0], &mfd, 1, &w, sizeof(w)), (int)sizeof(w));
	int r = bypass_notify_recv(sv[1], &h);
	CHECK(r == -EPROTO || r == -EINVAL);
	/* An offset beyond the memory. */
	w.offset = 1 << 20;
	CHECK_EQ(bypass_send_fds(sv[0], &mfd, 1, &w, sizeof(w)), (int)sizeof(w));
	CHECK_ERR(bypass_notify_recv(sv[1], &h), -EPROTO);
	close(mfd);
	close(devnull);
	CHECK(h == NULL);
	CHECK_EQ(test_count_fds(), fds0); /* every received descriptor closed */

	/* The peer closed the socket. */
	close(sv[0]);
	CHECK_ERR(bypass_notify_recv(sv[1], &h), -ECONNRESET);
	close(sv[1]);
}

int main(void)
{
	test_timeout(60);
	create_opts();
	null_handles();
	bad_values();
	arena_cases();
	bad_messages();
	return test_pass("notify/badargs");
}
