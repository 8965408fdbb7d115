/* SPDX-License-Identifier: MIT */
/*
 * Library mode's locks, which trust no byte of the memory they live in, and
 * the server's liveness word.
 *
 * A lock is one 32-bit word in the service arena: 0 when free, else its
 * owner's id + 1 (bits 0-29) and a waiters bit (bit 31).  An owner id names
 * one process in one service arena: the process holds an open file
 * description lock (F_OFD_SETLK) on byte LIB_OWNER_BASE + id of the arena's
 * memfd, through a description of its own (the memfd reopened), for as long
 * as it lives; the kernel drops it when the process dies.  A waiter that
 * finds a lock held past a slice asks the kernel (F_OFD_GETLK) whether that
 * owner still holds its byte: a dead owner's lock (or one whose word names
 * no owner at all: a stray write) is taken over, and the taker learns it
 * (1): what the lock guards may be half-changed.  A lock held longer than
 * the caller's bound (an owner that stalls, or a word forged to name a live
 * process) is not waited for beyond it: -ETIMEDOUT, and the caller marks the
 * service broken.  So whatever a peer writes into a lock word, a taker
 * waits at most the bound: there is no pointer to follow (glibc's robust
 * mutexes link themselves into the owning thread's robust list through the
 * shared memory, where a peer could redirect the owner's next unlock into
 * an eight-byte write anywhere in it, and read the owner's TLS address), no
 * type field whose corruption makes glibc abort.
 *
 * The server's liveness word is kept by a thread of its own (lib_live_*):
 * the thread registers its own robust list with the kernel (set_robust_list:
 * a list head and an entry in its private memory, whose futex offset points
 * at the word in the arena), stores its thread id in the word and sleeps
 * until the service is closed, when it clears the word.  If the server
 * process dies, the kernel walks that list and sets FUTEX_OWNER_DIED in the
 * word, which every call reads: a client learns of the death at its next
 * call without a system call.  Nothing the kernel walks is in shared memory.
 */
#include "ipc/lib.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOOK_NS 1000000ull      /* a waiter looks at the owner this often */
#define OWNER_IDS (1u << 24)    /* ids a process may take */

/* ------------------------------------------------------------ owner ids */

static int reopen(int afd)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", afd);
	int fd = bp_sys_open(path, O_RDWR | O_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

static int ofd_lock(int fd, uint32_t id, short type, int cmd)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = (off_t)(LIB_OWNER_BASE + id), .l_len = 1 };
	if (bp_sys_fcntl(fd, cmd, (long)&fl) < 0)
		return -errno;
	return cmd == F_OFD_GETLK ? fl.l_type != F_UNLCK : 0;
}

/* Take an id no live process holds: its byte, locked through fd. */
static int take_id(int fd, uint32_t *id)
{
	uint64_t h = ((uint64_t)bp_pid() << 32) ^ (uint64_t)bp_tid() ^ bypass_now_ns();
	h *= 0x9e3779b97f4a7c15ull;
	uint32_t start = (uint32_t)(h >> 40) % OWNER_IDS;
	for (uint32_t i = 0; i < 4096; i++) {
		uint32_t cand = (start + i) % OWNER_IDS;
		int r = ofd_lock(fd, cand, F_WRLCK, F_OFD_SETLK);
		if (r == 0) {
			*id = cand;
			return 0;
		}
		if (r != -EAGAIN && r != -EACCES)
			return r;
	}
	return -EUSERS;
}

void bp_ipc_lib_owner_init(struct lib_owner *o, int afd)
{
	o->afd = afd;
	o->fd = -1;
	atomic_store(&o->id, 0);
	atomic_store(&o->gen, 0);
	pthread_mutex_init(&o->mu, NULL);
}

/* This process's word for locks of o's arena (its id + 1), or -errno. */
static __attribute__((noinline)) int owner_refresh(struct lib_owner *o)
{
	unsigned g = bp_fork_gen();
	pthread_mutex_lock(&o->mu);
	int r = 0;
	if (o->fd < 0 || atomic_load(&o->gen) != g) {
		/* After fork: the description was the parent's (lib_map.c's
		 * child handler closed it); take an id of our own. */
		if (o->fd >= 0)
			bp_sys_close(o->fd);
		o->fd = reopen(o->afd);
		uint32_t id = 0;
		if (o->fd < 0)
			r = o->fd;
		else if ((r = take_id(o->fd, &id)))
			bp_warn("bypass: ipc: no lock owner id: %s", strerror(-r));
		if (r) {
			if (o->fd >= 0)
				bp_sys_close(o->fd);
			o->fd = -1;
		} else {
			atomic_store_explicit(&o->id, id + 1, memory_order_relaxed);
			atomic_store_explicit(&o->gen, g, memory_order_release);
		}
	}
	pthread_mutex_unlock(&o->mu);
	return r;
}

int bp_ipc_lib_owner_take(struct lib_owner *o)
{
	return owner_refresh(o);
}

void bp_ipc_lib_owner_fini(struct lib_owner *o)
{
	if (o->fd >= 0)
		bp_sys_close(o->fd);
	o->fd = -1;
	pthread_mutex_destroy(&o->mu);
}

/* In a child after fork (lib_map.c): forget the parent's description. */
void bp_ipc_lib_owner_forked(struct lib_owner *o)
{
	if (o->fd >= 0)
		bp_sys_close(o->fd);
	o->fd = -1;
	atomic_store(&o->gen, ~0u);
	pthread_mutex_init(&o->mu, NULL);
}

