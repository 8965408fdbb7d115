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
#include <sys/resource.h>

#include "libutil.h"

/* The shapes (BYPASS_SOAK_SHAPES picks some; soak.c's header). */
enum {
	SOAK_PLAIN = 1,
	SOAK_LOANS = 2,
	SOAK_LIBMSG = 4,
	SOAK_FALLBACK = 8,
	SOAK_LIBRARY = 16,
	SOAK_ALL = 31,
};
static const char *const soak_shape_names[] = { "plain", "loans", "lib-msg", "fallback",
						 "library" };

/* How long one call may wait: a minute times BYPASS_TEST_TIMEOUT_SCALE, or
 * BYPASS_SOAK_WAIT seconds (a run paused by SIGSTOP needs more: a call's
 * deadline keeps running while it is stopped).  Set before the fork. */
static int64_t soak_wait_ns = 60 * BYPASS_SEC;
#define SOAK_WAIT soak_wait_ns
static uint64_t soak_every = 1000000; /* progress lines: BYPASS_SOAK_PROGRESS */
static uint64_t soak_t0;              /* the test's start, ns */

struct soak {
	uint64_t calls;             /* per connection */
	size_t ring;
	uint64_t seed;
	char name[2][64], lname[64], so[256]; /* plain, loans; library */
};

/*
 * test_fill and test_check (util.h), the same bytes, eight at a time and
 * outside ThreadSanitizer's view.  Byte by byte and instrumented, TSan's
 * per-byte checks (and then the range checks of memcpy/memcmp from a
 * pattern buffer) were most of the TSan soak's CPU time (docs/ipc.md, "Soak
 * tests").  TSan sees only the threads of one process; a payload's other
 * side is another process, or in library mode a buffer of the calling
 * thread's own, and the library's own accesses stay instrumented.
 * soak_main checks once that these agree with test_fill.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SOAK_NO_TSAN __attribute__((no_sanitize("thread")))
#endif
#endif
#if !defined(SOAK_NO_TSAN) && defined(__SANITIZE_THREAD__)
#define SOAK_NO_TSAN __attribute__((no_sanitize_thread))
#endif
#ifndef SOAK_NO_TSAN
#define SOAK_NO_TSAN
#endif

typedef uint64_t __attribute__((aligned(1), may_alias)) soak_u64u;

/* Bytes j to j + 7 of test_pat(i, .), j a multiple of 8: one base byte
 * (j >> 8 is the same for all eight) plus 7k in byte k, added byte by byte
 * without carries between bytes. */
static SOAK_NO_TSAN inline uint64_t soak_word(uint64_t i, size_t j)
{
	const uint64_t lo = 0x7f7f7f7f7f7f7f7full, hi = 0x8080808080808080ull;
	uint64_t a = (uint64_t)(unsigned char)(i * 131 + j * 7 + (j >> 8)) * 0x0101010101010101ull;
	uint64_t b = 0x312a231c150e0700ull; /* 0, 7, 14, ... 49 */
	return ((a & lo) + (b & lo)) ^ ((a ^ b) & hi);
}

static SOAK_NO_TSAN void soak_fill(void *p, size_t len, uint64_t i)
{
	unsigned char *c = p;
	size_t j = 0;
	for (; j + 8 <= len; j += 8)
		*(soak_u64u *)(c + j) = soak_word(i, j);
	for (; j < len; j++)
		c[j] = (unsigned char)(i * 131 + j * 7 + (j >> 8));
}

static SOAK_NO_TSAN int soak_check(const void *p, size_t len, uint64_t i)
{
	const unsigned char *c = p;
	size_t j = 0;
	for (; j + 8 <= len; j += 8)
		if (*(const soak_u64u *)(c + j) != soak_word(i, j))
			return 0;
	for (; j < len; j++)
		if (c[j] != (unsigned char)(i * 131 + j * 7 + (j >> 8)))
			return 0;
	return 1;
}

