/* SPDX-License-Identifier: MIT */
/*
 * The body of ipc/soak (make soak: 10,000,000 calls per connection) and
 * ipc/wrap (make check: 100,000): every call shape at once, each on a
 * connection (or handle) of its own, in processes of their own, with
 * request and response sizes drawn from 0 to the ring's limit so that the
 * records wrap the ring at every offset, every byte checked:
 *
 *  - plain: bypass_ipc_call, request and response by copy; before every
 *    16th answer the server sends one or two short one-way messages, which
 *    the client receives after the call (the call scans past them; they
 *    hold their room meanwhile, so such an answer is at most a quarter of
 *    the ring: with a pad before it, a larger one might find no room);
 *  - loans: the request built in a loan, the response in a loan that
 *    reserves the largest message and answers less (pads before responses
 *    at every offset: the bug of 95741d6 killed such a connection after two
 *    laps);
 *  - lib-msg: library mode's message mode (BYPASS_IPC_LIB_MESSAGE), TS_ECHO
 *    with a random request length and response capacity (the server
 *    reserves the capacity and answers the request's length; one call in
 *    eight or so has less room than the request: -ENOBUFS);
 *  - fallback: BYPASS_IPC_LIB_FALLBACK with protection keys required: where
 *    the CPU has none (the project's AMD VM) that is message mode through
 *    the fallback, else library mode behind the gate;
 *  - library: library mode, two threads calling on one handle.
 *
 * A call waits at most a minute (a hang fails the test; no timing does).
 */
#ifndef BYPASS_TEST_IPC_SOAK_H
#define BYPASS_TEST_IPC_SOAK_H

#include <pthread.h>

#include "libutil.h"

#define SOAK_WAIT (60 * BYPASS_SEC)

struct soak {
	uint64_t calls;             /* per connection */
	size_t ring;
	uint64_t seed;
	char name[2][64], lname[64], so[256]; /* plain, loans; library */
};

/* Call i's sizes: both sides draw them from the same seed. */
struct soak_sizes {
	size_t req, resp;
	unsigned how;
};

/* One-way messages before answer i (plain calls only): none, or one or
 * two short ones. */
static unsigned soak_extra(const struct soak_sizes *z)
{
	return (z->how & 15) ? 0 : 1 + ((z->how >> 4) & 1);
}

static struct soak_sizes soak_draw(uint64_t *s, size_t max, bool plain)
{
	struct soak_sizes z;
	uint64_t x = test_rand(s);
	z.req = (size_t)(x % (max + 1));
	z.resp = (size_t)((x >> 20) % (max + 1));
	z.how = (unsigned)(x >> 48);
	if (!plain)
		z.how |= 15; /* no one-way messages */
	if (soak_extra(&z) && z.resp > (max + 128) / 2)
		z.resp = (max + 128) / 2;
	return z;
}

#define SOAK_EXTRA_LEN(i, k) ((size_t)(((i) * 7 + (k) * 13) % 200))

static void soak_progress(const char *who, uint64_t i, uint64_t n)
{
	if (n >= 1000000 && i && !(i % 1000000))
		TEST_LOG("%s: %llu of %llu calls", who, (unsigned long long)i, (unsigned long long)n);
}

/* ----------------------------------------------- plain calls and loans */

static void soak_server(bypass_ipc_service *svc, const struct soak *sk, uint64_t seed, bool loans)
{
	bypass_ipc_conn *c = test_accept(svc);
	size_t max;
	CHECK_ERR(bypass_ipc_max_msg(c, &max), 0);
	unsigned char *tmp = malloc(max + 1);
	CHECK(tmp != NULL);
	uint64_t s = seed;
	for (uint64_t i = 0; i < sk->calls; i++) {
		struct soak_sizes z = soak_draw(&s, max, !loans);
		struct bypass_ipc_msg m;
		int r = bypass_ipc_recv(c, &m, SOAK_WAIT);
		if (r)
			TEST_FAIL("server %s: call %llu: recv: %s", loans ? "loans" : "plain",
				  (unsigned long long)i, strerror(-r));
		CHECK(m.flags & BYPASS_IPC_MSG_CALL);
		if (m.len != z.req || !test_check(m.data, m.len, i))
			TEST_FAIL("server: call %llu: request of %zu bytes (want %zu) differs",
				  (unsigned long long)i, m.len, z.req);
		for (unsigned k = 0; k < soak_extra(&z); k++) {
			size_t l = SOAK_EXTRA_LEN(i, k);
			test_fill(tmp, l, i * 3 + k);
			CHECK_ERR(bypass_ipc_send(c, tmp, l, SOAK_WAIT), 0);
		}
		if (loans) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, max, &buf, SOAK_WAIT), 0);
			test_fill(buf, z.resp, i + 7);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
			CHECK_ERR(bypass_ipc_reply(c, &m, buf, z.resp, SOAK_WAIT), 0);
		} else {
			test_fill(tmp, z.resp, i + 7);
			CHECK_ERR(bypass_ipc_reply(c, &m, tmp, z.resp, SOAK_WAIT), 0);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
		}
	}
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, SOAK_WAIT), -ECONNRESET);
	CHECK_ERR(bypass_ipc_close(c), 0);
	free(tmp);
	_exit(0);
}

