/* SPDX-License-Identifier: MIT */
/* The notify ping-pong's mechanisms (mechanisms.c) and its driver
 * (pingpong.c). */
#ifndef BYPASS_BENCH_NOTIFY_H
#define BYPASS_BENCH_NOTIFY_H

#include "bench.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pp; /* the state the two processes share */

/* A row: a mechanism, or the limit and reference rows (no functions). */
struct variant {
	const char *name;
	const char *kind;
	const char *source;  /* the source's ratio vs user IPI, or NULL */
	const char *note;
	int (*setup)(struct pp *p);
	void (*child)(struct pp *p);    /* respond to p->n (+ warm-up) pings */
	void (*ping)(struct pp *p);
	void (*wait_pong)(struct pp *p);
	void (*parent_after_fork)(struct pp *p);
	void (*teardown)(struct pp *p);
};

#define NVARIANTS 15
extern const struct variant pp_variants[NVARIANTS];
enum { V_LIMIT = 0, V_SIGNAL = 1, V_SIGBUSY = 2, V_EFD = 3, V_EFD_POLL = 4, V_SOCK_POLL = 7,
       V_ADAPTIVE = 9, V_SPIN = 10, V_SLEEP = 11, V_INTR = 12, V_SHAPED = 14 };

/* The shared state's size (bench_shared_alloc it). */
size_t pp_state_size(void);
/* --param fail=responder: the doorbell responders exit 3. */
void pp_inject_fail(bool on);
/* One round of one variant: fork the responder, time n round trips.
 * Returns 0 or -errno (-EIO: the responder did not exit cleanly). */
int pp_run_round(const struct variant *v, struct pp *p, uint64_t warm, uint64_t n,
		 uint64_t *samples, int cpu_a, int cpu_b);

#endif
