/* SPDX-License-Identifier: MIT */
/*
 * io_uring set-up and tear-down (see uring.h): one lock, in TSan builds
 * only, orders every ring's unmapping before a later mapping of the same
 * range.  It is a leaf: nothing else is taken while it is held.  A fork
 * child gets it free (pthread_atfork's child handler), since it may end its
 * inherited rings; there is no prepare handler, because other modules'
 * prepare handlers take the locks under which rings are ended, and taking
 * this one first would invert that order.
 */
#include "core/internal.h"
#include "core/uring.h"

#include <pthread.h>
#include <string.h>

#if BP_TSAN
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void give(void)
{
	pthread_mutex_unlock(&lock);
}

static void child(void)
{
	pthread_mutex_init(&lock, NULL);
}

static void setup(void)
{
	pthread_atfork(NULL, NULL, child);
}

static void enter(void)
{
	pthread_once(&once, setup);
	pthread_mutex_lock(&lock);
}
#else
static void enter(void)
{
}

static void give(void)
{
}
#endif

int bp_uring_init(unsigned entries, struct io_uring *ring, struct io_uring_params *p)
{
	struct io_uring_params none;
	if (!p) {
		memset(&none, 0, sizeof(none));
		p = &none;
	}
	enter();
	int r = io_uring_queue_init_params(entries, ring, p);
	give();
	return r;
}

void bp_uring_exit(struct io_uring *ring)
{
	enter();
	io_uring_queue_exit(ring);
	give();
}
