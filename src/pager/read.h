/* SPDX-License-Identifier: MIT */
/*
 * Swap-in reads on the fault path (read.c).
 */
#ifndef BYPASS_PAGER_READ_H
#define BYPASS_PAGER_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bypass_pager;

/* A swap-in read of len bytes at off into buf (the fault path,
 * signal handlers included), polling its completion where a CPU can spare
 * it; 0 or -errno.  Init makes the rings (spin: not BYPASS_PAGER_NO_SPIN). */
int bp_swap_read(struct bypass_pager *p, int fd, char *buf, size_t len, off_t off);
int bp_swap_read_init(struct bypass_pager *p, bool spin);
void bp_swap_read_fini(struct bypass_pager *p);

/*
 * Whether a thread's swap-in reads may poll (issue 32, thrashing without
 * waste): a thread that spends most of its time waiting for reads (reads
 * back to back: the disk, not the program, sets the pace) sleeps in them,
 * as Linux's swap-in does, instead of burning a CPU as long as each read
 * takes.  The state is per thread (read.c keeps it thread-local); the
 * functions are pure, for tests.  Times in ns.
 */
struct bp_rd_duty {
	uint64_t last_end; /* when the thread's last read ended (0: none yet) */
	uint32_t q16;      /* the share of its time in reads lately, Q16 */
};
#define BP_RD_DUTY_SPIN_MAX 32768u /* poll only below half the time in reads */
bool bp_rd_duty_spin(const struct bp_rd_duty *d);
void bp_rd_duty_note(struct bp_rd_duty *d, uint64_t start, uint64_t end);

#endif
