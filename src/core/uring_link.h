/* SPDX-License-Identifier: MIT */
/*
 * Linked io_uring chains, for every module that sends one (syslet now;
 * batch's per-descriptor chains are the same thing).
 *
 * A chain must sit in the submission queue whole: entries linked across two
 * io_uring_enter calls lose the link.  bp_link_room() says whether n more
 * entries fit (the caller submits what is queued first when they do not);
 * bp_link_next() hands out the chain's next entry and links the previous one
 * to it.  Links are set after the previous entry was prepared, because
 * liburing's prep helpers clear sqe->flags.
 */
#ifndef BYPASS_CORE_URING_LINK_H
#define BYPASS_CORE_URING_LINK_H

#include <errno.h>
#include <liburing.h>

struct bp_link {
	struct io_uring *ring;
	struct io_uring_sqe *prev;
	unsigned count;
};

/*
 * 1 if n entries fit in the submission queue now, 0 if the caller must
 * submit first, -E2BIG if a chain of n can never fit in this ring.
 */
static inline int bp_link_room(struct io_uring *ring, unsigned n)
{
	if (n > ring->sq.ring_entries)
		return -E2BIG;
	return io_uring_sq_space_left(ring) >= n;
}

static inline void bp_link_begin(struct bp_link *l, struct io_uring *ring)
{
	l->ring = ring;
	l->prev = NULL;
	l->count = 0;
}

/*
 * The chain's next entry (NULL if the queue is full: check bp_link_room
 * first).  link is how the previous entry hands over to this one:
 * IOSQE_IO_LINK (the chain stops, -ECANCELED for the rest, if the previous
 * one fails or, for a read or write, comes up short) or IOSQE_IO_HARDLINK
 * (it goes on whatever the result); ignored for the first entry.
 */
static inline struct io_uring_sqe *bp_link_next(struct bp_link *l, unsigned link)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(l->ring);
	if (!sqe)
		return NULL;
	if (l->prev)
		l->prev->flags |= link;
	l->prev = sqe;
	l->count++;
	return sqe;
}

#endif
