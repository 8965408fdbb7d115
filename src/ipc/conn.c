/* SPDX-License-Identifier: MIT */
/*
 * Services and connections: the Unix socket handshake, credentials, the
 * connection's arena, liveness of the peer, and closing.
 *
 * The server creates one arena per connection (so one client can never see
 * or corrupt another's rings), seals it against shrinking and growing, and
 * sends it with a hello message.  The client accepts only a sealed memfd
 * whose every offset and size checks out: a memfd the server could truncate
 * would let it crash us with SIGBUS.  There is no reply: the connection is
 * usable as soon as the hello is sent, and a client that goes away is seen
 * as a hang-up like any other.
 */
#include "ipc/ipc_internal.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_RING (1u << 20)
#define DEFAULT_SPIN_NS 20000ull
#define MIN_RING 4096ull
#define MAX_RING (1ull << 30)
#define HANDSHAKE_NS 5000000000ll
/* The server picks where the client maps its arena: never in the low 4 GiB
 * (the NULL page, a program's image and heap), where the client's own stray
 * accesses would reach memory the server writes.  Core puts arenas far
 * above. */
#define MIN_BASE (4ull << 30)
/* A client accepts rings up to this size unless opts.max_ring says. */
#define DEFAULT_MAX_RING (16ull << 20)

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The largest payload a ring of cap bytes can carry (see ring.c). */
static uint64_t max_payload(uint64_t cap)
{
	return cap / 2 - 128;
}

static int check_opts(const struct bypass_ipc_opts *o, bool service)
{
	if (!o)
		return 0;
	if (o->mode < BYPASS_WAIT_ADAPTIVE || o->mode > BYPASS_WAIT_SPIN)
		return -EINVAL;
	if (o->flags & ~(BYPASS_IPC_ANY_UID | BYPASS_IPC_PKEY | BYPASS_IPC_LAZY))
		return -EINVAL;
	for (size_t i = 0; i < BP_ARRAY_SIZE(o->reserved); i++)
		if (o->reserved[i])
			return -EINVAL;
	if (o->max_ring && (o->max_ring < MIN_RING || o->max_ring > MAX_RING))
		return -EINVAL;
	if (o->nallow && !o->allow_uids)
		return -EINVAL;
	if (o->nallow > 1024 || o->handshake_timeout_ns < 0)
		return -EINVAL;
	if (service) {
		if (o->ring_size && (!pow2(o->ring_size) || o->ring_size < MIN_RING ||
				     o->ring_size > MAX_RING))
			return -EINVAL;
		uint64_t cap = o->ring_size ? o->ring_size : DEFAULT_RING;
		if (o->max_msg > max_payload(cap))
			return -EINVAL;
	}
	if (o->flags & BYPASS_IPC_PKEY) {
		int k = bp_ipc_pkey_get();
		if (k < 0)
			return k;
	}
	return 0;
}

bool bp_ipc_uid_allowed(uid_t uid, unsigned flags, const uid_t *allow, unsigned n)
{
	if (flags & BYPASS_IPC_ANY_UID)
		return true;
	if (uid == geteuid())
		return true;
	for (unsigned i = 0; i < n; i++)
		if (allow[i] == uid)
			return true;
	return false;
}

static int peer_cred(int sock, struct ucred *uc)
{
	socklen_t l = sizeof(*uc);
	if (bp_sys_getsockopt(sock, SOL_SOCKET, SO_PEERCRED, uc, &l) < 0)
		return -errno;
	return 0;
}

/* ---------------------------------------------------------------- service */

int bypass_ipc_listen(const char *name, const struct bypass_ipc_opts *o,
		      bypass_ipc_service **out)
{
	if (!out)
		return -EINVAL;
	int r = check_opts(o, true);
	if (r)
		return r;
	struct sockaddr_un sa;
	bool is_path;
	int alen = bp_ipc_make_addr(name, false, &sa, &is_path);
	if (alen < 0)
		return alen;
	struct bypass_ipc_service *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (o)
		s->opts = *o;
	s->opts.allow_uids = NULL;
	if (o && o->nallow) {
		s->allow = malloc(o->nallow * sizeof(uid_t));
		if (!s->allow) {
			free(s);
			return -ENOMEM;
		}
		memcpy(s->allow, o->allow_uids, o->nallow * sizeof(uid_t));
	}
	s->quota = bp_ipc_quota_new(o ? o->max_per_pid : 0, o ? o->max_per_uid : 0);
	if (!s->quota) {
		free(s->allow);
		free(s);
		return -ENOMEM;
	}
	s->ring_size = o && o->ring_size ? o->ring_size : DEFAULT_RING;
	s->max_msg = o && o->max_msg ? o->max_msg : s->ring_size / 4;
	s->fd = bp_sys_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0) {
		r = -errno;
		goto fail;
	}
	if ((r = bp_ipc_bind(s->fd, &sa, alen, is_path)))
		goto fail;
	if (bp_sys_listen(s->fd, 128) < 0) {
		r = -errno;
		goto fail;
	}
	if (is_path)
		snprintf(s->path, sizeof(s->path), "%s", name);
	s->creator = bp_pid();
	*out = s;
	return 0;
