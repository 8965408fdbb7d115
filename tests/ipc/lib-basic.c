/* SPDX-License-Identifier: MIT */
/*
 * lib-basic: library mode end to end.  A server process loads the test
 * service and the key-value example; clients open them in library mode
 * (handlers run in the client's own process), in message mode (the
 * server's thread runs them), and with protect = auto / none / required
 * (auto says which it got; required is refused where the CPU has no
 * protection keys, or falls back to message mode when asked).  Events
 * posted by handlers reach the server's loop.  Every bad argument of
 * listen, open, call and the server's functions is a clear error.
 */
#include "libutil.h"

static void kv_set(bypass_ipc_lib *l, const char *k, const char *v)
{
	unsigned char req[256];
	struct kv_set h = { .klen = (uint16_t)strlen(k), .vlen = (uint16_t)strlen(v) };
	memcpy(req, &h, sizeof(h));
	memcpy(req + sizeof(h), k, h.klen);
	memcpy(req + sizeof(h) + h.klen, v, h.vlen);
	CHECK_ERR(bypass_ipc_lib_call(l, KV_SET, req, sizeof(h) + h.klen + h.vlen, NULL, 0), 0);
}

static void kv_roundtrip(bypass_ipc_lib *l, const char *tag)
{
	char key[32], val[64];
	snprintf(key, sizeof(key), "key-%s", tag);
	snprintf(val, sizeof(val), "value of %s", tag);
	kv_set(l, key, val);
	char out[128];
	CHECK_ERR(bypass_ipc_lib_call(l, KV_GET, key, strlen(key), out, sizeof(out)),
		  (int)strlen(val));
	CHECK(!memcmp(out, val, strlen(val)));
	/* too small a buffer: the handler's own error */
	CHECK_ERR(bypass_ipc_lib_call(l, KV_GET, key, strlen(key), out, 3), -ENOBUFS);
	CHECK_ERR(bypass_ipc_lib_call(l, KV_DEL, key, strlen(key), NULL, 0), 0);
	CHECK_ERR(bypass_ipc_lib_call(l, KV_GET, key, strlen(key), out, sizeof(out)), -ENOENT);
	CHECK_ERR(bypass_ipc_lib_call(l, KV_DEL, key, strlen(key), NULL, 0), -ENOENT);
}

static struct ts_where where(bypass_ipc_lib *l)
{
	struct ts_where w;
	int what = 0;
	CHECK_ERR(bypass_ipc_lib_call(l, TS_WHERE, &what, sizeof(what), &w, sizeof(w)),
		  (int)sizeof(w));
	return w;
}

static void read_event(int fd, uint32_t type, const void *data, uint32_t len, pid_t pid)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECK_EQ(poll(&p, 1, 10000), 1);
	struct bypass_ipc_event e;
	CHECK_EQ(read(fd, &e, sizeof(e)), sizeof(e));
	CHECK_EQ(e.type, type);
	CHECK_EQ(e.len, len);
	CHECK_EQ(e.pid, pid);
	CHECK(!len || !memcmp(e.data, data, len));
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1;
}

/*
 * Events: queued in the arena, the loop's descriptor woken only once the
 * server armed it; a full queue drops (and counts) the post; a service
 * without a queue refuses posts.  The server is this process, the poster
 * a child.
 */
