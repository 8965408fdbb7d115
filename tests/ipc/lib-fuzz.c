/* SPDX-License-Identifier: MIT */
/*
 * lib-fuzz: random and adversarial values in every field of a service's
 * control block and event slots for 4 s while honest clients call (the
 * body is tests/ipc/libfuzz.h); make soak runs it for 10 minutes
 * (lib-fuzz-long).  On 95741d6 the server died within the first seconds.
 * TEST_LABELS: threads
 */
#include "libfuzz.h"

int main(void)
{
	return fuzz_main(4, "ipc/lib-fuzz");
}
