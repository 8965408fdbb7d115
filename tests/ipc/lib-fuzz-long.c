/* SPDX-License-Identifier: MIT */
/*
 * lib-fuzz-long: lib-fuzz for 10 minutes (tests/ipc/libfuzz.h).
 * TEST_LABELS: soak
 */
#include "libfuzz.h"

int main(void)
{
	return fuzz_main(600, "ipc/lib-fuzz-long");
}
