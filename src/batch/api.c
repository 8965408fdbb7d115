/* SPDX-License-Identifier: MIT */
/* The explicit API: segments opened and flushed by the program itself. */
#include "batch/batch_internal.h"
#include "core/syscall.h"

#include <limits.h>
#include <liburing.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#define FIXED_SLOTS 4096
#define SENDFILE_CHUNK (1u << 20)
#define SEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE | MSG_WAITALL | MSG_EOR)
#define SOCKOPT_MAX 64
#define CONTROL_MAX 4096

int bypass_batch_configure(const struct bypass_batch_opts *opts)
{
	if (!opts || (opts->flags & ~BYPASS_BATCH_SQPOLL))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(opts->reserved) / sizeof(opts->reserved[0]); i++)
		if (opts->reserved[i])
			return -EINVAL;
	if (opts->entries && (opts->entries < 2 || opts->entries > 32768 ||
			      (opts->entries & (opts->entries - 1))))
		return -EINVAL;
	bp_bt_engine_init();
	struct bt_thread *th = bp_bt_self();
	if (th && th->ring && th->gen == bp_fork_gen_fast())
		return -EBUSY;
	bp_bt_ecfg.entries = opts->entries ? opts->entries : 256;
	bp_bt_ecfg.sqpoll = !!(opts->flags & BYPASS_BATCH_SQPOLL);
	bp_bt_ecfg.sqpoll_idle_ms = opts->sqpoll_idle_ms ? opts->sqpoll_idle_ms : 50;
	return 0;
}

/* The calling thread's state if it has an explicit segment open. */
static struct bt_thread *seg_thread(void)
{
	struct bt_thread *th = bp_bt_self();
	if (!th || !th->ring || th->gen != bp_fork_gen_fast() ||
	    !(th->segment & BT_SEG_EXPLICIT))
		return NULL;
	return th;
}

int bypass_batch_active(void)
{
	return seg_thread() != NULL;
}

int bypass_batch_start(void)
{
	struct bt_thread *th;
	int r = bp_bt_self_make(&th);
	if (r)
		return r;
	bp_bt_lock(th);
	if (th->segment & BT_SEG_EXPLICIT) {
		bp_bt_unlock(th);
		return -EALREADY;
	}
	th->segment |= BT_SEG_EXPLICIT;
	th->seg_calls = 0;
	bp_bt_unlock(th);
	return 0;
}

static bool pred_explicit_done(struct bt_thread *th, void *arg)
{
	(void)arg;
	return th->nexplicit == 0;
}

int bypass_batch_flush(void)
{
	struct bt_thread *th = seg_thread();
	if (!th)
		return -ENOTCONN;
	bp_bt_lock(th);
	int n = (int)th->seg_calls;
	th->seg_calls = 0;
	bp_bt_submit(th);
	bp_bt_wait(th, pred_explicit_done, NULL, -1, false);
	th->segment &= ~BT_SEG_EXPLICIT;
	th->c.segments++;
	bp_bt_unlock(th);
	return n;
}

static bool is_fixed(struct bt_thread *th, int fd)
{
	return th->fixed_map && fd < th->fixed_slots &&
	       (th->fixed_map[fd / 64] >> (fd % 64) & 1);
}

/* Queue op on fd in the calling thread's segment (op is freed on error). */
static int queue(int fd, struct bt_op *op)
{
	struct bt_thread *th = seg_thread();
	if (!th) {
		bp_bt_op_free(op);
		return -ENOTCONN;
	}
	struct bt_fdent *fe = bp_bt_fd(fd);
	if (!fe) {
		bp_bt_op_free(op);
		return fd < 0 ? -EBADF : -ENOMEM;
	}
	bp_bt_lock(th);
	/* A chain must fit the ring, and the queue depth bounds a segment. */
	unsigned entries = th->ring->sq.ring_entries;
	if (fe->nqueued + 1 > entries / 2 || th->nqueued + 1 > entries)
		bp_bt_submit(th);
	if (is_fixed(th, fd))
		op->flags |= BT_OP_FIXED;
	if (op->res)
		*op->res = -EINPROGRESS;
	bp_bt_enqueue(th, fe, op);
	th->seg_calls++;
	bp_bt_unlock(th);
	return 0;
}

