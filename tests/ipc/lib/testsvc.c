/* SPDX-License-Identifier: MIT */
/*
 * The ipc tests' service object (built as build/tests/ipc/testsvc.so): handlers
 * that echo, count, fault, hold a lock until killed, leak a lock, post
 * events, report where they run, and nest a call.  Built four more times
 * with a WRPKRU or an XRSTOR sequence in its code (TESTSVC_WRPKRU /
 * TESTSVC_XRSTOR), with another ABI (TESTSVC_BADABI), or with a TS_ECHO
 * that answers -ENOSYS (TESTSVC_ALT: a rewrite of the object must not
 * reach its clients).
 */
#include <bypass/ipc.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "testsvc.h"

struct state {
	uint64_t magic;
	bypass_ipc_lock lock;
	uint64_t a, b;       /* equal whenever the lock is free */
	uint64_t counter;
	uint32_t recover_fails;
	uint64_t recovered;
};
#define MAGIC 0x7465737473766321ull
_Static_assert(__builtin_offsetof(struct state, lock) == TS_STATE_LOCK_OFF, "testsvc.h");

static int t_init(const struct bypass_ipc_env *env, void **out)
{
	struct state *s;
	int r = env->alloc(env, sizeof(*s), (void **)&s);
	if (r)
		return r;
	memset(s, 0, sizeof(*s));
	if ((r = env->lock_init(env, &s->lock)))
		return r;
	s->magic = MAGIC;
	*out = s;
	return 0;
}

static int t_echo(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	(void)env;
	(void)st;
#ifdef TESTSVC_ALT
	(void)req;
	(void)len;
	(void)resp;
	(void)cap;
	return -ENOSYS;
#endif
	if (len > cap)
		return -ENOBUFS;
	if (len)
		memcpy(resp, req, len);
	return (int)len;
}

/* counter += *req (a uint64_t), under the lock; answers the new value. */
static int t_add(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		 void *resp, size_t cap)
{
	struct state *s = st;
	uint64_t v;
	if (len != sizeof(v) || cap < sizeof(v))
		return -EINVAL;
	memcpy(&v, req, sizeof(v));
	int r = env->lock(env, &s->lock);
	if (r) {
		if (r == -EOWNERDEAD)
			env->unlock(env, &s->lock);
		return r;
	}
	s->a++;
	s->counter += v;
	v = s->counter;
	s->b++;
	env->unlock(env, &s->lock);
	memcpy(resp, &v, sizeof(v));
	return sizeof(v);
}

/* Read through a volatile pointer: the compiler cannot see it is bad. */
static int *volatile nowhere = (int *)16;

/* A fault: near NULL, or (req[0] == 1) while holding the lock, or (2) in
 * the middle of changing a and b. */
static int t_fault(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		   void *resp, size_t cap)
{
	(void)resp;
	(void)cap;
	struct state *s = st;
	int how = len ? ((const unsigned char *)req)[0] : 0;
	if (how >= 1) {
		if (env->lock(env, &s->lock))
			return -EIO;
		if (how == 2)
			s->a++;
	}
	*nowhere = 1;
	return 0;
}

/*
 * Take the lock, then change a and b forever (a runs ahead of b) until the
 * process is killed; *(uint32_t **)req is a flag in memory the test shares
 * with this process, set once the lock is held.
 */
static int t_hold(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	(void)resp;
	(void)cap;
	struct state *s = st;
	volatile uint32_t *flag;
	if (len != sizeof(flag))
		return -EINVAL;
	memcpy(&flag, req, sizeof(flag));
	int r = env->lock(env, &s->lock);
	if (r) {
		if (r == -EOWNERDEAD)
			env->unlock(env, &s->lock);
		return r;
	}
	*flag = 1;
	for (;;) {
		__atomic_store_n(&s->a, s->a + 1, __ATOMIC_RELAXED);
		for (volatile int i = 0; i < 50; i++)
			;
		__atomic_store_n(&s->b, s->b + 1, __ATOMIC_RELAXED);
	}
	return 0;
}

/* Answers 1 if a == b (taken under the lock), with a. */
static int t_check(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		   void *resp, size_t cap)
{
	(void)req;
	(void)len;
	struct state *s = st;
	uint64_t out[2];
	if (cap < sizeof(out))
		return -EINVAL;
	int r = env->lock(env, &s->lock);
	if (r) {
		if (r == -EOWNERDEAD)
			env->unlock(env, &s->lock);
		return r;
	}
	out[0] = s->a == s->b;
	out[1] = s->a;
	env->unlock(env, &s->lock);
	memcpy(resp, out, sizeof(out));
	return sizeof(out);
}

static int t_leak(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	(void)req;
	(void)len;
	(void)resp;
	(void)cap;
	struct state *s = st;
	return env->lock(env, &s->lock); /* and never unlocks */
}

static int t_post(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	(void)st;
	(void)resp;
	(void)cap;
	return env->post(env, TS_EVENT, req, len);
}

