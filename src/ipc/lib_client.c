/* SPDX-License-Identifier: MIT */
/*
 * Library mode, the client: open a service by name, check everything the
 * server hands over, map the arena at its address, load the object, and
 * call (in this thread, behind the gate; or, in message mode, through a
 * connection to the server's threads).
 */
#include "ipc/lib.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define HANDSHAKE_NS 5000000000ll
#define MIN_BASE (4ull << 30) /* as conn.c: never an arena in the low 4 GiB */

/* ----------------------------------------------------------- handshake */

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* The server process, to look at now and then: a pidfd from the socket
 * (Linux 6.5), else one opened by pid, else none (kill(pid, 0) then). */
static void server_pidfd(int sock, pid_t pid, struct lib_core *lc)
{
	int fd = -1;
	socklen_t l = sizeof(fd);
	if (bp_sys_getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &l) < 0 || fd < 0)
		fd = pid > 0 ? bp_sys_pidfd_open(pid, 0) : -1;
	if (fd >= 0)
		bp_sys_fcntl(fd, F_SETFD, FD_CLOEXEC);
	lc->srv_pid = pid;
	lc->srv_pidfd = fd;
}

/* Connect to the library-mode socket and take the hello and its three
 * descriptors (arena, object, eventfd); *srv gets the server's uid, lc
 * the server process. */
static int handshake(const char *name, const struct bypass_ipc_lib_opts *o, struct lib_hello *h,
		     int fds[3], uid_t *srv, struct lib_core *lc)
{
	struct sockaddr_un sa;
	bool is_path;
	int alen = bp_ipc_make_addr(name, true, &sa, &is_path);
	if (alen < 0)
		return alen;
	int sock = bp_sys_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	int64_t hto = o && o->handshake_timeout_ns ? o->handshake_timeout_ns : HANDSHAKE_NS;
	uint64_t deadline = bp_deadline(hto);
	struct timeval tv = { .tv_sec = hto / 1000000000, .tv_usec = hto % 1000000000 / 1000 };
	if (!tv.tv_sec && !tv.tv_usec)
		tv.tv_usec = 1;
	bp_sys_setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int r;
	if (bp_sys_connect(sock, (struct sockaddr *)&sa, (socklen_t)alen) < 0) {
		r = errno == EAGAIN ? -ETIMEDOUT : -errno;
		goto out;
	}
	if ((r = bp_ipc_wait_fd(sock, POLLIN, deadline)))
		goto out;
	unsigned nfds = 3;
	memset(h, 0, sizeof(*h));
	r = bypass_recv_fds(sock, fds, &nfds, h, sizeof(*h));
	if (r == 0) {
		r = -ECONNRESET;
		goto out;
	}
	if (r < 0)
		goto out;
	if ((size_t)r != sizeof(*h) || h->magic != LIB_MAGIC || h->version != LIB_VERSION) {
		r = -EPROTO;
	} else if (h->status) {
		r = h->status == EACCES ? -EACCES : -EPROTO;
	} else if (nfds != 3) {
		r = -EPROTO;
	} else {
		struct ucred uc;
		socklen_t l = sizeof(uc);
		r = bp_sys_getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0 ? -errno : 0;
		*srv = uc.uid;
		if (!r)
			server_pidfd(sock, uc.pid, lc);
		if (!r && !bp_ipc_uid_allowed(uc.uid, o ? o->flags : 0, o ? o->allow_uids : NULL,
					      o ? o->nallow : 0)) {
			bp_info("bypass: ipc: server uid %u is not allowed", (unsigned)uc.uid);
			r = -EACCES;
		}
	}
	if (r)
		for (unsigned i = 0; i < nfds; i++)
			bp_sys_close(fds[i]);
out:
	bp_sys_close(sock);
	return r;
}

