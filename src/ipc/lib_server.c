/* SPDX-License-Identifier: MIT */
/*
 * Library mode, the server: load the service object, build its state in a
 * service arena, hand the arena and the object to library-mode openers,
 * serve message-mode calls with the same handlers, and receive the events
 * handlers post.
 *
 * Two sockets: message-mode clients connect to the service's name (an
 * ordinary bypass_ipc service: rings per connection), library-mode openers
 * to the socket beside it (bp_ipc_make_addr(name, true)), where the server
 * sends a hello with three descriptors (the arena's memfd, the object, the
 * eventfd that wakes its loop) and hangs up.  One epoll instance holds both
 * sockets and the eventfd: bypass_ipc_lib_service_fd.
 */
#include "ipc/lib.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct bypass_ipc_lib_service {
	struct lib_core lc;         /* first: handlers' env */
	bypass_ipc_service *msg;    /* message mode */
	int lsock;                  /* library-mode openers */
	char lpath[108];            /* its file-system path, or "" */
	int epfd;
	int objfd;
	uint64_t obj_dev, obj_ino;  /* objfd's (the hello's, never the arena's copy) */
	unsigned flags;
	uid_t *allow;
	unsigned nallow;
	pid_t creator;
	size_t max_req;             /* message mode: the largest request */
};

#define OPT_FLAGS (BYPASS_IPC_ANY_UID | BYPASS_IPC_LIB_FALLBACK | BYPASS_IPC_LIB_MESSAGE | \
		   BYPASS_IPC_LIB_NOREAD | BYPASS_IPC_LIB_ALLOW_WRPKRU)

int bp_ipc_lib_check_opts(const struct bypass_ipc_lib_opts *o)
{
	if (!o)
		return 0;
	if (o->protect < BYPASS_IPC_PROTECT_AUTO || o->protect > BYPASS_IPC_PROTECT_NONE)
		return -EINVAL;
	if (o->flags & ~OPT_FLAGS)
		return -EINVAL;
	for (size_t i = 0; i < BP_ARRAY_SIZE(o->reserved); i++)
		if (o->reserved[i])
			return -EINVAL;
	if ((o->nallow && !o->allow_uids) || o->nallow > 1024)
		return -EINVAL;
	if (o->handshake_timeout_ns < 0 || o->call_timeout_ns < 0)
		return -EINVAL;
	if (o->arena_size > (1ull << 40))
		return -EINVAL;
	return 0;
}

