/* SPDX-License-Identifier: MIT */
/*
 * wrap: the quick soak (tests/ipc/soak.h), in make check: 100,000 calls
 * per connection through 4 KiB rings, every call shape at once (plain
 * calls with one-way messages between them, loans, library mode's message
 * mode, the fallback, library mode on two threads), request and response
 * sizes from 0 to the largest message: the records wrap each ring tens of
 * thousands of times, with pads before responses at every offset; every
 * byte is checked.  make soak runs the same for 10,000,000 calls
 * (tests/ipc/soak.c).
 *
 * On 95741d6 a call whose response sat after a pad at the ring's end never
 * moved the client's read position past the pad: after about two laps the
 * server found no room, and the call failed with -ECONNRESET/-EPIPE (the
 * server's bounded reply wait gave up) instead of answering.
 * TEST_LABELS: threads
 */
#include "soak.h"

int main(void)
{
	return soak_main(100000, 4096, "ipc/wrap");
}