/* Without MSG_DONTWAIT a send is the blocking call: everything, or an error. */
static int blocking_flags(int flags)
{
	return flags & MSG_DONTWAIT ? flags : flags | MSG_WAITALL;
}

static int bad_fd(int fd)
{
	return fd < 0 || fd >= BT_FD_MAX;
}

int bypass_batch_write(int fd, const void *buf, size_t len, ssize_t *res)
{
	if (bad_fd(fd))
		return -EBADF;
	if (!buf && len)
		return -EINVAL;
	struct bt_op *op = bp_bt_op_new(0);
	if (!op)
		return -ENOMEM;
	op->kind = BT_WRITE;
	op->buf = (char *)buf;
	op->len = len > UINT_MAX ? UINT_MAX : len;
	op->res = res;
	return queue(fd, op);
}

int bypass_batch_writev(int fd, const struct iovec *iov, int iovcnt, ssize_t *res)
{
	if (bad_fd(fd))
		return -EBADF;
	if (iovcnt < 0 || iovcnt > IOV_MAX || (!iov && iovcnt))
		return -EINVAL;
	struct bt_op *op = bp_bt_op_new(sizeof(struct iovec) * (size_t)iovcnt);
	if (!op)
		return -ENOMEM;
	op->kind = BT_WRITEV;
	op->iov = (struct iovec *)op->data;
	if (iovcnt)
		memcpy(op->iov, iov, sizeof(*iov) * (size_t)iovcnt);
	op->u.v.iovcnt = iovcnt;
	op->res = res;
	return queue(fd, op);
}

int bypass_batch_send(int fd, const void *buf, size_t len, int flags, ssize_t *res)
{
	if (bad_fd(fd))
		return -EBADF;
	if ((!buf && len) || (flags & ~SEND_FLAGS))
		return -EINVAL;
	struct bt_op *op = bp_bt_op_new(0);
	if (!op)
		return -ENOMEM;
	op->kind = BT_SEND;
	op->buf = (char *)buf;
	op->len = len > UINT_MAX ? UINT_MAX : len;
	op->msg_flags = blocking_flags(flags);
	op->res = res;
	return queue(fd, op);
}

/* A SENDMSG op whose msghdr, iovecs, address and control data are copied. */
static int queue_sendmsg(int fd, const struct msghdr *m, int flags, ssize_t *res)
{
	if (bad_fd(fd))
		return -EBADF;
	if (flags & ~SEND_FLAGS)
		return -EINVAL;
	if (m->msg_iovlen > IOV_MAX || (!m->msg_iov && m->msg_iovlen) ||
	    m->msg_namelen > sizeof(struct sockaddr_storage) ||
	    (!m->msg_name && m->msg_namelen) || m->msg_controllen > CONTROL_MAX ||
	    (!m->msg_control && m->msg_controllen))
		return -EINVAL;
	size_t iovb = sizeof(struct iovec) * m->msg_iovlen;
	struct bt_op *op = bp_bt_op_new(iovb + m->msg_controllen);
	if (!op)
		return -ENOMEM;
	op->kind = BT_SENDMSG;
	op->msg_flags = blocking_flags(flags);
	op->res = res;
	struct msghdr *c = &op->u.m.msg;
	op->iov = (struct iovec *)op->data;
	if (iovb)
		memcpy(op->iov, m->msg_iov, iovb);
	c->msg_iov = op->iov;
	c->msg_iovlen = m->msg_iovlen;
	for (size_t i = 0; i < m->msg_iovlen; i++)
		op->len += m->msg_iov[i].iov_len;
	if (m->msg_namelen) {
		memcpy(&op->u.m.addr, m->msg_name, m->msg_namelen);
		c->msg_name = &op->u.m.addr;
		c->msg_namelen = m->msg_namelen;
	}
	if (m->msg_controllen) {
		memcpy(op->data + iovb, m->msg_control, m->msg_controllen);
		c->msg_control = op->data + iovb;
		c->msg_controllen = m->msg_controllen;
	}
	return queue(fd, op);
}

