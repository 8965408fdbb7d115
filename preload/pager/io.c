/* SPDX-License-Identifier: MIT */
/*
 * System calls (and stdio calls) that hand a buffer to the kernel.  In
 * upcall mode the kernel cannot have a fault on a region served: the call
 * would fail with EFAULT (a datagram would be lost).  So the region parts
 * of the buffer are pinned first, at most bp_pp_cfg.pin_max bytes at a
 * time: a longer transfer goes in pieces, each pinned before its call and
 * unpinned after it, or if the thread is cancelled in it (bp_pp_pinned; a
 * read from a socket or pipe returns after one piece, as a short read).
 * The waiting calls (poll, select, epoll) are wait.c's.
 */
#include "preload.h"
#include "core/syscall.h" /* the system calls themselves: under --batch a libc name is a batch wrapper */
#include "pager/evict.h"   /* bp_evict_mine_maybe() */

#include <limits.h>
#include <sys/stat.h>

extern void __chk_fail(void) __attribute__((noreturn));

/* glibc may define these as macros when optimizing. */
#undef fread_unlocked
#undef fwrite_unlocked

enum op { OP_READ, OP_PREAD, OP_WRITE, OP_PWRITE, OP_RECV, OP_RECVFROM, OP_SEND,
	  OP_SENDTO, OP_FREAD, OP_FREAD_UNLOCKED, OP_FWRITE, OP_FWRITE_UNLOCKED,
	  OP_READV, OP_PREADV2, OP_WRITEV, OP_PWRITEV2, OP_RECVMSG, OP_SENDMSG };

struct call {
	enum op op;
	int fd, flags;
	off_t off;
	const struct sockaddr *to;
	socklen_t tolen;
	struct sockaddr *from;
	socklen_t *fromlen;
	FILE *f;
	const struct msghdr *msg; /* recvmsg, sendmsg: the program's header */
	struct msghdr *msg_out;   /* recvmsg: where the results go back */
};

static ssize_t call1_now(struct call *c, void *b, size_t n)
{
	switch (c->op) {
	case OP_READ: return REAL(read)(c->fd, b, n);
	case OP_PREAD: return REAL(pread)(c->fd, b, n, c->off);
	case OP_WRITE: return REAL(write)(c->fd, b, n);
	case OP_PWRITE: return REAL(pwrite)(c->fd, b, n, c->off);
	case OP_RECV: return REAL(recv)(c->fd, b, n, c->flags);
	case OP_RECVFROM: return REAL(recvfrom)(c->fd, b, n, c->flags, c->from, c->fromlen);
	case OP_SEND: return REAL(send)(c->fd, b, n, c->flags);
	case OP_SENDTO: return REAL(sendto)(c->fd, b, n, c->flags, c->to, c->tolen);
	case OP_FREAD: return (ssize_t)REAL(fread)(b, 1, n, c->f);
	case OP_FREAD_UNLOCKED: return (ssize_t)REAL(fread_unlocked)(b, 1, n, c->f);
	case OP_FWRITE: return (ssize_t)REAL(fwrite)(b, 1, n, c->f);
	case OP_FWRITE_UNLOCKED: return (ssize_t)REAL(fwrite_unlocked)(b, 1, n, c->f);
	default: errno = EINVAL; return -1;
	}
}

static ssize_t callv_now(struct call *c, const struct iovec *v, int n)
{
	switch (c->op) {
	case OP_READV: return REAL(readv)(c->fd, v, n);
	case OP_PREADV2: return REAL(preadv2)(c->fd, v, n, c->off, c->flags);
	case OP_WRITEV: return REAL(writev)(c->fd, v, n);
	case OP_PWRITEV2: return REAL(pwritev2)(c->fd, v, n, c->off, c->flags);
	case OP_RECVMSG:
	case OP_SENDMSG: {
		struct msghdr m = *c->msg;
		m.msg_iov = (struct iovec *)v;
		m.msg_iovlen = (size_t)n;
		if (c->op == OP_SENDMSG)
			return REAL(sendmsg)(c->fd, &m, c->flags);
		ssize_t r = REAL(recvmsg)(c->fd, &m, c->flags);
		if (r >= 0) {
			c->msg_out->msg_namelen = m.msg_namelen;
			c->msg_out->msg_controllen = m.msg_controllen;
			c->msg_out->msg_flags = m.msg_flags;
		}
		return r;
	}
	default: errno = EINVAL; return -1;
	}
}

