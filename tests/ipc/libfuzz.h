/* SPDX-License-Identifier: MIT */
/*
 * The body of lib-fuzz (make check, a few seconds) and lib-fuzz-long
 * (make soak): a library-mode client writes random and adversarial values
 * into every field of the service's control block and its event slots,
 * for the whole run, while honest clients call:
 *
 *  - two message-mode clients (echo, add, post), whose calls the server's
 *    thread runs: every answer is right or one of the errors a broken or
 *    locked-up service gives (-ENOTRECOVERABLE, -EOWNERDEAD, -ENOLCK,
 *    -EAGAIN for a full event queue), and comes within a bound (a call
 *    timeout of 20 s: -ETIMEDOUT fails the test);
 *  - a library-mode client (echo, add, post, recover), which reads the
 *    control block too: the same, and -EPIPE (a liveness word the fuzzer
 *    rewrote);
 *  - an opener that opens and closes with the fallback all along: library
 *    mode, or message mode where the fuzzed control block does not check
 *    out;
 *
 * and the server (which recovers its service whenever it finds it broken)
 * must live through it, and exit 0 at SIGTERM, closing the service,
 * within a bound.  Values: random bytes; 0, 1, all ones, the top bit;
 * offsets to page 0, the control block, the slots, the heap's last byte,
 * past the arena; slot counts 0, 1 and huge; lock words seen held (a live
 * owner's id), a dead id, the waiters bit alone; liveness words that look
 * dead or alive.
 */
#ifndef BYPASS_TEST_IPC_LIBFUZZ_H
#define BYPASS_TEST_IPC_LIBFUZZ_H

#include <sys/mman.h>

#include "libutil.h"

#define FUZZ_CALL_NS (20 * BYPASS_SEC)
#ifndef LIB_LK_ID /* an older lib.h (to show the test fail before the fix) */
#define LIB_LK_ID LIB_FUTEX_TID_MASK
#define LIB_LK_WAITERS 0x80000000u
#endif

struct fuzz_shared {
	volatile uint32_t stop;
	volatile uint32_t ready;    /* the honest clients opened before fuzzing */
	volatile uint64_t writes, calls[4], errors[4];
};

static volatile sig_atomic_t fuzz_term;

static void fuzz_on_term(int sig)
{
	(void)sig;
	fuzz_term = 1;
}

/* The server: serves both modes, takes events, recovers its service when
 * broken, and closes it and exits 0 at SIGTERM. */
static void fuzz_server_loop(bypass_ipc_lib_service *svc)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, bypass_ipc_lib_service_fd(svc), &ev))
		_exit(3);
	while (!fuzz_term) {
		struct epoll_event evs[16];
		int n = bypass_ipc_epoll_wait(ep, evs, 16, 100 * BYPASS_MS);
		for (int i = 0; i < n; i++) {
			bypass_ipc_conn *c = evs[i].data.ptr;
			if (!c) {
				while (bypass_ipc_lib_accept(svc, &c, 0) >= 0) {
					struct epoll_event ce = { .events = EPOLLIN, .data.ptr = c };
					if (c && bypass_ipc_epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce))
						bypass_ipc_close(c);
				}
				do {
					struct bypass_ipc_event e;
					while (bypass_ipc_lib_event(svc, &e) == 0)
						if (e.len > BYPASS_IPC_EVENT_MAX)
							_exit(6);
				} while (bypass_ipc_lib_arm(svc) == 1);
				continue;
			}
			int r;
			while ((r = bypass_ipc_lib_serve(svc, c, 0)) == 1)
				;
			if (r != -EAGAIN) {
				bypass_ipc_epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL);
				bypass_ipc_close(c);
			}
		}
		struct bypass_ipc_lib_stats st;
		if (!bypass_ipc_lib_service_stats(svc, &st) && st.broken)
			bypass_ipc_lib_service_recover(svc);
	}
	_exit(bypass_ipc_lib_service_close(svc) ? 7 : 0);
}

static pid_t fuzz_server(const char *name, const char *so)
{
	int p[2];
	CHECK(pipe2(p, O_CLOEXEC) == 0);
	fflush(stdout);
	pid_t parent = getpid(), pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(5);
		struct sigaction sa = { .sa_handler = fuzz_on_term };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		close(p[0]);
		bypass_ipc_lib_service *svc = NULL;
		int r = bypass_ipc_lib_listen(name, so, NULL, &svc);
		if (write(p[1], &r, sizeof(r)) != sizeof(r) || r)
			_exit(2);
		close(p[1]);
		fuzz_server_loop(svc);
	}
	close(p[1]);
	int r = -EIO;
	if (read(p[0], &r, sizeof(r)) != sizeof(r))
		TEST_FAIL("the server died before listening");
	close(p[0]);
	CHECK_ERR(r, 0);
	return pid;
}

