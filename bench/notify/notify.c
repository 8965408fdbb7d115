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
#include <stdatomic.h>
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

/* Per-call cost, sampled as the mean over batches of BATCH calls. */
static void ring_costs(struct bench_ctx *c)
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
		bench_skip(c, "notify.ring", "cannot create doorbells");
		return;
	}
	bypass_notify_arm(armed);
	int efd = eventfd(0, EFD_NONBLOCK);
	uint64_t *s[N];
	for (int k = 0; k < N; k++)
		s[k] = malloc(sizeof(uint64_t) * per * (size_t)rounds);
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < N; k++)
			for (uint64_t b = 0; b < per; b++) {
				uint64_t t0 = bypass_rdtscp(NULL);
				for (int i = 0; i < BATCH; i++) {
					switch (k) {
					case K_NULL: syscall(SYS_getppid); break;
					case K_DB: bypass_notify_ring(db); break;
					case K_ARMED: bypass_notify_ring(armed); break;
					case K_EFD: {
						uint64_t one = 1;
						if (write(efd, &one, 8) != 8) {
							uint64_t v;
							if (read(efd, &v, 8) < 0)
								abort();
						}
						break;
					}
					case K_FUTEX:
						syscall(SYS_futex, &futex_word, FUTEX_WAKE, 1, NULL, NULL, 0);
						break;
					}
				}
				s[k][(size_t)r * per + b] = (bypass_rdtscp(NULL) - t0 + BATCH / 2) / BATCH;
				if (k == K_DB)
					bypass_notify_try(db);
			}
	struct bench_summary sum[N];
	for (int k = 0; k < N; k++)
		bench_summarize(s[k], per * (size_t)rounds, &sum[k]);
	for (int k = 0; k < N; k++) {
		struct bench_row row = {
			.variant = cases[k].name, .kind = cases[k].kind, .unit = "cycles",
			.s = sum[k], .ratio = sum[k].median / sum[K_NULL].median,
			.note = cases[k].note,
		};
		bench_row(c, &row);
	}
	bench_note(c, "samples: mean cost per call over batches of %d calls; %llu batches per row",
		   BATCH, (unsigned long long)(per * (uint64_t)rounds));
	bench_end(c);
	for (int k = 0; k < N; k++)
		free(s[k]);
	close(efd);
	bypass_notify_destroy(db);
	bypass_notify_destroy(armed);
}

int bench_notify(struct bench_ctx *c)
{
	int r = bench_notify_pingpong(c);
	ring_costs(c);
	return r;
}
