/* SPDX-License-Identifier: MIT */
/*
 * options: who reads the environment.  The library reads none of the
 * BYPASS_BATCH_* variables: a program's queue has the defaults or what
 * bypass_batch_configure gave, whatever the environment says.  The
 * preload's settings (preload/batch/settings.c, driven here in-process)
 * read them and pass the ring's to bypass_batch_configure, the others to
 * the engine's settings; bad values fall back to the defaults; an explicit
 * bypass_batch_configure made after them wins.
 * TEST_LABELS: threads
 */
#include <bypass/batch.h>
#include <pthread.h>
#include <stdint.h>
#include <liburing.h>

#include "harness.h"
#include "batch/defer.h"

struct depth_arg {
	const struct bypass_batch_opts *opts; /* configured first, if not NULL */
	int configured;
	unsigned depth;                        /* 0: no segment could start */
};

static void *depth_thread(void *arg)
{
	struct depth_arg *a = arg;
	if (a->opts)
		a->configured = bypass_batch_configure(a->opts);
	if (bypass_batch_start())
		return NULL;
	struct bt_thread *th = bp_bt_self();
	if (th && th->ring)
		a->depth = th->ring->sq.ring_entries;
	bypass_batch_flush();
	return NULL;
}

/* A new thread's queue depth, after it configured opts (if not NULL). */
static unsigned new_thread_depth(const struct bypass_batch_opts *opts)
{
	pthread_t t;
	struct depth_arg a = { opts, -1, 0 };
	CHECK(pthread_create(&t, NULL, depth_thread, &a) == 0);
	pthread_join(t, NULL);
	if (opts)
		CHECK_ERR(a.configured, 0);
	return a.depth;
}

static void *init_thread(void *arg)
{
	(void)arg;
	bp_bt_config_init();
	return NULL;
}

static void *reread_thread(void *arg)
{
	(void)arg;
	bp_bt_config_read();
	return NULL;
}

int main(void)
{
	test_timeout(30);
	setenv("BYPASS_BATCH_ENTRIES", "16", 1);
	setenv("BYPASS_BATCH_EXIT_WAIT_MS", "123", 1);
	setenv("BYPASS_BATCH_PIPE_SIZE", "65536", 1);
	setenv("BYPASS_BATCH_MAX_COPY", "1000", 1);
	setenv("BYPASS_BATCH_SENDFILE", "sync", 1);

	/* 1. The library: the defaults, the environment notwithstanding. */
	int r = bypass_batch_start();
	if (r == -ENOSYS || r == -EPERM)
		SKIP("io_uring unavailable: %s", strerror(-r));
	CHECK_ERR(r, 0);
	CHECK_EQ(bp_bt_self()->ring->sq.ring_entries, 256);
	CHECK_EQ(bypass_batch_flush(), 0);
	CHECK_EQ(bp_bt_ecfg.exit_wait_ms, 2000);
	CHECK_EQ(bp_bt_ecfg.pipe_size, 256 * 1024);
	CHECK_EQ(new_thread_depth(NULL), 256);
	/* ... and the preload's layer without its constructor: its defaults. */
	CHECK_EQ(bp_bt_cfg.max_copy, 64 * 1024);
	CHECK_EQ(bp_bt_cfg.sendfile_mode, BT_SENDFILE_COPY);

	/* 2. An explicit option (this thread's queue exists: -EBUSY). */
	struct bypass_batch_opts o = { .entries = 32 };
	CHECK_ERR(bypass_batch_configure(&o), -EBUSY);
	CHECK_EQ(new_thread_depth(&o), 32);
	CHECK_EQ(new_thread_depth(NULL), 32);

	/* 3. The preload's settings: what it reads, passed on as options (its
	 *    constructor runs before any queue exists: here, a new thread). */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, init_thread, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_EQ(bp_bt_ecfg.entries, 16);
	CHECK_EQ(bp_bt_ecfg.exit_wait_ms, 123);
	CHECK_EQ(bp_bt_ecfg.pipe_size, 65536);
	CHECK_EQ(bp_bt_cfg.max_copy, 1000);
	CHECK_EQ(bp_bt_cfg.sendfile_mode, BT_SENDFILE_SYNC);
	CHECK_EQ(bp_bt_cfg.max_ops, 16); /* at most the depth */
	CHECK_EQ(new_thread_depth(NULL), 16);

	/* 4. An explicit option made after them wins. */
	o.entries = 64;
	CHECK_EQ(new_thread_depth(&o), 64);
	CHECK_EQ(new_thread_depth(NULL), 64);

	/* 5. Bad values: the defaults (and a warning each), read again on a
	 *    thread whose queue does not exist yet. */
	setenv("BYPASS_BATCH_ENTRIES", "7", 1);
	setenv("BYPASS_BATCH_PIPE_SIZE", "100", 1);
	setenv("BYPASS_BATCH_SENDFILE", "maybe", 1);
	setenv("BYPASS_BATCH_SQPOLL", "perhaps", 1);
	setenv("BYPASS_BATCH_CLOSE", "some", 1);
	CHECK(pthread_create(&t, NULL, reread_thread, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_EQ(bp_bt_ecfg.entries, 256);
	CHECK_EQ(bp_bt_ecfg.sqpoll, 0);
	CHECK_EQ(bp_bt_ecfg.pipe_size, 256 * 1024);
	CHECK_EQ(bp_bt_cfg.sendfile_mode, BT_SENDFILE_COPY);
	CHECK_EQ(bp_bt_cfg.defer_close, 1);
	CHECK_EQ(bp_bt_cfg.max_ops, 256);
	CHECK_EQ(new_thread_depth(NULL), 256);
	return test_pass("batch/options");
}