static pid_t fuzz_fork(void)
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

/* An error a fuzzed service may give (not a hang, not a wrong answer). */
static bool fuzz_clear(int r, bool lib)
{
	return r == -ENOTRECOVERABLE || r == -EOWNERDEAD || r == -ENOLCK || r == -EAGAIN ||
	       (lib && r == -EPIPE);
}

/* An honest client: kind 0, 1 message mode, 2 library mode. */
static void fuzz_client(const char *name, struct fuzz_shared *sh, int kind, uint64_t seed)
{
	bool lib = kind == 2;
	struct bypass_ipc_lib_opts o = { .flags = lib ? 0 : BYPASS_IPC_LIB_MESSAGE,
					 .call_timeout_ns = FUZZ_CALL_NS };
	bypass_ipc_lib *l = test_lib_open(name, &o);
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	unsigned char req[256], resp[256];
	uint64_t s = seed, ok = 0;
	for (uint64_t i = 0; !sh->stop; i++) {
		uint64_t x = test_rand(&s);
		size_t len = (size_t)(x % sizeof(req));
		int r;
		switch ((x >> 32) % 4) {
		case 0:
		case 1:
			test_fill(req, len, i ^ seed);
			r = bypass_ipc_lib_call(l, TS_ECHO, req, len, resp, sizeof(resp));
			if (r >= 0 && (r != (int)len || !test_check(resp, len, i ^ seed)))
				TEST_FAIL("client %d: echo %llu answered %d bytes, not its %zu", kind,
					  (unsigned long long)i, r, len);
			break;
		case 2: {
			r = (int)test_lib_add(l, 1);
			break;
		}
		default:
			r = bypass_ipc_lib_call(l, TS_POST, req, len % 48, NULL, 0);
		}
		if (r >= 0) {
			ok++;
		} else if (!fuzz_clear(r, lib)) {
			TEST_FAIL("client %d: call %llu: %s", kind, (unsigned long long)i,
				  strerror(-r));
		} else {
			sh->errors[kind]++;
			if (lib && r != -EPIPE)
				bypass_ipc_lib_recover(l);
			if (r == -ENOTRECOVERABLE || r == -EPIPE)
				usleep(1000); /* the server recovers it meanwhile */
		}
		sh->calls[kind]++;
	}
	(void)ok;
	bypass_ipc_lib_close(l);
	_exit(0);
}

/* The opener's pause between opens: longer under ThreadSanitizer
 * (fuzz_main: the mappings). */
#ifndef FUZZ_OPEN_PAUSE_US
#if BP_TSAN
#define FUZZ_OPEN_PAUSE_US 100000
#else
#define FUZZ_OPEN_PAUSE_US 2000
#endif
#endif

/* Opens and closes with the fallback, one call each. */
static void fuzz_opener(const char *name, struct fuzz_shared *sh)
{
	struct bypass_ipc_lib_opts o = { .flags = BYPASS_IPC_LIB_FALLBACK,
					 .call_timeout_ns = FUZZ_CALL_NS };
	while (!sh->stop) {
		bypass_ipc_lib *l = NULL;
		int r = bypass_ipc_lib_open(name, &o, &l);
		if (r)
			TEST_FAIL("opener: %s", strerror(-r));
		char out[8];
		r = bypass_ipc_lib_call(l, TS_ECHO, "open", 4, out, sizeof(out));
		if (r != 4 && !fuzz_clear(r, test_lib_mode(l) == BYPASS_IPC_LIB_MODE_LIBRARY))
			TEST_FAIL("opener's call: %d", r);
		bypass_ipc_lib_close(l);
		sh->calls[3]++;
		usleep(FUZZ_OPEN_PAUSE_US);
	}
	_exit(0);
}

/* An adversarial value of the given size (4 or 8 bytes) for the arena at
 * base of size bytes, whose control block is c. */
static uint64_t fuzz_value(uint64_t *s, unsigned size, const struct lib_ctl *c, uintptr_t base,
			   uint64_t asize, const uint32_t *seen, unsigned nseen)
{
	uint64_t x = test_rand(s), ctl = (uintptr_t)c - base;
	uint64_t v;
	switch (x % 16) {
	case 0: v = 0; break;
	case 1: v = 1; break;
	case 2: v = ~0ull; break;
	case 3: v = size == 4 ? 0x80000000u : 1ull << 63; break;
	case 4: v = ctl; break;                                 /* the control block */
	case 5: v = ctl + (x >> 8) % sizeof(*c); break;
	case 6: v = asize - 1; break;                           /* the arena's last byte */
	case 7: v = asize + (x >> 8) % (1ull << 30); break;     /* past it */
	case 8: v = base + (x >> 8) % asize; break;             /* an address, not an offset */
	case 9: v = nseen ? seen[(x >> 8) % nseen] : 0; break;  /* a lock word seen held */
	case 10: v = 0x3ffu + (x >> 40) % 100; break;           /* an id nobody holds */
	case 11: v = LIB_LK_WAITERS; break;
	case 12: v = LIB_FUTEX_OWNER_DIED | ((x >> 8) & LIB_FUTEX_TID_MASK); break;
	case 13: v = (x >> 8) & 0xffff; break;                  /* a small count */
	default: v = test_rand(s); break;
	}
	return size == 4 ? (uint32_t)v : v;
}

