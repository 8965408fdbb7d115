/* SPDX-License-Identifier: MIT */
/*
 * clock: the cycle clock.  Proves bypass_tsc_hz is non-zero, plausible and
 * stable, an internal setter (bp_tsc_set_hz, tests) overrides it and the
 * environment does not (the library reads none), bypass_cycles_to_ns converts with it
 * (hz cycles = 1 s), TSC intervals agree with CLOCK_MONOTONIC over a sleep
 * (within a factor of two: a sanity check, not a timing), bypass_now_ns
 * never goes back, and bypass_rdtscp reports a CPU number.
 */
#include <bypass/core.h>
#include <math.h>

#include "harness.h"
#include "core/internal.h"
#include "core/testutil.h"

int main(void)
{
	test_timeout(30);
	/* The override, in a child that has not calibrated yet. */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bp_tsc_set_hz(1234567890ull);
		CHECK_EQ(bypass_tsc_hz(), 1234567890ull);
		double ns = bypass_cycles_to_ns(1234567890ull);
		CHECK(ns > 1e9 - 1 && ns < 1e9 + 1);
		_exit(0);
	}
	wait_child(pid);
	/* The variable bypass used to read is not read. */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("BYPASS_TSC_HZ", "1234567890", 1);
		CHECK(bypass_tsc_hz() != 1234567890ull);
		_exit(0);
	}
	wait_child(pid);

	uint64_t hz = bypass_tsc_hz();
	TEST_LOG("TSC %.3f MHz", (double)hz / 1e6);
	CHECK(hz != 0);
	CHECK(hz > 100000000ull && hz < 20000000000ull);
	CHECK_EQ(bypass_tsc_hz(), hz);
	double one = bypass_cycles_to_ns(hz);
	CHECK(one > 1e9 - 1 && one < 1e9 + 1);
	CHECK(bypass_cycles_to_ns(0) == 0.0);
	double half = bypass_cycles_to_ns(hz / 2);
	CHECK(fabs(half - 5e8) < 2);

	unsigned cpu = ~0u;
	uint64_t c0 = bypass_rdtscp(&cpu), t0 = bypass_now_ns();
	CHECK(cpu < 4096);
	CHECK(bypass_rdtscp(NULL) >= c0);
	test_sleep_ms(100);
	uint64_t c1 = bypass_rdtscp(NULL), t1 = bypass_now_ns();
	double ratio = bypass_cycles_to_ns(c1 - c0) / (double)(t1 - t0);
	TEST_LOG("TSC/monotonic over a sleep: %.4f", ratio);
	CHECK(ratio > 0.5 && ratio < 2.0);

	uint64_t prev = bypass_now_ns();
	for (int i = 0; i < 100000; i++) {
		uint64_t now = bypass_now_ns();
		CHECK(now >= prev);
		prev = now;
	}
	/* bypass_now_ns is CLOCK_MONOTONIC. */
	uint64_t a = test_now_ns(), b = bypass_now_ns(), c = test_now_ns();
	CHECK(a <= b && b <= c);
	return test_pass("core/clock");
}
