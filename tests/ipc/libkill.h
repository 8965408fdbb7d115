/* SPDX-License-Identifier: MIT */
/*
 * The body of lib-kill and lib-kill2 (two tests of 150 + 30 trials each,
 * so that each takes well under 10 s under ASan on a loaded machine).
 *
 * SIGKILL of a library-mode client inside a handler that holds a
 * lock, at random points of its critical section (the victim
 * is a forked child of the client: it calls through the inherited handle),
 * and more at random moments of a stream of ordinary calls.  Two
 * other client processes call all along: each of their calls succeeds or
 * returns the documented -EOWNERDEAD / -ENOTRECOVERABLE (they then run the
 * recover hook and go on); nobody hangs (the whole test fails after 60 s
 * instead).  The bystanders pause during each kill at a random moment,
 * and the service is healed first, so that the state's lock word then
 * tells whether the victim died holding it: the service's count of dead
 * owners must equal the kills inside the lock (every one of the first
 * kind, those of the second kind whose victim held it) exactly, and the
 * recover hook repairs the half-done change every time.  The bystanders
 * also pause during the last kill of the first kind, so that the first
 * heal always meets a dead owner's lock that nobody has taken over yet.
 */
#ifndef BYPASS_TEST_IPC_LIBKILL_H
#define BYPASS_TEST_IPC_LIBKILL_H

#include <sched.h>
#include <sys/mman.h>

#include "libutil.h"

struct shared {
	volatile uint32_t held;  /* the victim holds the lock */
	volatile uint32_t stop;  /* the bystanders may stop */
	volatile uint32_t pause; /* the bystanders stay out of calls */
	volatile uint32_t paused[2];
};

static bool documented(int r)
{
	return r == -EOWNERDEAD || r == -ENOTRECOVERABLE;
}

/* A client calling all along. */
static void bystander(const char *name, struct shared *sh, int me, uint64_t seed)
{
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	uint64_t ok = 0;
	while (!sh->stop) {
		if (__atomic_load_n(&sh->pause, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&sh->paused[me], 1, __ATOMIC_SEQ_CST);
			while (sh->pause && !sh->stop)
				usleep(100);
			__atomic_store_n(&sh->paused[me], 0, __ATOMIC_SEQ_CST);
			continue;
		}
		int64_t r;
		if (test_rand(&seed) & 1) {
			r = test_lib_add(l, 1);
		} else {
			uint64_t chk[2];
			r = bypass_ipc_lib_call(l, TS_CHECK, NULL, 0, chk, sizeof(chk));
			if (r == (int)sizeof(chk) && !chk[0])
				TEST_FAIL("a != b with the lock free");
		}
		if (r >= 0) {
			ok++;
		} else if (documented((int)r)) {
			int rr = bypass_ipc_lib_recover(l);
			if (rr && rr != -ENOTRECOVERABLE)
				TEST_FAIL("recover: %s", strerror(-rr));
		} else {
			TEST_FAIL("bystander call: %s", strerror((int)-r));
		}
		usleep(100); /* leave the CPUs to the trials: they are the test */
	}
	CHECK(ok > 0);
	bypass_ipc_lib_close(l);
	_exit(0);
}

static void spin_us(uint64_t us)
{
	uint64_t end = test_now_ns() + us * 1000;
	while (test_now_ns() < end)
		;
}

/* Keep the bystanders out of calls (each finishes the call it is in). */
static void pause_bystanders(struct shared *sh)
{
	/* Sequentially consistent: the store must be seen before the loads
	 * (a plain store may pass them, and a bystander that has just seen
	 * the last pause end would call while we see its stale mark). */
	__atomic_store_n(&sh->pause, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&sh->paused[0], __ATOMIC_SEQ_CST) ||
	       !__atomic_load_n(&sh->paused[1], __ATOMIC_SEQ_CST))
		usleep(100);
}

static void resume_bystanders(struct shared *sh)
{
	__atomic_store_n(&sh->pause, 0, __ATOMIC_SEQ_CST);
}

/* Bring the service back if it is broken. */
static void heal(bypass_ipc_lib *l)
{
	uint64_t chk[2];
	for (int i = 0; i < 3; i++) {
		int r = bypass_ipc_lib_call(l, TS_CHECK, NULL, 0, chk, sizeof(chk));
		if (r == (int)sizeof(chk)) {
			CHECK_EQ(chk[0], 1);
			return;
		}
		if (!documented(r))
			TEST_FAIL("check: %s", strerror(-r));
		CHECK_ERR(bypass_ipc_lib_recover(l), 0);
	}
	TEST_FAIL("the service did not come back");
}