/* Writes values into every field of the control block and the slots until
 * stopped. */
static void fuzz_writer(const char *name, struct fuzz_shared *sh, uint64_t seed)
{
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct lib_ctl *c = test_lib_ctl(l);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	uintptr_t base = (uintptr_t)st.arena_base;
	uint64_t asize = (uint64_t)((uintptr_t)c - base) + st.arena_size + (64u << 10);
	struct lib_ctl snap;
	memcpy(&snap, (void *)c, offsetof(struct lib_ctl, live));
	struct bypass_ipc_event *slots = (void *)(base + snap.ev_off);
	/* Every field: its offset and size (4 or 8 bytes, or a run of them). */
	struct field {
		size_t off, size, n;
	} f[] = {
#define F(m) { offsetof(struct lib_ctl, m), sizeof(((struct lib_ctl *)0)->m) >= 8 ? 8 : 4, \
	       sizeof(((struct lib_ctl *)0)->m) / (sizeof(((struct lib_ctl *)0)->m) >= 8 ? 8 : 4) }
		F(magic), F(version), F(nops), F(dev), F(ino), F(heap_off), F(heap_end),
		F(state_off), F(ev_off), F(ev_slots), F(pad), F(name), F(live), F(broken),
		F(alloc_lock), F(brk), F(free_head), F(used), F(recover_lock), F(faults),
		F(owner_dead), F(leaked), F(recoveries), F(events), F(dropped), F(ev_lock),
		F(ev_tail), F(ev_head), F(ev_armed),
#undef F
	};
	uint32_t seen[64] = { 0 };
	unsigned nseen = 0;
	_Atomic uint32_t *locks[] = { (void *)&c->alloc_lock, (void *)&c->ev_lock,
				      (void *)&c->recover_lock };
	uint64_t s = seed;
	while (!sh->stop) {
		for (size_t k = 0; k < BP_ARRAY_SIZE(locks); k++) {
			uint32_t w = atomic_load(locks[k]);
			if ((w & LIB_LK_ID) && nseen < BP_ARRAY_SIZE(seen))
				seen[nseen++] = w;
		}
		uint64_t x = test_rand(&s);
		if (x % 8 == 0 && snap.ev_slots) {
			/* The slots: random bytes, or a length too long. */
			struct bypass_ipc_event *e = &slots[(x >> 8) % snap.ev_slots];
			if (x & 0x100)
				e->len = (uint32_t)test_rand(&s);
			else
				((volatile uint64_t *)e)[(x >> 16) % 8] = test_rand(&s);
		} else {
			const struct field *fl = &f[(x >> 8) % BP_ARRAY_SIZE(f)];
			size_t i = fl->n > 1 ? (x >> 32) % fl->n : 0;
			volatile unsigned char *p = (unsigned char *)c + fl->off + i * fl->size;
			uint64_t v = fuzz_value(&s, (unsigned)fl->size, c, base, asize, seen, nseen);
			if (fl->size == 8)
				*(volatile uint64_t *)(void *)p = v;
			else
				*(volatile uint32_t *)(void *)p = (uint32_t)v;
		}
		sh->writes++;
		if (!(sh->writes & 7))
			usleep(500); /* let the honest calls meet each state */
	}
	bypass_ipc_lib_close(l);
	_exit(0);
}

/* The number of mappings of process pid (lines of its maps), or -1. */
static long fuzz_maps(pid_t pid)
{
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return r < 0 ? -1 : n;
}

/*
 * The mappings of each process must stay flat: a connection, a recovery
 * or a fault that left one behind would reach vm.max_map_count in a long
 * run.  Not under ThreadSanitizer: it keeps the shadow of every range the
 * program ever mapped, unmapped or not, and each message-mode connection's
 * ring arena is mapped at a fresh random address, in both processes (4
 * more mappings in each per connection here; docs/ipc.md,
 * "ThreadSanitizer"): there the opener pauses longer, and the fuzzing
 * stops early, saying why, when a process reaches half the limit.
 */
#define FUZZ_MAPS_GROWTH 256

