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
 * and in the install's library directory.  Returns 0 and fills buf, or
 * -ENOENT (buf then lists where it looked).
 */
int cli_find(const char *name, char *buf, size_t len);

#endif
