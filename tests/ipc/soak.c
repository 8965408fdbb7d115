/* SPDX-License-Identifier: MIT */
/*
 * soak: every call shape for 10,000,000 calls per connection, at once, with
 * request and response sizes from 0 to the largest message of 16 KiB rings,
 * every byte checked (tests/ipc/soak.h says what each shape does).  Only in
 * make soak; make check runs the same for 100,000 calls (tests/ipc/wrap.c).
 * Under the sanitizers: make asan && make soak BUILD=build-asan (or tsan,
 * build-tsan: the library-mode shape's two threads meet there).
 *
 * The environment (for this test and ipc/wrap alike; unset: the defaults):
 *  - BYPASS_SOAK_CALLS=N: N calls per connection (default 10,000,000);
 *  - BYPASS_SOAK_SHAPES=plain,loans,lib-msg,fallback,library: only those
 *    shapes (default all five; the library server starts only for the last
 *    three);
 *  - BYPASS_SOAK_PROGRESS=N: a progress line every N calls of a shape, with
 *    the wall time and the process's and thread's CPU time (default
 *    1,000,000);
 *  - BYPASS_SOAK_WAIT=S: a call waits at most S seconds (default 60 times
 *    BYPASS_TEST_TIMEOUT_SCALE).  A call's deadline keeps running while the
 *    test is stopped (SIGSTOP): a run that will be paused needs S longer
 *    than the pause.
 * The whole test is bounded by 700 us a call (five minutes at least), times
 * BYPASS_TEST_TIMEOUT_SCALE: a hang, not a timing.  At the end each process
 * says its wall time, CPU time (and per call) and context switches.
 * Example: BYPASS_SOAK_CALLS=100000 BYPASS_SOAK_SHAPES=loans,library
 * build/tests/ipc/soak
 * TEST_LABELS: soak
 */
#include "soak.h"

int main(void)
{
	return soak_main(10000000, 16384, "ipc/soak");
}