static int kill_main(unsigned held_trials, unsigned loose_trials, uint64_t seed,
		     const char *tag)
{
	test_timeout(60); /* a hang, not a timing */
	char so[256], name[64];
	test_lib_so("tests/ipc", "testsvc.so", so, sizeof(so));
	test_svc_name(name, sizeof(name), tag);
	int err;
	pid_t srv = test_lib_server(name, so, NULL, -1, &err);
	CHECK_ERR(err, 0);
	struct shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				 -1, 0);
	CHECK(sh != MAP_FAILED);
	pid_t by[2];
	for (int i = 0; i < 2; i++) {
		by[i] = fork();
		if (by[i] == 0)
			bystander(name, sh, i, seed + 0x1234567ull * (i + 1));
	}
	bypass_ipc_lib *l = test_lib_open(name, NULL);
	struct ts_where where;
	int zero = 0;
	CHECK_EQ(bypass_ipc_lib_call(l, TS_WHERE, &zero, sizeof(zero), &where, sizeof(where)),
		 (int)sizeof(where));
	const volatile uint32_t *lockw =
		(const volatile uint32_t *)((const char *)where.state + TS_STATE_LOCK_OFF);
	seed ^= (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
	unsigned held = 0, loose = 0, loose_inside = 0, retries = 0;
	while (held < held_trials) {
		if (held == held_trials - 1) /* nobody meets this death before the loose kills */
			pause_bystanders(sh);
		sh->held = 0;
		pid_t v = fork();
		if (v == 0) {
			volatile uint32_t *flag = &sh->held;
			int r = bypass_ipc_lib_call(l, TS_HOLD, &flag, sizeof(flag), NULL, 0);
			_exit(documented(r) ? 3 : 4); /* it found the service broken */
		}
		CHECK(v > 0);
		int st;
		pid_t w = 0;
		while (!sh->held && (w = waitpid(v, &st, WNOHANG)) == 0)
			sched_yield();
		if (w == v) { /* it could not take the lock: broken, heal and retry */
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
			heal(l);
			CHECK(++retries < 10000);
			continue;
		}
		spin_us(test_rand(&seed) % 100);
		CHECK_EQ(kill(v, SIGKILL), 0);
		CHECK_EQ(waitpid(v, &st, 0), v);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		held++;
	}
	for (; loose < loose_trials; loose++) {
		/* Nobody else calls now.  The lock may still be held by the
		 * victim of the first kind whose death nobody has met yet (the
		 * last one, every run: the bystanders were paused): heal takes
		 * it over and counts that death, once.  Then the lock is free,
		 * and after the kill it is held only if this victim died
		 * holding it.  (Without the heal, this victim waited for that
		 * dead owner's lock, was killed before its first look at the
		 * owner (after 1 ms), and the word that still named the old
		 * owner was taken for this victim's: the test expected that
		 * death twice, 152 != 153 in a CI run of ba771be.)  So no
		 * victim here takes a lock over from a dead owner: none is
		 * killed between the takeover and its count. */
		pause_bystanders(sh);
		heal(l);
		CHECK_EQ(*lockw & LIB_LK_ID, 0);
		pid_t v = fork();
		if (v == 0) {
			for (;;) {
				int64_t r = test_lib_add(l, 1);
				if (r < 0 && documented((int)r))
					bypass_ipc_lib_recover(l);
			}
		}
		CHECK(v > 0);
		spin_us(test_rand(&seed) % 300);
		CHECK_EQ(kill(v, SIGKILL), 0);
		int st;
		CHECK_EQ(waitpid(v, &st, 0), v);
		if (*lockw & LIB_LK_ID)
			loose_inside++;
		heal(l);
		resume_bystanders(sh);
	}
	heal(l);
	sh->stop = 1;
	for (int i = 0; i < 2; i++)
		wait_child(by[i]);
	heal(l);
	struct bypass_ipc_lib_stats s;
	CHECK_ERR(bypass_ipc_lib_stats(l, &s), 0);
	TEST_LOG("%u kills inside the lock, %u at random (%u of them inside it); %llu dead "
		 "owners seen, %llu recoveries, %u retries", held, loose, loose_inside,
		 (unsigned long long)s.owner_dead, (unsigned long long)s.recoveries, retries);
	/* Every death inside the lock met exactly once. */
	CHECK_EQ(s.owner_dead, held + loose_inside);
	CHECK_EQ(s.faults, 0);
	CHECK_EQ(s.broken, 0);
	CHECK_ERR(bypass_ipc_lib_close(l), 0);
	test_lib_stop(srv);
	return test_pass(tag);
}

#endif
