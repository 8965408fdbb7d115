/* SPDX-License-Identifier: MIT */
/*
 * bench_notify: the User Interrupts ping-pong table (pingpong.c) and the
 * cost of ringing a doorbell nobody sleeps on, beside the system calls a
 * notification otherwise costs.
 */
#include "bench.h"

#include <bypass/notify.h>
#include <linux/futex.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

int bench_notify_pingpong(struct bench_ctx *c);

#define BATCH 1000

struct ring_case {
	const char *name;
	const char *kind;
	const char *note;
};

static _Atomic uint32_t futex_word;

/*
 * Per-call cost, sampled as the mean over batches of BATCH calls.  Checked
 * outside the timed spans: every ring is counted (the plain doorbell's
 * rings consumed after each batch equal the batch's rings, the armed one's
 * at the end equal all its rings, and its eventfd was signalled), and the
 * eventfd row's writes never fail unread.  A lost or extra ring is a
 * failure, not a figure.
 *
 * The plant (--param plant=notify.ring): the plain doorbell row's first
 * measured batch rings once less than it counts as made, which the check of
 * the rings consumed catches (tests/notify/bench-plant.sh).
 */
static int ring_costs(struct bench_ctx *c)
{
	uint64_t batches = bench_count(c, "ring_batches", 10000, 1000);
	int rounds = bench_rounds(c);
	uint64_t per = (batches + (uint64_t)rounds - 1) / (uint64_t)rounds;
	enum { K_NULL, K_DB, K_ARMED, K_EFD, K_FUTEX, N };
	static const struct ring_case cases[N] = {
		{ "null system call (getppid)", BENCH_LIMIT, "one kernel crossing" },
		{ "bypass doorbell ring, nobody sleeping", BENCH_BYPASS, "no system call" },
		{ "bypass doorbell ring, eventfd armed", BENCH_BYPASS,
		  "first ring writes the eventfd, the rest coalesce" },
		{ "eventfd write", BENCH_BASELINE, NULL },
		{ "futex wake, no waiter", BENCH_BASELINE, NULL },
	};
	bench_begin(c, "notify.ring", "cost of one notification when the receiver is not asleep",
		    "the null system call");
	bypass_doorbell *db, *armed;
	if (bypass_notify_create(NULL, &db) || bypass_notify_create(NULL, &armed)) {
		bench_fail(c, "notify.ring: cannot create doorbells");
		bench_end(c);
		return -1;
	}
	bypass_notify_arm(armed);
	int efd = eventfd(0, EFD_NONBLOCK);
	uint64_t *s[N];
	for (int k = 0; k < N; k++)
		s[k] = calloc(per * (size_t)rounds, sizeof(uint64_t));
	/* Round 0 warms up and is not recorded; the order rotates per round. */
	uint64_t warm_b = per / 4 ? per / 4 : 1;
	uint64_t *scratch = malloc(sizeof(uint64_t) * warm_b);
	bool plant = bench_planted(c, "notify.ring");
	uint64_t armed_rings = 0; /* rings made on `armed`, all rounds */
	char err[160] = "";
	size_t order[N];
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds + 1, 1); /* round 0: the warm-up */
	while (!err[0] && bench_round(c, &rr, &r)) {
		bench_order(r, N, order);
		for (int o = 0; o < N && !err[0]; o++) {
			int k = (int)order[o];
			uint64_t *dst = r ? s[k] + (size_t)(r - 1) * per : scratch;
			for (uint64_t b = 0; b < (r ? per : warm_b) && !err[0]; b++) {
				int calls = plant && k == K_DB && r == 1 && b == 0 ? BATCH - 1 : BATCH;
				uint64_t t0 = bypass_rdtscp(NULL);
				for (int i = 0; i < calls; i++) {
					switch (k) {
					case K_NULL: syscall(SYS_getppid); break;
					case K_DB: bypass_notify_ring(db); break;
					case K_ARMED: bypass_notify_ring(armed); break;
					case K_EFD: {
						uint64_t one = 1;
						if (write(efd, &one, 8) != 8) {
							uint64_t v;
							if (read(efd, &v, 8) < 0)
								snprintf(err, sizeof(err),
									 "eventfd write and read failed");
						}
						break;
					}
					case K_FUTEX:
						syscall(SYS_futex, &futex_word, FUTEX_WAKE, 1, NULL, NULL, 0);
						break;
					}
				}
				dst[b] = (bypass_rdtscp(NULL) - t0 + BATCH / 2) / BATCH;
				if (k == K_DB) {
					int got = bypass_notify_try(db);
					if (got != BATCH)
						snprintf(err, sizeof(err),
							 "%s: %d rings counted of the %d rung",
							 cases[K_DB].name, got, BATCH);
				}
				if (k == K_ARMED)
					armed_rings += BATCH;
			}
		}
	}
	free(scratch);
	if (!err[0]) {
		struct pollfd pf = { bypass_notify_fd(armed), POLLIN, 0 };
		bool signalled = poll(&pf, 1, 0) == 1; /* before try drains it */
		int got = bypass_notify_try(armed);
		if (!signalled)
			snprintf(err, sizeof(err), "%s: its eventfd was not signalled",
				 cases[K_ARMED].name);
		else if (got < 0 || (uint64_t)got != armed_rings)
			snprintf(err, sizeof(err), "%s: %d rings counted of the %llu rung",
				 cases[K_ARMED].name, got, (unsigned long long)armed_rings);
	}
	if (err[0])
		bench_fail(c, "%s", err);
	struct bench_summary sum[N];
	for (int k = 0; k < N; k++)
		bench_summarize(s[k], per * (size_t)rounds, &sum[k]);
	for (int k = 0; k < N; k++) {
		struct bench_row row = {
			.variant = cases[k].name, .kind = cases[k].kind, .unit = "cycles",
			.s = sum[k], .is_base = k == K_NULL,
			.note = cases[k].note,
		};
		bench_row(c, &row);
	}
	bench_note(c, "samples: mean cost per call over batches of %d calls; %llu batches per row "
		   "in %d rounds after a warm-up round (not recorded), the order rotating each round",
		   BATCH, (unsigned long long)(per * (uint64_t)rounds), rounds);
	bench_end(c);
	for (int k = 0; k < N; k++)
		free(s[k]);
	close(efd);
	bypass_notify_destroy(db);
	bypass_notify_destroy(armed);
	return 0;
}

int bench_notify(struct bench_ctx *c)
{
	int r = bench_notify_pingpong(c);
	int r2 = ring_costs(c);
	return r ? r : r2;
}