/* Whether this side runs the gate: 1 yes, 0 no, -EOPNOTSUPP. */
int bp_ipc_lib_want_gate(const struct bypass_ipc_lib_opts *o)
{
	int p = o ? o->protect : BYPASS_IPC_PROTECT_AUTO;
	if (p == BYPASS_IPC_PROTECT_NONE)
		return 0;
	if (bp_ipc_lib_key() >= 0)
		return 1;
	if (p == BYPASS_IPC_PROTECT_REQUIRED) {
		bp_info("bypass: ipc: protection keys required, absent: %s",
			bp_ipc_lib_key_reason());
		return -EOPNOTSUPP;
	}
	return 0;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Create the arena, lay out the control block and start the liveness
 * thread. */
static int make_arena(struct bypass_ipc_lib_service *s, const struct bypass_ipc_lib_opts *o,
		      const struct stat *st)
{
	struct lib_core *lc = &s->lc;
	const struct bypass_ipc_lib_desc *d = lc->desc;
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t heap = o && o->arena_size ? o->arena_size
			: d->arena_size ? d->arena_size : LIB_DEFAULT_ARENA;
	uint32_t slots = o && o->event_slots ? o->event_slots : LIB_DEFAULT_SLOTS;
	if (slots == UINT32_MAX)
		slots = 0;
	if (slots > (1u << 20) || heap > (1ull << 40))
		return -EINVAL;
	heap = round_up(heap, ps);
	uint64_t ev_at = round_up(sizeof(struct lib_ctl), BP_CACHELINE);
	uint64_t ctl_len = round_up(ev_at + (uint64_t)slots * sizeof(struct bypass_ipc_event), ps);
	struct bypass_arena_opts ao = { .size = ps + ctl_len + heap, .name = "bypass-ipc-lib" };
	int r = bypass_arena_create(&ao, &lc->arena);
	if (r)
		return r;
	bp_sys_fcntl(bypass_arena_fd(lc->arena), F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SEAL);
	void *cp, *hp;
	if ((r = bypass_arena_alloc(lc->arena, ctl_len, ps, &cp)) ||
	    (r = bypass_arena_alloc(lc->arena, heap, ps, &hp)))
		return r;
	lc->base = (uintptr_t)bypass_arena_base(lc->arena);
	lc->size = bypass_arena_size(lc->arena);
	struct lib_ctl *c = cp;
	lc->ctl = c;
	c->version = LIB_VERSION;
	c->nops = d->nops;
	c->dev = (uint64_t)st->st_dev;
	c->ino = (uint64_t)st->st_ino;
	c->heap_off = (uintptr_t)hp - lc->base;
	c->heap_end = c->heap_off + heap;
	c->brk = c->heap_off;
	c->ev_off = (uintptr_t)cp - lc->base + ev_at;
	c->ev_slots = slots;
	snprintf(c->name, sizeof(c->name), "%s", d->name ? d->name : "(unnamed)");
	bp_ipc_lib_layout(lc, c);
	/* The locks are words, zero (free) in a new arena; the liveness
	 * word is the liveness thread's. */
	if ((r = bp_ipc_lib_live_start(&c->live, &lc->live)))
		return r;
	atomic_store_explicit((_Atomic uint64_t *)&c->magic, LIB_MAGIC, memory_order_release);
	return 0;
}

/* Closed: every call answers -EPIPE from now on. */
static void release_live(struct bypass_ipc_lib_service *s)
{
	struct lib_ctl *c = s->lc.ctl;
	if (!c || s->creator != bp_pid())
		return; /* a forked child: the parent's thread keeps the word */
	atomic_fetch_or(&c->broken, LIB_CLOSED);
	bp_ipc_lib_live_stop(s->lc.live);
	s->lc.live = NULL;
}

static void service_free(struct bypass_ipc_lib_service *s)
{
	release_live(s);
	if (s->msg)
		bypass_ipc_service_close(s->msg);
	if (s->lsock >= 0)
		bp_sys_close(s->lsock);
	if (s->lpath[0] && s->creator == bp_pid())
		unlink(s->lpath);
	if (s->epfd >= 0)
		bp_sys_close(s->epfd);
	if (s->lc.evfd >= 0)
		bp_sys_close(s->lc.evfd);
	if (s->objfd >= 0)
		bp_sys_close(s->objfd);
	bp_ipc_lib_unload(&s->lc);
	if (s->lc.map)
		bp_ipc_lib_map_put(s->lc.map);
	else if (s->lc.arena)
		bypass_arena_close(s->lc.arena);
	free(s->allow);
	free(s);
}

static int listen_lib(struct bypass_ipc_lib_service *s, const char *name)
{
	struct sockaddr_un sa;
	bool is_path;
	int alen = bp_ipc_make_addr(name, true, &sa, &is_path);
	if (alen < 0)
		return alen;
	s->lsock = bp_sys_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lsock < 0)
		return -errno;
	int r = bp_ipc_bind(s->lsock, &sa, alen, is_path);
	if (r)
		return r;
	if (bp_sys_listen(s->lsock, 128) < 0)
		return -errno;
	if (is_path)
		snprintf(s->lpath, sizeof(s->lpath), "%s", sa.sun_path);
	return 0;
}

