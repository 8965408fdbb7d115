/* SPDX-License-Identifier: MIT */
/*
 * soak: every call shape for 10,000,000 calls per connection, at once, with
 * request and response sizes from 0 to the largest message of 16 KiB rings,
 * every byte checked (tests/ipc/soak.h says what each shape does).  Only in
 * make soak; make check runs the same for 100,000 calls (tests/ipc/wrap.c).
 * Under the sanitizers: make asan && make soak BUILD=build-asan (or tsan,
 * build-tsan: the library-mode shape's two threads meet there).
 * TEST_LABELS: soak
 */
#include "soak.h"

int main(void)
{
	return soak_main(10000000, 16384, "ipc/soak");
}
