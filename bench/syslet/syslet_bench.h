/* SPDX-License-Identifier: MIT */
#ifndef BYPASS_BENCH_SYSLET_H
#define BYPASS_BENCH_SYSLET_H

#include "bench.h"

#include <bypass/syslet.h>

int bench_syslet_files(struct bench_ctx *c);
int bench_syslet_atoms(struct bench_ctx *c);

/* CPU time of the whole process (every thread), in ns. */
uint64_t sb_cpu_ns(void);
/* A note with /proc/loadavg, when = "at start" / "at end". */
void sb_note_load(struct bench_ctx *c, const char *when);

#endif