int bypass_batch_sendto(int fd, const void *buf, size_t len, int flags,
			const struct sockaddr *addr, socklen_t addrlen, ssize_t *res)
{
	if (!addr && !addrlen)
		return bypass_batch_send(fd, buf, len, flags, res);
	if (!buf && len)
		return -EINVAL;
	struct iovec iov = { (void *)buf, len };
	struct msghdr m = { .msg_name = (void *)addr, .msg_namelen = addrlen,
			    .msg_iov = &iov, .msg_iovlen = 1 };
	return queue_sendmsg(fd, &m, flags, res);
}

int bypass_batch_sendmsg(int fd, const struct msghdr *msg, int flags, ssize_t *res)
{
	if (!msg)
		return -EINVAL;
	return queue_sendmsg(fd, msg, flags, res);
}

int bypass_batch_sendfile(int out_fd, int in_fd, off_t offset, size_t count,
			  ssize_t *res)
{
	if (bad_fd(out_fd) || in_fd < 0)
		return -EBADF;
	if (offset < -1)
		return -EINVAL;
	if (count > SENDFILE_CHUNK)
		count = SENDFILE_CHUNK;
	struct bt_op *op = bp_bt_op_new(count);
	if (!op)
		return -ENOMEM;
	op->kind = BT_SENDFILE;
	op->buf = op->data;
	op->len = count;
	op->u.sf.in_fd = in_fd;
	op->u.sf.off = offset;
	op->u.sf.len = count;
	op->res = res;
	return queue(out_fd, op);
}

int bypass_batch_shutdown(int fd, int how, ssize_t *res)
{
	if (bad_fd(fd))
		return -EBADF;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return -EINVAL;
	struct bt_op *op = bp_bt_op_new(0);
	if (!op)
		return -ENOMEM;
	op->kind = BT_SHUTDOWN;
	op->u.how = how;
	op->res = res;
	return queue(fd, op);
}

int bypass_batch_close(int fd, ssize_t *res)
{
	if (bad_fd(fd))
		return -EBADF;
	struct bt_thread *th = seg_thread();
	if (th && is_fixed(th, fd))
		bypass_batch_unregister_fd(fd);
	struct bt_op *op = bp_bt_op_new(0);
	if (!op)
		return -ENOMEM;
	op->kind = BT_CLOSE;
	op->res = res;
	return queue(fd, op);
}

/*
 * Socket commands in io_uring (SOCKET_URING_OP_SETSOCKOPT) came with Linux
 * 6.7; before, IORING_OP_URING_CMD on a socket fails with -EOPNOTSUPP and
 * cancels what is linked after it (Linux 6.1: the next send of the segment
 * answered -ECANCELED).  There the option is set by a system call in its
 * place in fd's order: what is queued on fd is entered and waited for first.
 */
