/* SPDX-License-Identifier: MIT */
/* The parts of the batch experiment (bench/batch/). */
#ifndef BYPASS_BENCH_BATCH_H
#define BYPASS_BENCH_BATCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "bench.h"

/* Per-call cost of small sends, alone and batched (sends.c). */
int bench_batch_sends(struct bench_ctx *c);
/* Per-call cost of a 20 KB sendfile: direct, deferred by copy, by splice
 * (sendfile.c). */
int bench_batch_sendfile(struct bench_ctx *c);
/* nginx and lighttpd with and without the preload, under wrk (servers.c),
 * then Redis (redis.c). */
int bench_batch_servers(struct bench_ctx *c);
/* redis-server under redis-benchmark with and without the preload (redis.c). */
int bench_batch_redis(struct bench_ctx *c);

/* ---------------------------------------------------- servers (servers.c) */

#define BSRV_REDIS "/usr/bin/redis-server"
enum { BSRV_NGINX_DEBIAN, BSRV_NGINX_PART1, BSRV_LIGHTTPD_DEBIAN, BSRV_REDIS_PLAIN };

/* A server variant (a row of a table), and what was measured on it. */
struct bsrv {
	int kind;                /* BSRV_* */
	bool preload;            /* under libbypass-batch.so */
	const char *const *env;  /* more environment for the preload (K=V) */
	const char *label, *source;
	int base;                /* the row its ratio is relative to */
	int workers;             /* nginx (Debian's conf): worker_processes
				  * set to this (0: the conf's, auto) */
	int port;
	pid_t pid;
	char dir[300];
	double requests, cpu_ticks, errors, crossings; /* crossings per request */
	double served;           /* every request it served (warm-up, perf runs too) */
	double timeouts;         /* wrk's timeouts (counted, not failures) */
	bool clean;              /* exited by itself with status 0 */
	double ratio, ci_lo, ci_hi;
	struct bench_est est;    /* per-round rate ratio to its base row */
};

extern char bsrv_top[256]; /* the experiment's directory (www/ holds the files) */
bool bsrv_write_file(const char *path, const char *text);
/* The variant's configuration file, in its directory (serverconf.c). */
bool bsrv_make_conf(struct bsrv *s);
bool bsrv_start(struct bsrv *s);
bool bsrv_stop(struct bsrv *s);
double bsrv_cpu_ticks(struct bsrv *s);       /* utime+stime of its processes */
pid_t bsrv_perf_start(struct bsrv *s, int secs);
double bsrv_perf_end(struct bsrv *s, pid_t perf); /* system calls entered */
double bsrv_stats_sum(struct bsrv *s, const char *key);
int bsrv_run_capture(char *const argv[], char *buf, size_t len);
bool bsrv_have(const char *bin, const char *pkg);
int bsrv_rounds(struct bench_ctx *c);
void bsrv_sleep_ms(unsigned ms);
double bsrv_null_call_ns(void); /* a getppid, the cost of one crossing */
/* Rows, ratios with CIs, notes and failures (errors, unclean exits) of a
 * table whose rates are rate[v * rounds + r]. */
void bsrv_report(struct bench_ctx *c, struct bsrv *s, int nv, const double *rate, int rounds,
		 const char *unit);

#endif
