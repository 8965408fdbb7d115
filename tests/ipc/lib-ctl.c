/* SPDX-License-Identifier: MIT */
/*
 * lib-ctl: a client's stray writes into the service's control block, one
 * field at a time, each against a server of its own (issue 31 items 2, 3,
 * 4 and 9).  The server must live and keep answering (message-mode calls
 * with a time limit: a hang fails the test), and no process may hang:
 *
 *  - events: a wild offset and slot count for the event queue, and a tail
 *    ahead of the head: the server takes events from its own copy of the
 *    layout (on 95741d6 its loop read the wild offset: SIGSEGV);
 *  - the allocator: a break lowered to page 0 or into the control block,
 *    and a free list pointing outside the heap or at a live block: the
 *    allocation is refused and the service marked broken; page 0 and the
 *    control block are left as they were (on 95741d6 a SET was handed
 *    page 0);
 *  - locks: a post whose data faults (it used to fault holding the event
 *    queue's lock, left held for ever: the server's next post hung), a
 *    dead thread's id in the allocator's, the event queue's and the
 *    recovery's lock words (they hung every taker), and garbage where
 *    glibc kept the mutex's type (it made the server's glibc refuse or
 *    abort);
 *  - the liveness lock: no address of the server's private memory in the
 *    control block (glibc's robust list showed every client the server
 *    thread's TLS address), and garbage where glibc kept that list, then a
 *    clean close of the service (glibc's unlock followed it: SIGSEGV).
 */
#include "libutil.h"

#define CALL_NS (5 * BYPASS_SEC)

static bypass_ipc_lib *open_msg(const char *name)
{
	struct bypass_ipc_lib_opts o = { .flags = BYPASS_IPC_LIB_MESSAGE,
					 .call_timeout_ns = CALL_NS };
	return test_lib_open(name, &o);
}

/* The server process lives and answers a new message-mode client. */
static void server_ok(pid_t srv, const char *name, const char *what)
{
	int st;
	if (waitpid(srv, &st, WNOHANG) == srv)
		TEST_FAIL("%s: the server died (%s %d)", what,
			  WIFSIGNALED(st) ? "signal" : "exit",
			  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	bypass_ipc_lib *m = open_msg(name);
	char out[8];
	int r = bypass_ipc_lib_call(m, TS_ECHO, "alive", 5, out, sizeof(out));
	if (r != 5 || memcmp(out, "alive", 5))
		TEST_FAIL("%s: the server does not answer: %d", what, r);
	bypass_ipc_lib_close(m);
	if (waitpid(srv, &st, WNOHANG) == srv)
		TEST_FAIL("%s: the server died", what);
}

static pid_t start(const char *file, const char *dir, char *name, size_t n, const char *tag,
		   int evout)
{
	char so[256];
	test_lib_so(dir, file, so, sizeof(so));
	test_svc_name(name, n, tag);
	int err;
	pid_t srv = test_lib_server(name, so, NULL, evout, &err);
	CHECK_ERR(err, 0);
	return srv;
}

/* Bring a broken testsvc service back (its recover hook). */
static void heal(bypass_ipc_lib *l)
{
	int r = bypass_ipc_lib_recover(l);
	if (r && r != -EPIPE)
		CHECK_ERR(r, 0);
}

/* ------------------------------------------------------------ events */

static void events(void)
{
	char name[64];
	int p[2];
	CHECK(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
	pid_t srv = start("testsvc.so", "tests/ipc", name, sizeof(name), "ctl-ev", p[1]);
	close(p[1]);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct lib_ctl *c = test_lib_ctl(l);
	*(volatile uint64_t *)&c->ev_off = 1ull << 46;
	*(volatile uint32_t *)&c->ev_slots = 0x40000000u;
	uint64_t h = atomic_load(&c->ev_head);
	atomic_store(&c->ev_tail, h + 3);
	/* A new message-mode client makes the server's loop take events. */
	server_ok(srv, name, "wild event queue");
	bypass_ipc_lib *m = open_msg(name);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_POST, "m", 1, NULL, 0), 0);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, "l", 1, NULL, 0), 0);
	/* A tail behind the head, then a slot count of 0. */
	atomic_store(&c->ev_tail, 0);
	server_ok(srv, name, "tail behind the head");
	*(volatile uint32_t *)&c->ev_slots = 0;
	atomic_store(&c->ev_tail, atomic_load(&c->ev_head) + 5);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_POST, "m", 1, NULL, 0), 0);
	server_ok(srv, name, "no slots");
	bypass_ipc_lib_close(m);
	bypass_ipc_lib_close(l);
	test_lib_stop(srv);
	close(p[0]);
}

