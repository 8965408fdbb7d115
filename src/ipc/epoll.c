/* SPDX-License-Identifier: MIT */
/*
 * epoll compatibility: bypass_ipc_epoll_ctl registers a connection with an
 * epoll instance, bypass_ipc_epoll_wait reports ready connections and ordinary
 * descriptors together.
 *
 * Each connection's handshake socket sits in the kernel's epoll set with a
 * registration record as its data; it becomes readable when the peer hangs
 * up, or when the peer sends a wake byte because we armed the connection
 * before sleeping.  The peer's pidfd sits there too (data: the record's
 * address + 1): it says the peer died even when a child it forked keeps the
 * socket open.  While connections have messages, bypass_ipc_epoll_wait finds
 * them in shared memory without a system call (and polls the kernel for the
 * ordinary descriptors at most every POLL_NS); when nothing is ready it
 * spins for the connections' budget, arms them, and sleeps in epoll_wait.
 *
 * Our events are told apart from the application's by their data: the
 * address of one of our registration records for that epfd.
 */
#include "ipc/ipc_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POLL_NS 50000ull

struct ipc_epreg {
	bypass_ipc_conn *conn;
	struct ipc_epset *set;
	uint32_t events;
	epoll_data_t data;
	unsigned seen;          /* generation in which it was last reported */
};

