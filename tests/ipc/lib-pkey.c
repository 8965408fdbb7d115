/* SPDX-License-Identifier: MIT */
/*
 * lib-pkey: the protection-key gate, where the CPU has protection keys
 * (a reasoned skip elsewhere).
 *  - outside a call our key is write-disabled in PKRU, inside the call
 *    both its bits are clear (a handler reads PKRU), and other keys' bits
 *    are left as they were;
 *  - a stray write from application code into the service's state gets
 *    SIGSEGV with si_code SEGV_PKUERR (in a child: it dies of it); a stray
 *    read works, unless the opener asked for BYPASS_IPC_LIB_NOREAD, which
 *    makes it fault too;
 *  - a thread that existed before the service was opened, and one started
 *    after, both call correctly and both are closed outside calls;
 *  - protect = none leaves the state writable (the child's write works).
 */
#include <pthread.h>
#include <setjmp.h>

#include "libutil.h"

static uint32_t rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static void *state_of(bypass_ipc_lib *l, uint32_t *pkru_inside)
{
	struct ts_where w;
	int what = 1;
	CHECK_ERR(bypass_ipc_lib_call(l, TS_WHERE, &what, sizeof(what), &w, sizeof(w)),
		  (int)sizeof(w));
	if (pkru_inside)
		*pkru_inside = w.pkru;
	return w.state;
}

static bypass_ipc_lib *shared_l;
static volatile int seen_code;
static sigjmp_buf jb;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	seen_code = si->si_code;
	siglongjmp(jb, 1);
}

/*
 * In a child: open the service with o, then write (or read) the state
 * from outside a call.  Exit 0: it went through; 10: SEGV_PKUERR; 11:
 * another SIGSEGV.  The child's handler is installed before the library's,
 * which passes it the faults that are not its own.
 */
static int stray(const char *name, const struct bypass_ipc_lib_opts *o, bool write)
{
	pid_t ch = fork();
	if (ch == 0) {
		struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
		sigaction(SIGSEGV, &sa, NULL);
		/* the parent's handle shares one mapping per process: drop it,
		 * so that this open chooses the mapping's protection */
		bypass_ipc_lib_close(shared_l);
		bypass_ipc_lib *l = test_lib_open(name, o);
		volatile uint64_t *p = state_of(l, NULL);
		if (sigsetjmp(jb, 1) == 0) {
			if (write)
				p[0] ^= 0; /* a write of the same value: harmless if allowed */
			else
				(void)p[0];
			_exit(0);
		}
		_exit(seen_code == SEGV_PKUERR ? 10 : 11);
	}
	int st;
	CHECK_EQ(waitpid(ch, &st, 0), ch);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static uint32_t key_mask, wd_bit;

static void *thread_calls(void *arg)
{
	if (arg) { /* started early: wait until the service is open */
		char b;
		if (read(*(int *)arg, &b, 1) != 1)
			return (void *)3;
	}
	uint32_t inside;
	state_of(shared_l, &inside);
	if (inside & key_mask)
		return (void *)1;
	if ((rdpkru() & key_mask) != wd_bit)
		return (void *)2;
	return NULL;
}

int main(void)
{
	test_timeout(60);
	/* a thread started before the key existed in this process: it runs
	 * with the kernel's default PKRU (the key access-disabled) until its
	 * first call sets the key's bits */
	pthread_t early, late;
	int go[2];
	CHECK(pipe(go) == 0);
	CHECK_EQ(pthread_create(&early, NULL, thread_calls, &go[0]), 0);
	int key = bp_ipc_lib_key();
	if (key < 0)
		SKIP("protection keys: %s", bp_ipc_lib_key_reason());
	key_mask = 3u << (2 * key);
	wd_bit = 2u << (2 * key);
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "libpkey");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);

	bypass_ipc_lib *l = test_lib_open(name, NULL);
	shared_l = l;
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	CHECK_EQ(st.guarded, 1);
	uint32_t before = rdpkru();
	CHECK_EQ(before & key_mask, wd_bit);
	uint32_t inside;
	state_of(l, &inside);
	CHECK_EQ(inside & key_mask, 0);
	CHECK_EQ(inside & ~key_mask, before & ~key_mask); /* other keys untouched */
	CHECK_EQ(rdpkru(), before);

	/* threads: the early one, and one started now (it inherits our PKRU) */
	CHECK_EQ(write(go[1], "g", 1), 1);
	void *res;
	CHECK_EQ(pthread_join(early, &res), 0);
	CHECK(res == NULL);
	CHECK_EQ(pthread_create(&late, NULL, thread_calls, NULL), 0);
	CHECK_EQ(pthread_join(late, &res), 0);
	CHECK(res == NULL);

	/* stray accesses from outside a call */
	CHECK_EQ(stray(name, NULL, true), 10);
	CHECK_EQ(stray(name, NULL, false), 0);
	struct bypass_ipc_lib_opts nr = { .flags = BYPASS_IPC_LIB_NOREAD };
	CHECK_EQ(stray(name, &nr, false), 10);
	CHECK_EQ(stray(name, &nr, true), 10);
	struct bypass_ipc_lib_opts none = { .protect = BYPASS_IPC_PROTECT_NONE };
	CHECK_EQ(stray(name, &none, true), 0);

	/* the calls still work, and the state was not changed by the strays */
	CHECK_EQ(test_lib_add(l, 2), 2);
	CHECK_EQ(rdpkru(), before);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	close(go[0]);
	close(go[1]);
	test_lib_stop(srv);
	return test_pass("lib-pkey");
}