/* --------------------------------------------------------- allocator */

static int kv_set(bypass_ipc_lib *l, const char *k, const char *v)
{
	unsigned char req[sizeof(struct kv_set) + 64 + 64];
	struct kv_set h = { .klen = (uint16_t)strlen(k), .vlen = (uint16_t)strlen(v) };
	memcpy(req, &h, sizeof(h));
	memcpy(req + sizeof(h), k, h.klen);
	memcpy(req + sizeof(h) + h.klen, v, h.vlen);
	return bypass_ipc_lib_call(l, KV_SET, req, sizeof(h) + h.klen + h.vlen, NULL, 0);
}

static void kv_ok(pid_t srv, const char *name, const char *what)
{
	int st;
	if (waitpid(srv, &st, WNOHANG) == srv)
		TEST_FAIL("%s: the server died", what);
	bypass_ipc_lib *m = open_msg(name);
	char out[8];
	int r = bypass_ipc_lib_call(m, KV_PING, "ping", 4, out, sizeof(out));
	if (r != 4)
		TEST_FAIL("%s: the server does not answer: %d", what, r);
	bypass_ipc_lib_close(m);
}

static void allocator(void)
{
	char name[64];
	pid_t srv = start("ipc-kv.so", "examples", name, sizeof(name), "ctl-alloc", -1);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct lib_ctl *c = test_lib_ctl(l);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_ERR(kv_set(l, "a", "1"), 0);
	long ps = sysconf(_SC_PAGESIZE);
	unsigned char *base = (unsigned char *)(uintptr_t)st.arena_base;
	unsigned char page0[4096], ctl0[sizeof(struct lib_ctl)];
	memcpy(page0, base, sizeof(page0));
	uint64_t brk = *(volatile uint64_t *)&c->brk;
	uint64_t lows[] = { 0, (uint64_t)((unsigned char *)c - base), c->heap_off - 16,
			    c->heap_end + 4096, brk - 16 /* below what was handed out */ };
	for (size_t i = 0; i < BP_ARRAY_SIZE(lows); i++) {
		memcpy(ctl0, (void *)c, sizeof(ctl0));
		*(volatile uint64_t *)&c->brk = lows[i];
		char k[16];
		snprintf(k, sizeof(k), "k%zu", i);
		int r = kv_set(l, k, "a value long enough for a fresh block of its class");
		if (r != -ENOTRECOVERABLE)
			TEST_FAIL("brk %#llx: SET answered %d, want -ENOTRECOVERABLE",
				  (unsigned long long)lows[i], r);
		CHECK(!memcmp(page0, base, sizeof(page0)));
		/* Nothing written into the control block but the broken mark. */
		CHECK_EQ(*(volatile uint64_t *)&c->brk, lows[i]);
		CHECK(!memcmp(ctl0, (void *)c, offsetof(struct lib_ctl, live)));
		*(volatile uint64_t *)&c->brk = brk;
		CHECK_ERR(bypass_ipc_lib_recover(l), 0);
		kv_ok(srv, name, "a lowered break");
	}
	/* The free list: outside the heap, at the control block, at a live
	 * block (the state's first allocation). */
	CHECK_ERR(kv_set(l, "b", "2"), 0);
	uint64_t live_off = c->heap_off; /* the first block: live */
	uint64_t heads[] = { 16, (uint64_t)((unsigned char *)c - base), live_off,
			     c->heap_end - 16, (uint64_t)ps * 3 + 8 };
	for (size_t i = 0; i < BP_ARRAY_SIZE(heads); i++) {
		for (unsigned k = 0; k < LIB_NCLASS; k++)
			*(volatile uint64_t *)&c->free_head[k] = heads[i];
		int r = kv_set(l, "c", "a value");
		if (r != -ENOTRECOVERABLE)
			TEST_FAIL("free list at %#llx: SET answered %d, want -ENOTRECOVERABLE",
				  (unsigned long long)heads[i], r);
		CHECK(!memcmp(page0, base, sizeof(page0)));
		for (unsigned k = 0; k < LIB_NCLASS; k++)
			*(volatile uint64_t *)&c->free_head[k] = 0;
		CHECK_ERR(bypass_ipc_lib_recover(l), 0);
		kv_ok(srv, name, "a wild free list");
	}
	/* A dead thread's id in the allocator's lock: taken over, not
	 * waited for (the message-mode SET runs in the server's thread). */
	atomic_store((_Atomic uint32_t *)(void *)&c->alloc_lock, 0x3ff00u);
	bypass_ipc_lib *m = open_msg(name);
	CHECK_ERR(kv_set(m, "d", "4"), 0);
	atomic_store((_Atomic uint32_t *)(void *)&c->alloc_lock, 0x3ff01u);
	CHECK_ERR(kv_set(l, "e", "5"), 0);
	bypass_ipc_lib_close(m);
	kv_ok(srv, name, "a dead id in the allocator's lock");
	bypass_ipc_lib_close(l);
	test_lib_stop(srv);
}