static int epoll_add(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	return bp_sys_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int bypass_ipc_lib_listen(const char *name, const char *path, const struct bypass_ipc_lib_opts *o,
			  bypass_ipc_lib_service **out)
{
	if (!out || !name || !path)
		return -EINVAL;
	int r = bp_ipc_lib_check_opts(o);
	if (r)
		return r;
	int gate = bp_ipc_lib_want_gate(o);
	if (gate < 0)
		return gate;
	struct bypass_ipc_lib_service *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lsock = s->epfd = s->objfd = s->lc.evfd = -1;
	s->creator = bp_pid();
	s->flags = o ? o->flags : 0;
	if (o && o->nallow) {
		s->allow = malloc(o->nallow * sizeof(uid_t));
		if (!s->allow) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(s->allow, o->allow_uids, o->nallow * sizeof(uid_t));
		s->nallow = o->nallow;
	}
	bool allow_wrpkru = s->flags & BYPASS_IPC_LIB_ALLOW_WRPKRU;
	s->objfd = bp_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (s->objfd < 0) {
		r = -errno;
		goto fail;
	}
	struct stat st;
	if ((r = bp_ipc_lib_check_object(s->objfd, geteuid(), allow_wrpkru)))
		goto fail;
	/* What the server and every client run: a sealed copy (lib_object.c),
	 * scanned again (the file may have changed while it was copied). */
	int copy;
	r = bp_ipc_lib_object_copy(s->objfd, &copy);
	if (r == 0) {
		bp_sys_close(s->objfd);
		s->objfd = copy;
		if ((r = bp_ipc_lib_check_object(s->objfd, geteuid(), allow_wrpkru)))
			goto fail;
	} else if (r == -EACCES || r == -EPERM) {
		bp_warn("bypass: ipc: %s: memfds may not be executable here: clients get the "
			"object's file itself, which a rewrite in place would reach", path);
	} else {
		goto fail;
	}
	if (bp_sys_fstat(s->objfd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	s->obj_dev = (uint64_t)st.st_dev;
	s->obj_ino = (uint64_t)st.st_ino;
	struct lib_core *lc = &s->lc;
	lc->server = true;
	lc->pkru_ok = bp_ipc_lib_pkru_ok();
	lc->landing = bp_ipc_lib_landing_ok();
	bp_ipc_lib_env_init(lc);
	if ((r = bp_ipc_lib_load(lc, s->objfd, allow_wrpkru)) || (r = make_arena(s, o, &st)))
		goto fail;
	struct lib_ctl *c = lc->ctl;
	if (gate && (r = bp_ipc_lib_guard((void *)(lc->base + lc->heap_off),
					  lc->heap_end - lc->heap_off)))
		goto fail;
	lc->guarded = gate;
	if (gate && (s->flags & BYPASS_IPC_LIB_NOREAD))
		bp_ipc_lib_noread();
	if ((r = bp_ipc_lib_map_adopt(lc->arena, gate, &lc->map)))
		goto fail;
	lc->owner = &lc->map->owner;
	lc->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (lc->evfd < 0) {
		r = -errno;
		goto fail;
	}
	if ((r = bp_ipc_lib_run_init(lc)))
		goto fail;
	if (lc->state) {
		uintptr_t p = (uintptr_t)lc->state;
		if (p < lc->base + lc->heap_off || p >= lc->base + lc->heap_end) {
			bp_warn("bypass: ipc: service %s: init set a state outside the arena",
				lc->name);
			r = -EINVAL;
			goto fail;
		}
		c->state_off = p - lc->base;
	}
	struct bypass_ipc_opts mo = { .allow_uids = s->allow, .nallow = s->nallow,
				      .flags = s->flags & BYPASS_IPC_ANY_UID };
	if ((r = bypass_ipc_listen(name, o && o->msg ? o->msg : &mo, &s->msg)) ||
	    (r = listen_lib(s, name)))
		goto fail;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		r = -errno;
		goto fail;
	}
	if ((r = epoll_add(s->epfd, bypass_ipc_service_fd(s->msg))) ||
	    (r = epoll_add(s->epfd, s->lsock)) || (r = epoll_add(s->epfd, lc->evfd)))
		goto fail;
	bp_ipc_lib_core_add(&s->lc);
	*out = s;
	return 0;
fail:
	service_free(s);
	return r;
}

int bypass_ipc_lib_service_fd(const bypass_ipc_lib_service *s)
{
	return s ? s->epfd : -EINVAL;
}

static bool foreign(const bypass_ipc_lib_service *s)
{
	return s->creator != bp_pid();
}

/* Hand a library-mode opener the arena, the object and the eventfd. */
static int admit(struct bypass_ipc_lib_service *s, int fd)
{
	struct lib_core *lc = &s->lc;
	struct lib_hello h = { .magic = LIB_MAGIC, .version = LIB_VERSION };
	struct ucred uc;
	socklen_t l = sizeof(uc);
	int r;
	if (bp_sys_getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0) {
		r = -errno;
		bp_sys_close(fd);
		return r;
	}
	if (!bp_ipc_uid_allowed(uc.uid, s->flags, s->allow, s->nallow)) {
		bp_info("bypass: ipc: library mode refused to pid %d uid %u", (int)uc.pid,
			(unsigned)uc.uid);
		h.status = EACCES;
		bypass_send_fds(fd, NULL, 0, &h, sizeof(h));
		bp_sys_close(fd);
		return -EACCES;
	}
	h.base = lc->base;
	h.size = lc->size;
	h.ctl_off = (uintptr_t)lc->ctl - lc->base;
	h.dev = s->obj_dev;
	h.ino = s->obj_ino;
	h.nops = lc->nops;
	int fds[3] = { bypass_arena_fd(lc->arena), s->objfd, lc->evfd };
	r = bypass_send_fds(fd, fds, 3, &h, sizeof(h));
	bp_sys_close(fd);
	if (r < 0)
		return r == -EPIPE || r == -ECONNRESET ? -ECONNABORTED : r;
	return 1;
}

int bypass_ipc_lib_accept(bypass_ipc_lib_service *s, bypass_ipc_conn **out, int64_t timeout_ns)
{
	if (!s || !out || timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	if (foreign(s))
		return -EBADF;
	*out = NULL;
	uint64_t deadline = bp_deadline(timeout_ns);
	for (;;) {
		int fd = bp_sys_accept4(s->lsock, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return admit(s, fd);
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			return -errno;
		int r = bypass_ipc_accept(s->msg, out, 0);
		if (r != -EAGAIN)
			return r;
		int ms = deadline ? bp_deadline_ms(deadline) : 0;
		if (!ms)
			return deadline ? -ETIMEDOUT : -EAGAIN;
		struct pollfd p[2] = { { .fd = s->lsock, .events = POLLIN },
				       { .fd = bypass_ipc_service_fd(s->msg), .events = POLLIN } };
		if (bp_sys_poll(p, 2, ms) < 0 && errno != EINTR)
			return -errno;
	}
}

int bypass_ipc_lib_serve(bypass_ipc_lib_service *s, bypass_ipc_conn *conn, int64_t timeout_ns)
{
	if (!s || !conn)
		return -EINVAL;
	if (foreign(s))
		return -EBADF;
	struct bypass_ipc_msg m;
	int r = bypass_ipc_recv(conn, &m, timeout_ns);
	if (r)
		return r;
	if (!(m.flags & BYPASS_IPC_MSG_CALL) || m.len < sizeof(struct lib_wire)) {
		bypass_ipc_release(conn, &m);
		return -EPROTO; /* not a library call: the client is not ours */
	}
	/* The request is copied out of the ring first: message mode is for a
	 * peer we do not trust, which could rewrite it while the handler
	 * reads. */
	struct lib_wire w;
	memcpy(&w, m.data, sizeof(w));
	size_t len = m.len - sizeof(w);
	unsigned char small[256], *req = small;
	if (len > sizeof(small) && !(req = malloc(len))) {
		bypass_ipc_release(conn, &m);
		return -ENOMEM;
	}
	memcpy(req, (unsigned char *)m.data + sizeof(w), len);
	struct bypass_ipc_msg call = m; /* what reply needs: the call's id */
	bypass_ipc_release(conn, &m);
	size_t max = 0;
	bypass_ipc_max_msg(conn, &max);
	size_t room = max > sizeof(w) ? max - sizeof(w) : 0;
	size_t cap = w.pad < room ? w.pad : room;
	void *loan;
	/* Room for the answer: the client released its last one before it
	 * called again, unless it misbehaves (then the call is dropped). */
	r = bypass_ipc_loan(conn, sizeof(w) + cap, &loan, BYPASS_SEC);
	if (r == 0) {
		int v = bp_ipc_lib_invoke(&s->lc, (uint32_t)w.v, req, len,
					  (unsigned char *)loan + sizeof(w), cap);
		struct lib_wire rw = { .v = v };
		memcpy(loan, &rw, sizeof(rw));
		r = bypass_ipc_reply(conn, &call, loan, sizeof(rw) + (v > 0 ? (size_t)v : 0), 0);
	}
	if (req != small)
		free(req);
	return r ? r : 1;
}

int bypass_ipc_lib_arm(bypass_ipc_lib_service *s)
{
	if (!s)
		return -EINVAL;
	if (foreign(s))
		return -EBADF;
	struct lib_ctl *c = s->lc.ctl;
	uint64_t v;
	/* One read takes the whole count (clients hold the eventfd too: a
	 * loop could be kept reading for ever). */
	if (bp_sys_read(s->lc.evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	atomic_store_explicit(&c->ev_armed, 1, memory_order_seq_cst);
	if (bp_ipc_lib_events_waiting(&s->lc)) {
		atomic_store(&c->ev_armed, 0);
		return 1;
	}
	return 0;
}

int bypass_ipc_lib_event(bypass_ipc_lib_service *s, struct bypass_ipc_event *ev)
{
	if (!s || !ev)
		return -EINVAL;
	if (foreign(s))
		return -EBADF;
	return bp_ipc_lib_event_take(&s->lc, ev);
}

int bypass_ipc_lib_service_recover(bypass_ipc_lib_service *s)
{
	if (!s)
		return -EINVAL;
	if (foreign(s))
		return -EBADF;
	return bp_ipc_lib_do_recover(&s->lc);
}

int bypass_ipc_lib_service_stats(const bypass_ipc_lib_service *s, struct bypass_ipc_lib_stats *st)
{
	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->mode = BYPASS_IPC_LIB_MODE_LIBRARY;
	bp_ipc_lib_stats_fill(&s->lc, st);
	return 0;
}

int bypass_ipc_lib_service_close(bypass_ipc_lib_service *s)
{
	if (!s)
		return -EINVAL;
	bp_ipc_lib_core_del(&s->lc);
	service_free(s);
	return 0;
}