/*
 * A socket's call under a timeout ends with EINTR after task work, the
 * pager's write-backs' completions among it (preload.h: bp_pp_settled);
 * without the timeout the kernel restarts it.  Where this thread has
 * write-backs in flight (src/pager/writeback.c's count; completions already
 * there are reaped first: bp_pp_settled):
 *  - a call with MSG_DONTWAIT cannot block: made as it is;
 *  - a receive (not MSG_WAITALL) is made with MSG_DONTWAIT: with data, an
 *    error or the end queued it returns what the call would (a peek too),
 *    and nothing is asked.  Only if it would block (EAGAIN): where the
 *    descriptor has O_NONBLOCK that is the call's result; else the socket's
 *    timeout is asked, and the call made as it is, after finishing the
 *    write-backs if there is one.  (A stream socket with SO_RCVLOWAT above
 *    1 may so get fewer bytes than that, as after a signal: the look cannot
 *    tell without asking.)
 *  - a send, or a MSG_WAITALL receive, asks for the timeout first: a look
 *    with MSG_DONTWAIT may send (or take) part of what the call would, and
 *    the rest in a second call is not the same call (the error that ends
 *    the second is taken from the socket, where the one call leaves it for
 *    the next; each call makes its own MSG_ZEROCOPY notification and its
 *    own SO_TIMESTAMPING record).
 *  - read, readv, write, writev may be on a socket (the same EINTR under
 *    the same timeouts): they ask for the timeout first, which for any
 *    other descriptor fails (ENOTSOCK) and the call is made as it is.
 */
struct piece {
	struct call *c;
	void *b;                /* call1 */
	size_t n;
	const struct iovec *v;  /* callv */
	int cnt;
};

static bool receives(enum op op)
{
	return op == OP_RECV || op == OP_RECVFROM || op == OP_RECVMSG;
}

static bool socket_op(enum op op)
{
	return receives(op) || op == OP_SEND || op == OP_SENDTO || op == OP_SENDMSG;
}

/* A call on a descriptor that may be a socket (its timeouts apply). */
static bool maybe_socket(enum op op)
{
	return socket_op(op) || op == OP_READ || op == OP_READV || op == OP_WRITE ||
	       op == OP_WRITEV;
}

static ssize_t piece_now(struct piece *s)
{
	return s->v ? callv_now(s->c, s->v, s->cnt) : call1_now(s->c, s->b, s->n);
}

static ssize_t sock_try(void *arg, bool wait)
{
	struct piece *s = arg;
	struct call *c = s->c;
	bool rx = receives(c->op);
	if (wait || (socket_op(c->op) && (c->flags & MSG_DONTWAIT)))
		return piece_now(s);
	if (!socket_op(c->op))
		return bp_pp_sock_timed(c->fd, c->op == OP_READ || c->op == OP_READV) ?
			       PP_WOULD_WAIT : piece_now(s);
	if (!rx || (c->flags & MSG_WAITALL))
		return bp_pp_sock_timed(c->fd, rx) ? PP_WOULD_WAIT : piece_now(s);
	c->flags |= MSG_DONTWAIT;
	ssize_t r = piece_now(s);
	int e = errno;
	c->flags &= ~MSG_DONTWAIT;
	if (r >= 0 || (e != EAGAIN && e != EWOULDBLOCK)) {
		errno = e;
		return r;
	}
	int fl = bp_sys_fcntl(c->fd, F_GETFL, 0);
	if (fl >= 0 && (fl & O_NONBLOCK)) {
		errno = e;
		return r;
	}
	return bp_pp_sock_timed(c->fd, true) ? PP_WOULD_WAIT : piece_now(s);
}

static ssize_t call1(struct call *c, void *b, size_t n)
{
	if (bp_likely(!bp_evict_mine_maybe()) || !maybe_socket(c->op))
		return call1_now(c, b, n);
	struct piece s = { .c = c, .b = b, .n = n };
	return bp_pp_settled(sock_try, &s);
}

static ssize_t callv(struct call *c, const struct iovec *v, int n)
{
	if (bp_likely(!bp_evict_mine_maybe()) || !maybe_socket(c->op))
		return callv_now(c, v, n);
	struct piece s = { .c = c, .v = v, .cnt = n };
	return bp_pp_settled(sock_try, &s);
}

