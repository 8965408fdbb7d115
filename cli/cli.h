/* SPDX-License-Identifier: MIT */
/*
 * The `bypass` command: doctor (what this kernel and CPU offer), run (a
 * program under the preloads), bench (the benchmark driver), heat (a
 * pager's access-heat view).  Not part of
 * the library: it links the internal static archive so that doctor asks the
 * library's own detection functions.
 */
#ifndef BYPASS_CLI_H
#define BYPASS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes (documented in bypass(1)). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1      /* the command could not do its job */
#define CLI_EXIT_USAGE 2     /* bad options */
#define CLI_EXIT_NOEXEC 126  /* run: the program could not be executed */
#define CLI_EXIT_NOTFOUND 127 /* run: the program was not found */

extern const char *cli_prog; /* argv[0] as given, for messages */

int cli_doctor(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_heat(int argc, char **argv); /* heat.c: a pager's access-heat view */

/*
 * cli_find - the path of a file that ships with bypass: a preload
 * (libbypass-batch.so) or a program (bypass-bench), looked up next to this
 * command (the build tree, or an install's bin/), in the build tree's bench/,
 * in the install's library directory and its bypass/ subdirectory (where the
 * Debian package puts the preloads).  Returns 0 and fills buf, or
 * -ENOENT (buf then lists where it looked).
 */
int cli_find(const char *name, char *buf, size_t len);

/* monitor.c: the process tree under bypass run, sampled while it runs. */
struct cli_monitor {
	pid_t root;            /* the program */
	uint64_t budget;       /* --pager SIZE, bytes (0: no pager) */
	int status;            /* print the live status line on stderr */
	double start, interval, last_status;
	uint64_t now_resident; /* the tree's proportional set size, bytes */
	unsigned now_procs;
	uint64_t peak;         /* the largest now_resident seen */
	unsigned max_procs;
	uint64_t largest_hwm;  /* the largest VmHWM of one process, bytes */
	unsigned samples;
	uint64_t last_reads;   /* read_bytes of the tree */
	double last_reads_t, read_rate;
	int shown;             /* a status line is on the terminal */
};
double cli_now(void); /* CLOCK_MONOTONIC, seconds */
void cli_mon_init(struct cli_monitor *m, pid_t root, uint64_t budget, int status);
void cli_mon_tick(struct cli_monitor *m);  /* one sample (and the status) */
void cli_mon_clear(struct cli_monitor *m); /* erase the status line */

/* report.c: what bypass run prints when the program has ended. */
struct cli_run_facts {
	int batch, pager;          /* the preloads given */
	uint64_t budget;           /* --pager SIZE, bytes */
	const char *swap;          /* swap=PATH, or NULL */
	double wall_s;             /* the program's run, seconds */
	uint64_t largest_rss;      /* getrusage(RUSAGE_CHILDREN) high-water mark */
	const struct cli_monitor *mon;
};
/* Print the summary of the counters in stats_path (from byte offset from)
 * to out.  Returns the number of processes whose counters were read. */
int cli_report(FILE *out, const char *stats_path, long from, const struct cli_run_facts *f);

#endif
