/* SPDX-License-Identifier: MIT */
/*
 * Recovery points and fault hooks: a SIGBUS from a truncated shared file
 * and a SIGSEGV from a PROT_NONE page become error returns inside a recovery
 * point; a hook that resolves a fault lets the instruction retry; faults
 * outside the recovery range, or with no recovery point, still kill the
 * process as they would without bypass.  A record that asks for the
 * registered recovery hook (hook[1] != 0) is handed to it, popped, with
 * its signal and address filled in; with no hook registered it is not
 * recovered.
 * TEST_LABELS: threads
 */
#include "harness.h"
#include "core/internal.h"

#include <pthread.h>
#include <sys/mman.h>

static long ps;

static int touch(volatile char *p, int write)
{
	struct bp_recover rp;
	if (BP_RECOVER_TRY(&rp, (const void *)p, 1)) {
		if (write)
			*p = 1;
		else
			(void)*p;
		bp_recover_pop(&rp);
		return 0;
	}
	return rp.sig == SIGBUS ? -EFAULT : -EACCES;
}

static char *hook_page;
static volatile int hook_calls; /* changed in the signal handler */
static int resolve_hook(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig != SIGSEGV || (char *)si->si_addr < hook_page ||
	    (char *)si->si_addr >= hook_page + ps)
		return 0;
	hook_calls++;
	mprotect(hook_page, (size_t)ps, PROT_READ | PROT_WRITE);
	return 1;
}

/* The recovery hook: it records what core handed it and leaves by its
 * own jump (ipc's sets the ucontext's registers instead). */
static sigjmp_buf hook_jb;
static const struct bp_recover *volatile hooked;
static volatile uintptr_t hooked_word0;
static volatile void *hooked_top;
static void recover_hook(const struct bp_recover *r, void *uc)
{
	(void)uc;
	hooked = r;
	hooked_word0 = r->hook[0];
	hooked_top = bp_recover_top;
	siglongjmp(hook_jb, 1);
}

static void other_hook(const struct bp_recover *r, void *uc)
{
	(void)r;
	(void)uc;
}

/* A record that asks for the hook; the fault at p goes to the hook, or,
 * with none registered, on to the default action. */
static int hooked_touch(volatile char *p, struct bp_recover *rp)
{
	bp_recover_push(rp, (const void *)p, 1);
	rp->hook[0] = 0x5eed;
	rp->hook[1] = 1;
	if (sigsetjmp(hook_jb, BP_TSAN) == 0) {
		*p = 1;
		bp_recover_pop(rp);
		return 0;
	}
	return -EFAULT;
}

/* In a child: a fault outside the recovery range, or with none, or in a
 * record that asks for a hook nobody registered, kills. */
static void die_child(int kind, char *in_range, char *none, char *beyond)
{
	struct bp_recover rp;
	if (kind == 0 && BP_RECOVER_TRY(&rp, in_range, 1)) {
		*(volatile char *)none = 1; /* not in [in_range, +1) */
		_exit(0);
	}
	if (kind == 1)
		*(volatile char *)beyond = 1;
	if (kind == 2)
		hooked_touch(none, &rp);
	_exit(0);
}

static void *thread_fn(void *arg)
{
	char *p = arg;
	for (int i = 0; i < 1000; i++)
		if (touch(p, i & 1) != -EACCES)
			return (void *)1;
	return NULL;
}

int main(void)
{
	test_timeout(60);
	ps = sysconf(_SC_PAGESIZE);

	/* SIGBUS: a shared file mapping beyond the end of the file. */
	int fd = memfd_create("t", 0);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 2 * ps) == 0);
	char *m = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	CHECK_EQ(touch(m + ps, 1), 0);
	CHECK(ftruncate(fd, ps) == 0);
	CHECK_ERR(touch(m + ps, 0), -EFAULT);
	CHECK_ERR(touch(m + ps, 1), -EFAULT);
	CHECK_EQ(touch(m, 1), 0); /* the first page still works */

	/* SIGSEGV, many times, from several threads at once. */
	/* (A page per thread: to ThreadSanitizer the faulting accesses to one
	 * byte from several threads would look like a race.) */
	char *none = mmap(NULL, 5 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(none != MAP_FAILED);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, thread_fn, none + (i + 1) * ps) == 0);
	for (int i = 0; i < 4; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		CHECK(ret == NULL);
	}

	/* Nested recovery points: the inner one catches, the outer survives. */
	struct bp_recover outer;
	if (BP_RECOVER_TRY(&outer, NULL, 0)) {
		CHECK_ERR(touch(none, 0), -EACCES);
		bp_recover_pop(&outer);
	} else {
		TEST_FAIL("outer recovery point fired");
	}

	/* A hook resolves the fault; the access then succeeds. */
	hook_page = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(bp_fault_hook_add(resolve_hook) == 0);
	/* volatile: the store that faults must come before hook_calls is
	 * read (the compiler may move a plain store past that load) */
	((volatile char *)hook_page)[5] = 42;
	CHECK_EQ(((volatile char *)hook_page)[5], 42);
	CHECK_EQ(hook_calls, 1);
	CHECK(bp_fault_hook_remove(resolve_hook) == 0);
	CHECK_ERR(bp_fault_hook_remove(resolve_hook), -ENOENT);
	CHECK_ERR(bp_fault_hook_add(NULL), -EINVAL);

	/* Outside the recovery range, or with none, or a record asking for a
	 * hook that is not there: the process dies of it. */
	for (int kind = 0; kind < 3; kind++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			die_child(kind, m, none, m + ps);
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (WIFSIGNALED(st)) {
			CHECK_EQ(WTERMSIG(st), kind == 1 ? SIGBUS : SIGSEGV);
		} else {
			/* A sanitizer's handler (the one before bypass's) reports
			 * the fault and exits non-zero instead. */
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
		}
	}

	/* The recovery hook: one per process, handed the popped record. */
	CHECK_ERR(bp_fault_set_recover_hook(NULL), -EINVAL);
	CHECK_EQ(bp_fault_set_recover_hook(recover_hook), 0);
	CHECK_EQ(bp_fault_set_recover_hook(recover_hook), 0);
	CHECK_ERR(bp_fault_set_recover_hook(other_hook), -EBUSY);
	struct bp_recover hr;
	struct bp_recover base;
	if (BP_RECOVER_TRY(&base, NULL, 0)) {
		CHECK_ERR(hooked_touch(none, &hr), -EFAULT);
		CHECK(hooked == &hr);
		CHECK_EQ(hooked_word0, 0x5eed);
		CHECK(hooked_top == &base); /* popped before the hook ran */
		CHECK_EQ(hr.sig, SIGSEGV);
		CHECK(hr.addr == none);
		CHECK(bp_recover_top == &base);
		bp_recover_pop(&base);
	} else {
		TEST_FAIL("the hook's record fell through to the one under it");
	}
	/* Records that do not ask for it still recover by siglongjmp. */
	hooked = NULL;
	CHECK_ERR(touch(none, 0), -EACCES);
	CHECK_ERR(touch(m + ps, 1), -EFAULT);
	CHECK(hooked == NULL);
	return test_pass("core/recover");
}