/* Where the handler runs: struct ts_where. */
static int t_where(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		   void *resp, size_t cap)
{
	(void)req;
	(void)len;
	struct ts_where w = { .pid = getpid(), .flags = env->flags, .state = st };
	if (cap < sizeof(w))
		return -ENOBUFS;
	int what = 0;
	if (len == sizeof(what))
		memcpy(&what, req, sizeof(what));
	if (what == 1) { /* PKRU inside the call (only where the CPU has it) */
		uint32_t eax, edx;
		__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
		w.pkru = eax;
	}
	memcpy(resp, &w, sizeof(w));
	return sizeof(w);
}

/*
 * Wait inside the call until the test's signal handler has run: req holds
 * struct ts_sig; the handler sets ->done.  Touches the state before and
 * after (it must still be open once the signal handler returned).
 */
static int t_sigwait(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		     void *resp, size_t cap)
{
	(void)resp;
	(void)cap;
	struct state *s = st;
	struct ts_sig *sg;
	if (len != sizeof(sg))
		return -EINVAL;
	memcpy(&sg, req, sizeof(sg));
	if (sg->lock) {
		int r = env->lock(env, &s->lock);
		if (r) {
			if (r == -EOWNERDEAD)
				env->unlock(env, &s->lock);
			return r;
		}
	}
	s->counter++;
	__atomic_store_n(&sg->inside, 1, __ATOMIC_SEQ_CST);
	kill(getpid(), sg->sig); /* a signal in the middle of a call */
	while (!__atomic_load_n(&sg->done, __ATOMIC_SEQ_CST))
		;
	s->counter++;
	if (sg->lock)
		env->unlock(env, &s->lock);
	return 0;
}

/* Signal a process (the caller, in message mode: it waits for the answer
 * meanwhile), then sleep. */
static int t_signal(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		    void *resp, size_t cap)
{
	(void)env;
	(void)st;
	(void)resp;
	(void)cap;
	struct ts_kill k;
	if (len != sizeof(k))
		return -EINVAL;
	memcpy(&k, req, sizeof(k));
	if (kill(k.pid, k.sig))
		return -errno;
	usleep(k.ms * 1000);
	return 0;
}

/* A call from inside a call: req holds struct ts_nest. */
static int t_nest(const struct bypass_ipc_env *env, void *st, const void *req, size_t len,
		  void *resp, size_t cap)
{
	(void)env;
	(void)st;
	(void)resp;
	(void)cap;
	struct ts_nest n;
	if (len != sizeof(n))
		return -EINVAL;
	memcpy(&n, req, sizeof(n));
	char buf[8];
	return n.call(n.lib, TS_ECHO, "x", 1, buf, sizeof(buf));
}

/* The recover hook fails while recover_fails is set (TS_RECOVER_FAILS). */
static int t_recover_fails(const struct bypass_ipc_env *env, void *st, const void *req,
			   size_t len, void *resp, size_t cap)
{
	(void)env;
	(void)resp;
	(void)cap;
	struct state *s = st;
	s->recover_fails = len ? ((const unsigned char *)req)[0] : 0;
	return 0;
}

static int t_recover(const struct bypass_ipc_env *env, void *st)
{
	struct state *s = st;
	if (s->recover_fails)
		return -EIO;
	int r = env->lock(env, &s->lock);
	if (r && r != -EOWNERDEAD)
		return r;
	s->b = s->a;
	s->recovered++;
	env->unlock(env, &s->lock);
	return 0;
}

#if defined(TESTSVC_WRPKRU)
/* Never called: only its bytes matter. */
__attribute__((used)) void testsvc_open_everything(void)
{
	__asm__ __volatile__(".byte 0x0f,0x01,0xef" : : "a"(0), "c"(0), "d"(0));
}
#elif defined(TESTSVC_XRSTOR)
__attribute__((used)) void testsvc_restore(void *area)
{
	__asm__ __volatile__("xrstor (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
}
#endif

static const bypass_ipc_handler ops[TS_NOPS] = {
	[TS_ECHO] = t_echo,   [TS_ADD] = t_add,     [TS_FAULT] = t_fault,
	[TS_HOLD] = t_hold,   [TS_CHECK] = t_check, [TS_LEAK] = t_leak,
	[TS_POST] = t_post,   [TS_WHERE] = t_where, [TS_SIGWAIT] = t_sigwait,
	[TS_NEST] = t_nest,   [TS_RECOVER_FAILS] = t_recover_fails,
	[TS_SIGNAL] = t_signal,
};

__attribute__((visibility("default"))) const struct bypass_ipc_lib_desc bypass_ipc_lib_entry = {
#ifdef TESTSVC_BADABI
	.abi = BYPASS_IPC_LIB_ABI + 1,
#else
	.abi = BYPASS_IPC_LIB_ABI,
#endif
	.nops = TS_NOPS,
	.name = "testsvc",
	.arena_size = 4 << 20,
	.init = t_init,
	.recover = t_recover,
	.ops = ops,
};
