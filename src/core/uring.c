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

#include <stdatomic.h>

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

/*
 * The library's rings' descriptors, process-wide (bp_uring_fds): a
 * preload keeps a program's close, close_range and dup2 off them.  A
 * table of slots taken and freed with atomics; a ring beyond it is not
 * listed (never seen: a pager has a dozen at most).
 */
#define URING_FDS 256
static _Atomic int uring_fds[URING_FDS]; /* fd + 1; 0: free */
static _Atomic unsigned uring_top;        /* slots ever used: the scan's end */

static void fd_note(int fd, bool add)
{
	for (unsigned i = 0; i < URING_FDS; i++) {
		int want = add ? 0 : fd + 1;
		if (atomic_load_explicit(&uring_fds[i], memory_order_relaxed) != want ||
		    !atomic_compare_exchange_strong(&uring_fds[i], &want, add ? fd + 1 : 0))
			continue;
		unsigned top = atomic_load(&uring_top);
		while (add && top < i + 1 && !atomic_compare_exchange_weak(&uring_top, &top, i + 1))
			;
		return;
	}
}

int bp_uring_fds(int *out, int max)
{
	int n = 0;
	unsigned top = atomic_load(&uring_top);
	for (unsigned i = 0; i < top && i < URING_FDS; i++) {
		int v = atomic_load_explicit(&uring_fds[i], memory_order_relaxed);
		if (!v)
			continue;
		if (n < max)
			out[n] = v - 1;
		n++;
	}
	return n;
}

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
	if (r >= 0)
		fd_note(ring->ring_fd, true);
	return r;
}

void bp_uring_exit(struct io_uring *ring)
{
	int fd = ring->ring_fd;
	enter();
	io_uring_queue_exit(ring);
	give();
	fd_note(fd, false);
}
