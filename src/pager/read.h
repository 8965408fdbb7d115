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

/*
 * The adaptive engine's handler pool is exempt from the duty rule while
 * the machine has a CPU to spare (read.c): a handler's CPU is the pager's,
 * and a sleeping handler only adds its own sleep and wake-up to the
 * faulting thread's.  With other work runnable the poll takes a CPU from
 * it, so the pool falls back to the rule.  "To spare" is judged from the
 * threads running on the machine (/proc/loadavg's fourth field, read at
 * most every few milliseconds by one handler, never per fault), less the
 * reader itself and the process's own that run for the pager (its handler
 * threads that are awake, its threads polling a read), averaged over the
 * last readings, against the CPUs the process may run on: a spare CPU
 * while that average leaves one CPU free (below ncpu - 1; never with one
 * CPU; on this VM's 2 CPUs only one read polls at a time: one ring).  A
 * reading that fails forgets the average: no spare CPU until the next
 * good one (today's rule).  Pure functions, for tests.
 */
struct bp_rd_spare {
	uint32_t others_q8; /* runnable threads not ours, averaged, Q8 */
	bool known;         /* a reading since the last failed one */
};
/* The running count of a /proc/loadavg line ("0.52 0.58 0.59 3/456 1234"):
 * the fourth field's numerator, or -1 if the text is not such a line. */
int bp_rd_loadavg_running(const char *text, size_t len);
/* One reading: running threads on the machine (the reader included, -1: the
 * reading failed), ours: the process's threads besides the reader that run
 * for the pager at that moment. */
void bp_rd_spare_note(struct bp_rd_spare *s, int running, unsigned ours);
bool bp_rd_spare(const struct bp_rd_spare *s, unsigned ncpu);
/* dispatch.c: a handler thread starts (true) or ends (false) a stretch
 * awake, between its sleeps. */
void bp_rd_handler_awake(bool awake);
/* fork.c, in a fork child: none of the parent's threads is here (awake,
 * polling, or reading the load). */
void bp_rd_fork_child(void);

#endif
