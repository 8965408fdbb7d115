/* SPDX-License-Identifier: MIT */
/*
 * lib-kill: 150 SIGKILLs of a library-mode client inside a handler that
 * holds a lock, 30 at random moments of its calls, with two other clients
 * calling all along (libkill.h); lib-kill2 makes 150 + 30 more: 300 kills
 * inside lock-holding handlers in all.
 */
#include "libkill.h"

int main(void)
{
	return kill_main(150, 30, 0x5eed1, "lib-kill");
}
