/* SPDX-License-Identifier: MIT */
/*
 * Thrashing without waste (issue 32, item 4): a thread whose swap-in reads
 * come back to back stops polling them (read.c, bp_rd_duty_spin()).  The
 * rule is checked on made-up times, not measured ones (no timing in the
 * assertions): a first read polls; reads of 40 us with 20 us of the
 * program between them (two thirds of the time in reads: GNU sort under a
 * small budget) stop polling within 16 reads, and stay stopped; 1 ms of
 * the program between reads brings polling back within 16 reads; a read
 * after a long idle stretch polls; times that go backwards or stand still
 * change nothing.
 */
#include "util.h"
#include "pager/pager_internal.h"

#define US 1000ull

/* n reads of busy ns, each gap ns after the last one ended; the read
 * (1-based) at which the thread stopped (want false) or started (want
 * true) polling, 0 if it never did */
static unsigned drive(struct bp_rd_duty *d, uint64_t *now, unsigned n, uint64_t busy,
		      uint64_t gap, bool want)
{
	unsigned at = 0;
	for (unsigned i = 1; i <= n; i++) {
		*now += gap;
		if (!at && bp_rd_duty_spin(d) == want)
			at = i;
		bp_rd_duty_note(d, *now, *now + busy);
		*now += busy;
	}
	return at;
}

int main(void)
{
	struct bp_rd_duty d = { 0, 0 };
	uint64_t now = 1000000000ull;
	CHECK(bp_rd_duty_spin(&d)); /* nothing known: poll */

	/* thrashing: two thirds of the time in reads */
	unsigned stop = drive(&d, &now, 16, 40 * US, 20 * US, false);
	CHECK(stop > 1 && stop <= 16);
	CHECK(!bp_rd_duty_spin(&d));
	CHECK_EQ(drive(&d, &now, 1000, 40 * US, 20 * US, true), 0); /* stays stopped */
	CHECK(d.q16 > BP_RD_DUTY_SPIN_MAX);

	/* the program computes again: 1 ms between reads */
	unsigned back = drive(&d, &now, 16, 40 * US, 1000 * US, true);
	CHECK(back >= 1 && back <= 16);
	CHECK(bp_rd_duty_spin(&d));

	/* just below half the time in reads: polls on */
	CHECK_EQ(drive(&d, &now, 1000, 40 * US, 45 * US, false), 0);

	/* back to thrashing, then one read after 10 s idle: it polls */
	drive(&d, &now, 64, 40 * US, 10 * US, false);
	CHECK(!bp_rd_duty_spin(&d));
	now += 10000000000ull;
	bp_rd_duty_note(&d, now, now + 40 * US);
	CHECK(bp_rd_duty_spin(&d));

	/* a clock that stands still or goes back changes nothing */
	struct bp_rd_duty e = d;
	bp_rd_duty_note(&e, e.last_end, e.last_end);
	CHECK_EQ(e.q16, d.q16);
	bp_rd_duty_note(&e, e.last_end - 5 * US, e.last_end - 10 * US);
	CHECK_EQ(e.q16, d.q16);

	TEST_LOG("stopped polling at read %u of a thrashing thread, polled again at read %u "
		 "once it computed 1 ms between reads", stop, back);
	return test_pass("pager/read-duty");
}