struct ipc_epset {
	int epfd;
	struct ipc_epreg **regs;
	size_t n, cap;
	uint64_t next_kpoll;    /* TSC of the next kernel poll while busy */
	size_t cursor;          /* where the next scan starts */
	unsigned gen;
	struct ipc_epset *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ipc_epset *sets;

static struct ipc_epset *find_set(int epfd)
{
	for (struct ipc_epset *s = sets; s; s = s->next)
		if (s->epfd == epfd)
			return s;
	return NULL;
}

static void drop_set_if_empty(struct ipc_epset *s)
{
	if (s->n)
		return;
	for (struct ipc_epset **p = &sets; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	free(s->regs);
	free(s);
}

/* Take c's descriptors out of the kernel's set epfd. */
static void kernel_del(int epfd, bypass_ipc_conn *c)
{
	bp_sys_epoll_ctl(epfd, EPOLL_CTL_DEL, c->sock, NULL);
	if (c->pidfd >= 0)
		bp_sys_epoll_ctl(epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
}

static void unlink_reg(struct ipc_epreg *g)
{
	struct ipc_epset *s = g->set;
	for (size_t i = 0; i < s->n; i++)
		if (s->regs[i] == g) {
			s->regs[i] = s->regs[--s->n];
			break;
		}
	g->conn->ep = NULL;
	drop_set_if_empty(s);
	free(g);
}

void bp_ipc_epoll_forget(bypass_ipc_conn *c)
{
	pthread_mutex_lock(&lock);
	struct ipc_epreg *g = c->ep;
	if (g) {
		if (c->fork_gen == bp_fork_gen_fast())
			kernel_del(g->set->epfd, c);
		unlink_reg(g);
	}
	pthread_mutex_unlock(&lock);
}

#define OK_EVENTS (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)

int bypass_ipc_epoll_ctl(int epfd, int op, bypass_ipc_conn *c, struct epoll_event *ev)
{
	if (epfd < 0 || !c)
		return -EINVAL;
	if (c->fork_gen != bp_fork_gen_fast())
		return -EBADF;
	if (op != EPOLL_CTL_DEL) {
		if (!ev)
			return -EINVAL;
		if (ev->events & (EPOLLOUT | EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE))
			return -EOPNOTSUPP;
		if (ev->events & ~(uint32_t)(OK_EVENTS | EPOLLPRI))
			return -EINVAL;
	}
	int r = 0;
	pthread_mutex_lock(&lock);
	struct ipc_epreg *g = c->ep;
	switch (op) {
	case EPOLL_CTL_ADD: {
		if (g) {
			r = -EEXIST;
			break;
		}
		struct ipc_epset *s = find_set(epfd);
		bool fresh = false;
		if (!s) {
			s = calloc(1, sizeof(*s));
			if (!s) {
				r = -ENOMEM;
				break;
			}
			s->epfd = epfd;
			s->next = sets;
			sets = s;
			fresh = true;
		}
		g = calloc(1, sizeof(*g));
		if (g && s->n == s->cap) {
			/* On failure the table stays as it was. */
			size_t cap = s->cap ? 2 * s->cap : 8;
			struct ipc_epreg **regs = realloc(s->regs, cap * sizeof(*regs));
			if (regs) {
				s->regs = regs;
				s->cap = cap;
			}
		}
		if (!g || s->n == s->cap) {
			free(g);
			if (fresh)
				drop_set_if_empty(s);
			r = -ENOMEM;
			break;
		}
		struct epoll_event kev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = g };
		struct epoll_event pev = { .events = EPOLLIN, .data.ptr = (char *)g + 1 };
		if (bp_sys_epoll_ctl(epfd, EPOLL_CTL_ADD, c->sock, &kev) < 0) {
			r = -errno;
		} else if (c->pidfd >= 0 &&
			   bp_sys_epoll_ctl(epfd, EPOLL_CTL_ADD, c->pidfd, &pev) < 0) {
			r = -errno;
			bp_sys_epoll_ctl(epfd, EPOLL_CTL_DEL, c->sock, NULL);
		}
		if (r) {
			free(g);
			if (fresh)
				drop_set_if_empty(s);
			break;
		}
		g->conn = c;
		g->set = s;
		g->events = ev->events;
		g->data = ev->data;
		s->regs[s->n++] = g;
		c->ep = g;
		break;
	}
	case EPOLL_CTL_MOD:
		if (!g || g->set->epfd != epfd) {
			r = -ENOENT;
			break;
		}
		g->events = ev->events;
		g->data = ev->data;
		break;
	case EPOLL_CTL_DEL:
		if (!g || g->set->epfd != epfd) {
			r = -ENOENT;
			break;
		}
		kernel_del(epfd, c);
		unlink_reg(g);
		break;
	default:
		r = -EINVAL;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* The registration an event's data names (*pid: the pidfd's), or NULL. */
static struct ipc_epreg *our_reg(struct ipc_epset *s, void *p, bool *pid)
{
	uintptr_t v = (uintptr_t)p;
	*pid = v & 1;
	v &= ~(uintptr_t)1;
	for (size_t i = 0; i < s->n; i++)
		if ((uintptr_t)s->regs[i] == v)
			return s->regs[i];
	return NULL;
}

/* Is g to report: a message waits (if it asked for EPOLLIN), or its peer is
 * gone or the connection broken (always, like epoll's EPOLLHUP)? */
static bool reg_ready(struct ipc_epreg *g, bool arm)
{
	bypass_ipc_conn *c = g->conn;
	if (g->events & EPOLLIN)
		return bp_ipc_poll_ready(c, arm) == 1;
	return c->peer_gone || c->broken;
}

static uint32_t conn_events(struct ipc_epreg *g)
{
	bypass_ipc_conn *c = g->conn;
	uint32_t e = g->events & EPOLLIN;
	if (c->broken)
		e |= EPOLLERR;
	if (c->peer_gone || c->broken)
		e |= EPOLLHUP | (g->events & EPOLLRDHUP);
	return e;
}

/* Report g in *e if it is ready and not reported yet in this call (with
 * arm, arm it unless it is ready); returns 1 if it was reported. */
static int report(struct ipc_epset *s, struct ipc_epreg *g, bool arm,
		  struct epoll_event *e)
{
	if (g->seen == s->gen || !reg_ready(g, arm))
		return 0;
	g->seen = s->gen;
	e->events = conn_events(g);
	e->data = g->data;
	return 1;
}

/*
 * Report ready connections into ev[n..max) (arming the others, with arm);
 * returns the new n.  Each scan starts after the last connection reported
 * (epoll moves a reported descriptor to the back of its ready list): with
 * more ready connections than max, one that is always ready cannot starve
 * the others.
 */
static int scan(struct ipc_epset *s, struct epoll_event *ev, int n, int max, bool arm)
{
	size_t cnt = s->n;
	for (size_t j = 0; j < cnt && n < max; j++) {
		size_t i = (s->cursor + j) % cnt;
		if (report(s, s->regs[i], arm, &ev[n])) {
			s->cursor = i + 1;
			n++;
		}
	}
	return n;
}

static void disarm_all(struct ipc_epset *s)
{
	for (size_t i = 0; i < s->n; i++)
		bp_ipc_disarm(s->regs[i]->conn);
}

/* Translate the kernel's events in place: ours become the connection's
 * (or vanish if spurious), the application's pass through. */
static int translate(struct ipc_epset *s, struct epoll_event *ev, int k)
{
	int n = 0;
	for (int i = 0; i < k; i++) {
		bool pid;
		struct ipc_epreg *g = our_reg(s, ev[i].data.ptr, &pid);
		if (!g) {
			ev[n++] = ev[i];
			continue;
		}
		bypass_ipc_conn *c = g->conn;
		if (pid || (ev[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
			c->peer_gone = true;
		bp_ipc_drain_socket(c);
		bp_ipc_disarm(c);
		n += report(s, g, false, &ev[n]); /* ev[i] is read: n <= i */
	}
	return n;
}

static int kpoll(int epfd, struct epoll_event *ev, int max, int timeout_ms)
{
	int k;
	do
		k = bp_sys_epoll_wait(epfd, ev, max, timeout_ms);
	while (k < 0 && errno == EINTR && timeout_ms == 0);
	return k < 0 ? -errno : k;
}

int bypass_ipc_epoll_wait(int epfd, struct epoll_event *ev, int max, int64_t timeout_ns)
{
	if (epfd < 0 || !ev || max <= 0 || timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	uint64_t deadline = bp_deadline(timeout_ns);
	pthread_mutex_lock(&lock);
again:;
	struct ipc_epset *s = find_set(epfd);
	if (!s) {
		pthread_mutex_unlock(&lock);
		return kpoll(epfd, ev, max, bp_deadline_ms(deadline));
	}
	s->gen++;
	uint64_t t0 = bypass_rdtscp(NULL);
	uint64_t poll_cycles = bp_ns_to_cycles(POLL_NS);
	/* The spin budget: the longest of the connections' modes. */
	uint64_t spin = 0;
	bool forever = false;
	for (size_t i = 0; i < s->n; i++) {
		bypass_ipc_conn *c = s->regs[i]->conn;
		if (c->mode == BYPASS_WAIT_SPIN)
			forever = true;
		else if (c->mode == BYPASS_WAIT_ADAPTIVE && c->spin_cycles > spin &&
			 bp_ipc_poll_peer_elsewhere(c))
			spin = c->spin_cycles;
	}
	int n;
	uint64_t now = t0;
	for (unsigned iter = 0;; iter++) {
		n = 0;
		if (iter && !(iter & 15))
			now = bypass_rdtscp(NULL);
		if (now >= s->next_kpoll) {
			/* Ordinary descriptors: at least every POLL_NS while busy,
			 * and first, so that connections filling max cannot
			 * crowd them out. */
			s->next_kpoll = now + poll_cycles;
			pthread_mutex_unlock(&lock);
			int k = kpoll(epfd, ev, max, 0);
			pthread_mutex_lock(&lock);
			s = find_set(epfd);
			if (k < 0) {
				pthread_mutex_unlock(&lock);
				return k;
			}
			n = s ? translate(s, ev, k) : k;
		}
		if (s)
			n = scan(s, ev, n, max, false);
		if (n || !s || timeout_ns == 0)
			break;
		if (!forever && now - t0 >= spin)
			break;
		if (bp_deadline_passed(deadline))
			break;
		bp_cpu_relax();
	}
	if (n || !s || timeout_ns == 0) {
		pthread_mutex_unlock(&lock);
		return n;
	}
	/* Nothing: arm every connection, then sleep in the kernel. */
	n = scan(s, ev, 0, max, true);
	if (n) {
		disarm_all(s);
		pthread_mutex_unlock(&lock);
		return n;
	}
	pthread_mutex_unlock(&lock);
	int k = kpoll(epfd, ev, max, bp_deadline_ms(deadline));
	pthread_mutex_lock(&lock);
	s = find_set(epfd);
	if (k < 0) {
		if (s)
			disarm_all(s);
		pthread_mutex_unlock(&lock);
		return k;
	}
	if (s) {
		s->gen++;
		n = translate(s, ev, k);
		disarm_all(s);
		n = scan(s, ev, n, max, false);
	} else {
		n = k;
	}
	/* Woken for nothing (a late wake byte, a message already read): like
	 * epoll_wait, return 0 only when the timeout has passed. */
	if (!n && bp_deadline_ms(deadline))
		goto again;
	pthread_mutex_unlock(&lock);
	return n;
}
