/* SPDX-License-Identifier: MIT */
/* Passing descriptors over Unix sockets (SCM_RIGHTS). */
#include "core/internal.h"
#include "core/syscall.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS 16

int bypass_send_fds(int sock, const int *fds, unsigned nfds, const void *data,
		    size_t len)
{
	if (sock < 0 || nfds > MAX_FDS || (nfds && !fds) || !data || !len)
		return -EINVAL;
	for (unsigned i = 0; i < nfds; i++)
		if (fds[i] < 0)
			return -EBADF;
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds) {
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	ssize_t r;
	do
		r = bp_sys_sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : (int)r;
}

int bypass_recv_fds(int sock, int *fds, unsigned *nfds, void *data, size_t len)
{
	if (sock < 0 || !nfds || (*nfds && !fds) || !data || !len)
		return -EINVAL;
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	ssize_t r;
	do
		r = bp_sys_recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	unsigned want = *nfds, got = 0;
	int overflow = (msg.msg_flags & MSG_CTRUNC) != 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		unsigned n = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int tmp[MAX_FDS];
		if (n > MAX_FDS)
			n = MAX_FDS;
		memcpy(tmp, CMSG_DATA(c), n * sizeof(int));
		for (unsigned i = 0; i < n; i++) {
			if (got < want)
				fds[got++] = tmp[i];
			else {
				bp_sys_close(tmp[i]);
				overflow = 1;
			}
		}
	}
	*nfds = got;
	if (overflow) {
		for (unsigned i = 0; i < got; i++)
			bp_sys_close(fds[i]);
		*nfds = 0;
		return -EMSGSIZE;
	}
	return (int)r;
}
