/* SPDX-License-Identifier: MIT */
/* pager.throughput (throughput.c): the access loop, the sides' child
 * processes and the swap device's limits (throughrun.c). */
#ifndef BYPASS_BENCH_PAGER_THROUGHPUT_H
#define BYPASS_BENCH_PAGER_THROUGHPUT_H

#include "pager_bench.h"

enum { PH_POPULATE, PH_SEQ, PH_RAND, PH_N };
/* The sides: Linux's swap file, bypass, Linux's zram, zswap, bypass with
 * its compressed tier (issue 35). */
enum { T_TIER = 4, T_SIDES = 5 };

struct result {
	double secs[PH_N];
	uint64_t accesses[PH_N];
	uint64_t swapins[PH_N]; /* bypass: swap-in reads; Linux: pswpin pages */
	struct bypass_pager_stats st; /* bypass side */
	struct bypass_pager_tier_stats tst; /* bypass + tier side */
	/* bypass side, per phase: faults by kind, pages read ahead, time in
	 * the fault handler (the signal delivery not included) */
	uint64_t ph_zero[PH_N], ph_swapin[PH_N], ph_wp[PH_N], ph_ra[PH_N], ph_rad[PH_N],
		ph_lat_ns[PH_N];
	/* the check after the timed loops: every page's final contents */
	uint64_t pages_checked, pages_bad, first_bad;
	double verify_secs;
	int err;
	char msg[200];
};

struct sizes {
	size_t region, budget; /* bytes */
	uint64_t seq_passes, rand_accesses;
	unsigned readahead; /* bypass's window, pages (0: the library's default) */
	unsigned batch;     /* bypass's eviction round, pages (0: the default) */
	bool no_spin;       /* bypass's swap-in reads sleep (BYPASS_PAGER_NO_SPIN) */
	bool fill_random;   /* first touch fills every page with random words
			       (incompressible: --param fill=random) */
	bool check_linux;   /* the Linux sides read every page back after the
			       run (the quick suite: in the first round only) */
};

/* The checksum every page must end with (exp[], one word per page). */
void pt_expected_sums(const struct sizes *z, uint64_t *exp);
/* --param plant=pager.throughput: the bypass side changes one word before
 * the check, which must then fail the run (tests/pager/bench-plant.sh). */
extern bool pt_plant_loss;
/* Run side (T_*) in a fresh child: the Linux sides in env's cgroup, bypass
 * (with the tier for T_TIER) on bswap.  0, -EINTR (killed by a signal) or
 * -errno, with res filled in. */
int pt_run_child(int side, const struct pb_linux_env *env, const char *bswap,
		 const struct sizes *z, const uint64_t *exp, struct result *res);

/* The swap device's limits (see throughrun.c). */
enum { DL_QD1, DL_QD2, DL_SEQ, DL_N };
extern const char *const pt_dl_name[DL_N], *const pt_dl_unit[DL_N];
/* out[DL_*]: reads/s, reads/s, MiB/s.  Returns 0 or -errno. */
int pt_device_limits(const char *path, size_t size, uint64_t nreads, size_t seq_bytes,
		     unsigned round, double out[DL_N]);

#endif
