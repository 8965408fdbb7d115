/* SPDX-License-Identifier: MIT */
/*
 * lib-kill2: the second half of lib-kill's trials (libkill.h): 150 more
 * SIGKILLs inside lock-holding handlers and 30 at random, other seeds.
 */
#include "libkill.h"

int main(void)
{
	return kill_main(150, 30, 0x5eed2, "lib-kill2");
}
