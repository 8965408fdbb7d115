/* SPDX-License-Identifier: MIT */
/*
 * What a service's clients may hold of the server's memory and descriptors.
 *
 * Each connection costs the server three descriptors and an arena of
 * 2 * ring_size + 2 pages.  A service counts, per client process and per
 * client uid, the connections that are open, and refuses more than
 * max_per_pid / max_per_uid.
 *
 * The arena's memfd is in the client's hands too: a client that keeps it
 * (or maps it and keeps the mapping) after the server closed would keep the
 * pages the server faulted in.  So when the server closes a connection
 * whose client has already left, it punches every page out of the memfd
 * (allowed: the seals forbid shrinking and growing, not punching holes);
 * the client then holds only holes, and what it faults in is charged to
 * it.  When the client is still connected it may still read what was sent,
 * so the connection "lingers": the service keeps its socket and a memfd
 * descriptor, counts it against the client's limits, and punches it once
 * the client hangs up (checked at every accept).  Closing the service stops
 * the tracking: lingering arenas are released to their clients unpunched.
 * A connection whose socket the application got from bypass_ipc_fd never
 * lingers: the application may have put it in its own epoll set, and a
 * socket kept open there would report events for a connection it freed.
 *
 * One lock per service; conns hold a reference so that they may be closed
 * after the service (or from other threads than the accepting one).
 */
#include "ipc/ipc_internal.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_PER_PID 64u
#define DEFAULT_PER_UID 1024u

struct qent {
	uint64_t id;
	pid_t pid;
	uid_t uid;
	int sock;       /* lingering: the connection's socket, else -1 */
	int memfd;      /* lingering: the arena's memfd, else -1 */
	size_t len;
};

struct bp_ipc_quota {
	pthread_mutex_t mu;
	unsigned refs;
	bool open;              /* the service is still there */
	uint32_t max_pid, max_uid;
	uint64_t next_id;
	struct qent *e;
	size_t n, cap;
};

struct bp_ipc_quota *bp_ipc_quota_new(uint32_t max_pid, uint32_t max_uid)
{
	struct bp_ipc_quota *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	pthread_mutex_init(&q->mu, NULL);
	q->refs = 1;
	q->open = true;
	q->max_pid = max_pid ? max_pid : DEFAULT_PER_PID;
	q->max_uid = max_uid ? max_uid : DEFAULT_PER_UID;
	return q;
}

static void punch(int memfd, size_t len)
{
	if (len && fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)len) < 0)
		bp_info("bypass: ipc: freeing a closed connection's arena: %s",
			strerror(errno));
}

/* Remove entry i (under the lock); punch its arena first if asked. */
static void drop(struct bp_ipc_quota *q, size_t i, bool do_punch)
{
	struct qent *e = &q->e[i];
	if (e->memfd >= 0) {
		if (do_punch)
			punch(e->memfd, e->len);
		bp_sys_close(e->memfd);
	}
	if (e->sock >= 0)
		bp_sys_close(e->sock);
	q->e[i] = q->e[--q->n];
}

static bool hung_up(short revents)
{
	return revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL);
}

/* Punch and forget the lingering arenas whose client has gone. */
static void sweep(struct bp_ipc_quota *q)
{
	size_t k = 0;
	for (size_t i = 0; i < q->n; i++)
		k += q->e[i].sock >= 0;
	if (!k)
		return;
	struct pollfd *p = calloc(k, sizeof(*p));
	if (!p)
		return;
	size_t j = 0;
	for (size_t i = 0; i < q->n; i++)
		if (q->e[i].sock >= 0)
			p[j++] = (struct pollfd){ .fd = q->e[i].sock, .events = POLLRDHUP };
	if (bp_sys_poll(p, (nfds_t)k, 0) > 0) {
		for (size_t m = 0; m < k; m++) {
			if (!hung_up(p[m].revents))
				continue;
			for (size_t i = 0; i < q->n; i++) {
				if (q->e[i].sock == p[m].fd) {
					drop(q, i, true);
					break;
				}
			}
		}
	}
	free(p);
}

int bp_ipc_quota_admit(struct bp_ipc_quota *q, pid_t pid, uid_t uid, uint64_t *id)
{
	pthread_mutex_lock(&q->mu);
	sweep(q);
	uint32_t np = 0, nu = 0;
	for (size_t i = 0; i < q->n; i++) {
		np += q->e[i].pid == pid;
		nu += q->e[i].uid == uid;
	}
	int r = 0;
	if ((q->max_pid != UINT32_MAX && np >= q->max_pid) ||
	    (q->max_uid != UINT32_MAX && nu >= q->max_uid)) {
		bp_info("bypass: ipc: pid %d uid %u holds %u / %u connections: refused",
			(int)pid, (unsigned)uid, np, nu);
		r = -EUSERS;
	} else if (q->n == q->cap) {
		size_t nc = q->cap ? 2 * q->cap : 16;
		struct qent *ne = realloc(q->e, nc * sizeof(*ne));
		if (!ne)
			r = -ENOMEM;
		else {
			q->e = ne;
			q->cap = nc;
		}
	}
	if (!r) {
		*id = ++q->next_id;
		q->e[q->n++] = (struct qent){ .id = *id, .pid = pid, .uid = uid,
					      .sock = -1, .memfd = -1 };
		q->refs++;
	}
	pthread_mutex_unlock(&q->mu);
	return r;
}

static void unref_locked(struct bp_ipc_quota *q)
{
	if (--q->refs) {
		pthread_mutex_unlock(&q->mu);
		return;
	}
	for (size_t i = q->n; i-- > 0;)
		drop(q, i, false);
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_destroy(&q->mu);
	free(q->e);
	free(q);
}

void bp_ipc_quota_leave(struct bp_ipc_quota *q, uint64_t id, int *sock, int memfd,
			size_t len, bool gone, bool may_linger)
{
	pthread_mutex_lock(&q->mu);
	size_t i;
	for (i = 0; i < q->n && q->e[i].id != id; i++)
		;
	if (!gone && *sock >= 0) {
		struct pollfd p = { .fd = *sock, .events = POLLRDHUP };
		gone = bp_sys_poll(&p, 1, 0) > 0 && hung_up(p.revents);
	}
	if (gone && memfd >= 0)
		punch(memfd, len);
	if (i < q->n) {
		int dup = -1;
		if (!gone && may_linger && q->open && *sock >= 0 && memfd >= 0)
			dup = bp_sys_fcntl(memfd, F_DUPFD_CLOEXEC, 0);
		if (dup >= 0) {
			/* Linger: tell the client (it reads what is left, then
			 * sees the end), keep counting it until it leaves. */
			bp_sys_shutdown(*sock, SHUT_WR);
			q->e[i].sock = *sock;
			q->e[i].memfd = dup;
			q->e[i].len = len;
			*sock = -1;
		} else {
			drop(q, i, false);
		}
	}
	unref_locked(q);
}

void bp_ipc_quota_close(struct bp_ipc_quota *q)
{
	pthread_mutex_lock(&q->mu);
	sweep(q);
	q->open = false;
	/* Release the lingering arenas to their clients, uncounted. */
	for (size_t i = q->n; i-- > 0;)
		if (q->e[i].sock >= 0)
			drop(q, i, false);
	unref_locked(q);
}