/* -------------------------------------------------------------- locks */

/* A testsvc server, a library-mode and a message-mode client of it. */
struct fx {
	char name[64];
	pid_t srv;
	bypass_ipc_lib *l, *m;
	struct lib_ctl *c;
};

static void fx_start(struct fx *f, const char *tag)
{
	f->srv = start("testsvc.so", "tests/ipc", f->name, sizeof(f->name), tag, -1);
	f->l = test_lib_open(f->name, NULL);
	f->m = open_msg(f->name);
	f->c = test_lib_ctl(f->l);
}

static void fx_stop(struct fx *f, const char *what)
{
	server_ok(f->srv, f->name, what);
	bypass_ipc_lib_close(f->m);
	bypass_ipc_lib_close(f->l);
	test_lib_stop(f->srv);
}

/* A post whose data faults: the call's fault, nothing left held. */
static void fault_held(void)
{
	struct fx f;
	fx_start(&f, "ctl-lock");
	CHECK_ERR(bypass_ipc_lib_call(f.l, TS_POST, (const void *)16, 8, NULL, 0), -EFAULT);
	heal(f.l);
	CHECK_ERR(bypass_ipc_lib_call(f.m, TS_POST, "after", 5, NULL, 0), 0);
	CHECK_ERR(bypass_ipc_lib_call(f.l, TS_POST, "after", 5, NULL, 0), 0);
	fx_stop(&f, "a fault holding a lock");
}

/* A dead thread's id in the event queue's and the recovery's locks. */
static void dead_ids(void)
{
	struct fx f;
	fx_start(&f, "ctl-dead");
	atomic_store((_Atomic uint32_t *)(void *)&f.c->ev_lock, 0x3ff02u);
	CHECK_ERR(bypass_ipc_lib_call(f.m, TS_POST, "dead", 4, NULL, 0), 0);
	atomic_store((_Atomic uint32_t *)(void *)&f.c->ev_lock, 0x3ff03u);
	CHECK_ERR(bypass_ipc_lib_call(f.l, TS_POST, "dead", 4, NULL, 0), 0);
	unsigned char one = 1;
	CHECK_ERR(bypass_ipc_lib_call(f.l, TS_FAULT, &one, 1, NULL, 0), -EFAULT);
	atomic_store((_Atomic uint32_t *)(void *)&f.c->recover_lock, 0x3ff04u);
	CHECK_ERR(bypass_ipc_lib_recover(f.l), 0);
	CHECK_EQ(test_lib_add(f.l, 1), 1);
	fx_stop(&f, "dead ids in locks");
}

/* Garbage where glibc's mutex kept its type (16 bytes in). */
static void lock_type(void)
{
	struct fx f;
	fx_start(&f, "ctl-type");
	*(volatile uint32_t *)((char *)(void *)&f.c->ev_lock + 16) = 0x5a5a5a5a;
	CHECK_ERR(bypass_ipc_lib_call(f.m, TS_POST, "type", 4, NULL, 0), 0);
	fx_stop(&f, "a lock's type");
}