fail:
	if (s->fd >= 0)
		bp_sys_close(s->fd);
	bp_ipc_quota_close(s->quota);
	free(s->allow);
	free(s);
	return r;
}

int bypass_ipc_service_fd(const bypass_ipc_service *s)
{
	return s ? s->fd : -EINVAL;
}

int bypass_ipc_service_close(bypass_ipc_service *s)
{
	if (!s)
		return -EINVAL;
	if (s->path[0] && s->creator == bp_pid())
		unlink(s->path);
	bp_sys_close(s->fd);
	if (s->creator == bp_pid())
		bp_ipc_quota_close(s->quota);
	free(s->allow);
	free(s);
	return 0;
}

int bp_ipc_wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		int ms = bp_deadline_ms(deadline);
		if (!ms)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = fd, .events = events };
		int r = bp_sys_poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static struct bypass_ipc_conn *conn_new(void)
{
	struct bypass_ipc_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->sock = -1;
	c->pidfd = -1;
	c->tx_cpu = -1;
	c->fork_gen = bp_fork_gen();
	return c;
}

static void conn_set_mode(struct bypass_ipc_conn *c, const struct bypass_ipc_opts *o)
{
	c->mode = o ? o->mode : BYPASS_WAIT_ADAPTIVE;
	uint64_t spin = o && o->spin_ns ? o->spin_ns : DEFAULT_SPIN_NS;
	c->spin_cycles = bp_ns_to_cycles(spin);
}

static void conn_free(struct bypass_ipc_conn *c)
{
	if (c->quota && c->fork_gen == bp_fork_gen_fast())
		bp_ipc_quota_leave(c->quota, c->quota_id, &c->sock,
				   c->arena ? bypass_arena_fd(c->arena) : -1, c->len, true, false);
	if (c->arena)
		bypass_arena_close(c->arena);
	if (c->sock >= 0)
		bp_sys_close(c->sock);
	if (c->pidfd >= 0)
		bp_sys_close(c->pidfd);
	free(c);
}

static void ring_view(struct ipc_ring *rv, struct ipc_ctl *ctl, void *data, uint64_t cap)
{
	rv->ctl = ctl;
	rv->data = data;
	rv->cap = cap;
	rv->mask = cap - 1;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * Fault the control page and the rings in now (Linux 5.14+), so that the
 * first lap of messages does not pay a page fault every 4 KiB.  Runs before
 * the protection key is applied: MADV_POPULATE_WRITE honours PKRU, and with
 * the key write-disabled it fails with EFAULT.  A kernel without the advice
 * (EINVAL) just faults lazily; any other failure (ENOMEM: the memory is not
 * there) fails the connection rather than every message later.
 */
static int populate(struct bypass_ipc_conn *c)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct { void *p; size_t n; } part[3] = {
		{ (void *)((uintptr_t)c->tx.ctl & ~(ps - 1)), ps },
		{ c->tx.data, c->tx.cap },
		{ c->rx.data, c->rx.cap },
	};
	for (int i = 0; i < 3; i++) {
		if (bp_sys_madvise(part[i].p, part[i].n, MADV_POPULATE_WRITE) == 0)
			continue;
		if (errno == EINVAL)
			return 0;
		int e = errno;
		bp_info("bypass: ipc: pre-faulting the rings failed: %s", strerror(e));
		return -e;
	}
	return 0;
}

static int open_pidfd(pid_t pid)
{
	if (pid <= 0)
		return -1;
	int fd = bp_sys_pidfd_open(pid, 0);
	return fd < 0 ? -1 : fd;
}

