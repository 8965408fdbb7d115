/* SPDX-License-Identifier: MIT */
/*
 * What this CPU and kernel offer that a module can use, probed once: the
 * answers notify (its "uintr" backend) and the `bypass doctor` command give.
 * A feature is reported available only where bypass has code that uses it.
 */
#include "core/internal.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

int bp_cpu_has_uintr(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return (d >> 5) & 1; /* CPUID.(EAX=7,ECX=0):EDX[5] UINTR */
#else
	return 0;
#endif
}

/*
 * User interrupts.  Intel's out-of-tree kernel numbered
 * uintr_register_handler 471 (the RFC used another number, now
 * futex_waitv's); no mainline kernel has any uintr system call, and bypass
 * has no uintr data path: creating a doorbell with the "uintr" backend is
 * -EOPNOTSUPP.  So the backend is never available, whatever answers system
 * call 471 (which this probe does not call: on a kernel that gives 471 to
 * something else, calling it would be a real, unknown system call).
 */
int bp_uintr_available(void)
{
	return 0;
}

const char *bp_uintr_absent_reason(void)
{
#if !defined(__x86_64__)
	return "user interrupts are an x86-64 feature";
#else
	if (!bp_cpu_has_uintr())
		return "the CPU does not report UINTR (CPUID.7.0:EDX[5])";
	return "the CPU reports UINTR, but mainline Linux has no uintr system "
	       "calls and bypass has no uintr data path (a uintr doorbell is "
	       "-EOPNOTSUPP)";
#endif
}