/* Everything in the control block that this side will use, checked. */
static int check_ctl(const struct lib_hello *h, const struct lib_ctl *c, uint64_t size)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	if (c->magic != LIB_MAGIC || c->version != LIB_VERSION || c->nops != h->nops)
		return -EPROTO;
	if ((c->heap_off & (ps - 1)) || c->heap_off < h->ctl_off + sizeof(*c) ||
	    c->heap_end > size || c->heap_end < c->heap_off)
		return -EPROTO;
	if (c->ev_slots &&
	    (c->ev_off < h->ctl_off + sizeof(*c) || c->ev_slots > (1u << 20) ||
	     c->ev_off + (uint64_t)c->ev_slots * sizeof(struct bypass_ipc_event) > c->heap_off))
		return -EPROTO;
	if (c->state_off && (c->state_off < c->heap_off || c->state_off >= c->heap_end))
		return -EPROTO;
	return 0;
}

static int open_library(struct bypass_ipc_lib *h, const char *name,
			const struct bypass_ipc_lib_opts *o)
{
	struct lib_core *lc = &h->lc;
	int gate = bp_ipc_lib_want_gate(o);
	if (gate < 0)
		return gate;
	struct lib_hello hello;
	int fds[3] = { -1, -1, -1 };
	uid_t srv = 0;
	int r = handshake(name, o, &hello, fds, &srv, lc);
	if (r)
		return r;
	int afd = fds[0], objfd = fds[1];
	lc->evfd = fds[2];
	uint64_t size;
	struct stat st;
	bool allow_wrpkru = o && (o->flags & BYPASS_IPC_LIB_ALLOW_WRPKRU);
	if ((r = bp_ipc_memfd_ok(afd, &size)))
		goto out;
	int seals = bp_sys_fcntl(afd, F_GET_SEALS, 0);
	if (size != hello.size || seals < 0 || !(seals & F_SEAL_GROW) ||
	    hello.ctl_off < 4096 || (hello.ctl_off & (BP_CACHELINE - 1)) ||
	    hello.ctl_off + sizeof(struct lib_ctl) > size) {
		r = -EPROTO;
		goto out;
	}
	/* The object: the server's own descriptor, checked before a byte of
	 * it runs here. */
	if (bp_sys_fstat(objfd, &st) < 0 || (uint64_t)st.st_dev != hello.dev ||
	    (uint64_t)st.st_ino != hello.ino) {
		r = -EPROTO;
		goto out;
	}
	if ((r = bp_ipc_lib_check_object(objfd, srv, allow_wrpkru)))
		goto out;
	/* A sealed copy: nobody can change what runs here after this check. */
	r = bp_ipc_lib_object_sealed(objfd);
	if (r < 0) {
		bp_warn("bypass: ipc: %s: the service object is a memfd its server may still "
			"write: refused", name);
		goto out;
	}
	if (r == 0)
		bp_info("bypass: ipc: %s: the server sent its object's file (memfds not "
			"executable there): a rewrite in place would reach this process", name);
	if ((r = bp_ipc_lib_map_open(afd, &lc->map)))
		goto out; /* -EEXIST: the range is taken here */
	lc->arena = lc->map->arena;
	lc->base = (uintptr_t)bypass_arena_base(lc->arena);
	lc->size = bypass_arena_size(lc->arena);
	if (lc->base != hello.base || lc->size != size || lc->base < MIN_BASE) {
		r = -EPROTO;
		goto out;
	}
	lc->ctl = (struct lib_ctl *)(lc->base + hello.ctl_off);
	lc->owner = &lc->map->owner;
	/* One copy of the control block's layout, checked, then used: a peer
	 * rewriting it meanwhile changes nothing here. */
	struct lib_ctl snap = { 0 };
	memcpy(&snap, (const void *)lc->ctl, offsetof(struct lib_ctl, live));
	if ((r = check_ctl(&hello, &snap, size)))
		goto out;
	lc->pkru_ok = bp_ipc_lib_pkru_ok();
	lc->landing = bp_ipc_lib_landing_ok();
	bp_ipc_lib_env_init(lc);
	if ((r = bp_ipc_lib_load(lc, objfd, allow_wrpkru)))
		goto out;
	if (lc->nops != snap.nops) {
		r = -EPROTO;
		goto out;
	}
	bp_ipc_lib_layout(lc, &snap);
	lc->state = snap.state_off ? (void *)(lc->base + snap.state_off) : NULL;
	r = bp_ipc_lib_map_protect(lc->map, gate, o && o->protect == BYPASS_IPC_PROTECT_REQUIRED,
				   (void *)(lc->base + lc->heap_off), lc->heap_end - lc->heap_off);
	if (r < 0)
		goto out;
	lc->guarded = r;
	r = 0;
	if (lc->guarded && o && (o->flags & BYPASS_IPC_LIB_NOREAD))
		bp_ipc_lib_noread();
	h->mode = BYPASS_IPC_LIB_MODE_LIBRARY;
out:
	bp_sys_close(afd);
	bp_sys_close(objfd);
	return r;
}

