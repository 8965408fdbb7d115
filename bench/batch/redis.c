/* SPDX-License-Identifier: MIT */
/*
 * batch.redis: redis-server (Debian's package; no persistence, so that no
 * snapshot forks in the middle) under redis-benchmark, 50 clients, GET and
 * SET of 3-byte values, without pipelining and with 16 requests per
 * pipeline, with and without libbypass-batch.so; the two servers run side
 * by side and are measured in turn, round after round.  Redis replies from
 * its event loop (read, then the replies written in beforeSleep, then
 * epoll_wait): the preload queues the writes and submits them with the
 * wait in one io_uring_enter.  ESCA names Redis among its servers (+4%).
 */
#include "bench.h"
#include "batch_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BENCHMARK "/usr/bin/redis-benchmark"

/* redis-benchmark: requests/s of test ("GET" or "SET"), NAN on failure. */
static double rbench(struct bsrv *s, const char *test, unsigned long n, int pipeline)
{
	char port[16], ns[24], ps[16], t[8], out[4096];
	snprintf(port, sizeof(port), "%d", s->port);
	snprintf(ns, sizeof(ns), "%lu", n);
	snprintf(ps, sizeof(ps), "%d", pipeline);
	snprintf(t, sizeof(t), "%s", test);
	for (char *q = t; *q; q++)
		*q = (char)(*q - 'A' + 'a');
	char *argv[] = { BENCHMARK, "-h", "127.0.0.1", "-p", port, "-c", "50", "-n", ns,
			 "-P", ps, "-d", "3", "-t", t, "--csv", NULL };
	if (bsrv_run_capture(argv, out, sizeof(out)) != 0)
		return NAN;
	char pat[16];
	snprintf(pat, sizeof(pat), "\"%s\",\"", test);
	char *p = strstr(out, pat);
	return p ? atof(p + strlen(pat)) : NAN;
}

int bench_batch_redis(struct bench_ctx *c)
{
	if (!bsrv_have(BSRV_REDIS, "redis-server") || !bsrv_have(BENCHMARK, "redis-tools")) {
		bench_skip(c, "batch.redis", "redis-server/redis-benchmark are not installed "
			   "and could not be (tools/deps.sh installs them)");
		return BENCH_SKIP;
	}
	static const char *const no_env[] = { NULL };
	struct bsrv srv[2] = {
		{ .kind = BSRV_REDIS_PLAIN, .label = "redis-server", .env = no_env },
		{ .kind = BSRV_REDIS_PLAIN, .preload = true, .label = "redis-server, preload",
		  .env = no_env },
	};
	bench_begin(c, "batch.redis",
		    "Redis: requests/s under redis-benchmark -c 50 (3-byte values)",
		    "the same test without the preload");
	for (int i = 0; i < 2; i++) {
		snprintf(srv[i].dir, sizeof(srv[i].dir), "%s/redis-%d", bsrv_top, i);
		mkdir(srv[i].dir, 0755);
		if (!bsrv_start(&srv[i])) {
			if (i)
				bsrv_stop(&srv[0]);
			bench_fail(c, "redis-server did not start (see %s)", srv[i].dir);
			bench_end(c);
			return 1;
		}
	}
	/* Rows: test x pipelining x {without, with the preload}. */
	static const char *tests[] = { "GET", "SET" };
	static const int pipes[] = { 1, 16 };
	struct bsrv row[8];
	char labels[8][96];
	unsigned long n1 = bench_smoke(c) ? 2000 : bench_quick(c) ? 8000 : 100000;
	unsigned long n16 = bench_smoke(c) ? 10000 : bench_quick(c) ? 50000 : 600000;
	for (int k = 0; k < 8; k++) {
		int t = (k / 2) % 2, pp = k / 4, pre = k % 2;
		row[k] = srv[pre];
		row[k].base = k - pre;
		row[k].source = !pre ? NULL : "ESCA: Redis +4%";
		snprintf(labels[k], sizeof(labels[k]), "%s, %s%s", tests[t],
			 pipes[pp] == 1 ? "no pipelining" : "pipelines of 16",
			 pre ? ", bypass preload" : "");
		row[k].label = labels[k];
	}
	int rounds = bsrv_rounds(c);
	double *rate = calloc((size_t)(8 * rounds), sizeof(double));
	rbench(&srv[0], "SET", n1 / 4, 1); /* warm up */
	rbench(&srv[1], "SET", n1 / 4, 1);
	row[0].served = row[1].served = (double)(n1 / 4);
	size_t order[8];
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds, 0);
	while (bench_round(c, &rr, &r)) {
		bench_order(r, 8, order);
		for (int i = 0; i < 8; i++) {
			int k = (int)order[i], t = (k / 2) % 2, pp = k / 4;
			unsigned long n = pipes[pp] == 1 ? n1 : n16;
			double t0 = bsrv_cpu_ticks(&row[k]);
			double x = rbench(&row[k], tests[t], n, pipes[pp]);
			rate[k * rounds + r] = x;
			if (isnan(x)) {
				row[k].errors += 1;
				continue;
			}
			row[k].cpu_ticks += bsrv_cpu_ticks(&row[k]) - t0;
			row[k].requests += (double)n;
			row[k].served += (double)n;
		}
	}
	for (int k = 0; k < 8; k++) {
		row[k].crossings = NAN;
		if (bench_smoke(c))
			continue;
		int t = (k / 2) % 2, pp = k / 4;
		unsigned long n = pipes[pp] == 1 ? n1 : n16;
		pid_t perf = bsrv_perf_start(&row[k], 120);
		double x = rbench(&row[k], tests[t], n / 2, pipes[pp]);
		double calls = bsrv_perf_end(&row[k], perf);
		row[k].served += (double)(n / 2);
		if (!isnan(x))
			row[k].crossings = calls / (double)(n / 2);
	}
	bool clean[2];
	for (int i = 0; i < 2; i++)
		clean[i] = bsrv_stop(&srv[i]);
	for (int k = 0; k < 8; k++)
		row[k].clean = clean[k % 2];
	bsrv_report(c, row, 8, rate, rounds, "req/s");
	bench_note(c, "redis-benchmark -c 50 -d 3 -n %lu (-P 16: -n %lu); redis-server "
		   "--save \"\" --appendonly no (Debian's package, no persistence); "
		   "crossings/request over a perf run of -n/2", n1, n16);
	for (int k = 1; k < 8; k += 2)
		bench_target_est(c, labels[k], &row[k].est, ">=", 1.04);
	bench_end(c);
	free(rate);
	return 0;
}