/* Guard the arena with this process's protection key if asked to. */
static int conn_pkey(struct bypass_ipc_conn *c, unsigned flags)
{
	if (!(flags & BYPASS_IPC_PKEY))
		return 0;
	int r = bp_ipc_pkey_tag((void *)c->lo, c->len);
	if (r)
		return r;
	c->pkey = true;
	return 0;
}


int bypass_ipc_accept(bypass_ipc_service *s, bypass_ipc_conn **out, int64_t timeout_ns)
{
	if (!s || !out || timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	uint64_t deadline = bp_deadline(timeout_ns);
	int fd;
	for (;;) {
		fd = bp_sys_accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			break;
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EAGAIN)
			return -errno;
		if (!deadline)
			return -EAGAIN;
		int r = bp_ipc_wait_fd(s->fd, POLLIN, deadline);
		if (r)
			return r;
	}
	struct ucred uc;
	int r = peer_cred(fd, &uc);
	if (r) {
		bp_sys_close(fd);
		return r;
	}
	struct ipc_hello h = { .magic = IPC_MAGIC, .version = IPC_VERSION,
			       .pid = (int32_t)bp_pid() };
	if (!bp_ipc_uid_allowed(uc.uid, s->opts.flags, s->allow, s->opts.nallow)) {
		bp_info("bypass: ipc: refused pid %d uid %u", (int)uc.pid, (unsigned)uc.uid);
		h.status = EACCES;
		bypass_send_fds(fd, NULL, 0, &h, sizeof(h));
		bp_sys_close(fd);
		return -EACCES;
	}

	uint64_t qid;
	r = bp_ipc_quota_admit(s->quota, uc.pid, uc.uid, &qid);
	if (r) {
		h.status = -r;
		bypass_send_fds(fd, NULL, 0, &h, sizeof(h));
		bp_sys_close(fd);
		return r;
	}
	struct bypass_ipc_conn *c = conn_new();
	if (!c) {
		int nofd = -1;
		bp_ipc_quota_leave(s->quota, qid, &nofd, -1, 0, true, false);
		bp_sys_close(fd);
		return -ENOMEM;
	}
	c->quota = s->quota;
	c->quota_id = qid;
	c->sock = fd;
	c->peer_pid = uc.pid;
	c->peer_uid = uc.uid;
	conn_set_mode(c, &s->opts);
	uint64_t cap = s->ring_size, ps = (uint64_t)sysconf(_SC_PAGESIZE);
	struct bypass_arena_opts ao = { .size = 2 * ps + 2 * cap, .name = "bypass-ipc" };
	r = bypass_arena_create(&ao, &c->arena);
	if (r)
		goto fail;
	int afd = bypass_arena_fd(c->arena);
	/* Core seals against shrinking; also growing, then the seals. */
	bp_sys_fcntl(afd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SEAL);
	struct ipc_shared *sh;
	void *d1, *d2;
	if ((r = bypass_arena_alloc(c->arena, sizeof(*sh), ps, (void **)&sh)) ||
	    (r = bypass_arena_alloc(c->arena, cap, ps, &d1)) ||
	    (r = bypass_arena_alloc(c->arena, cap, ps, &d2)))
		goto fail;
	sh->magic = IPC_MAGIC;
	sh->version = IPC_VERSION;
	atomic_store(&sh->c2s.tx_cpu, -1);
	atomic_store(&sh->s2c.tx_cpu, -1);
	c->lo = (uintptr_t)bypass_arena_base(c->arena);
	c->len = bypass_arena_size(c->arena);
	ring_view(&c->rx, &sh->c2s, d1, cap);
	ring_view(&c->tx, &sh->s2c, d2, cap);
	c->max_msg = s->max_msg;
	h.ring_size = cap;
	h.max_msg = s->max_msg;
	h.off_shared = (uintptr_t)sh - c->lo;
	h.off_c2s = (uintptr_t)d1 - c->lo;
	h.off_s2c = (uintptr_t)d2 - c->lo;
	if ((!(s->opts.flags & BYPASS_IPC_LAZY) && (r = populate(c))) ||
	    (r = conn_pkey(c, s->opts.flags)))
		goto fail;
	r = bypass_send_fds(fd, &afd, 1, &h, sizeof(h));
	if (r < 0) {
		r = r == -EPIPE || r == -ECONNRESET ? -ECONNABORTED : r;
		goto fail;
	}
	c->pidfd = open_pidfd(uc.pid);
	*out = c;
	return 0;
fail:
	conn_free(c);
	return r;
}