/* ---------------------------------------------------------- liveness */

/* No 8-byte value of the control block points into the server's own
 * memory (outside the arena). */
static void no_server_addresses(void)
{
	char name[64];
	pid_t srv = start("testsvc.so", "tests/ipc", name, sizeof(name), "ctl-addr", -1);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct lib_ctl *c = test_lib_ctl(l);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	uint64_t alo = st.arena_base, ahi = alo + st.arena_size + (16ull << 20);
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)srv);
	FILE *f = fopen(path, "re");
	CHECK(f != NULL);
	uint64_t lo[512], hi[512];
	unsigned n = 0;
	while (n < 512 && fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		char perm[8];
		/* Readable mappings (a sanitizer's shadow and gaps are huge or
		 * inaccessible), outside the arena. */
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) != 3 || perm[0] != 'r' ||
		    b - a > (1ul << 36) || (a >= alo && a < ahi))
			continue;
		lo[n] = a;
		hi[n++] = b;
	}
	fclose(f);
	CHECK(n > 0);
	const uint64_t *w = (const uint64_t *)(void *)c;
	for (size_t i = 0; i < sizeof(*c) / 8; i++) {
		uint64_t v = w[i];
		for (unsigned k = 0; k < n; k++)
			if (v >= lo[k] && v < hi[k])
				TEST_FAIL("the control block shows the server's address %#llx "
					  "(offset %zu)", (unsigned long long)v, i * 8);
	}
	bypass_ipc_lib_close(l);
	test_lib_stop(srv);
}

/* A server that closes its service when told (a byte on cmd), then exits 0. */
static pid_t closing_server(const char *name, const char *so, int *cmd)
{
	int p[2], q[2];
	CHECK(pipe2(p, O_CLOEXEC) == 0 && pipe2(q, O_CLOEXEC) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		close(q[0]);
		bypass_ipc_lib_service *svc;
		int r = bypass_ipc_lib_listen(name, so, NULL, &svc);
		if (write(q[1], &r, sizeof(r)) != sizeof(r) || r)
			_exit(2);
		for (;;) {
			struct pollfd pf[2] = { { .fd = bypass_ipc_lib_service_fd(svc), .events = POLLIN },
						{ .fd = p[0], .events = POLLIN } };
			if (poll(pf, 2, -1) < 0)
				continue;
			if (pf[1].revents) {
				bypass_ipc_lib_service_close(svc);
				_exit(0);
			}
			bypass_ipc_conn *cn;
			while (bypass_ipc_lib_accept(svc, &cn, 0) >= 0)
				if (cn)
					bypass_ipc_close(cn);
		}
	}
	close(p[0]);
	close(q[1]);
	int r = -EIO;
	CHECK_EQ(read(q[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	close(q[0]);
	CHECK_ERR(r, 0);
	*cmd = p[1];
	return pid;
}

static void live_close(void)
{
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "ctl-live");
	int cmd;
	pid_t srv = closing_server(name, so, &cmd);
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct lib_ctl *c = test_lib_ctl(l);
	CHECK_EQ(test_lib_add(l, 1), 1);
	/* Where glibc's robust mutex kept its list pointers (24..40). */
	memset((char *)(void *)&c->live + 24, 0x41, 16);
	CHECK_EQ(write(cmd, "x", 1), 1);
	int st;
	CHECK_EQ(waitpid(srv, &st, 0), srv);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("closing the service: the server %s %d",
			  WIFSIGNALED(st) ? "died of signal" : "exited",
			  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	CHECK_ERR(test_lib_add(l, 1), -EPIPE);
	bypass_ipc_lib_close(l);
	close(cmd);
}

int main(int argc, char **argv)
{
	test_timeout(120); /* a hang, not a timing */
	static const struct test_part parts[] = {
		{ "events", events },         { "allocator", allocator },
		{ "fault-held", fault_held }, { "dead-ids", dead_ids },
		{ "lock-type", lock_type },   { "addresses", no_server_addresses },
		{ "close", live_close },
	};
	test_parts(argc, argv, parts, BP_ARRAY_SIZE(parts));
	return test_pass("ipc/lib-ctl");
}
