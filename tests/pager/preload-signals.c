/* SPDX-License-Identifier: MIT */
/*
 * preload-signals: a program with its own SIGSEGV/SIGBUS handlers keeps
 * them working beside the pager, installed before the first region (core
 * chains to it) or after (the preload's sigaction stores it as core's chain
 * target), with signal() too; sigaction() reports the program's handler,
 * SIG_DFL restored by the program kills as it should.  And without the
 * preload, with the library used directly: a handler installed before
 * bypass_pager_create is chained to; one installed after passes the faults
 * it does not own to the old handler sigaction returned (the documented
 * way), and the pager's faults are still served.
 */
#include "pager/preload-util.h"

#include <bypass/pager.h>
#include <setjmp.h>

#define N (4 * PP_BUDGET)

static sigjmp_buf jb;
static volatile sig_atomic_t caught_segv, caught_bus;
static volatile void *bad_addr;
static struct sigaction bypass_old; /* direct mode: what we chain to */
static int direct_chain;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	if (si->si_addr == bad_addr && sig == SIGSEGV) {
		caught_segv++;
		siglongjmp(jb, 1);
	}
	if (direct_chain) { /* not ours: the handler we replaced */
		bypass_old.sa_sigaction(sig, si, uc);
		return;
	}
	static const char m[] = "program handler got a fault it does not own\n";
	ssize_t w = write(2, m, sizeof(m) - 1);
	(void)w;
	_exit(3);
}

static void on_bus(int sig)
{
	(void)sig;
	caught_bus++;
}

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	CHECK_EQ(sigaction(SIGSEGV, &sa, direct_chain ? &bypass_old : NULL), 0);
}

static unsigned char *paged_work(unsigned char *m)
{
	if (!m) {
		m = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(m != MAP_FAILED);
	}
	pp_fill(m, N, 7);
	CHECK_EQ(pp_check(m, N, 7), N);
	return m;
}

/* A fault that is the program's: an address nothing maps. */
static void own_fault(void)
{
	static unsigned char *hole;
	if (!hole) {
		hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(hole != MAP_FAILED);
	}
	bad_addr = hole;
	int before = caught_segv;
	if (!sigsetjmp(jb, 1)) {
		*(volatile unsigned char *)hole = 1;
		TEST_FAIL("no fault");
	}
	CHECK_EQ(caught_segv, before + 1);
}

static void check_reported(void)
{
	struct sigaction cur;
	CHECK_EQ(sigaction(SIGSEGV, NULL, &cur), 0);
	CHECK(cur.sa_sigaction == on_segv);
}

static void mode_preload(bool early)
{
	unsigned char *m = NULL;
	if (early)
		install();
	else
		m = paged_work(NULL); /* the pager (and core's handler) first */
	if (!early)
		install();
	check_reported();
	m = paged_work(m);
	own_fault();
	m = paged_work(m);
	own_fault();
	/* SIGBUS by signal() and by kill: the program's */
	CHECK(signal(SIGBUS, on_bus) != SIG_ERR);
	raise(SIGBUS);
	CHECK_EQ(caught_bus, 1);
	m = paged_work(m);
	/* Its default action back: a fault of its own kills, the pager's
	 * faults are still served. */
	pid_t c = fork();
	CHECK(c >= 0);
	if (!c) {
		signal(SIGSEGV, SIG_DFL);
		unsigned char *m2 = paged_work(NULL);
		(void)m2;
		*(volatile unsigned char *)bad_addr = 1;
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(c, &st, 0), c);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
}

static void mode_direct(bool before)
{
	char *dir = (char *)pp_tmpdir();
	if (before)
		install();
	struct bypass_pager_config c = { .budget = PP_BUDGET, .swap_path = dir,
					 .swap_size = 2 * N, .flags = BYPASS_PAGER_SWAP_TEMP };
	bypass_pager *p;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	void *m;
	CHECK_EQ(bypass_pager_map(p, N, 0, &m), 0);
	if (!before) {
		direct_chain = 1;
		install(); /* keeps bypass's handler in bypass_old */
		CHECK(bypass_old.sa_flags & SA_SIGINFO);
	}
	paged_work(m);
	own_fault();
	paged_work(m);
	own_fault();
	struct bypass_pager_stats st;
	CHECK_EQ(bypass_pager_stats(p, &st), 0);
	CHECK(st.evictions > 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(int argc, char **argv)
{
	pp_start(60);
	if (pp_preloaded()) {
		mode_preload(!strcmp(argv[1], "early"));
		return 0;
	}
	const char *modes[] = { "early", "late" };
	for (int i = 0; i < 2; i++) {
		pp_stats_reset();
		pp_run_ok(argv, modes[i], NULL);
		long long ev = pp_stat("evictions", NULL);
		TEST_LOG("preload, handler installed %s the pager: evictions %lld",
			 i ? "after" : "before", ev);
		CHECK(ev > 0);
	}
	(void)argc;
	for (int before = 1; before >= 0; before--) {
		pid_t c = fork();
		CHECK(c >= 0);
		if (!c) {
			mode_direct(before);
			_exit(0);
		}
		wait_child(c);
		TEST_LOG("library without preload, handler installed %s create: ok",
			 before ? "before" : "after");
	}
	return test_pass("pager/preload-signals");
}