/* A piece of a transfer, its buffers pinned (bp_pp_pinned). */
static ssize_t piece_call(void *arg)
{
	struct piece *s = arg;
	return s->v ? callv(s->c, s->v, s->cnt) : call1(s->c, s->b, s->n);
}

static bool is_stdio(enum op op)
{
	return op >= OP_FREAD && op <= OP_FWRITE_UNLOCKED;
}

static bool kernel_writes(enum op op)
{
	switch (op) {
	case OP_READ: case OP_PREAD: case OP_RECV: case OP_RECVFROM: case OP_FREAD:
	case OP_FREAD_UNLOCKED: case OP_READV: case OP_PREADV2: case OP_RECVMSG:
		return true;
	default:
		return false;
	}
}

static bool positional(struct call *c)
{
	return c->op == OP_PREAD || c->op == OP_PWRITE ||
	       ((c->op == OP_PREADV2 || c->op == OP_PWRITEV2) && c->off != -1);
}

static int sock_type(int fd)
{
	int t = 0;
	socklen_t l = sizeof(t);
	if (bp_sys_getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &l) < 0)
		return 0;
	return t;
}

/*
 * After a whole piece, go on with the next?  Writes: yes (a blocking call
 * would have written everything; a non-blocking one stops at EAGAIN).
 * Reads: from regular files and block devices, and through stdio; from
 * sockets and pipes no (the next piece might block): a short read.
 * A datagram cannot be cut: sending one is -EMSGSIZE; one received lands in
 * the pinned piece (truncated, MSG_TRUNC, if it is longer).
 */
static int go_on(struct call *c)
{
	if (is_stdio(c->op))
		return 1;
	bool sock = c->op == OP_RECV || c->op == OP_RECVFROM || c->op == OP_SEND ||
		    c->op == OP_SENDTO || c->op == OP_RECVMSG || c->op == OP_SENDMSG;
	int t = sock_type(c->fd);
	if (t == SOCK_DGRAM || t == SOCK_SEQPACKET || t == SOCK_RAW)
		return kernel_writes(c->op) ? 0 : -EMSGSIZE;
	if (sock || t)
		return !kernel_writes(c->op);
	if (!kernel_writes(c->op))
		return 1;
	struct stat st;
	return bp_sys_fstat(c->fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

static ssize_t io1(struct call *c, void *buf, size_t len)
{
	if (PASS() || !len || !bp_pp_maybe(buf, len))
		return call1(c, buf, len);
	bool kw = kernel_writes(c->op);
	size_t done = 0;
	int more = -1; /* not asked yet */
	for (;;) {
		struct iovec v = { (char *)buf + done, len - done };
		struct bp_pp_pins pins;
		ssize_t safe = bp_pp_pin(&v, 1, kw, &pins);
		if (safe < 0) {
			if (done)
				return (ssize_t)done;
			errno = (int)-safe;
			return is_stdio(c->op) ? 0 : -1;
		}
		size_t n = len - done < (size_t)safe ? len - done : (size_t)safe;
		if (n < len - done && more < 0) {
			more = go_on(c);
			if (more < 0) {
				bp_pp_unpin(&pins);
				errno = -more;
				return -1;
			}
		}
		struct piece pc = { .c = c, .b = (char *)buf + done, .n = n };
		ssize_t r = bp_pp_pinned(&pins, piece_call, &pc);
		int e = errno;
		if (r < 0 || (r == 0 && is_stdio(c->op) && n)) {
			if (done)
				return (ssize_t)done;
			errno = e;
			return r < 0 ? -1 : 0;
		}
		done += (size_t)r;
		if (positional(c))
			c->off += r;
		if ((size_t)r < n || done == len || !more)
			return (ssize_t)done;
	}
}

static ssize_t iov_io(struct call *c, const struct iovec *iov, int cnt)
{
	if (PASS() || cnt <= 0 || cnt > IOV_MAX)
		return callv(c, iov, cnt);
	size_t total = 0;
	bool any = false;
	for (int i = 0; i < cnt; i++) {
		if (__builtin_add_overflow(total, iov[i].iov_len, &total) || total > SSIZE_MAX)
			return callv(c, iov, cnt); /* the kernel's EINVAL */
		any |= iov[i].iov_len && bp_pp_maybe(iov[i].iov_base, iov[i].iov_len);
	}
	if (!any)
		return callv(c, iov, cnt);
	bool kw = kernel_writes(c->op);
	struct iovec cur[IOV_MAX];
	int i0 = 0;         /* first entry not finished */
	size_t skip = 0;    /* bytes of it already done */
	size_t done = 0;
	int more = -1;
	struct msghdr m0;
	if (c->msg)
		m0 = *c->msg;
	for (;;) {
		int n = 0;
		for (int i = i0; i < cnt; i++) {
			cur[n].iov_base = (char *)iov[i].iov_base + (i == i0 ? skip : 0);
			cur[n].iov_len = iov[i].iov_len - (i == i0 ? skip : 0);
			n++;
		}
		struct bp_pp_pins pins;
		ssize_t safe = bp_pp_pin(cur, n, kw, &pins);
		if (safe < 0) {
			if (done)
				return (ssize_t)done;
			errno = (int)-safe;
			return -1;
		}
		/* Cut the vector at the safe prefix. */
		size_t left = (size_t)safe, want = 0;
		int k;
		for (k = 0; k < n && left; k++) {
			if (cur[k].iov_len > left)
				cur[k].iov_len = left;
			left -= cur[k].iov_len;
			want += cur[k].iov_len;
		}
		bool cut = want < total - done;
		if (!k) /* only empty entries left */
			k = n;
		if (cut && more < 0) {
			more = go_on(c);
			if (more < 0) {
				bp_pp_unpin(&pins);
				errno = -more;
				return -1;
			}
		}
		struct piece pc = { .c = c, .v = cur, .cnt = k };
		ssize_t r = bp_pp_pinned(&pins, piece_call, &pc);
		int e = errno;
		if (r < 0) {
			if (done)
				return (ssize_t)done;
			errno = e;
			return -1;
		}
		done += (size_t)r;
		if (positional(c))
			c->off += r;
		if ((size_t)r < want || !cut || !more)
			return (ssize_t)done;
		/* Ancillary data and the address went with the first piece. */
		if (c->msg && c->op == OP_SENDMSG) {
			m0.msg_control = NULL;
			m0.msg_controllen = 0;
			c->msg = &m0;
		}
		for (size_t adv = (size_t)r; i0 < cnt;) {
			size_t rest = iov[i0].iov_len - skip;
			if (adv < rest) {
				skip += adv;
				break;
			}
			adv -= rest;
			i0++;
			skip = 0;
			if (!adv && i0 < cnt && iov[i0].iov_len)
				break;
		}
	}
}

/* ------------------------------------------------------------ reads */

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct call c = { .op = OP_READ, .fd = fd };
	return io1(&c, buf, n);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return read(fd, buf, n);
}

EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	struct call c = { .op = OP_PREAD, .fd = fd, .off = off };
	return io1(&c, buf, n);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	return pread(fd, buf, n, off);
}

EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return pread(fd, buf, n, off);
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	return __pread_chk(fd, buf, n, off, buflen);
}

EXPORT ssize_t readv(int fd, const struct iovec *v, int n)
{
	struct call c = { .op = OP_READV, .fd = fd };
	return iov_io(&c, v, n);
}

EXPORT ssize_t preadv2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	struct call c = { .op = OP_PREADV2, .fd = fd, .off = off, .flags = flags };
	return iov_io(&c, v, n);
}

EXPORT ssize_t preadv(int fd, const struct iovec *v, int n, off_t off)
{
	return preadv2(fd, v, n, off < 0 ? -2 : off, 0) ;
}

EXPORT ssize_t preadv64(int fd, const struct iovec *v, int n, off_t off)
{
	return preadv(fd, v, n, off);
}

EXPORT ssize_t preadv64v2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	return preadv2(fd, v, n, off, flags);
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	struct call c = { .op = OP_RECV, .fd = fd, .flags = flags };
	return io1(&c, buf, n);
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		__chk_fail();
	return recv(fd, buf, n, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
			socklen_t *fromlen)
{
	struct call c = { .op = OP_RECVFROM, .fd = fd, .flags = flags, .from = from,
			  .fromlen = fromlen };
	return io1(&c, buf, n);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
			      struct sockaddr *from, socklen_t *fromlen)
{
	if (n > buflen)
		__chk_fail();
	return recvfrom(fd, buf, n, flags, from, fromlen);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	if (PASS() || !msg || msg->msg_iovlen > IOV_MAX)
		return REAL(recvmsg)(fd, msg, flags);
	struct call c = { .op = OP_RECVMSG, .fd = fd, .flags = flags, .msg = msg,
			  .msg_out = msg };
	return iov_io(&c, msg->msg_iov, (int)msg->msg_iovlen);
}