static void events_wake_only_when_asked(const char *so)
{
	char name[64];
	test_svc_name(name, sizeof(name), "libevents");
	struct bypass_ipc_lib_opts o = { .event_slots = 3 };
	bypass_ipc_lib_service *svc;
	CHECK_ERR(bypass_ipc_lib_listen(name, so, &o, &svc), 0);
	int fd = bypass_ipc_lib_service_fd(svc);
	int go[2], done[2];
	CHECK(pipe(go) == 0 && pipe(done) == 0);
	pid_t ch = fork();
	if (ch == 0) {
		bypass_ipc_lib *l = test_lib_open(name, NULL);
		char b = 0;
		/* 1: three posts fill the queue, the fourth is dropped */
		for (int i = 0; i < 3; i++)
			CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, "q", 2, NULL, 0), 0);
		CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, "x", 2, NULL, 0), -EAGAIN);
		CHECK_EQ(write(done[1], &b, 1), 1);
		/* 2: after the server armed */
		CHECK_EQ(read(go[0], &b, 1), 1);
		CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, "armed", 6, NULL, 0), 0);
		bypass_ipc_lib_close(l);
		_exit(0);
	}
	CHECK_ERR(bypass_ipc_lib_accept(svc, &(bypass_ipc_conn *){ NULL }, 10 * BYPASS_SEC), 1);
	char b;
	CHECK_EQ(read(done[0], &b, 1), 1);
	CHECK(!readable(fd, 0)); /* not armed: posting made no wake-up */
	struct bypass_ipc_event e;
	for (int i = 0; i < 3; i++) {
		CHECK_ERR(bypass_ipc_lib_event(svc, &e), 0);
		CHECK_EQ(e.type, TS_EVENT);
		CHECK(!strcmp((char *)e.data, "q"));
		CHECK_EQ(e.pid, ch);
	}
	CHECK_ERR(bypass_ipc_lib_event(svc, &e), -EAGAIN);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_service_stats(svc, &st), 0);
	CHECK_EQ(st.events, 3);
	CHECK_EQ(st.events_dropped, 1);
	CHECK_ERR(bypass_ipc_lib_arm(svc), 0);
	CHECK_EQ(write(go[1], &b, 1), 1);
	CHECK(readable(fd, 10000)); /* armed: the post woke the loop */
	CHECK_ERR(bypass_ipc_lib_event(svc, &e), 0);
	CHECK(!strcmp((char *)e.data, "armed"));
	CHECK_ERR(bypass_ipc_lib_arm(svc), 0); /* drains the wake-up */
	CHECK(!readable(fd, 0));
	wait_child(ch);
	CHECK_ERR(bypass_ipc_lib_service_close(svc), 0);
	close(go[0]), close(go[1]), close(done[0]), close(done[1]);

	/* no queue at all */
	test_svc_name(name, sizeof(name), "libnoevents");
	o.event_slots = UINT32_MAX;
	CHECK_ERR(bypass_ipc_lib_listen(name, so, &o, &svc), 0);
	ch = fork();
	if (ch == 0) {
		bypass_ipc_lib *l = test_lib_open(name, NULL);
		CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, "q", 2, NULL, 0), -ENOTSUP);
		bypass_ipc_lib_close(l);
		_exit(0);
	}
	CHECK_ERR(bypass_ipc_lib_accept(svc, &(bypass_ipc_conn *){ NULL }, 10 * BYPASS_SEC), 1);
	wait_child(ch);
	CHECK_ERR(bypass_ipc_lib_service_close(svc), 0);
}