static inline int my_word(struct lib_owner *o, uint32_t *me)
{
	if (bp_unlikely(atomic_load_explicit(&o->gen, memory_order_acquire) !=
			bp_fork_gen_fast())) {
		int r = owner_refresh(o);
		if (r)
			return r;
	}
	*me = atomic_load_explicit(&o->id, memory_order_relaxed);
	return 0;
}

/* 1 while the process named by word v holds its id, 0 once it does not
 * (it died, or v names no one). */
static int owner_alive(struct lib_owner *o, uint32_t v)
{
	uint32_t id = (v & LIB_LK_ID) - 1;
	int r = ofd_lock(o->fd, id, F_WRLCK, F_OFD_GETLK);
	return r < 0 ? 1 : r; /* cannot tell: the bound decides */
}

/* ----------------------------------------------------------------- locks */

static __attribute__((noinline)) int lock_slow(struct lib_owner *o, _Atomic uint32_t *w,
					       uint32_t me, int64_t bound_ns)
{
	uint64_t now = bypass_now_ns();
	uint64_t deadline = now + (uint64_t)bound_ns, look = now + LOOK_NS;
	for (unsigned spins = 0;; spins++) {
		uint32_t v = atomic_load_explicit(w, memory_order_relaxed);
		if (!(v & LIB_LK_ID)) {
			/* Free (whatever else the word holds): take it, keeping
			 * the waiters bit for whoever sleeps. */
			if (atomic_compare_exchange_weak_explicit(w, &v, me | LIB_LK_WAITERS,
								  memory_order_acquire,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (spins < 64) {
			bp_cpu_relax();
			continue;
		}
		now = bypass_now_ns();
		if (now >= look) {
			look = now + LOOK_NS;
			if ((v & LIB_LK_ID) != me && !owner_alive(o, v)) {
				if (atomic_compare_exchange_strong_explicit(
					    w, &v, me | LIB_LK_WAITERS, memory_order_acquire,
					    memory_order_relaxed))
					return 1;
				continue;
			}
		}
		if (now >= deadline)
			return -ETIMEDOUT;
		if (!(v & LIB_LK_WAITERS)) {
			uint32_t nv = v | LIB_LK_WAITERS;
			if (!atomic_compare_exchange_strong(w, &v, nv))
				continue;
			v = nv;
		}
		uint64_t nap = deadline - now < look - now ? deadline - now : look - now;
		bp_futex_wait(w, v, (int64_t)nap + 1, true);
	}
}

int bp_ipc_lib_lock(struct lib_owner *o, _Atomic uint32_t *w, int64_t bound_ns)
{
	uint32_t me;
	int r = my_word(o, &me);
	if (bp_unlikely(r))
		return r;
	uint32_t v = 0;
	if (bp_likely(atomic_compare_exchange_strong_explicit(w, &v, me, memory_order_acquire,
							      memory_order_relaxed)))
		return 0;
	return lock_slow(o, w, me, bound_ns);
}

void bp_ipc_lib_unlock(_Atomic uint32_t *w)
{
	uint32_t v = atomic_exchange_explicit(w, 0, memory_order_release);
	if (bp_unlikely(v & LIB_LK_WAITERS))
		bp_futex_wake(w, 1, true);
}

/* ------------------------------------------------------------- liveness */

#ifndef FUTEX_OWNER_DIED
#define FUTEX_OWNER_DIED 0x40000000
#endif

struct lib_live {
	pthread_t thread;
	_Atomic uint32_t *word;     /* ctl->live */
	_Atomic uint32_t state;     /* 0 starting, 1 running, 2 stop, 3 failed */
	int err;
	struct robust_list_head head;
	struct robust_list entry;
};

static void *live_main(void *arg)
{
	struct lib_live *lv = arg;
	/* A list of one entry, in this thread's private memory; the kernel
	 * reaches the word through the head's futex offset. */
	lv->entry.next = &lv->head.list;
	lv->head.list.next = &lv->entry;
	lv->head.futex_offset = (long)((uintptr_t)lv->word - (uintptr_t)&lv->entry);
	lv->head.list_op_pending = NULL;
	pid_t tid = bp_sys_gettid();
	if (bp_sys_ret(bp_syscall2(SYS_set_robust_list, &lv->head, sizeof(lv->head))) < 0) {
		lv->err = -errno;
		atomic_store(&lv->state, 3);
		bp_futex_wake(&lv->state, 1, false);
		return NULL;
	}
	atomic_store(lv->word, (uint32_t)tid & LIB_FUTEX_TID_MASK);
	atomic_store(&lv->state, 1);
	bp_futex_wake(&lv->state, 1, false);
	while (atomic_load(&lv->state) != 2)
		bp_futex_wait(&lv->state, 1, -1, false);
	/* Closed: clear the word (the kernel, walking the list as this
	 * thread exits, then finds no thread id of ours there). */
	atomic_store(lv->word, 0);
	return NULL;
}

int bp_ipc_lib_live_start(_Atomic uint32_t *word, struct lib_live **out)
{
	struct lib_live *lv = calloc(1, sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	lv->word = word;
	/* No signal for this thread: the application's go to its own. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 << 10);
	int r = -pthread_create(&lv->thread, &at, live_main, lv);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		free(lv);
		return r;
	}
	uint32_t s;
	while ((s = atomic_load(&lv->state)) == 0)
		bp_futex_wait(&lv->state, 0, -1, false);
	if (s == 3) {
		r = lv->err;
		pthread_join(lv->thread, NULL);
		free(lv);
		return r;
	}
	*out = lv;
	return 0;
}

void bp_ipc_lib_live_stop(struct lib_live *lv)
{
	if (!lv)
		return;
	atomic_store(&lv->state, 2);
	bp_futex_wake(&lv->state, 1, false);
	pthread_join(lv->thread, NULL);
	free(lv);
}
