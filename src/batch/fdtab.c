/* SPDX-License-Identifier: MIT */
/* The engine's settings, and the process-wide descriptor table. */
#include "batch/batch_internal.h"
#include "core/syscall.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------- configuration */

/* The defaults; bypass_batch_configure and the preload's constructor set
 * them (the library reads no environment). */
struct bt_engine_cfg bp_bt_ecfg = {
	.entries = 256,
	.sqpoll_idle_ms = 50,
	.exit_wait_ms = 2000,
	.pipe_size = 256 * 1024,
};

/* ---------------------------------------------------------- descriptor table */

#define BLOCK_SHIFT 10
#define BLOCK_SIZE (1u << BLOCK_SHIFT)
#define NBLOCKS (BT_FD_MAX / BLOCK_SIZE)

static _Atomic(struct bt_fdent *) blocks[NBLOCKS];

struct bt_fdent *bp_bt_fd_peek(int fd)
{
	if (fd < 0 || fd >= BT_FD_MAX)
		return NULL;
	struct bt_fdent *b = atomic_load_explicit(&blocks[fd >> BLOCK_SHIFT],
						  memory_order_acquire);
	return b ? &b[fd & (BLOCK_SIZE - 1)] : NULL;
}

struct bt_fdent *bp_bt_fd(int fd)
{
	if (fd < 0 || fd >= BT_FD_MAX)
		return NULL;
	_Atomic(struct bt_fdent *) *slot = &blocks[fd >> BLOCK_SHIFT];
	struct bt_fdent *b = atomic_load_explicit(slot, memory_order_acquire);
	if (bp_unlikely(!b)) {
		struct bt_fdent *nb = calloc(BLOCK_SIZE, sizeof(*nb));
		if (!nb)
			return NULL;
		int base = fd & ~(int)(BLOCK_SIZE - 1);
		for (unsigned i = 0; i < BLOCK_SIZE; i++)
			nb[i].fd = base + (int)i;
		struct bt_fdent *expect = NULL;
		if (atomic_compare_exchange_strong(slot, &expect, nb))
			b = nb;
		else {
			free(nb);
			b = expect;
		}
	}
	return &b[fd & (BLOCK_SIZE - 1)];
}

void bp_bt_fd_each(void (*fn)(struct bt_fdent *fe, void *arg), void *arg)
{
	for (unsigned i = 0; i < NBLOCKS; i++) {
		struct bt_fdent *b = atomic_load_explicit(&blocks[i], memory_order_acquire);
		if (b)
			for (unsigned j = 0; j < BLOCK_SIZE; j++)
				fn(&b[j], arg);
	}
}

int bp_bt_fd_probe(struct bt_fdent *fe)
{
	uint32_t f = atomic_load_explicit(&fe->flags, memory_order_acquire);
	if (f & BT_FD_KNOWN)
		return 0;
	long fl = bp_sys_fcntl(fe->fd, F_GETFL, 0);
	if (fl < 0)
		return -errno;
	struct stat st;
	if (bp_sys_fstat(fe->fd, &st) < 0)
		return -errno;
	uint32_t nf = BT_FD_KNOWN | BT_FD_OPEN | (fl & O_NONBLOCK ? BT_FD_NONBLOCK : 0);
	if (S_ISSOCK(st.st_mode)) {
		int type = 0, dom = 0;
		socklen_t l = sizeof(type);
		nf |= BT_FD_SOCK;
		if (bp_sys_getsockopt(fe->fd, SOL_SOCKET, SO_TYPE, &type, &l) == 0 &&
		    type == SOCK_STREAM)
			nf |= BT_FD_STREAM;
		l = sizeof(dom);
		if (bp_sys_getsockopt(fe->fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) == 0 &&
		    (dom == AF_INET || dom == AF_INET6))
			nf |= BT_FD_INET;
	} else if (S_ISREG(st.st_mode)) {
		nf |= BT_FD_REG;
	}
	/* Keep bits set concurrently (CLOSING, SIZE) and add ours. */
	atomic_fetch_or_explicit(&fe->flags, nf, memory_order_release);
	return 0;
}

void bp_bt_fd_forget(struct bt_fdent *fe)
{
	atomic_fetch_add_explicit(&fe->gen, 1, memory_order_relaxed);
	atomic_store_explicit(&fe->flags, 0, memory_order_release);
	atomic_store_explicit(&fe->err, 0, memory_order_relaxed);
	atomic_store_explicit(&fe->ep[0], 0, memory_order_relaxed);
	atomic_store_explicit(&fe->ep[1], 0, memory_order_relaxed);
	atomic_store_explicit(&fe->readers, 0, memory_order_relaxed);
	atomic_store_explicit(&fe->reader, NULL, memory_order_relaxed);
}

void bp_bt_fd_set_err(struct bt_fdent *fe, int err, bool sigpipe)
{
	/* A kernel restart code never reaches the program (complete.c maps
	 * them; this is the last line). */
	if (bt_restartable(-err))
		err = EIO;
	int v = err | (sigpipe ? BT_ERR_SIGPIPE : 0), zero = 0;
	atomic_compare_exchange_strong(&fe->err, &zero, v);
	atomic_fetch_or(&fe->flags, BT_FD_BROKEN);
}

int bp_bt_fd_take_err(struct bt_fdent *fe)
{
	if (bp_likely(!atomic_load_explicit(&fe->err, memory_order_relaxed)))
		return 0;
	return atomic_exchange(&fe->err, 0);
}