static void lib_free(struct bypass_ipc_lib *h)
{
	struct lib_core *lc = &h->lc;
	bp_ipc_lib_unload(lc);
	bp_ipc_lib_map_put(lc->map);
	if (lc->evfd >= 0)
		bp_sys_close(lc->evfd);
	if (lc->srv_pidfd >= 0)
		bp_sys_close(lc->srv_pidfd);
	bp_ipc_lib_msg_close(h);
	free(h);
}

/* Library mode could not be had here (as opposed to: no such service);
 * -EPROTO: what the server handed over, or the control block, does not
 * check out (a stray write there must not keep message mode away). */
static bool library_refused(int r)
{
	return r == -EEXIST || r == -EACCES || r == -EPERM || r == -ENOEXEC ||
	       r == -EOPNOTSUPP || r == -ESTALE || r == -EPROTO;
}

int bypass_ipc_lib_open(const char *name, const struct bypass_ipc_lib_opts *o,
			bypass_ipc_lib **out)
{
	if (!out || !name)
		return -EINVAL;
	int r = bp_ipc_lib_check_opts(o);
	if (r)
		return r;
	struct bypass_ipc_lib *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->lc.evfd = h->lc.srv_pidfd = -1;
	unsigned fl = o ? o->flags : 0;
	if (fl & BYPASS_IPC_LIB_MESSAGE) {
		r = bp_ipc_lib_msg_open(h, name, o);
	} else {
		r = open_library(h, name, o);
		if (r && library_refused(r) && (fl & BYPASS_IPC_LIB_FALLBACK)) {
			bp_info("bypass: ipc: %s: library mode refused (%s): message mode", name,
				strerror(-r));
			lib_free(h);
			if (!(h = calloc(1, sizeof(*h))))
				return -ENOMEM;
			h->lc.evfd = h->lc.srv_pidfd = -1;
			r = bp_ipc_lib_msg_open(h, name, o);
		}
	}
	if (r) {
		lib_free(h);
		return r;
	}
	bp_ipc_lib_core_add(&h->lc);
	*out = h;
	return 0;
}

/* ---------------------------------------------------------------- calls */

int bypass_ipc_lib_call(bypass_ipc_lib *h, unsigned op, const void *req, size_t len,
			void *resp, size_t cap)
{
	if (bp_unlikely(!h))
		return -EINVAL;
	if (bp_likely(h->mode == BYPASS_IPC_LIB_MODE_LIBRARY))
		return bp_ipc_lib_invoke(&h->lc, op, req, len, resp, cap);
	return bp_ipc_lib_msg_call(h, op, req, len, resp, cap);
}

int bypass_ipc_lib_recover(bypass_ipc_lib *h)
{
	if (!h)
		return -EINVAL;
	if (h->mode != BYPASS_IPC_LIB_MODE_LIBRARY)
		return -EOPNOTSUPP;
	return bp_ipc_lib_do_recover(&h->lc);
}

int bypass_ipc_lib_stats(const bypass_ipc_lib *h, struct bypass_ipc_lib_stats *st)
{
	if (!h || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->mode = h->mode;
	if (h->mode == BYPASS_IPC_LIB_MODE_LIBRARY)
		bp_ipc_lib_stats_fill(&h->lc, st);
	return 0;
}

int bypass_ipc_lib_close(bypass_ipc_lib *h)
{
	if (!h)
		return -EINVAL;
	bp_ipc_lib_core_del(&h->lc);
	lib_free(h);
	return 0;
}
