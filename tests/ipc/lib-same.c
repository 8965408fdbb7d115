/* SPDX-License-Identifier: MIT */
/*
 * lib-same: the same handlers give the same results in library mode and in
 * message mode.  Two key-value services (the example); 2 client processes
 * x 3 threads each run the same random sequence of GET/SET/DEL/COUNT on
 * both, one in library mode and one in message mode, each thread on its
 * own keys so that its sequence has one right answer; every return value
 * and every value read must be equal in both modes and equal to the
 * thread's own model of its keys.  At the end both stores hold the same
 * number of keys.
 *
 * TEST_LABELS: threads
 */
#include <pthread.h>

#include "libutil.h"

#define NKEYS 24
#define THREADS 3

static char lname[64], mname[64];
static unsigned nops;

struct worker {
	int id;
	uint64_t seed;
};

static int kv(bypass_ipc_lib *h, int op, const char *k, const void *v, size_t vlen, void *out,
	      size_t cap)
{
	unsigned char req[sizeof(struct kv_set) + KV_KEY_MAX + KV_VAL_MAX];
	size_t klen = strlen(k);
	if (op == KV_SET) {
		struct kv_set s = { .klen = (uint16_t)klen, .vlen = (uint16_t)vlen };
		memcpy(req, &s, sizeof(s));
		memcpy(req + sizeof(s), k, klen);
		memcpy(req + sizeof(s) + klen, v, vlen);
		return bypass_ipc_lib_call(h, KV_SET, req, sizeof(s) + klen + vlen, out, cap);
	}
	if (op == KV_COUNT)
		return bypass_ipc_lib_call(h, KV_COUNT, NULL, 0, out, cap);
	return bypass_ipc_lib_call(h, (unsigned)op, k, klen, out, cap);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct bypass_ipc_lib_opts mo = { .flags = BYPASS_IPC_LIB_MESSAGE };
	bypass_ipc_lib *lib = test_lib_open(lname, NULL), *msg = test_lib_open(mname, &mo);
	CHECK_EQ(test_lib_mode(lib), BYPASS_IPC_LIB_MODE_LIBRARY);
	unsigned char model[NKEYS][KV_VAL_MAX];
	int mlen[NKEYS]; /* -1: absent */
	for (int i = 0; i < NKEYS; i++)
		mlen[i] = -1;
	for (unsigned n = 0; n < nops; n++) {
		uint64_t r = test_rand(&w->seed);
		int k = (int)(r % NKEYS), op = (int)((r >> 8) % 10);
		char key[32];
		snprintf(key, sizeof(key), "w%d-key-%d", w->id, k);
		unsigned char val[KV_VAL_MAX], o1[KV_VAL_MAX], o2[KV_VAL_MAX];
		size_t vlen = (r >> 16) % 100;
		test_fill(val, vlen, r);
		int a, b;
		if (op < 4) { /* GET, 40 % */
			a = kv(lib, KV_GET, key, NULL, 0, o1, sizeof(o1));
			b = kv(msg, KV_GET, key, NULL, 0, o2, sizeof(o2));
			CHECK_EQ(a, b);
			CHECK_EQ(a, mlen[k] < 0 ? -ENOENT : mlen[k]);
			if (a > 0) {
				CHECK(!memcmp(o1, o2, (size_t)a));
				CHECK(!memcmp(o1, model[k], (size_t)a));
			}
		} else if (op < 8) { /* SET */
			a = kv(lib, KV_SET, key, val, vlen, NULL, 0);
			b = kv(msg, KV_SET, key, val, vlen, NULL, 0);
			CHECK_EQ(a, 0);
			CHECK_EQ(b, 0);
			memcpy(model[k], val, vlen);
			mlen[k] = (int)vlen;
		} else if (op < 9) { /* DEL */
			a = kv(lib, KV_DEL, key, NULL, 0, NULL, 0);
			b = kv(msg, KV_DEL, key, NULL, 0, NULL, 0);
			CHECK_EQ(a, b);
			CHECK_EQ(a, mlen[k] < 0 ? -ENOENT : 0);
			mlen[k] = -1;
		} else { /* a bad request: the same error */
			a = kv(lib, KV_GET, "", NULL, 0, o1, sizeof(o1));
			b = kv(msg, KV_GET, "", NULL, 0, o2, sizeof(o2));
			CHECK_EQ(a, -EINVAL);
			CHECK_EQ(b, -EINVAL);
		}
	}
	bypass_ipc_lib_close(lib);
	bypass_ipc_lib_close(msg);
	return NULL;
}

static void client(int proc)
{
	pthread_t t[THREADS];
	struct worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i].id = proc * THREADS + i;
		w[i].seed = 0xabcdef12345ull * (uint64_t)(w[i].id + 1);
		CHECK_EQ(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
}

int main(void)
{
	test_timeout(120);
	nops = TEST_TSAN ? 300 : 2000;
	char so[256];
	test_lib_so("examples", "ipc-kv.so", so, sizeof(so));
	test_svc_name(lname, sizeof(lname), "libsame-l");
	test_svc_name(mname, sizeof(mname), "libsame-m");
	int err;
	pid_t s1 = test_lib_server(lname, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	pid_t s2 = test_lib_server(mname, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	pid_t ch = fork();
	if (ch == 0) {
		client(1);
		_exit(0);
	}
	client(0);
	wait_child(ch);
	bypass_ipc_lib *a = test_lib_open(lname, NULL), *b = test_lib_open(mname, NULL);
	uint64_t ca, cb;
	CHECK_ERR(bypass_ipc_lib_call(a, KV_COUNT, NULL, 0, &ca, sizeof(ca)), 8);
	CHECK_ERR(bypass_ipc_lib_call(b, KV_COUNT, NULL, 0, &cb, sizeof(cb)), 8);
	CHECK_EQ(ca, cb);
	TEST_LOG("%u operations x %d threads in both modes; %llu keys at the end", nops,
		 2 * THREADS, (unsigned long long)ca);
	bypass_ipc_lib_close(a);
	bypass_ipc_lib_close(b);
	test_lib_stop(s1);
	test_lib_stop(s2);
	return test_pass("lib-same");
}
