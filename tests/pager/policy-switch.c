/* SPDX-License-Identifier: MIT */
/*
 * Switching policies on a live pager: two threads write and read
 * checksummed pages at random over a region 8x the budget, with sequential
 * runs now and then, while the main thread switches the pager's policy
 * round the built-ins (2q, clock, prefetch, window), the test policy in a
 * shared object (good and misbehaving modes) and a registered one, and
 * changes hints on the region.  Every page is checked at the end, the
 * budget holds, and every replaced shared-object instance was finished.
 * Upcall mode, handler mode (where allowed) and the adaptive engine
 * switching every interval (flip).
 * TEST_LABELS: threads
 */
#include "policy-util.h"
#include "pager/pager_internal.h" /* bp_engine_force */

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#define BUDGET 64ul
#define NPAGES (8 * BUDGET)
#define OPS 8000

static char *m;
static unsigned char ver[NPAGES];
static _Atomic int running;

static int reg_init(bypass_pager *p, const char *args, void **state)
{
	(void)p, (void)args;
	*state = NULL;
	return 0;
}

static int reg_victims(void *state, void **addrs, unsigned n)
{
	(void)state;
	/* the first pages of the region, resident or not: the pager sorts
	 * out which it can take */
	for (unsigned i = 0; i < n; i++)
		addrs[i] = m + (size_t)i * PAGE;
	return (int)n;
}

static const struct bypass_pager_policy reg_pol = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "switch-test", .init = reg_init,
	.choose_victims = reg_victims,
};

static void run(const char *so, int mode, const char *what)
{
	struct bypass_pager_config c = {
		.budget = BUDGET * PAGE, .swap_path = tmpdir(), .swap_size = NPAGES * PAGE,
		.mode = mode, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	bypass_pager *p = NULL;
	int e = bypass_pager_create(&c, &p);
	if (e == -EPERM && mode == BYPASS_PAGER_HANDLER) {
		TEST_LOG("%s: not allowed here (needs CAP_SYS_PTRACE or "
			 "vm.unprivileged_userfaultfd), skipped", what);
		return;
	}
	CHECK_EQ(e, 0);
	if (mode == BYPASS_PAGER_ADAPTIVE) /* switching every interval */
		CHECK_EQ(bp_engine_force(p, BP_ENGINE_FLIP), 0);
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (size_t i = 0; i < NPAGES; i++) {
		ver[i] = 1;
		fill_page(m + i * PAGE, i, 1);
	}
	char s1[PATH_MAX + 16], s2[PATH_MAX + 16], s3[PATH_MAX + 16];
	snprintf(s1, sizeof(s1), "%s", so);
	snprintf(s2, sizeof(s2), "%s,garbage", so);
	snprintf(s3, sizeof(s3), "%s,fail", so);
	const char *specs[] = { "2q", "clock", "prefetch", "window", s1, s2, s3, "switch-test" };
	const int nspecs = sizeof(specs) / sizeof(specs[0]);
	struct pol_worker w[2] = { { m, ver, 0, NPAGES / 2, 7, OPS, &running },
				   { m, ver, NPAGES / 2, NPAGES / 2, 13, OPS, &running } };
	pthread_t t[2];
	atomic_store(&running, 2);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, pol_worker_main, &w[i]), 0);
	int switches = 0;
	while (atomic_load(&running)) {
		CHECK_EQ(bypass_pager_set_policy(p, specs[switches % nspecs]), 0);
		/* hints change under the threads too */
		int adv = switches % 6;
		CHECK_EQ(bypass_pager_advise(p, m + (switches % 8) * 64 * PAGE, 64 * PAGE, adv), 0);
		switches++;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pol_verify(what, m, ver, NPAGES);
	struct bypass_pager_stats st = stats_of(p);
	TEST_LOG("%s: %d switches, evictions %llu, prefetched %llu, rejects %llu, peak %llu",
		 what, switches, (unsigned long long)st.evictions,
		 (unsigned long long)st.prefetch_pages, (unsigned long long)st.policy_rejects,
		 (unsigned long long)st.resident_peak);
	CHECK(st.resident_peak <= BUDGET);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

int main(void)
{
	const char *so = test_policy_so();
	CHECK_EQ(bypass_pager_policy_register(&reg_pol), 0);
	run(so, BYPASS_PAGER_UPCALL, "upcall");
	run(so, BYPASS_PAGER_HANDLER, "handler");
	run(so, BYPASS_PAGER_ADAPTIVE, "adaptive (flip)");
	/* the pagers are destroyed: every instance of the shared object
	 * that was initialised was finished */
	void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
	if (h) { /* still loaded only if something kept it */
		_Atomic unsigned long *inits = dlsym(h, "testpol_inits");
		_Atomic unsigned long *finis = dlsym(h, "testpol_finis");
		CHECK(inits && finis && *inits == *finis);
		dlclose(h);
	}
	tmpdir_cleanup();
	printf("ok\n");
	return 0;
}
