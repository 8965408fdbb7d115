/* SPDX-License-Identifier: MIT */
/*
 * Thrashing without waste (issue 32, item 4): the adaptive engine's
 * handler pool polls its swap-in reads whatever its duty only while the
 * machine has a CPU to spare (read.c, bp_rd_spare()).  The decision is
 * checked on made-up readings of /proc/loadavg, not measured ones (no
 * timing in the assertions):
 *   - the running count is parsed from a loadavg line, and anything else
 *     is refused (-1);
 *   - nothing known, or a failed reading: no CPU to spare (today's rule);
 *   - 2 CPUs, only the reader running (idle): to spare; the process's own
 *     threads that run for the pager are not load; another thread seen in
 *     every other reading (the program's own, between its faults): still
 *     to spare; a build's two compilers (2 others): not, within 3
 *     readings, and when they are gone, to spare again within 8 but not at
 *     the first; one CPU hog (1 other all the time): not, within 32
 *     readings, and it stays so;
 *   - 1 CPU: never; 4 CPUs: 2 others to spare, 3 not.
 */
#include "util.h"
#include "pager/pager_internal.h"
#include "pager/read.h"

static int parse(const char *s)
{
	return bp_rd_loadavg_running(s, strlen(s));
}

/* n readings of running threads (ours polling); the reading (1-based)
 * after which the decision was want, 0 if it never was */
static unsigned drive(struct bp_rd_spare *s, unsigned ncpu, unsigned n, int running,
		      unsigned ours, bool want)
{
	for (unsigned i = 1; i <= n; i++) {
		bp_rd_spare_note(s, running, ours);
		if (bp_rd_spare(s, ncpu) == want)
			return i;
	}
	return 0;
}

int main(void)
{
	/* the line */
	CHECK_EQ(parse("0.36 1.73 2.22 3/456 12345\n"), 3);
	CHECK_EQ(parse("12.00 8.50 4.01 17/1203 99"), 17);
	CHECK_EQ(parse("0.00 0.00 0.00 0/1 1"), 0);
	CHECK_EQ(parse(""), -1);
	CHECK_EQ(parse("0.36 1.73 2.22"), -1);
	CHECK_EQ(parse("0.36 1.73 2.22 3"), -1);     /* no slash */
	CHECK_EQ(parse("0.36 1.73 2.22 /456 1"), -1); /* no count */
	CHECK_EQ(parse("0.36  1.73 2.22 3/456 1"), -1);
	CHECK_EQ(parse("cpu 1 2 3 4/5"), -1);
	CHECK_EQ(bp_rd_loadavg_running("0.36 1.73 2.22 3/456", 15), -1); /* cut short */

	struct bp_rd_spare s = { 0, false };
	CHECK(!bp_rd_spare(&s, 2)); /* nothing known: the duty rule */

	/* 2 CPUs, idle: the reader alone; ours are not load */
	CHECK_EQ(drive(&s, 2, 1, 1, 0, true), 1u);
	CHECK_EQ(drive(&s, 2, 1, 2, 1, true), 1u);
	CHECK_EQ(drive(&s, 2, 1, 1, 3, true), 1u); /* counted past the reading */
	CHECK_EQ(drive(&s, 2, 16, 1, 0, false), 0u);
	/* another thread in every other reading: still to spare */
	for (int i = 0; i < 32; i++) {
		bp_rd_spare_note(&s, 1 + i % 2, 0);
		CHECK(bp_rd_spare(&s, 2));
	}

	/* a build: two compilers beside the reader */
	unsigned off = drive(&s, 2, 3, 3, 0, false);
	CHECK(off >= 1 && off <= 3);
	CHECK_EQ(drive(&s, 2, 64, 4, 1, true), 0u); /* and it stays so */
	/* the build is gone: back within 8 readings, not at the first */
	bp_rd_spare_note(&s, 1, 0);
	CHECK(!bp_rd_spare(&s, 2));
	unsigned back = drive(&s, 2, 16, 1, 0, true);
	CHECK(back >= 1 && back <= 7);

	/* one CPU hog: one other thread all the time */
	off = drive(&s, 2, 32, 2, 0, false);
	CHECK(off >= 1 && off <= 32);
	CHECK_EQ(drive(&s, 2, 64, 2, 0, true), 0u);

	/* a failed reading forgets: not to spare until a good one */
	s = (struct bp_rd_spare){ 0, false };
	CHECK_EQ(drive(&s, 2, 1, 1, 0, true), 1u);
	bp_rd_spare_note(&s, -1, 0);
	CHECK(!bp_rd_spare(&s, 2));
	CHECK_EQ(drive(&s, 2, 1, 1, 0, true), 1u);

	/* one CPU: never; four: two others leave one for the poll */
	CHECK(!bp_rd_spare(&s, 1));
	CHECK(!bp_rd_spare(&s, 0));
	s = (struct bp_rd_spare){ 0, false };
	CHECK_EQ(drive(&s, 4, 1, 3, 0, true), 1u);
	s = (struct bp_rd_spare){ 0, false };
	CHECK_EQ(drive(&s, 4, 1, 4, 0, false), 1u);
	CHECK_EQ(drive(&s, 4, 1, 400, 0, false), 1u);
	printf("read-spare: a CPU to spare decided from made-up loadavg readings\n");
	return 0;
}