static void soak_client(const struct soak *sk, uint64_t seed, bool loans)
{
	const char *who = loans ? "loans" : "plain";
	bypass_ipc_conn *c = test_connect(sk->name[loans], NULL);
	size_t max;
	CHECK_ERR(bypass_ipc_max_msg(c, &max), 0);
	CHECK_EQ(max, sk->ring / 2 - 128);
	unsigned char *tmp = malloc(max + 1);
	CHECK(tmp != NULL);
	uint64_t s = seed, extra = 0;
	for (uint64_t i = 0; i < sk->calls; i++) {
		struct soak_sizes z = soak_draw(&s, max, !loans);
		struct bypass_ipc_msg r;
		int e;
		if (loans) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, z.req, &buf, SOAK_WAIT), 0);
			test_fill(buf, z.req, i);
			e = bypass_ipc_call(c, buf, z.req, &r, SOAK_WAIT);
		} else {
			test_fill(tmp, z.req, i);
			e = bypass_ipc_call(c, tmp, z.req, &r, SOAK_WAIT);
		}
		if (e)
			TEST_FAIL("%s: call %llu (request %zu, response %zu bytes): %s", who,
				  (unsigned long long)i, z.req, z.resp, strerror(-e));
		if (r.len != z.resp || !test_check(r.data, r.len, i + 7))
			TEST_FAIL("%s: call %llu: response of %zu bytes (want %zu) differs", who,
				  (unsigned long long)i, r.len, z.resp);
		CHECK_ERR(bypass_ipc_release(c, &r), 0);
		for (unsigned k = 0; k < soak_extra(&z); k++) {
			struct bypass_ipc_msg m;
			CHECK_ERR(bypass_ipc_recv(c, &m, 0), 0);
			if (m.flags || m.len != SOAK_EXTRA_LEN(i, k) || !test_check(m.data, m.len, i * 3 + k))
				TEST_FAIL("%s: call %llu: one-way message %u differs", who,
					  (unsigned long long)i, k);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
			extra++;
		}
		soak_progress(who, i, sk->calls);
	}
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(c, &m, 0), -EAGAIN);
	CHECK_ERR(bypass_ipc_close(c), 0);
	free(tmp);
	TEST_LOG("%s: %llu calls, %llu one-way messages between them", who,
		 (unsigned long long)sk->calls, (unsigned long long)extra);
	fflush(stdout);
	_exit(0);
}

/* ---------------------------------------------------------- library */

struct soak_lib {
	bypass_ipc_lib *l;
	const struct soak *sk;
	uint64_t seed;
	const char *who;
	size_t max;
};

static void *soak_lib_calls(void *arg)
{
	struct soak_lib *a = arg;
	unsigned char *req = malloc(a->max + 1), *resp = malloc(a->max + 1);
	CHECK(req && resp);
	uint64_t s = a->seed, refused = 0;
	for (uint64_t i = 0; i < a->sk->calls; i++) {
		struct soak_sizes z = soak_draw(&s, a->max, false);
		/* The room: random, but at least the request 7 times in 8 (the
		 * echo answers as many bytes as it got). */
		if ((z.how >> 4) & 7 && z.resp < z.req)
			z.resp = z.req;
		test_fill(req, z.req, i ^ a->seed);
		int r = bypass_ipc_lib_call(a->l, TS_ECHO, req, z.req, resp, z.resp);
		if (z.req > z.resp) {
			if (r != -ENOBUFS)
				TEST_FAIL("%s: call %llu (request %zu, room %zu): %d", a->who,
					  (unsigned long long)i, z.req, z.resp, r);
			refused++;
		} else if (r != (int)z.req || !test_check(resp, z.req, i ^ a->seed)) {
			TEST_FAIL("%s: call %llu (request %zu, room %zu): %d (%s)", a->who,
				  (unsigned long long)i, z.req, z.resp, r,
				  r < 0 ? strerror(-r) : "differs");
		}
		soak_progress(a->who, i, a->sk->calls);
	}
	free(req);
	free(resp);
	TEST_LOG("%s: %llu calls (%llu answered -ENOBUFS: request longer than the room)",
		 a->who, (unsigned long long)a->sk->calls, (unsigned long long)refused);
	return NULL;
}

