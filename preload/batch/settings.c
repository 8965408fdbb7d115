/* SPDX-License-Identifier: MIT */
/*
 * The preload's settings, and the engine's, read from the environment by
 * its constructor (the library itself reads none), and the line of
 * counters it appends at exit.
 */
#include "defer.h"
#include "common/scaffold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------- configuration */

/* The defaults: what a program that drives this layer in-process (tests,
 * the bench) gets without bp_bt_config_init. */
struct bt_config bp_bt_cfg = {
	.enabled = true,
	.max_copy = 64 * 1024,
	.fd_bytes = 256 * 1024,
	.thread_bytes = 4 * 1024 * 1024,
	.max_ops = 256,
	.max_delay_ns = 1000 * 1000,
	.sendfile_mode = BT_SENDFILE_COPY,
	.sendfile_max = 4096,
	.defer_close = 1,
	.defer_sockopt = true,
	.merged_wait = true,
	.merged_linger_ns = 50 * 1000,
};
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

/*
 * The engine's settings from the environment: the ring's through
 * bypass_batch_configure (a program that calls it itself afterwards wins),
 * the others straight into the engine's settings (no thread state exists
 * yet).  Returns the ring depth.
 */
static unsigned engine_load(void)
{
	unsigned entries = (unsigned)bp_env_u64("BYPASS_BATCH_ENTRIES", 256);
	if (entries < 8 || entries > 32768 || (entries & (entries - 1))) {
		bp_warn("bypass batch: BYPASS_BATCH_ENTRIES=%u is not a power of two "
			"in 8..32768, using 256", entries);
		entries = 256;
	}
	struct bypass_batch_opts o = {
		.entries = entries,
		.flags = bp_env_bool("BYPASS_BATCH_SQPOLL", false) ? BYPASS_BATCH_SQPOLL : 0,
		.sqpoll_idle_ms = (unsigned)bp_env_u64("BYPASS_BATCH_SQPOLL_IDLE_MS", 50),
	};
	int r = bypass_batch_configure(&o);
	if (r)
		bp_warn("bypass batch: the ring's settings from the environment: %s",
			strerror(-r));
	bp_bt_ecfg.exit_wait_ms = bp_env_u64("BYPASS_BATCH_EXIT_WAIT_MS", 2000);
	size_t pipe = bp_env_u64("BYPASS_BATCH_PIPE_SIZE", 256 * 1024);
	bp_bt_ecfg.pipe_size = pipe < 8192 || pipe > (1u << 30) ? 256 * 1024 : pipe;
	return entries;
}

/* A time in microseconds from the environment, in nanoseconds: one whose
 * nanoseconds do not fit 64 bits gets the default too (with a warning), not
 * a wrapped product. */
static uint64_t env_us_ns(const char *name, uint64_t def_us)
{
	uint64_t us = bp_env_u64(name, def_us);
	if (us > UINT64_MAX / 1000) {
		bp_warn("bypass batch: ignoring %s=%s (out of range)", name, getenv(name));
		us = def_us;
	}
	return us * 1000;
}

void bp_bt_config_read(void)
{
	unsigned entries = engine_load();
	struct bt_config c = { 0 };
	c.enabled = bp_env_bool("BYPASS_BATCH", true);
	c.max_copy = bp_env_u64("BYPASS_BATCH_MAX_COPY", 64 * 1024);
	c.fd_bytes = bp_env_u64("BYPASS_BATCH_FD_BYTES", 256 * 1024);
	c.thread_bytes = bp_env_u64("BYPASS_BATCH_THREAD_BYTES", 4 * 1024 * 1024);
	if (c.fd_bytes < c.max_copy)
		c.fd_bytes = c.max_copy;
	if (c.thread_bytes < c.fd_bytes)
		c.thread_bytes = c.fd_bytes;
	c.max_ops = (unsigned)bp_env_u64("BYPASS_BATCH_MAX_OPS", entries);
	if (c.max_ops < 1 || c.max_ops > entries)
		c.max_ops = entries;
	c.max_delay_ns = env_us_ns("BYPASS_BATCH_MAX_DELAY_US", 1000);
	const char *sf = getenv("BYPASS_BATCH_SENDFILE");
	c.sendfile_mode = BT_SENDFILE_COPY;
	if (sf && !strcasecmp(sf, "sync"))
		c.sendfile_mode = BT_SENDFILE_SYNC;
	else if (sf && *sf && strcasecmp(sf, "copy"))
		bp_warn("bypass batch: ignoring BYPASS_BATCH_SENDFILE=%s (copy|sync)", sf);
	const char *cl = getenv("BYPASS_BATCH_CLOSE");
	c.sendfile_max = bp_env_u64("BYPASS_BATCH_SENDFILE_MAX", 4096);
	if (c.sendfile_max > c.max_copy)
		c.sendfile_max = c.max_copy;
	c.defer_close = 1;
	if (cl && (!strcmp(cl, "0") || !strcasecmp(cl, "off")))
		c.defer_close = 0;
	else if (cl && !strcasecmp(cl, "all"))
		c.defer_close = 2;
	else if (cl && *cl && strcasecmp(cl, "sockets") && strcmp(cl, "1"))
		bp_warn("bypass batch: ignoring BYPASS_BATCH_CLOSE=%s (0|sockets|all)", cl);
	c.defer_sockopt = bp_env_bool("BYPASS_BATCH_SOCKOPT", true);
	const char *st = getenv("BYPASS_BATCH_STATS");
	c.stats_path = st && *st ? strdup(st) : NULL;
	st = getenv("BYPASS_STATS_FILE");
	c.stats_file = st && *st ? strdup(st) : NULL;
	c.uring_sockopt = bp_bt_uring_sockopt();
	c.merged_wait = bp_env_bool("BYPASS_BATCH_MERGED_WAIT", true);
	c.merged_linger_ns = env_us_ns("BYPASS_BATCH_MERGED_LINGER_US", 50);
	c.splice = bp_env_bool("BYPASS_BATCH_SPLICE", false);
	bp_bt_cfg = c;
}

void bp_bt_config_init(void)
{
	pthread_once(&cfg_once, bp_bt_config_read);
}

/* ---------------------------------------------------------- counters at exit */

uint64_t bp_bt_from_bypass;

/*
 * One JSON object on one line: {"module": "batch", "pid": N, "why": "exit",
 * then every counter of struct bypass_batch_stats by name, then
 * "from_bypass" (defer.h)}, appended with one write to each file
 * (preload/common/scaffold.h).
 */
void bp_bt_stats_dump(const char *why)
{
	if (!bp_bt_cfg.stats_path && !bp_bt_cfg.stats_file)
		return;
	struct bt_counters c;
	bp_bt_stats_sum(&c);
	struct bp_pl_line l;
	bp_pl_line_open(&l, "batch", true);
	bp_pl_line_str(&l, "why", why);
#define FMT(name) bp_pl_line_u64(&l, #name, c.name);
	BT_COUNTERS(FMT)
#undef FMT
	bp_pl_line_u64(&l, "from_bypass",
		       __atomic_load_n(&bp_bt_from_bypass, __ATOMIC_RELAXED));
	bp_pl_line_write(&l, bp_bt_cfg.stats_path, bp_bt_cfg.stats_file);
}