int main(void)
{
	test_timeout(60);
	/* The ABI: the stats struct keeps a reserved tail (zero today); a
	 * service object compiled against these layouts keeps working. */
	CHECK_EQ(sizeof(struct bypass_ipc_lib_stats), 152);
	CHECK_EQ(sizeof(((struct bypass_ipc_lib_stats *)0)->reserved), 64);
	CHECK_EQ(sizeof(struct bypass_ipc_env), 88);
	CHECK_EQ(sizeof(struct bypass_ipc_lib_desc), 80);
	CHECK_EQ(sizeof(struct bypass_ipc_event), 64);
	CHECK_EQ(sizeof(bypass_ipc_lock), 64);
	char so[256], kvso[256], name[64], kvname[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_lib_so("examples", "ipc-kv.so", kvso, sizeof(kvso));
	test_svc_name(name, sizeof(name), "libbasic");
	test_svc_name(kvname, sizeof(kvname), "libkv");
	int evp[2];
	CHECK(pipe2(evp, O_CLOEXEC) == 0);
	int err;
	pid_t srv = test_lib_server(name, so, NULL, evp[1], &err);
	CHECK_ERR(err, 0);
	pid_t kvsrv = test_lib_server(kvname, kvso, NULL, evp[1], &err);
	CHECK_ERR(err, 0);
	bool pk = bp_ipc_lib_key() >= 0;
	TEST_LOG("protection keys: %s", bp_ipc_lib_key_reason());

	/* library mode, protect = auto */
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_EQ(st.mode, BYPASS_IPC_LIB_MODE_LIBRARY);
	CHECK_EQ(st.guarded, pk);
	CHECK_EQ(st.broken, 0);
	CHECK(st.arena_base >= (4ull << 30));
	for (size_t i = 0; i < BP_ARRAY_SIZE(st.reserved); i++)
		CHECK_EQ(st.reserved[i], 0);
	char out[64];
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, "hello", 6, out, sizeof(out)), 6);
	CHECK(!strcmp(out, "hello"));
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, NULL, 0, NULL, 0), 0);
	struct ts_where w = where(l);
	CHECK_EQ(w.pid, getpid()); /* the caller's own process runs it */
	CHECK_EQ(w.flags & BYPASS_IPC_ENV_SERVER, 0);
	CHECK_EQ(test_lib_add(l, 5), 5);
	CHECK_EQ(test_lib_add(l, 7), 12);
	/* a nested call (a handler calling a service) is refused */
	struct ts_nest nest = { .call = (void *)bypass_ipc_lib_call, .lib = l };
	CHECK_ERR(bypass_ipc_lib_call(l, TS_NEST, &nest, sizeof(nest), NULL, 0), -EDEADLK);
	/* events: the server's loop gets them, with our pid */
	CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, "ev-1", 5, NULL, 0), 0);
	read_event(evp[0], TS_EVENT, "ev-1", 5, getpid());
	char big[BYPASS_IPC_EVENT_MAX + 1] = { 0 };
	CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, big, sizeof(big), NULL, 0), -EMSGSIZE);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_POST, big, BYPASS_IPC_EVENT_MAX, NULL, 0), 0);
	read_event(evp[0], TS_EVENT, big, BYPASS_IPC_EVENT_MAX, getpid());
	/* bad arguments */
	CHECK_ERR(bypass_ipc_lib_call(NULL, TS_ECHO, "x", 1, out, sizeof(out)), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_NOPS, "x", 1, out, sizeof(out)), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_call(l, 1u << 31, "x", 1, out, sizeof(out)), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, NULL, 1, out, sizeof(out)), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, "x", 1, NULL, 8), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_stats(NULL, &st), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_stats(l, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_recover(NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_recover(l), 0); /* not broken: nothing to do */
	CHECK_ERR(bypass_ipc_lib_close(NULL), -EINVAL);
	CHECK_EQ(test_lib_add(l, 1), 13); /* nothing was lost */

	/* a second handle in the same process shares the state */
	bypass_ipc_lib *l2 = test_lib_open(name, NULL);
	CHECK_EQ(test_lib_add(l2, 1), 14);
	CHECK_ERR(bypass_ipc_lib_close(l2), 0);

	/* protect = none: unguarded, whatever the CPU */
	struct bypass_ipc_lib_opts o = { .protect = BYPASS_IPC_PROTECT_NONE };
	/* (a process has one key for all its library-mode arenas: once one
	 * arena is guarded here, protect = none is tested in a child) */
	pid_t ch = fork();
	if (ch == 0) {
		bypass_ipc_lib_close(l);
		bypass_ipc_lib *n = test_lib_open(name, &o);
		CHECK_ERR(bypass_ipc_lib_stats(n, &st), 0);
		CHECK_EQ(st.mode, BYPASS_IPC_LIB_MODE_LIBRARY);
		CHECK_EQ(st.guarded, 0);
		CHECK_EQ(test_lib_add(n, 1), 15);
		CHECK_ERR(bypass_ipc_lib_close(n), 0);
		_exit(0);
	}
	wait_child(ch);

	/* protect = required: the gate or nothing */
	o.protect = BYPASS_IPC_PROTECT_REQUIRED;
	bypass_ipc_lib *r = NULL;
	if (pk) {
		CHECK_ERR(bypass_ipc_lib_open(name, &o, &r), 0);
		CHECK_ERR(bypass_ipc_lib_stats(r, &st), 0);
		CHECK_EQ(st.guarded, 1);
		CHECK_ERR(bypass_ipc_lib_close(r), 0);
	} else {
		CHECK_ERR(bypass_ipc_lib_open(name, &o, &r), -EOPNOTSUPP);
		CHECK(r == NULL);
		o.flags = BYPASS_IPC_LIB_FALLBACK;
		CHECK_ERR(bypass_ipc_lib_open(name, &o, &r), 0);
		CHECK_EQ(test_lib_mode(r), BYPASS_IPC_LIB_MODE_MESSAGE);
		CHECK_EQ(test_lib_add(r, 1), 16);
		CHECK_ERR(bypass_ipc_lib_close(r), 0);
		CHECK_EQ(test_lib_add(l, 1), 17);
		CHECK_EQ(test_lib_add(l, (uint64_t)-2), 15); /* back in step */
	}

	/* message mode: the server's thread runs the same handlers */
	o = (struct bypass_ipc_lib_opts){ .flags = BYPASS_IPC_LIB_MESSAGE };
	bypass_ipc_lib *m = test_lib_open(name, &o);
	CHECK_EQ(test_lib_mode(m), BYPASS_IPC_LIB_MODE_MESSAGE);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, "hello", 6, out, sizeof(out)), 6);
	CHECK(!strcmp(out, "hello"));
	w = where(m);
	CHECK_EQ(w.pid, srv);
	CHECK_EQ(w.flags & BYPASS_IPC_ENV_SERVER, BYPASS_IPC_ENV_SERVER);
	CHECK_EQ(test_lib_add(m, 1), 16);
	CHECK_EQ(test_lib_add(l, 1), 17); /* one state for both modes */
	CHECK_ERR(bypass_ipc_lib_call(m, TS_POST, "ev-m", 5, NULL, 0), 0);
	read_event(evp[0], TS_EVENT, "ev-m", 5, srv);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_NOPS, "x", 1, out, sizeof(out)), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, NULL, 1, out, sizeof(out)), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_call(m, TS_ECHO, "hello", 6, out, 2), -ENOBUFS);
	CHECK_ERR(bypass_ipc_lib_recover(m), -EOPNOTSUPP);
	CHECK_ERR(bypass_ipc_lib_close(m), 0);

	/* the key-value example, both modes */
	bypass_ipc_lib *kv = test_lib_open(kvname, NULL);
	kv_roundtrip(kv, "lib");
	kv_set(kv, "a", "1");
	bypass_ipc_lib *kvm = test_lib_open(kvname, &o);
	kv_roundtrip(kvm, "msg");
	char val[8];
	CHECK_ERR(bypass_ipc_lib_call(kvm, KV_GET, "a", 1, val, sizeof(val)), 1);
	CHECK_EQ(val[0], '1');
	uint64_t count;
	CHECK_ERR(bypass_ipc_lib_call(kv, KV_COUNT, NULL, 0, &count, sizeof(count)), 8);
	CHECK_EQ(count, 1);
	CHECK_ERR(bypass_ipc_lib_call(kv, KV_SAVE, NULL, 0, NULL, 0), 0);
	read_event(evp[0], KV_EV_SAVE, NULL, 0, getpid());
	CHECK_ERR(bypass_ipc_lib_call(kv, KV_SET, "xx", 2, NULL, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_close(kvm), 0);
	CHECK_ERR(bypass_ipc_lib_close(kv), 0);

	/* bad options and names */
	bypass_ipc_lib *x = NULL;
	CHECK_ERR(bypass_ipc_lib_open(name, NULL, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_open(NULL, NULL, &x), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_open("", NULL, &x), -EINVAL);
	o = (struct bypass_ipc_lib_opts){ .protect = 3 };
	CHECK_ERR(bypass_ipc_lib_open(name, &o, &x), -EINVAL);
	o = (struct bypass_ipc_lib_opts){ .flags = 0x80000000u };
	CHECK_ERR(bypass_ipc_lib_open(name, &o, &x), -EINVAL);
	o = (struct bypass_ipc_lib_opts){ .reserved[3] = 1 };
	CHECK_ERR(bypass_ipc_lib_open(name, &o, &x), -EINVAL);
	o = (struct bypass_ipc_lib_opts){ .nallow = 1 };
	CHECK_ERR(bypass_ipc_lib_open(name, &o, &x), -EINVAL);
	o = (struct bypass_ipc_lib_opts){ .call_timeout_ns = -2 };
	CHECK_ERR(bypass_ipc_lib_open(name, &o, &x), -EINVAL);
	CHECK(x == NULL);
	char none[64];
	test_svc_name(none, sizeof(none), "libnone");
	CHECK_ERR(bypass_ipc_lib_open(none, NULL, &x), -ECONNREFUSED);
	o = (struct bypass_ipc_lib_opts){ .flags = BYPASS_IPC_LIB_FALLBACK };
	CHECK_ERR(bypass_ipc_lib_open(none, &o, &x), -ECONNREFUSED); /* not a refusal */
	char longname[120];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK_ERR(bypass_ipc_lib_open(longname, NULL, &x), -EINVAL);

	/* the server's functions */
	bypass_ipc_lib_service *svc = NULL;
	char name2[64];
	test_svc_name(name2, sizeof(name2), "libbasic2");
	CHECK_ERR(bypass_ipc_lib_listen(name2, so, NULL, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_listen(NULL, so, NULL, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_listen(name2, NULL, NULL, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_listen(name2, "/nonexistent/x.so", NULL, &svc), -ENOENT);
	CHECK_ERR(bypass_ipc_lib_listen(name, so, NULL, &svc), -EADDRINUSE);
	o = (struct bypass_ipc_lib_opts){ .reserved[0] = 1 };
	CHECK_ERR(bypass_ipc_lib_listen(name2, so, &o, &svc), -EINVAL);
	CHECK(svc == NULL);
	CHECK_ERR(bypass_ipc_lib_service_fd(NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_accept(NULL, NULL, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_serve(NULL, NULL, 0), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_arm(NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_event(NULL, NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_service_recover(NULL), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_service_stats(NULL, &st), -EINVAL);
	CHECK_ERR(bypass_ipc_lib_service_close(NULL), -EINVAL);
	/* a service in this process: no client waits, no event */
	CHECK_ERR(bypass_ipc_lib_listen(name2, so, NULL, &svc), 0);
	bypass_ipc_conn *c = (void *)1;
	CHECK_ERR(bypass_ipc_lib_accept(svc, &c, 0), -EAGAIN);
	CHECK(c == NULL);
	CHECK_ERR(bypass_ipc_lib_accept(svc, &c, 1000000), -ETIMEDOUT);
	struct bypass_ipc_event e;
	CHECK_ERR(bypass_ipc_lib_event(svc, &e), -EAGAIN);
	CHECK_ERR(bypass_ipc_lib_arm(svc), 0);
	CHECK_ERR(bypass_ipc_lib_service_stats(svc, &st), 0);
	CHECK_EQ(st.mode, BYPASS_IPC_LIB_MODE_LIBRARY);
	CHECK_EQ(st.guarded, pk);
	CHECK(st.arena_used > 0 && st.arena_used <= st.arena_size);
	CHECK_ERR(bypass_ipc_lib_service_recover(svc), 0);
	CHECK_ERR(bypass_ipc_lib_service_close(svc), 0);

	events_wake_only_when_asked(so);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);
	test_lib_stop(kvsrv);
	return test_pass("lib-basic");
}
