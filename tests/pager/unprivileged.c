/* SPDX-License-Identifier: MIT */
/*
 * Without privilege: upcall mode works (userfaultfd with
 * UFFD_USER_MODE_ONLY is allowed to everyone); handler mode, which must
 * also serve faults the kernel takes, is refused with -EPERM (and a logged
 * reason) unless vm.unprivileged_userfaultfd = 1 or /dev/userfaultfd is
 * accessible.  Run as root, the test drops to nobody in a child.
 */
#include "util.h"
#include "pager/pager_internal.h" /* bp_engine_force */

#include <grp.h>

static int sysctl_unpriv(void)
{
	FILE *f = fopen("/proc/sys/vm/unprivileged_userfaultfd", "r");
	int v = 0;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void body(const char *dir)
{
	struct bypass_pager_config c = {
		.budget = 16 * PAGE, .swap_path = dir, .swap_size = 128 * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	bypass_pager *p;
	int r = bypass_pager_create(&c, &p);
	if (r)
		TEST_FAIL("upcall mode unprivileged: %s", strerror(-r));
	char *m;
	CHECK_EQ(bypass_pager_map(p, 64 * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < 64; i++)
		fill_page(m + i * PAGE, i, 2);
	for (uint64_t i = 0; i < 64; i++)
		CHECK(page_ok(m + i * PAGE, i, 2));
	CHECK(stats_of(p).faults_swapin > 0);

	/* a handler-thread region needs kernel-fault handling */
	int allowed = sysctl_unpriv() || access("/dev/userfaultfd", R_OK | W_OK) == 0;
	void *x;
	r = bypass_pager_map(p, 16 * PAGE, BYPASS_PAGER_MAP_HANDLER, &x);
	if (allowed)
		CHECK_EQ(r, 0);
	else
		CHECK_ERR(r, -EPERM);
	CHECK_EQ(bypass_pager_destroy(p), 0);

	c.mode = BYPASS_PAGER_HANDLER;
	r = bypass_pager_create(&c, &p);
	if (allowed) {
		CHECK_EQ(r, 0);
		bypass_pager_destroy(p);
	} else {
		CHECK_ERR(r, -EPERM);
	}

	/* the adaptive engine: its pool reads a user-mode-only userfaultfd,
	 * so it needs no privilege either; forced onto the pool, and
	 * switching between the engines every interval */
	const char *forced[] = { "pool", "flip" };
	const int force[] = { BP_ENGINE_POOL, BP_ENGINE_FLIP };
	for (int k = 0; k < 2; k++) {
		c.mode = BYPASS_PAGER_ADAPTIVE;
		r = bypass_pager_create(&c, &p);
		if (r)
			TEST_FAIL("adaptive (%s) unprivileged: %s", forced[k], strerror(-r));
		CHECK_EQ(bp_engine_force(p, force[k]), 0);
		CHECK_EQ(bypass_pager_map(p, 64 * PAGE, 0, (void **)&m), 0);
		for (int pass = 0; pass < (k ? 20 : 1); pass++) {
			for (uint64_t i = 0; i < 64; i++)
				fill_page(m + i * PAGE, i, 3 + pass);
			for (uint64_t i = 0; i < 64; i++)
				CHECK(page_ok(m + i * PAGE, i, 3 + pass));
			if (k) { /* let the monitor switch */
				struct timespec ts = { 0, 5000000 };
				nanosleep(&ts, NULL);
			}
		}
		struct bypass_pager_stats st = stats_of(p);
		CHECK(st.faults_swapin > 0);
		if (k)
			CHECK(st.engine_switches > 0);
		else
			CHECK_EQ(st.engine_pool, 1);
		CHECK_EQ(bypass_pager_destroy(p), 0);
	}
	TEST_LOG("unprivileged: upcall and the adaptive engine (pool, switching) work, handler "
		 "mode %s", allowed ? "allowed" : "refused with -EPERM");
}

int main(void)
{
	test_timeout(60);
	if (geteuid() != 0) {
		body(tmpdir());
		tmpdir_cleanup();
		return test_pass("pager/unprivileged");
	}
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/nobody", tmpdir());
	CHECK_EQ(chmod(tmpdir(), 0711), 0);
	CHECK_EQ(mkdir(dir, 0777), 0);
	CHECK_EQ(chmod(dir, 0777), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			TEST_FAIL("dropping to nobody: %s", strerror(errno));
		body(dir);
		_exit(0);
	}
	wait_child(pid);
	tmpdir_cleanup();
	return test_pass("pager/unprivileged");
}