bool bp_bt_uring_sockopt(void)
{
	static _Atomic int known; /* 1 yes, -1 no */
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (!k) {
		struct utsname u;
		int ma, mi;
		bool yes = !bp_syscall1(SYS_uname, &u) &&
			   sscanf(u.release, "%d.%d", &ma, &mi) == 2 &&
			   (ma > 6 || (ma == 6 && mi >= 7));
		k = yes ? 1 : -1;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k > 0;
}

static int sockopt_now(int fd, int level, int name, const void *val, socklen_t len,
		       ssize_t *res)
{
	struct bt_thread *th = seg_thread();
	if (!th)
		return -ENOTCONN;
	struct bt_fdent *fe = bp_bt_fd(fd);
	if (!fe)
		return -ENOMEM;
	bp_bt_lock(th);
	bp_bt_acquire(th, fe);
	while (fe->nqueued || fe->ninflight) {
		bp_bt_submit(th);
		bp_bt_wait_fd_idle(th, fe, false);
	}
	int r = bp_sys_setsockopt(fd, level, name, val, len);
	if (res)
		*res = r < 0 ? -errno : 0;
	th->seg_calls++;
	bp_bt_unlock(th);
	return 0;
}

int bypass_batch_setsockopt(int fd, int level, int name, const void *val,
			    socklen_t len, ssize_t *res)
{
	if (bad_fd(fd))
		return -EBADF;
	if (len > SOCKOPT_MAX || (!val && len))
		return -EINVAL;
	if (!bp_bt_uring_sockopt())
		return sockopt_now(fd, level, name, val, len, res);
	struct bt_op *op = bp_bt_op_new(len);
	if (!op)
		return -ENOMEM;
	op->kind = BT_SOCKOPT;
	op->u.so.level = level;
	op->u.so.name = name;
	op->u.so.len = len;
	op->buf = op->data;
	if (len)
		memcpy(op->data, val, len);
	op->res = res;
	return queue(fd, op);
}

/* ------------------------------------------------------------ registered files */

int bypass_batch_register_fd(int fd)
{
	if (fd < 0)
		return -EBADF;
	if (fd >= FIXED_SLOTS)
		return -ENOSPC;
	struct bt_thread *th;
	int r = bp_bt_self_make(&th);
	if (r)
		return r;
	bp_bt_lock(th);
	if (!th->fixed_slots) {
		if (!th->fixed_map)
			th->fixed_map = calloc(FIXED_SLOTS / 64, sizeof(uint64_t));
		r = th->fixed_map ? io_uring_register_files_sparse(th->ring, FIXED_SLOTS)
				  : -ENOMEM;
		if (r) {
			bp_bt_unlock(th);
			return r;
		}
		memset(th->fixed_map, 0, FIXED_SLOTS / 8);
		th->fixed_slots = FIXED_SLOTS;
	}
	if (is_fixed(th, fd)) {
		bp_bt_unlock(th);
		return -EALREADY;
	}
	r = io_uring_register_files_update(th->ring, (unsigned)fd, &fd, 1);
	if (r == 1) {
		th->fixed_map[fd / 64] |= 1ull << (fd % 64);
		r = 0;
	} else if (r >= 0) {
		r = -EBADF;
	}
	th->c.enters++;
	bp_bt_unlock(th);
	return r;
}

int bypass_batch_unregister_fd(int fd)
{
	if (fd < 0)
		return -EBADF;
	struct bt_thread *th = bp_bt_self();
	if (!th || !th->ring || th->gen != bp_fork_gen_fast())
		return -ENOENT;
	bp_bt_lock(th);
	if (!is_fixed(th, fd)) {
		bp_bt_unlock(th);
		return -ENOENT;
	}
	/* Queued calls fall back to the descriptor number. */
	struct bt_fdent *fe = bp_bt_fd_peek(fd);
	if (fe && atomic_load(&fe->owner) == th)
		for (struct bt_op *op = fe->head; op; op = op->next)
			if (op->state == BT_QUEUED)
				op->flags &= (uint16_t)~BT_OP_FIXED;
	int minus1 = -1;
	int r = io_uring_register_files_update(th->ring, (unsigned)fd, &minus1, 1);
	th->fixed_map[fd / 64] &= ~(1ull << (fd % 64));
	th->c.enters++;
	bp_bt_unlock(th);
	return r < 0 ? r : 0;
}

/* ------------------------------------------------------------ counters */

int bypass_batch_stats(struct bypass_batch_stats *out)
{
	if (!out)
		return -EINVAL;
	bp_bt_engine_init();
	struct bt_counters c;
	bp_bt_stats_sum(&c);
	memset(out, 0, sizeof(*out));
#define COPY(n) out->n = c.n;
	BT_COUNTERS(COPY)
#undef COPY
	return 0;
}
