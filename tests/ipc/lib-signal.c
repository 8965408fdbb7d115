/* SPDX-License-Identifier: MIT */
/*
 * lib-signal: signals during calls.
 *  - a signal raised inside a handler runs the application's signal
 *    handler; where protection keys guard the state, that handler runs
 *    without access to it (PKRU has our key access-disabled), and once it
 *    returns the handler goes on with access (the kernel restores PKRU
 *    from the signal frame): the call completes and its changes are whole;
 *  - a library call from a signal handler that interrupted a call is
 *    refused (-EDEADLK), not deadlocked on the interrupted call's lock;
 *  - where the state is guarded, a signal handler that touches it during
 *    a call faults, and that counts as a fault of the call (-EFAULT, the
 *    service broken until recovered; in a child);
 *  - an interval timer firing every 50 us through thousands of calls, in
 *    library and message mode: every answer is right.
 */
#include <time.h>

#include "libutil.h"

static bypass_ipc_lib *cur;
static struct ts_sig sg;
static volatile uint32_t pkru_in_handler;
static volatile int nested;
static volatile uint64_t *touch; /* the state, for the touching handler */
static bool pkru_ok;

static uint32_t rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static void on_usr1(int sig)
{
	(void)sig;
	if (pkru_ok)
		pkru_in_handler = rdpkru();
	char out[4];
	nested = bypass_ipc_lib_call(cur, TS_ECHO, "n", 1, out, sizeof(out));
	if (touch)
		(void)touch[0];
	sg.done = 1;
}

static volatile unsigned ticks;
static void on_alarm(int sig)
{
	(void)sig;
	ticks++;
}

static void *state_of(bypass_ipc_lib *l)
{
	struct ts_where w;
	int what = 0;
	CHECK_ERR(bypass_ipc_lib_call(l, TS_WHERE, &what, sizeof(what), &w, sizeof(w)),
		  (int)sizeof(w));
	return w.state;
}

/* SIGUSR2 every 50 us (a POSIX timer: alarm()'s timer is the test's
 * watchdog). */
static void timer_storm(bypass_ipc_lib *l, unsigned n)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2 };
	timer_t t;
	CHECK_EQ(timer_create(CLOCK_MONOTONIC, &sev, &t), 0);
	struct itimerspec it = { { 0, 50000 }, { 0, 50000 } };
	ticks = 0;
	CHECK_EQ(timer_settime(t, 0, &it, NULL), 0);
	int64_t want = test_lib_add(l, 0);
	CHECK(want >= 0);
	for (unsigned i = 0; i < n; i++) {
		char in[32], out[32];
		snprintf(in, sizeof(in), "call %u", i);
		CHECK_ERR(bypass_ipc_lib_call(l, TS_ECHO, in, strlen(in), out, sizeof(out)),
			  (int)strlen(in));
		CHECK(!memcmp(in, out, strlen(in)));
		CHECK_EQ(test_lib_add(l, 1), ++want);
	}
	CHECK_EQ(timer_delete(t), 0);
	TEST_LOG("%u timer signals over %u call pairs", ticks, n);
}

int main(void)
{
	test_timeout(60);
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "libsignal");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	int key = bp_ipc_lib_key();
	pkru_ok = bp_ipc_lib_pkru_ok();
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(l, &st), 0);
	cur = l;
	signal(SIGUSR1, on_usr1);

	/* a signal in the middle of a call */
	sg.sig = SIGUSR1;
	struct ts_sig *p = &sg;
	CHECK_ERR(bypass_ipc_lib_call(l, TS_SIGWAIT, &p, sizeof(p), NULL, 0), 0);
	CHECK_EQ(sg.done, 1);
	CHECK_ERR(nested, -EDEADLK);
	CHECK_EQ(test_lib_add(l, 0), 2); /* both of the handler's increments */
	if (st.guarded) {
		uint32_t ad = 1u << (2 * key);
		CHECK_EQ(pkru_in_handler & ad, ad);
		TEST_LOG("PKRU in the signal handler %#x: key %d access-disabled",
			 pkru_in_handler, key);
	} else {
		TEST_LOG("unguarded (%s): the signal handler has access to the state",
			 bp_ipc_lib_key_reason());
	}

	/* a signal handler that touches the state during a call */
	pid_t ch = fork();
	if (ch == 0) {
		touch = state_of(l);
		sg.done = 0;
		int r = bypass_ipc_lib_call(l, TS_SIGWAIT, &p, sizeof(p), NULL, 0);
		if (st.guarded) {
			CHECK_ERR(r, -EFAULT);
			CHECK_ERR(test_lib_add(l, 0), -ENOTRECOVERABLE);
			CHECK_ERR(bypass_ipc_lib_recover(l), 0);
		} else {
			CHECK_ERR(r, 0);
		}
		_exit(0);
	}
	wait_child(ch);
	touch = NULL;
	CHECK(test_lib_add(l, 0) >= 2);

	/* a timer through many calls, both modes */
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	sigaction(SIGUSR2, &sa, NULL);
	timer_storm(l, TEST_TSAN ? 10000 : 100000);
	struct bypass_ipc_lib_opts mo = { .flags = BYPASS_IPC_LIB_MESSAGE };
	bypass_ipc_lib *m = test_lib_open(name, &mo);
	timer_storm(m, TEST_TSAN ? 100 : 1000);
	CHECK_ERR(bypass_ipc_lib_close(m), 0);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);
	return test_pass("lib-signal");
}