/* ------------------------------------------------------------------ client */

/*
 * Receive the hello with at most one descriptor (*afd, else -1), and the pid
 * of the process that sent it as the kernel names it in our pid namespace
 * (*pid; 0 if it is not visible here; SO_PASSCRED must be on).  The pid the
 * server writes in the hello is its own idea, meaningless in another
 * namespace.  Returns the bytes received, 0 at end of file, -EPROTO (more
 * than one descriptor), or -errno.
 */
static int recv_hello(int sock, struct ipc_hello *h, int *afd, pid_t *pid)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = h, .iov_len = sizeof(*h) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	ssize_t n;
	do
		n = bp_sys_recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*afd = -1;
	*pid = 0;
	bool extra = msg.msg_flags & MSG_CTRUNC;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_CREDENTIALS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
			struct ucred uc;
			memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
			*pid = uc.pid;
		} else if (cm->cmsg_type == SCM_RIGHTS) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
				if (*afd < 0) {
					*afd = fd;
				} else {
					bp_sys_close(fd);
					extra = true;
				}
			}
		}
	}
	if (extra) {
		if (*afd >= 0)
			bp_sys_close(*afd);
		*afd = -1;
		return -EPROTO;
	}
	return (int)n;
}

/*
 * An arena's memfd from the server: only shmem (a plain memfd: a hugetlbfs
 * memfd passes the seal check, but a hole punched in it raises SIGBUS in an
 * application's in-place read, where no recovery point of ours runs),
 * sealed against shrinking (a server that could truncate it could kill us
 * with SIGBUS).  0 and *size, or -EPROTO.
 */
