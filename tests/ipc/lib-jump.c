/* SPDX-License-Identifier: MIT */
/*
 * lib-jump: calls and signals (issue 31 items 5 and 7).
 *
 *  - reenter: a signal handler that calls while its thread is inside a
 *    message-mode call (the server signals the caller while it serves the
 *    call) gets -EDEADLK, as in library mode, and so does a message-mode
 *    call from a signal handler that interrupted a library-mode call (on
 *    95741d6 the first deadlocked on the handle's lock);
 *  - lib: a signal handler leaves a library-mode call by siglongjmp while
 *    the handler holds the state's lock: the next call repairs (the
 *    service is marked broken, the lock released), recovery works, and
 *    another process takes the lock (on 95741d6 the thread was at -EDEADLK
 *    for ever and the lock held: the server's next call hung);
 *  - record: after such a jump (and no call since), an unrelated SIGSEGV
 *    of the thread reaches the program's own handler (on 95741d6 core
 *    "recovered" it into the dead call's frame);
 *  - msg: a signal handler leaves a message-mode call by siglongjmp (the
 *    server signals the caller while it serves the call): the next call on
 *    the handle works, on a new connection (on 95741d6 it hung on the
 *    handle's lock).
 */
#include <setjmp.h>

#include "libutil.h"

static char so[256], name[64];
static bypass_ipc_lib *lh, *mh;       /* library and message mode */
static volatile int hres, hcalled;
static sigjmp_buf jb;

static pid_t start(void)
{
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), "jump");
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	lh = test_lib_open(name, NULL);
	struct bypass_ipc_lib_opts mo = { .flags = BYPASS_IPC_LIB_MESSAGE,
					  .call_timeout_ns = 10 * BYPASS_SEC };
	mh = test_lib_open(name, &mo);
	return srv;
}

static void stop(pid_t srv)
{
	bypass_ipc_lib_close(lh);
	bypass_ipc_lib_close(mh);
	test_lib_stop(srv);
}

static void on_sig(int sig, void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn };
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(sig, &sa, NULL), 0);
}

/* A message-mode call from the signal handler. */
static void call_from_handler(int sig)
{
	(void)sig;
	char out[4];
	hres = bypass_ipc_lib_call(mh, TS_ECHO, "h", 1, out, sizeof(out));
	hcalled++;
}

static struct ts_sig sg;

static void call_and_release(int sig)
{
	call_from_handler(sig);
	sg.done = 1;
}

static void reenter(void)
{
	pid_t srv = start();
	on_sig(SIGUSR1, call_from_handler);
	struct ts_kill k = { .pid = getpid(), .sig = SIGUSR1, .ms = 20 };
	hcalled = 0;
	CHECK_ERR(bypass_ipc_lib_call(mh, TS_SIGNAL, &k, sizeof(k), NULL, 0), 0);
	CHECK_EQ(hcalled, 1);
	CHECK_ERR(hres, -EDEADLK);
	/* Outside a call the handler's call goes through. */
	raise(SIGUSR1);
	CHECK_EQ(hcalled, 2);
	CHECK_ERR(hres, 1);
	/* A message-mode call from a handler that interrupted a library-mode
	 * call. */
	on_sig(SIGUSR1, call_and_release);
	sg = (struct ts_sig){ .sig = SIGUSR1 };
	struct ts_sig *p = &sg;
	CHECK_ERR(bypass_ipc_lib_call(lh, TS_SIGWAIT, &p, sizeof(p), NULL, 0), 0);
	CHECK_EQ(hcalled, 3);
	CHECK_ERR(hres, -EDEADLK);
	int64_t n = test_lib_add(lh, 0); /* TS_SIGWAIT counts too */
	CHECK(n > 0);
	CHECK_EQ(test_lib_add(lh, 1), n + 1);
	CHECK_EQ(test_lib_add(mh, 1), n + 2);
	stop(srv);
}