static void soak_lib_client(const struct soak *sk, unsigned flags, int protect, int threads,
			    const char *who, uint64_t seed)
{
	struct bypass_ipc_opts mo = { 0 };
	struct bypass_ipc_lib_opts o = { .flags = flags, .protect = protect, .msg = &mo,
					 .call_timeout_ns = SOAK_WAIT };
	bypass_ipc_lib *l = test_lib_open(sk->lname, &o);
	int mode = test_lib_mode(l);
	TEST_LOG("%s: %s mode", who, mode == BYPASS_IPC_LIB_MODE_LIBRARY ? "library" : "message");
	if (flags & BYPASS_IPC_LIB_MESSAGE)
		CHECK_EQ(mode, BYPASS_IPC_LIB_MODE_MESSAGE);
	else if (!flags)
		CHECK_EQ(mode, BYPASS_IPC_LIB_MODE_LIBRARY);
	struct soak_lib a[2];
	pthread_t t[2];
	for (int k = 0; k < threads; k++) {
		a[k] = (struct soak_lib){ .l = l, .sk = sk, .seed = seed + (uint64_t)k * 0x5151,
					  .who = who, .max = sk->ring / 2 - 128 - sizeof(struct lib_wire) };
		CHECK_EQ(pthread_create(&t[k], NULL, soak_lib_calls, &a[k]), 0);
	}
	for (int k = 0; k < threads; k++)
		CHECK_EQ(pthread_join(t[k], NULL), 0);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	fflush(stdout);
	_exit(0);
}

/* --------------------------------------------------------------- all */

/* A child of the test, which dies with it (a failing test leaves no
 * process behind). */
static pid_t soak_fork(void)
{
	fflush(stdout);
	pid_t parent = getpid(), p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(5);
	}
	return p;
}

static int soak_main(uint64_t calls, size_t ring, const char *tag)
{
	test_timeout(calls > 1000000 ? 7000 : 300); /* a hang, not a timing */
	struct soak sk = { .calls = calls, .ring = ring };
	sk.seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ test_now_ns();
	TEST_LOG("%llu calls per connection, %zu-byte rings, seed %#llx",
		 (unsigned long long)calls, ring, (unsigned long long)sk.seed);
	test_svc_name(sk.name[0], sizeof(sk.name[0]), "soak-plain");
	test_svc_name(sk.name[1], sizeof(sk.name[1]), "soak-loans");
	test_svc_name(sk.lname, sizeof(sk.lname), "soak-lib");
	test_lib_so("tests/ipc", "testsvc.so", sk.so, sizeof(sk.so));
	struct bypass_ipc_opts so = { .ring_size = ring, .max_msg = ring / 2 - 128 };
	struct bypass_ipc_lib_opts lo = { .msg = &so };
	int err;
	pid_t lsrv = test_lib_server(sk.lname, sk.so, &lo, -1, &err);
	CHECK_ERR(err, 0);
	pid_t kids[7];
	int n = 0;
	for (int loans = 0; loans < 2; loans++) {
		uint64_t seed = sk.seed + 0x1000 * (uint64_t)loans;
		bypass_ipc_service *svc;
		CHECK_ERR(bypass_ipc_listen(sk.name[loans], &so, &svc), 0);
		if ((kids[n++] = soak_fork()) == 0)
			soak_server(svc, &sk, seed, loans);
		CHECK_ERR(bypass_ipc_service_close(svc), 0);
		if ((kids[n++] = soak_fork()) == 0)
			soak_client(&sk, seed, loans);
	}
	if ((kids[n++] = soak_fork()) == 0)
		soak_lib_client(&sk, BYPASS_IPC_LIB_MESSAGE, 0, 1, "lib-msg", sk.seed + 0x2000);
	if ((kids[n++] = soak_fork()) == 0)
		soak_lib_client(&sk, BYPASS_IPC_LIB_FALLBACK, BYPASS_IPC_PROTECT_REQUIRED, 1,
				"fallback", sk.seed + 0x3000);
	if ((kids[n++] = soak_fork()) == 0)
		soak_lib_client(&sk, 0, 0, 2, "library", sk.seed + 0x4000);
	for (int i = 0; i < n; i++)
		wait_child(kids[i]);
	test_lib_stop(lsrv);
	return test_pass(tag);
}

#endif