int bp_ipc_memfd_ok(int afd, uint64_t *size)
{
	struct stat st;
	if (bp_sys_fstat(afd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return -EPROTO;
	struct statfs fs;
	if (fstatfs(afd, &fs) < 0 || fs.f_type != TMPFS_MAGIC) {
		bp_warn("bypass: ipc: the server's arena is not a shmem memfd: refused");
		return -EPROTO;
	}
	int seals = bp_sys_fcntl(afd, F_GET_SEALS, 0);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		bp_warn("bypass: ipc: the server's arena is not sealed against "
			"shrinking (it could be truncated under us): refused");
		return -EPROTO;
	}
	*size = (uint64_t)st.st_size;
	return 0;
}

/* Check the hello and the arena before trusting a byte of either. */
static int check_hello(const struct ipc_hello *h, int afd, uint64_t max_ring,
		       size_t *arena_len)
{
	if (h->magic != IPC_MAGIC || h->version != IPC_VERSION)
		return -EPROTO;
	uint64_t cap = h->ring_size, ps = (uint64_t)sysconf(_SC_PAGESIZE);
	if (!pow2(cap) || cap < MIN_RING || cap > MAX_RING || !h->max_msg ||
	    h->max_msg > max_payload(cap))
		return -EPROTO;
	if (cap > max_ring) {
		bp_info("bypass: ipc: the server offers rings of %llu bytes (max_ring %llu): refused",
			(unsigned long long)cap, (unsigned long long)max_ring);
		return -EFBIG;
	}
	uint64_t size;
	int r = bp_ipc_memfd_ok(afd, &size);
	if (r)
		return r;
	/* Two rings and the headers (core's page, ours), nothing more: the
	 * client maps all of it. */
	if (size > 2 * cap + 4 * ps)
		return -EPROTO;
	if ((h->off_shared | h->off_c2s | h->off_s2c) & (ps - 1))
		return -EPROTO;
	if (h->off_shared < ps || h->off_shared > size - sizeof(struct ipc_shared) ||
	    h->off_c2s < ps || h->off_c2s > size || size - h->off_c2s < cap ||
	    h->off_s2c < ps || h->off_s2c > size || size - h->off_s2c < cap)
		return -EPROTO;
	*arena_len = size;
	return 0;
}

int bypass_ipc_connect(const char *name, const struct bypass_ipc_opts *o,
		       bypass_ipc_conn **out)
{
	if (!out)
		return -EINVAL;
	int r = check_opts(o, false);
	if (r)
		return r;
	struct sockaddr_un sa;
	bool is_path;
	int alen = bp_ipc_make_addr(name, false, &sa, &is_path);
	if (alen < 0)
		return alen;
	struct bypass_ipc_conn *c = conn_new();
	if (!c)
		return -ENOMEM;
	conn_set_mode(c, o);
	c->sock = bp_sys_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0) {
		r = -errno;
		goto fail;
	}
	int64_t hto = o && o->handshake_timeout_ns ? o->handshake_timeout_ns : HANDSHAKE_NS;
	uint64_t deadline = bp_deadline(hto);
	/* connect() waits while the server's backlog is full: bound that wait
	 * by the handshake timeout too (it ends in EAGAIN). */
	struct timeval tv = { .tv_sec = hto / 1000000000,
			      .tv_usec = hto % 1000000000 / 1000 };
	if (!tv.tv_sec && !tv.tv_usec)
		tv.tv_usec = 1; /* 0 would mean no limit */
	bp_sys_setsockopt(c->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* The hello then carries its sender's pid, in our pid namespace. */
	int one = 1;
	bp_sys_setsockopt(c->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	if (bp_sys_connect(c->sock, (struct sockaddr *)&sa, (socklen_t)alen) < 0) {
		r = errno == EAGAIN ? -ETIMEDOUT : -errno;
		goto fail;
	}
	r = bp_ipc_wait_fd(c->sock, POLLIN, deadline);
	if (r)
		goto fail;
	struct ipc_hello h;
	int afd = -1;
	pid_t spid = 0;
	memset(&h, 0, sizeof(h));
	r = recv_hello(c->sock, &h, &afd, &spid);
	if (r == 0) {
		r = -ECONNRESET;
		goto fail;
	}
	if (r < 0)
		goto fail;
	if ((size_t)r != sizeof(h) || h.magic != IPC_MAGIC) {
		r = -EPROTO;
		goto fail_fd;
	}
	if (h.status) {
		r = h.status == EACCES || h.status == EUSERS ? -h.status : -EPROTO;
		goto fail_fd;
	}
	if (afd < 0) {
		r = -EPROTO;
		goto fail_fd;
	}
	struct ucred uc;
	r = peer_cred(c->sock, &uc);
	if (r)
		goto fail_fd;
	if (!bp_ipc_uid_allowed(uc.uid, o ? o->flags : 0, o ? o->allow_uids : NULL,
			 o ? o->nallow : 0)) {
		bp_info("bypass: ipc: server uid %u is not allowed", (unsigned)uc.uid);
		r = -EACCES;
		goto fail_fd;
	}
	size_t alen2;
	r = check_hello(&h, afd, o && o->max_ring ? o->max_ring : DEFAULT_MAX_RING, &alen2);
	if (r)
		goto fail_fd;
	r = bypass_arena_open(afd, &c->arena);
	if (r)
		goto fail_fd;
	bp_sys_close(afd);
	afd = -1;
	c->lo = (uintptr_t)bypass_arena_base(c->arena);
	c->len = bypass_arena_size(c->arena);
	if (c->len != alen2) {
		r = -EPROTO;
		goto fail;
	}
	if (c->lo < MIN_BASE) {
		bp_warn("bypass: ipc: the server's arena is at %#lx, in the low 4 GiB: refused",
			(unsigned long)c->lo);
		r = -EPROTO;
		goto fail;
	}
	struct ipc_shared *sh = (void *)(c->lo + h.off_shared);
	ring_view(&c->tx, &sh->c2s, (void *)(c->lo + h.off_c2s), h.ring_size);
	ring_view(&c->rx, &sh->s2c, (void *)(c->lo + h.off_s2c), h.ring_size);
	c->max_msg = h.max_msg;
	/* The accepting process (the listener may have forked it), as the
	 * kernel names it here; the socket's hang-up covers one we cannot see. */
	c->peer_pid = spid > 0 ? spid : uc.pid;
	c->peer_uid = uc.uid;
	c->pidfd = open_pidfd(c->peer_pid);
	unsigned fl = o ? o->flags : 0;
	if ((!(fl & BYPASS_IPC_LAZY) && (r = populate(c))) || (r = conn_pkey(c, fl)))
		goto fail;
	int sfl = bp_sys_fcntl(c->sock, F_GETFL, 0);
	if (sfl >= 0)
		bp_sys_fcntl(c->sock, F_SETFL, sfl | O_NONBLOCK);
	one = 0;
	bp_sys_setsockopt(c->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	*out = c;
	return 0;
fail_fd:
	if (afd >= 0)
		bp_sys_close(afd);
fail:
	conn_free(c);
	return r;
}

/* ---------------------------------------------------------------- liveness */

void bp_ipc_drain_socket(bypass_ipc_conn *c)
{
	/* Wake bytes come one per arming: read a bounded amount, so that a
	 * peer flooding the socket cannot keep us here (what it leaves keeps
	 * the socket readable: a spurious wake-up at worst). */
	char buf[256];
	for (int i = 0; i < 16; i++) {
		ssize_t n = bp_sys_recv(c->sock, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n == 0)
			c->peer_gone = true;
		else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			c->peer_gone = true;
		return;
	}
}

int bp_ipc_peer_check(bypass_ipc_conn *c)
{
	if (c->peer_gone)
		return -ECONNRESET;
	struct pollfd p[2] = {
		{ .fd = c->sock, .events = POLLIN | POLLRDHUP },
		{ .fd = c->pidfd, .events = POLLIN },
	};
	int r = bp_sys_poll(p, c->pidfd >= 0 ? 2 : 1, 0);
	if (r > 0 && ((p[0].revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) ||
		      (p[1].revents & POLLIN))) {
		c->peer_gone = true;
		return -ECONNRESET;
	}
	return 0;
}

/* ------------------------------------------------------------------- misc */

int bypass_ipc_close(bypass_ipc_conn *c)
{
	if (!c)
		return -EINVAL;
	bp_ipc_epoll_forget(c);
	if (c->fork_gen == bp_fork_gen_fast() && !c->broken) {
		/* Tell the peer, and wake it wherever it waits. */
		struct bp_recover rp;
		if (BP_RECOVER_TRY(&rp, (void *)c->lo, c->len)) {
			if (c->pkey)
				bp_ipc_pkey_open();
			atomic_store(&c->rx.ctl->rx_closed, 1);
			atomic_store(&c->tx.ctl->tx_closed, 1);
			atomic_fetch_add(&c->tx.ctl->rx_wake, 1);
			atomic_fetch_add(&c->rx.ctl->tx_wake, 1);
			bp_futex_wake(&c->tx.ctl->rx_wake, INT32_MAX, true);
			bp_futex_wake(&c->rx.ctl->tx_wake, INT32_MAX, true);
			if (c->pkey)
				bp_ipc_pkey_close();
			bp_recover_pop(&rp);
		} else if (c->pkey) {
			bp_ipc_pkey_after_fault();
		}
		/* A server's arena is punched now if the client has left,
		 * else lingers until it does (quota.c); that check comes
		 * before our own shutdown, which would hang the socket up. */
		if (c->quota) {
			bp_ipc_quota_leave(c->quota, c->quota_id, &c->sock,
					   bypass_arena_fd(c->arena), c->len, c->peer_gone,
					   !c->fd_given);
			c->quota = NULL;
		}
		if (c->sock >= 0)
			bp_sys_shutdown(c->sock, SHUT_RDWR);
	}
	conn_free(c);
	return 0;
}

/* A connection inherited through fork() may only be closed. */
static bool foreign(const bypass_ipc_conn *c)
{
	return c->fork_gen != bp_fork_gen_fast();
}

int bypass_ipc_set_mode(bypass_ipc_conn *c, int mode, uint64_t spin_ns)
{
	if (!c || mode < BYPASS_WAIT_ADAPTIVE || mode > BYPASS_WAIT_SPIN)
		return -EINVAL;
	if (foreign(c))
		return -EBADF;
	c->mode = mode;
	if (spin_ns)
		c->spin_cycles = bp_ns_to_cycles(spin_ns);
	return 0;
}

int bypass_ipc_peer(const bypass_ipc_conn *c, pid_t *pid, uid_t *uid)
{
	if (!c)
		return -EINVAL;
	if (foreign(c))
		return -EBADF;
	if (pid)
		*pid = c->peer_pid;
	if (uid)
		*uid = c->peer_uid;
	return 0;
}

int bypass_ipc_max_msg(const bypass_ipc_conn *c, size_t *max)
{
	if (!c || !max)
		return -EINVAL;
	if (foreign(c))
		return -EBADF;
	*max = (size_t)c->max_msg;
	return 0;
}

int bypass_ipc_fd(const bypass_ipc_conn *c)
{
	if (!c)
		return -EINVAL;
	if (foreign(c))
		return -EBADF;
	/* The application may register it in its own epoll set: closing the
	 * connection must then close it (no lingering, see quota.c). */
	((bypass_ipc_conn *)c)->fd_given = true;
	return c->sock;
}