static void jump_out(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

static void lib(void)
{
	pid_t srv = start();
	on_sig(SIGUSR2, jump_out);
	CHECK_EQ(test_lib_add(lh, 1), 1);
	sg = (struct ts_sig){ .sig = SIGUSR2, .lock = 1 };
	struct ts_sig *p = &sg;
	if (!sigsetjmp(jb, 1)) {
		bypass_ipc_lib_call(lh, TS_SIGWAIT, &p, sizeof(p), NULL, 0);
		TEST_FAIL("the call returned: the signal handler did not jump");
	}
	/* Left the call holding the lock.  The next call repairs: the
	 * service is broken (the handler stopped half-way). */
	CHECK_ERR(test_lib_add(lh, 1), -ENOTRECOVERABLE);
	struct bypass_ipc_lib_stats st;
	CHECK_ERR(bypass_ipc_lib_stats(lh, &st), 0);
	CHECK_EQ(st.broken, 1);
	CHECK_ERR(bypass_ipc_lib_recover(lh), 0);
	int64_t n = test_lib_add(lh, 1); /* TS_SIGWAIT counted once before the jump */
	CHECK_EQ(n, 3);
	/* The server's thread takes the lock (it would wait for ever). */
	CHECK_EQ(test_lib_add(mh, 1), n + 1);
	/* A nested call (the gate still runs below it) is still refused. */
	struct ts_nest nest = { .call = (int (*)(void *, unsigned, const void *, size_t, void *,
					       size_t))bypass_ipc_lib_call,
			     .lib = lh };
	CHECK_ERR(bypass_ipc_lib_call(lh, TS_NEST, &nest, sizeof(nest), NULL, 0), -EDEADLK);
	CHECK_EQ(test_lib_add(lh, 1), n + 2);
	stop(srv);
}

static volatile void *fault_addr;
/* Read through a volatile pointer: the compiler cannot see it is bad. */
static int *volatile nowhere = (int *)16;
static volatile int app_faults;
static sigjmp_buf fjb;

static void app_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_addr = si->si_addr;
	app_faults++;
	siglongjmp(fjb, 1);
}

static void record(void)
{
	pid_t ch = fork();
	CHECK(ch >= 0);
	if (ch == 0) {
		/* The program's own SIGSEGV handler, behind core's (chained as a
		 * preload's sigaction wrapper would, or installed before it). */
		struct sigaction sa = { .sa_sigaction = app_segv, .sa_flags = SA_SIGINFO };
		sigemptyset(&sa.sa_mask);
		if (!bp_fault_chain_sigaction(SIGSEGV, &sa, NULL))
			CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
		pid_t srv = start();
		on_sig(SIGUSR2, jump_out);
		sg = (struct ts_sig){ .sig = SIGUSR2 };
		struct ts_sig *p = &sg;
		if (!sigsetjmp(jb, 1)) {
			bypass_ipc_lib_call(lh, TS_SIGWAIT, &p, sizeof(p), NULL, 0);
			_exit(10);
		}
		/* No call since: a fault of ours must be ours. */
		if (!sigsetjmp(fjb, 1)) {
			*nowhere = 1;
			_exit(11);
		}
		if (app_faults != 1 || fault_addr != (void *)16)
			_exit(12);
		test_lib_stop(srv);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(ch, &st, 0), ch);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		TEST_FAIL("the fault after the jump: the child %s %d", WIFSIGNALED(st) ? "died of"
											: "exited",
			  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void msg(void)
{
	pid_t srv = start();
	on_sig(SIGUSR2, jump_out);
	CHECK_EQ(test_lib_add(mh, 1), 1);
	struct ts_kill k = { .pid = getpid(), .sig = SIGUSR2, .ms = 30 };
	if (!sigsetjmp(jb, 1)) {
		bypass_ipc_lib_call(mh, TS_SIGNAL, &k, sizeof(k), NULL, 0);
		TEST_FAIL("the call returned: the signal handler did not jump");
	}
	char out[8];
	for (int i = 0; i < 100; i++) {
		char in[8];
		snprintf(in, sizeof(in), "m%d", i);
		int r = bypass_ipc_lib_call(mh, TS_ECHO, in, strlen(in), out, sizeof(out));
		CHECK_ERR(r, (int)strlen(in));
		CHECK(!memcmp(in, out, strlen(in)));
	}
	CHECK_EQ(test_lib_add(mh, 1), 2);
	CHECK_EQ(test_lib_add(lh, 1), 3);
	stop(srv);
}

int main(int argc, char **argv)
{
	test_timeout(60); /* a hang, not a timing */
	static const struct test_part parts[] = {
		{ "reenter", reenter }, { "lib", lib }, { "record", record }, { "msg", msg },
	};
	test_parts(argc, argv, parts, BP_ARRAY_SIZE(parts));
	return test_pass("ipc/lib-jump");
}
