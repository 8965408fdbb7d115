/* SPDX-License-Identifier: MIT */
/*
 * Deadlines for calls that take a timeout in nanoseconds (< 0: no limit,
 * 0: do not wait): an absolute CLOCK_MONOTONIC time in ns, UINT64_MAX for no
 * limit, 0 for "do not wait" (computed without reading the clock).
 */
#ifndef BYPASS_CORE_DEADLINE_H
#define BYPASS_CORE_DEADLINE_H

#include <bypass/core.h>
#include <stdbool.h>
#include <stdint.h>

static inline uint64_t bp_deadline(int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return UINT64_MAX;
	if (timeout_ns == 0)
		return 0;
	return bypass_now_ns() + (uint64_t)timeout_ns;
}

/* The deadline has passed (0 always has; UINT64_MAX never does). */
static inline bool bp_deadline_passed(uint64_t deadline)
{
	return !deadline || (deadline != UINT64_MAX && bypass_now_ns() >= deadline);
}

/*
 * What is left until deadline as a timeout for poll(2) or epoll_wait(2):
 * milliseconds rounded up, -1 for no limit, 0 once it has passed.
 */
static inline int bp_deadline_ms(uint64_t deadline)
{
	if (deadline == UINT64_MAX)
		return -1;
	uint64_t now = deadline ? bypass_now_ns() : 0;
	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

#endif