/* soak_fill writes test_fill's bytes, soak_check tells them apart. */
static void soak_selftest(void)
{
	unsigned char a[1100], b[1100];
	uint64_t s = 1;
	for (int n = 0; n < 300; n++) {
		uint64_t i = test_rand(&s);
		size_t off = n % 8, len = (size_t)(test_rand(&s) % (sizeof(a) - 8));
		memset(a, 0, sizeof(a));
		soak_fill(a + off, len, i);
		CHECK(test_check(a + off, len, i));
		test_fill(b + off, len, i);
		CHECK(soak_check(b + off, len, i));
		if (len) {
			b[off + len - 1 - (size_t)(i % len)] ^= 1;
			CHECK(!soak_check(b + off, len, i));
		}
	}
}

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

static double soak_cpu_s(clockid_t id)
{
	struct timespec t;
	if (clock_gettime(id, &t))
		return 0;
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Every soak_every calls: where this shape is, the wall time since the test
 * began and the CPU time this process (and this thread) has used. */
static void soak_progress(const char *who, uint64_t i, uint64_t n)
{
	if (n >= soak_every && i && !(i % soak_every)) {
		TEST_LOG("%s: %llu of %llu calls, %.1f s wall, %.1f s CPU (process), %.1f s (thread)",
			 who, (unsigned long long)i, (unsigned long long)n,
			 (double)(test_now_ns() - soak_t0) / 1e9,
			 soak_cpu_s(CLOCK_PROCESS_CPUTIME_ID), soak_cpu_s(CLOCK_THREAD_CPUTIME_ID));
		fflush(stdout);
	}
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
		if (m.len != z.req || !soak_check(m.data, m.len, i))
			TEST_FAIL("server: call %llu: request of %zu bytes (want %zu) differs",
				  (unsigned long long)i, m.len, z.req);
		for (unsigned k = 0; k < soak_extra(&z); k++) {
			size_t l = SOAK_EXTRA_LEN(i, k);
			soak_fill(tmp, l, i * 3 + k);
			CHECK_ERR(bypass_ipc_send(c, tmp, l, SOAK_WAIT), 0);
		}
		if (loans) {
			void *buf;
			CHECK_ERR(bypass_ipc_loan(c, max, &buf, SOAK_WAIT), 0);
			soak_fill(buf, z.resp, i + 7);
			CHECK_ERR(bypass_ipc_release(c, &m), 0);
			CHECK_ERR(bypass_ipc_reply(c, &m, buf, z.resp, SOAK_WAIT), 0);
		} else {
			soak_fill(tmp, z.resp, i + 7);
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
			soak_fill(buf, z.req, i);
			e = bypass_ipc_call(c, buf, z.req, &r, SOAK_WAIT);
		} else {
			soak_fill(tmp, z.req, i);
			e = bypass_ipc_call(c, tmp, z.req, &r, SOAK_WAIT);
		}
		if (e)
			TEST_FAIL("%s: call %llu (request %zu, response %zu bytes): %s", who,
				  (unsigned long long)i, z.req, z.resp, strerror(-e));
		if (r.len != z.resp || !soak_check(r.data, r.len, i + 7))
			TEST_FAIL("%s: call %llu: response of %zu bytes (want %zu) differs", who,
				  (unsigned long long)i, r.len, z.resp);
		CHECK_ERR(bypass_ipc_release(c, &r), 0);
		for (unsigned k = 0; k < soak_extra(&z); k++) {
			struct bypass_ipc_msg m;
			CHECK_ERR(bypass_ipc_recv(c, &m, 0), 0);
			if (m.flags || m.len != SOAK_EXTRA_LEN(i, k) || !soak_check(m.data, m.len, i * 3 + k))
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
		soak_fill(req, z.req, i ^ a->seed);
		int r = bypass_ipc_lib_call(a->l, TS_ECHO, req, z.req, resp, z.resp);
		if (z.req > z.resp) {
			if (r != -ENOBUFS)
				TEST_FAIL("%s: call %llu (request %zu, room %zu): %d", a->who,
					  (unsigned long long)i, z.req, z.resp, r);
			refused++;
		} else if (r != (int)z.req || !soak_check(resp, z.req, i ^ a->seed)) {
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

static uint64_t soak_env_u64(const char *name, uint64_t def, uint64_t max)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *e;
	errno = 0;
	unsigned long long x = strtoull(v, &e, 10);
	if (errno || *e || !x || x > max)
		TEST_FAIL("%s=%s: want an integer from 1 to %llu", name, v, (unsigned long long)max);
	return x;
}

static unsigned soak_env_shapes(void)
{
	const char *v = getenv("BYPASS_SOAK_SHAPES");
	if (!v || !*v)
		return SOAK_ALL;
	unsigned m = 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *sp, *t = strtok_r(buf, ",", &sp); t; t = strtok_r(NULL, ",", &sp)) {
		unsigned k = 0;
		while (k < 5 && strcmp(t, soak_shape_names[k]))
			k++;
		if (k == 5)
			TEST_FAIL("BYPASS_SOAK_SHAPES: unknown shape '%s' (plain, loans, lib-msg, "
				  "fallback, library)", t);
		m |= 1u << k;
	}
	if (!m)
		TEST_FAIL("BYPASS_SOAK_SHAPES=%s names no shape", v);
	return m;
}

/* A child's end, with the CPU time it and its threads used. */
struct soak_kid {
	pid_t pid;
	const char *who;
	uint64_t calls; /* calls it made or served */
};

static void soak_report(const struct soak_kid *k, int st, const struct rusage *ru, bool killed)
{
	double u = (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6;
	double sy = (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
	TEST_LOG("%s: ended at %.1f s wall; CPU %.2f s (user %.2f, system %.2f), %.2f us per call; "
		 "%ld voluntary, %ld involuntary context switches",
		 k->who, (double)(test_now_ns() - soak_t0) / 1e9, u + sy, u, sy,
		 (u + sy) * 1e6 / (double)(k->calls ? k->calls : 1), ru->ru_nvcsw, ru->ru_nivcsw);
	fflush(stdout);
	if (killed)
		return;
	if (WIFSIGNALED(st))
		TEST_FAIL("%s (child %d) killed by signal %d", k->who, (int)k->pid, WTERMSIG(st));
	if (WEXITSTATUS(st) == 77)
		SKIP("%s skipped", k->who);
	if (WEXITSTATUS(st) != 0)
		TEST_FAIL("%s (child %d) exited with %d", k->who, (int)k->pid, WEXITSTATUS(st));
}

/* Reap the n children as they end (the first failure ends the test), then
 * the library server (if any; it runs until killed). */
static void soak_reap(struct soak_kid *kids, int n, struct soak_kid *lsrv)
{
	int st;
	struct rusage ru;
	for (int left = n; left > 0;) {
		pid_t r = wait4(-1, &st, 0, &ru);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			TEST_FAIL("wait4: %s", strerror(errno));
		if (r == lsrv->pid)
			TEST_FAIL("the library server ended before its clients (status %#x)", st);
		for (int i = 0; i < n; i++)
			if (kids[i].pid == r) {
				soak_report(&kids[i], st, &ru, false);
				left--;
			}
	}
	if (lsrv->pid > 0) {
		kill(lsrv->pid, SIGKILL);
		while (wait4(lsrv->pid, &st, 0, &ru) < 0)
			if (errno != EINTR)
				TEST_FAIL("wait4: %s", strerror(errno));
		soak_report(lsrv, st, &ru, true);
	}
}

static int soak_main(uint64_t calls, size_t ring, const char *tag)
{
	soak_selftest();
	calls = soak_env_u64("BYPASS_SOAK_CALLS", calls, 1ull << 40);
	unsigned shapes = soak_env_shapes();
	soak_every = soak_env_u64("BYPASS_SOAK_PROGRESS", soak_every, 1ull << 40);
	const char *sc = getenv("BYPASS_TEST_TIMEOUT_SCALE");
	unsigned long scale = sc ? strtoul(sc, NULL, 10) : 1;
	if (scale < 1 || scale > 1000)
		scale = 1;
	soak_wait_ns = (int64_t)soak_env_u64("BYPASS_SOAK_WAIT", 60 * scale, 1000000) * BYPASS_SEC;
	/* A hang, not a timing: 700 us a call (7,000 s for 10,000,000), five
	 * minutes at least; times BYPASS_TEST_TIMEOUT_SCALE. */
	test_timeout(calls > 1000000 ? (unsigned)(calls / 1000000 * 700) : 300);
	soak_t0 = test_now_ns();
	struct soak sk = { .calls = calls, .ring = ring };
	sk.seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ test_now_ns();
	char list[64] = "";
	for (unsigned k = 0; k < 5; k++)
		if (shapes & (1u << k))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 *list ? "," : "", soak_shape_names[k]);
	TEST_LOG("%llu calls per connection, %zu-byte rings, seed %#llx, shapes %s, "
		 "a call waits at most %lld s",
		 (unsigned long long)calls, ring, (unsigned long long)sk.seed, list,
		 (long long)(soak_wait_ns / BYPASS_SEC));
	test_svc_name(sk.name[0], sizeof(sk.name[0]), "soak-plain");
	test_svc_name(sk.name[1], sizeof(sk.name[1]), "soak-loans");
	test_svc_name(sk.lname, sizeof(sk.lname), "soak-lib");
	test_lib_so("tests/ipc", "testsvc.so", sk.so, sizeof(sk.so));
	struct bypass_ipc_opts so = { .ring_size = ring, .max_msg = ring / 2 - 128 };
	struct bypass_ipc_lib_opts lo = { .msg = &so };
	int err;
	struct soak_kid lsrv = { 0, "library server (message-mode calls)",
				 calls * (unsigned)(!!(shapes & SOAK_LIBMSG) + !!(shapes & SOAK_FALLBACK)) };
	if (shapes & (SOAK_LIBMSG | SOAK_FALLBACK | SOAK_LIBRARY)) {
		fflush(stdout);
		lsrv.pid = test_lib_server(sk.lname, sk.so, &lo, -1, &err);
		CHECK_ERR(err, 0);
	}
	static const char *const who[2][2] = { { "plain server", "plain client" },
						{ "loans server", "loans client" } };
	struct soak_kid kids[7];
	int n = 0;
	for (int i = 0; i < 7; i++)
		kids[i].calls = calls;
	for (int loans = 0; loans < 2; loans++) {
		if (!(shapes & (loans ? SOAK_LOANS : SOAK_PLAIN)))
			continue;
		uint64_t seed = sk.seed + 0x1000 * (uint64_t)loans;
		bypass_ipc_service *svc;
		CHECK_ERR(bypass_ipc_listen(sk.name[loans], &so, &svc), 0);
		kids[n].who = who[loans][0];
		if ((kids[n++].pid = soak_fork()) == 0)
			soak_server(svc, &sk, seed, loans);
		CHECK_ERR(bypass_ipc_service_close(svc), 0);
		kids[n].who = who[loans][1];
		if ((kids[n++].pid = soak_fork()) == 0)
			soak_client(&sk, seed, loans);
	}
	if (shapes & SOAK_LIBMSG) {
		kids[n].who = "lib-msg client";
		if ((kids[n++].pid = soak_fork()) == 0)
			soak_lib_client(&sk, BYPASS_IPC_LIB_MESSAGE, 0, 1, "lib-msg", sk.seed + 0x2000);
	}
	if (shapes & SOAK_FALLBACK) {
		kids[n].who = "fallback client";
		if ((kids[n++].pid = soak_fork()) == 0)
			soak_lib_client(&sk, BYPASS_IPC_LIB_FALLBACK, BYPASS_IPC_PROTECT_REQUIRED, 1,
					"fallback", sk.seed + 0x3000);
	}
	if (shapes & SOAK_LIBRARY) {
		kids[n].who = "library client (2 threads)";
		kids[n].calls = 2 * calls;
		if ((kids[n++].pid = soak_fork()) == 0)
			soak_lib_client(&sk, 0, 0, 2, "library", sk.seed + 0x4000);
	}
	soak_reap(kids, n, &lsrv);
	return test_pass(tag);
}

#endif