EXPORT size_t fread(void *buf, size_t size, size_t nmemb, FILE *f)
{
	size_t n;
	if (PASS() || __builtin_mul_overflow(size, nmemb, &n) || !n ||
	    !bp_pp_maybe(buf, n))
		return REAL(fread)(buf, size, nmemb, f);
	struct call c = { .op = OP_FREAD, .f = f };
	ssize_t r = io1(&c, buf, n);
	return r <= 0 ? 0 : (size_t)r / size;
}

EXPORT size_t fread_unlocked(void *buf, size_t size, size_t nmemb, FILE *f)
{
	size_t n;
	if (PASS() || __builtin_mul_overflow(size, nmemb, &n) || !n ||
	    !bp_pp_maybe(buf, n))
		return REAL(fread_unlocked)(buf, size, nmemb, f);
	struct call c = { .op = OP_FREAD_UNLOCKED, .f = f };
	ssize_t r = io1(&c, buf, n);
	return r <= 0 ? 0 : (size_t)r / size;
}

EXPORT size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t nmemb, FILE *f)
{
	size_t n;
	if (__builtin_mul_overflow(size, nmemb, &n) || n > buflen)
		__chk_fail();
	return fread(buf, size, nmemb, f);
}

EXPORT size_t __fread_unlocked_chk(void *buf, size_t buflen, size_t size, size_t nmemb,
				   FILE *f)
{
	size_t n;
	if (__builtin_mul_overflow(size, nmemb, &n) || n > buflen)
		__chk_fail();
	return fread_unlocked(buf, size, nmemb, f);
}

/* ------------------------------------------------------------ writes */

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct call c = { .op = OP_WRITE, .fd = fd };
	return io1(&c, (void *)buf, n);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	struct call c = { .op = OP_PWRITE, .fd = fd, .off = off };
	return io1(&c, (void *)buf, n);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

EXPORT ssize_t writev(int fd, const struct iovec *v, int n)
{
	struct call c = { .op = OP_WRITEV, .fd = fd };
	return iov_io(&c, v, n);
}

EXPORT ssize_t pwritev2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	struct call c = { .op = OP_PWRITEV2, .fd = fd, .off = off, .flags = flags };
	return iov_io(&c, v, n);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *v, int n, off_t off)
{
	return pwritev2(fd, v, n, off < 0 ? -2 : off, 0);
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *v, int n, off_t off)
{
	return pwritev(fd, v, n, off);
}

EXPORT ssize_t pwritev64v2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	return pwritev2(fd, v, n, off, flags);
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct call c = { .op = OP_SEND, .fd = fd, .flags = flags };
	return io1(&c, (void *)buf, n);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
		      const struct sockaddr *to, socklen_t tolen)
{
	struct call c = { .op = OP_SENDTO, .fd = fd, .flags = flags, .to = to, .tolen = tolen };
	return io1(&c, (void *)buf, n);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (PASS() || !msg || msg->msg_iovlen > IOV_MAX)
		return REAL(sendmsg)(fd, msg, flags);
	struct call c = { .op = OP_SENDMSG, .fd = fd, .flags = flags, .msg = msg };
	return iov_io(&c, msg->msg_iov, (int)msg->msg_iovlen);
}

EXPORT size_t fwrite(const void *buf, size_t size, size_t nmemb, FILE *f)
{
	size_t n;
	if (PASS() || __builtin_mul_overflow(size, nmemb, &n) || !n ||
	    !bp_pp_maybe(buf, n))
		return REAL(fwrite)(buf, size, nmemb, f);
	struct call c = { .op = OP_FWRITE, .f = f };
	ssize_t r = io1(&c, (void *)buf, n);
	return r <= 0 ? 0 : (size_t)r / size;
}

EXPORT size_t fwrite_unlocked(const void *buf, size_t size, size_t nmemb, FILE *f)
{
	size_t n;
	if (PASS() || __builtin_mul_overflow(size, nmemb, &n) || !n ||
	    !bp_pp_maybe(buf, n))
		return REAL(fwrite_unlocked)(buf, size, nmemb, f);
	struct call c = { .op = OP_FWRITE_UNLOCKED, .f = f };
	ssize_t r = io1(&c, (void *)buf, n);
	return r <= 0 ? 0 : (size_t)r / size;
}