static int fuzz_main(unsigned seconds, const char *tag)
{
	test_timeout(seconds + 240); /* a hang, not a timing */
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "libfuzz");
	uint64_t seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ test_now_ns();
	TEST_LOG("%u s of fuzzing, seed %#llx", seconds, (unsigned long long)seed);
	struct fuzz_shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	pid_t srv = fuzz_server(name, so);
	pid_t kids[5];
	int n = 0;
	for (int k = 0; k < 3; k++)
		if ((kids[n++] = fuzz_fork()) == 0)
			fuzz_client(name, sh, k, seed + 0x100 * (uint64_t)k);
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < 3)
		usleep(1000);
	if ((kids[n++] = fuzz_fork()) == 0)
		fuzz_opener(name, sh);
	if ((kids[n++] = fuzz_fork()) == 0)
		fuzz_writer(name, sh, seed ^ 0xf00d);
	uint64_t start = test_now_ns(), end = start + (uint64_t)seconds * BYPASS_SEC;
	const char *who[6] = { "server", "message-mode client 0", "message-mode client 1",
			       "library-mode client", "opener", "writer" };
	pid_t pids[6] = { srv, kids[0], kids[1], kids[2], kids[3], kids[4] };
	long base[6], top[6], limit = 65530;
	FILE *mf = fopen("/proc/sys/vm/max_map_count", "r");
	if (mf) {
		if (fscanf(mf, "%ld", &limit) != 1)
			limit = 65530;
		fclose(mf);
	}
	for (int i = 0; i < 6; i++)
		base[i] = top[i] = fuzz_maps(pids[i]);
	uint64_t opens0 = sh->calls[3];
	for (unsigned tick = 1; test_now_ns() < end; tick++) {
		int st;
		if (waitpid(srv, &st, WNOHANG) == srv)
			TEST_FAIL("the server died (%s %d) after %llu writes",
				  WIFSIGNALED(st) ? "signal" : "exit",
				  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
				  (unsigned long long)sh->writes);
		for (int i = 0; i < n; i++)
			if (waitpid(kids[i], &st, WNOHANG) == kids[i])
				TEST_FAIL("a client ended early (%s %d)",
					  WIFSIGNALED(st) ? "signal" : "exit",
					  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		usleep(50000);
		if (tick % 20)
			continue;
		bool stop = false;
		for (int i = 0; i < 6; i++) {
			long m = fuzz_maps(pids[i]);
			if (m > top[i])
				top[i] = m;
			if (!BP_TSAN && m > base[i] + FUZZ_MAPS_GROWTH)
				TEST_FAIL("the %s has %ld mappings, %ld at the start, after %llu opens: "
					  "something leaves a mapping behind", who[i], m, base[i],
					  (unsigned long long)(sh->calls[3] - opens0));
			if (BP_TSAN && m > limit / 2 && !stop) {
				TEST_LOG("stopping after %.0f of %u s: the %s has %ld mappings (%ld at "
					 "the start, vm.max_map_count %ld) after %llu opens: "
					 "ThreadSanitizer keeps the shadow of each unmapped ring arena "
					 "(docs/ipc.md)", (double)(test_now_ns() - start) / 1e9,
					 seconds, who[i], m, base[i], limit,
					 (unsigned long long)(sh->calls[3] - opens0));
				stop = true;
			}
		}
		if (stop)
			break;
	}
	TEST_LOG("mappings at the start -> most: server %ld -> %ld, clients %ld -> %ld, "
		 "%ld -> %ld, %ld -> %ld, opener %ld -> %ld, writer %ld -> %ld (%.0f s, %llu opens)",
		 base[0], top[0], base[1], top[1], base[2], top[2], base[3], top[3], base[4],
		 top[4], base[5], top[5], (double)(test_now_ns() - start) / 1e9,
		 (unsigned long long)(sh->calls[3] - opens0));
	sh->stop = 1;
	for (int i = 0; i < n; i++)
		wait_child(kids[i]);
	TEST_LOG("%llu writes; calls: %llu, %llu message mode, %llu library mode, %llu opens; "
		 "clear errors: %llu, %llu, %llu", (unsigned long long)sh->writes,
		 (unsigned long long)sh->calls[0], (unsigned long long)sh->calls[1],
		 (unsigned long long)sh->calls[2], (unsigned long long)sh->calls[3],
		 (unsigned long long)sh->errors[0], (unsigned long long)sh->errors[1],
		 (unsigned long long)sh->errors[2]);
	/* SIGTERM: the service closed, exit 0, within a bound. */
	CHECK_EQ(kill(srv, SIGTERM), 0);
	uint64_t t0 = test_now_ns();
	int st;
	pid_t w;
	while ((w = waitpid(srv, &st, WNOHANG)) == 0 && test_now_ns() - t0 < 30 * (uint64_t)BYPASS_SEC)
		usleep(10000);
	if (w != srv)
		TEST_FAIL("the server did not exit within 30 s of SIGTERM");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("the server at SIGTERM: %s %d", WIFSIGNALED(st) ? "signal" : "exit",
			  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return test_pass(tag);
}

#endif
