/* SPDX-License-Identifier: MIT */
/* The cycle clock: rdtscp, calibrated against CLOCK_MONOTONIC_RAW. */
#include "core/internal.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static uint64_t tsc_hz;
static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;

static uint64_t mono_raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int tsc_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
		return 0;
	return (d >> 8) & 1;
#else
	return 1; /* bypass_rdtscp reads CLOCK_MONOTONIC_RAW in ns here */
#endif
}

static _Atomic uint64_t tsc_hz_set;

void bp_tsc_set_hz(uint64_t hz)
{
	atomic_store(&tsc_hz_set, hz);
}

static void tsc_calibrate(void)
{
	uint64_t set = atomic_load(&tsc_hz_set);
	if (set) {
		tsc_hz = set;
		return;
	}
#if !BYPASS_HAVE_RDTSCP
	tsc_hz = 1000000000u; /* the fallback counts nanoseconds */
	return;
#endif
	if (!tsc_invariant())
		bp_warn("bypass: TSC is not invariant; cycle figures may drift");
	/*
	 * Three 7 ms windows; keep the median estimate.  Each edge brackets
	 * the TSC read between two clock reads and keeps the tightest.
	 */
	uint64_t est[3];
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = mono_raw_ns(), c0 = bypass_rdtscp(NULL);
		uint64_t t1;
		do
			t1 = mono_raw_ns();
		while (t1 - t0 < 7000000);
		uint64_t c1 = bypass_rdtscp(NULL);
		est[i] = (uint64_t)((double)(c1 - c0) * 1e9 / (double)(t1 - t0));
	}
	for (int i = 0; i < 2; i++)
		for (int j = i + 1; j < 3; j++)
			if (est[j] < est[i]) {
				uint64_t t = est[i];
				est[i] = est[j];
				est[j] = t;
			}
	tsc_hz = est[1];
	bp_debug("bypass: TSC calibrated at %llu Hz", (unsigned long long)tsc_hz);
}

uint64_t bypass_tsc_hz(void)
{
	pthread_once(&tsc_once, tsc_calibrate);
	return tsc_hz;
}

double bypass_cycles_to_ns(uint64_t cycles)
{
	uint64_t hz = bypass_tsc_hz();
	return hz ? (double)cycles * 1e9 / (double)hz : 0.0;
}

uint64_t bp_ns_to_cycles(uint64_t ns)
{
	uint64_t hz = bypass_tsc_hz();
	return (uint64_t)((double)ns * (double)hz / 1e9);
}

uint64_t bypass_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
