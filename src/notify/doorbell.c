/* SPDX-License-Identifier: MIT */
/*
 * Doorbells.  The shared state is a ring sequence number (the futex word),
 * written by ringers, and a consumed sequence, written by consumers, on
 * separate cache lines: an awake receiver spins on loads only, and a ring is
 * one atomic add plus loads of flags on the line it already owns.
 *
 * pending = seq - consumed.  A consumer claims pending rings with a CAS on
 * consumed.  Listeners that need a system call on ring (futex sleepers, an
 * armed eventfd, a registered interrupt handler) announce themselves on the
 * ringers' line before they check for pending rings, so the ringer either
 * sees them or they see its ring (see src/core/wait.c).
 */
#include "notify/notify_internal.h"
#include "core/syscall.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEFAULT_SPIN_NS 20000ull
#define SPIN_CHUNK_NS 1000000ull /* SPIN mode checks liveness this often */

/* ---------------------------------------------------------- registration */

/* Record this process in the doorbell's process table (for peer checks). */
void bp_db_register(struct bypass_doorbell *h)
{
	struct db_shared *sh = h->sh;
	pid_t me = bp_pid();
	unsigned gen = bp_fork_gen();
	h->reg_gen = gen;
	atomic_store_explicit(&h->rang_marked, false, memory_order_relaxed);
	for (int i = 0; i < DB_PROCS; i++)
		if (atomic_load(&sh->procs[i]) == me) {
			h->slot = i;
			return;
		}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < DB_PROCS; i++) {
			int32_t cur = atomic_load(&sh->procs[i]);
			if (cur && (pass == 0 || bp_proc_alive(cur, NULL)))
				continue;
			/* A reused slot starts with its "has rung" bit clear. */
			atomic_fetch_and(&sh->rang, ~(1u << i));
			if (atomic_compare_exchange_strong(&sh->procs[i], &cur, me)) {
				h->slot = i;
				return;
			}
		}
	}
	/* Peer tracking is off for this doorbell from now on: an untracked
	 * process could be the one that rings, so never report -EPIPE. */
	h->slot = -1;
	atomic_store(&sh->untracked, 1);
	bp_warn("bypass: doorbell %p: process table full, pid %d untracked",
		(void *)sh, (int)me);
}

/* First ring by this process: note that it rings this doorbell. */
static void db_mark_rang(struct bypass_doorbell *h)
{
	if (h->slot >= 0)
		atomic_fetch_or(&h->sh->rang, 1u << h->slot);
	atomic_store_explicit(&h->rang_marked, true, memory_order_relaxed);
}

int bypass_notify_peer_alive(bypass_doorbell *h)
{
	if (!h || !db_live(h))
		return -EINVAL;
	db_check_fork(h);
	pid_t me = bp_pid();
	int others = 0, alive = 0;
	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < DB_PROCS; i++) {
		pid_t p = atomic_load(&h->sh->procs[i]);
		if (h->pidfd_pid[i] != p) {
			if (h->pidfd[i] >= 0)
				bp_sys_close(h->pidfd[i]);
			h->pidfd[i] = -1;
			h->pidfd_pid[i] = p;
		}
		if (!p || p == me)
			continue;
		others++;
		if (bp_proc_alive(p, &h->pidfd[i]))
			alive++;
	}
	pthread_mutex_unlock(&h->lock);
	if (atomic_load(&h->sh->untracked))
		return 1;
	return !others || alive ? 1 : 0;
}

/*
 * Called by sleeping waiters between slices.  -EPIPE only when nobody can
 * ring any more: every other process that used the doorbell has exited, and
 * this process has never rung it (a thread of ours might still).
 */
static int db_wait_check(void *arg)
{
	struct bypass_doorbell *h = arg;
	if (!db_live(h))
		return -EINVAL;
	if (db_pending(h->sh))
		return 0;
	if (h->slot >= 0 && (atomic_load(&h->sh->rang) & (1u << h->slot)))
		return 0;
	return bypass_notify_peer_alive(h) == 0 ? -EPIPE : 0;
}

/* ---------------------------------------------------------- construction */

static void db_init_handle(struct bypass_doorbell *h, struct db_shared *sh,
			   const struct bypass_notify_opts *o)
{
	h->sh = sh;
	h->memfd = -1;
	h->efd = -1;
	h->intr_slot = -1;
	h->slot = -1;
	h->mode = o ? o->mode : BYPASS_WAIT_ADAPTIVE;
	h->spin_ns = o && o->spin_ns ? o->spin_ns : DEFAULT_SPIN_NS;
	for (unsigned i = 0; i < DB_PROCS; i++)
		h->pidfd[i] = -1; /* pidfd_pid[i] is 0: calloc */
	pthread_mutex_init(&h->lock, NULL);
}

static int check_opts(const struct bypass_notify_opts *o, uint32_t *backend)
{
	*backend = DB_BACKEND_FUTEX;
	if (!o)
		return 0;
	if (o->mode < BYPASS_WAIT_ADAPTIVE || o->mode > BYPASS_WAIT_SPIN)
		return -EINVAL;
	if (o->flags & ~BYPASS_NOTIFY_EVENTFD)
		return -EINVAL;
	for (size_t i = 0; i < BP_ARRAY_SIZE(o->reserved); i++)
		if (o->reserved[i])
			return -EINVAL;
	if (!o->backend || !strcmp(o->backend, "auto") || !strcmp(o->backend, "futex"))
		return 0;
	/* "uintr" too: no data path, so no such backend (bypass doctor
	 * reports the CPU's bit; see docs/notify.md). */
	return -EINVAL;
}

static void db_init_shared(struct db_shared *sh, uint32_t backend)
{
	memset(sh, 0, sizeof(*sh));
	sh->backend = backend;
	sh->magic = DB_MAGIC;
	atomic_store_explicit(&sh->state, DB_ALIVE, memory_order_release);
}

static int db_finish_create(struct bypass_doorbell *h,
			    const struct bypass_notify_opts *o,
			    bypass_doorbell **out)
{
	bp_db_register(h);
	if (o && (o->flags & BYPASS_NOTIFY_EVENTFD)) {
		int r = bypass_notify_fd(h);
		if (r < 0) {
			bypass_notify_close(h);
			return r;
		}
	}
	*out = h;
	return 0;
}

int bypass_notify_create(const struct bypass_notify_opts *o,
			   bypass_doorbell **out)
{
	uint32_t backend;
	if (!out)
		return -EINVAL;
	int r = check_opts(o, &backend);
	if (r)
		return r;
	struct bypass_doorbell *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	int fd = bp_sys_memfd_create("bypass-doorbell", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || bp_sys_ftruncate(fd, (off_t)len) < 0) {
		r = -errno;
		if (fd >= 0)
			bp_sys_close(fd);
		free(h);
		return r;
	}
	bp_sys_fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	void *p = bp_sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		bp_sys_close(fd);
		free(h);
		return r;
	}
	db_init_shared(p, backend);
	db_init_handle(h, p, o);
	h->memfd = fd;
	h->map = p;
	h->map_len = len;
	return db_finish_create(h, o, out);
}

int bypass_notify_create_in(bypass_arena *arena,
			      const struct bypass_notify_opts *o,
			      bypass_doorbell **out)
{
	uint32_t backend;
	if (!arena || !out)
		return -EINVAL;
	int r = check_opts(o, &backend);
	if (r)
		return r;
	void *p;
	r = bypass_arena_alloc(arena, sizeof(struct db_shared), BP_CACHELINE, &p);
	if (r)
		return r;
	struct bypass_doorbell *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	db_init_shared(p, backend);
	db_init_handle(h, p, o);
	h->arena = arena;
	return db_finish_create(h, o, out);
}

void *bypass_notify_addr(const bypass_doorbell *h)
{
	return h ? h->sh : NULL;
}

int bypass_notify_open(bypass_arena *arena, void *addr, bypass_doorbell **out)
{
	if (!arena || !addr || !out ||
	    !bypass_arena_contains(arena, addr, sizeof(struct db_shared)) ||
	    ((uintptr_t)addr & (BP_CACHELINE - 1)))
		return -EINVAL;
	struct db_shared *sh = addr;
	if (sh->magic != DB_MAGIC || atomic_load(&sh->state) != DB_ALIVE ||
	    sh->backend != DB_BACKEND_FUTEX)
		return -EINVAL;
	struct bypass_doorbell *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	db_init_handle(h, sh, NULL);
	h->arena = arena;
	bp_db_register(h);
	*out = h;
	return 0;
}

/* The wire format of bypass_notify_send. */
struct db_wire {
	uint32_t magic;
	uint32_t version;
	uint64_t offset;   /* of the shared state within the memfd */
	uint64_t efd_loc;  /* the shared efd_loc of the eventfd sent along, 0 = none */
};
#define DB_WIRE_MAGIC 0x42504442u /* "BPDB" */

int bypass_notify_send(int sock, bypass_doorbell *h)
{
	if (!h || sock < 0 || !db_live(h))
		return -EINVAL;
	struct db_wire w = { .magic = DB_WIRE_MAGIC, .version = 1 };
	int fds[2], n = 0;
	if (h->arena) {
		fds[n++] = bypass_arena_fd(h->arena);
		w.offset = (uint64_t)((char *)h->sh - (char *)bypass_arena_base(h->arena));
	} else if (h->memfd >= 0) {
		fds[n++] = h->memfd;
		/* A received handle maps only the pages around the doorbell. */
		w.offset = h->map_off + (uint64_t)((char *)h->sh - (char *)h->map);
	} else {
		return -EINVAL;
	}
	if (h->efd >= 0 && h->efd_loc == atomic_load(&h->sh->efd_loc)) {
		fds[n++] = h->efd;
		w.efd_loc = h->efd_loc;
	}
	int r = bypass_send_fds(sock, fds, (unsigned)n, &w, sizeof(w));
	return r < 0 ? r : 0;
}

int bypass_notify_recv(int sock, bypass_doorbell **out)
{
	if (sock < 0 || !out)
		return -EINVAL;
	struct db_wire w;
	int fds[2];
	unsigned nfds = 2;
	int r = bypass_recv_fds(sock, fds, &nfds, &w, sizeof(w));
	if (r == 0)
		return -ECONNRESET;
	if (r < 0)
		return r;
	int err = -EPROTO;
	if ((size_t)r != sizeof(w) || w.magic != DB_WIRE_MAGIC || w.version != 1 ||
	    nfds < 1 || (w.efd_loc && nfds != 2) || (!w.efd_loc && nfds != 1) ||
	    (w.efd_loc && !bp_db_is_eventfd(fds[1])))
		goto fail;
	struct stat st;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	if (bp_sys_fstat(fds[0], &st) < 0 || !S_ISREG(st.st_mode) ||
	    (w.offset & (BP_CACHELINE - 1)) ||
	    w.offset > (uint64_t)st.st_size ||
	    (uint64_t)st.st_size - w.offset < sizeof(struct db_shared))
		goto fail;
	uint64_t page_off = w.offset & ~(uint64_t)(ps - 1);
	size_t len = (size_t)(w.offset - page_off) + sizeof(struct db_shared);
	len = (len + ps - 1) & ~(ps - 1);
	void *map = bp_sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0],
			 (off_t)page_off);
	if (map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	struct db_shared *sh = (void *)((char *)map + (w.offset - page_off));
	if (sh->magic != DB_MAGIC || atomic_load(&sh->state) != DB_ALIVE) {
		bp_sys_munmap(map, len);
		err = -EINVAL;
		goto fail;
	}
	struct bypass_doorbell *h = calloc(1, sizeof(*h));
	if (!h) {
		bp_sys_munmap(map, len);
		err = -ENOMEM;
		goto fail;
	}
	db_init_handle(h, sh, NULL);
	h->map = map;
	h->map_len = len;
	h->map_off = page_off;
	h->memfd = fds[0];
	if (w.efd_loc) {
		h->efd = fds[1];
		h->efd_loc = w.efd_loc;
	}
	bp_db_register(h);
	*out = h;
	return 0;
fail:
	for (unsigned i = 0; i < nfds; i++)
		bp_sys_close(fds[i]);
	return err;
}

int bypass_notify_close(bypass_doorbell *h)
{
	if (!h)
		return -EINVAL;
	if (h->intr_slot >= 0)
		bp_db_intr_unregister(h);
	for (unsigned i = 0; i < DB_PROCS; i++)
		if (h->pidfd[i] >= 0)
			bp_sys_close(h->pidfd[i]);
	if (h->efd >= 0) {
		/* Withdraw our eventfd from the shared state if it is ours. */
		uint64_t mine = h->efd_loc;
		if (h->efd_owner && (pid_t)(mine >> 32) == bp_pid() &&
		    atomic_compare_exchange_strong(&h->sh->efd_loc, &mine, 0))
			atomic_store(&h->sh->efd_armed, 0);
		bp_sys_close(h->efd);
	}
	if (h->map)
		bp_sys_munmap(h->map, h->map_len);
	if (h->memfd >= 0)
		bp_sys_close(h->memfd);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return 0;
}

int bypass_notify_destroy(bypass_doorbell *h)
{
	if (!h)
		return -EINVAL;
	struct db_shared *sh = h->sh;
	uint32_t alive = DB_ALIVE;
	if (atomic_compare_exchange_strong(&sh->state, &alive, DB_DEAD)) {
		/* Wake everyone so they see the doorbell is gone. */
		atomic_fetch_add(&sh->ww.value, 1);
		bp_futex_wake(&sh->ww.value, INT32_MAX, true);
		if (atomic_load(&sh->efd_armed))
			bp_db_post_eventfd(h);
	}
	return bypass_notify_close(h);
}

/* ------------------------------------------------------------ operations */

int bypass_notify_ring(bypass_doorbell *h)
{
	if (bp_unlikely(!h))
		return -EINVAL;
	struct db_shared *sh = h->sh;
	db_check_fork(h);
	/*
	 * Add first, then look at the state: the add takes the line exclusive
	 * in one transaction, and the loads after it hit.  (Loading first
	 * would fetch the line shared from the spinning receiver and then
	 * upgrade it: two transfers.)  A ring on a destroyed doorbell bumps a
	 * sequence nobody reads any more.
	 */
	atomic_fetch_add_explicit(&sh->ww.value, 1, memory_order_seq_cst);
	if (bp_unlikely(atomic_load_explicit(&sh->state, memory_order_relaxed) != DB_ALIVE))
		return -EINVAL;
	if (bp_unlikely(!atomic_load_explicit(&h->rang_marked, memory_order_relaxed)))
		db_mark_rang(h);
	int r = 0;
	bp_wake(&sh->ww, true);
	if (bp_unlikely(atomic_load_explicit(&sh->efd_armed, memory_order_seq_cst)) &&
	    !atomic_exchange(&sh->efd_posted, 1))
		r = bp_db_post_eventfd(h);
	if (bp_unlikely(atomic_load_explicit(&sh->intr_tid, memory_order_seq_cst)) &&
	    !atomic_exchange(&sh->intr_posted, 1)) {
		int e = bp_db_intr_post(h);
		if (e)
			r = e;
	}
	return r;
}

int bp_db_consume(struct bypass_doorbell *h)
{
	struct db_shared *sh = h->sh;
	uint32_t c = atomic_load_explicit(&sh->consumed, memory_order_relaxed);
	for (;;) {
		uint32_t s = atomic_load_explicit(&sh->ww.value, memory_order_acquire);
		if (s == c)
			return 0;
		if (atomic_compare_exchange_weak_explicit(&sh->consumed, &c, s,
							  memory_order_acq_rel,
							  memory_order_relaxed)) {
			uint32_t n = s - c;
			return n > INT32_MAX ? INT32_MAX : (int)n;
		}
	}
}

int bypass_notify_try(bypass_doorbell *h)
{
	if (!h || !db_live(h))
		return -EINVAL;
	db_check_fork(h);
	struct db_shared *sh = h->sh;
	if (bp_unlikely(atomic_load_explicit(&sh->efd_armed, memory_order_relaxed))) {
		atomic_store(&sh->efd_armed, 0);
		/*
		 * Drain first, then clear efd_posted.  The other order loses
		 * wake-ups: a ringer that sets efd_posted between the clear and
		 * the read has its write drained here, and efd_posted stays 1
		 * over an empty fd, so the next armed ring writes nothing.
		 * Drain even when efd_posted is 0: a ringer's write may land
		 * after an earlier drain, and a stale readable fd would make
		 * the poll loop spin.
		 */
		if (h->efd >= 0) {
			uint64_t v;
			ssize_t rr = bp_sys_read(h->efd, &v, sizeof(v)); /* non-blocking */
			(void)rr;
		}
		atomic_store(&sh->efd_posted, 0);
	}
	if (bp_unlikely(atomic_load_explicit(&sh->intr_tid, memory_order_relaxed)) &&
	    bp_db_intr_busy(sh))
		return -EBUSY;
	int n = bp_db_consume(h);
	if (bp_unlikely(n && !db_live(h)))
		return -EINVAL; /* what we took was destroy's wake-up, not a ring */
	return n ? n : -EAGAIN;
}

int bypass_notify_set_mode(bypass_doorbell *h, int mode, uint64_t spin_ns)
{
	if (!h || mode < BYPASS_WAIT_ADAPTIVE || mode > BYPASS_WAIT_SPIN)
		return -EINVAL;
	h->mode = mode;
	if (spin_ns)
		h->spin_ns = spin_ns;
	return 0;
}

int bypass_notify_wait(bypass_doorbell *h, int64_t timeout_ns)
{
	if (!h || timeout_ns < BYPASS_FOREVER)
		return -EINVAL;
	struct db_shared *sh = h->sh;
	db_check_fork(h);
	uint64_t deadline = bp_deadline(timeout_ns);
	for (;;) {
		if (!db_live(h))
			return -EINVAL;
		if (atomic_load_explicit(&sh->intr_tid, memory_order_relaxed) &&
		    bp_db_intr_busy(sh))
			return -EBUSY;
		int n = bp_db_consume(h);
		if (n)
			return db_live(h) ? n : -EINVAL; /* destroy's wake-up */
		uint32_t c = atomic_load_explicit(&sh->consumed, memory_order_relaxed);
		struct bp_wait_opts o = {
			.shared = true,
			.check = db_wait_check,
			.check_arg = h,
		};
		int64_t left = -1;
		if (deadline != UINT64_MAX) {
			uint64_t now = deadline ? bypass_now_ns() : 0;
			if (now >= deadline)
				return -ETIMEDOUT;
			left = (int64_t)(deadline - now);
		}
		int r;
		if (h->mode == BYPASS_WAIT_SPIN) {
			/* Spin in chunks, checking the peer between them. */
			uint64_t chunk = SPIN_CHUNK_NS;
			if (left >= 0 && (uint64_t)left < chunk)
				chunk = (uint64_t)left;
			o.spin_ns = chunk;
			o.timeout_ns = (int64_t)chunk;
			r = bp_wait_while(&sh->ww, c, &o);
			if (r == -ETIMEDOUT) {
				r = db_wait_check(h);
				if (r)
					return r;
				continue;
			}
		} else {
			o.spin_ns = h->mode == BYPASS_WAIT_ADAPTIVE ? h->spin_ns : 0;
			o.timeout_ns = left;
			r = bp_wait_while(&sh->ww, c, &o);
		}
		if (r == -ETIMEDOUT) {
			if (!db_live(h))
				return -EINVAL;
			n = bp_db_consume(h);
			return n ? (db_live(h) ? n : -EINVAL) : -ETIMEDOUT;
		}
		if (r < 0)
			return r;
	}
}

/* ---------------------------------------------------------------- eventfd */

/*
 * A descriptor named by shared memory is only used once it proves to be an
 * eventfd: a corrupt or hostile peer must not make us write into a file,
 * socket or pipe of ours or of another process.
 */
bool bp_db_is_eventfd(int fd)
{
	char path[48], link[32];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = bp_sys_readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = 0;
	return !strcmp(link, "anon_inode:[eventfd]");
}

static inline uint64_t efd_loc_make(pid_t pid, int fd)
{
	return ((uint64_t)(uint32_t)pid << 32) | (uint32_t)fd;
}

/* A local descriptor for the eventfd at loc, or -1. */
static int efd_fetch(uint64_t loc)
{
	pid_t owner = (pid_t)(loc >> 32);
	int num = (int)(uint32_t)loc, fd = -1;
	if (owner <= 0 || num < 0)
		return -1;
	if (owner == bp_pid()) {
		fd = bp_sys_fcntl(num, F_DUPFD_CLOEXEC, 0);
	} else {
		int pfd = bp_sys_pidfd_open(owner, 0);
		if (pfd >= 0) {
			fd = bp_sys_pidfd_getfd(pfd, num, 0);
			bp_sys_close(pfd);
		}
	}
	if (fd >= 0 && !bp_db_is_eventfd(fd)) {
		bp_warn("bypass: doorbell names descriptor %d of pid %d, not an eventfd: "
			"ignored", num, (int)owner);
		bp_sys_close(fd);
		return -1;
	}
	return fd;
}

static void efd_adopt(struct bypass_doorbell *h, int fd, uint64_t loc, bool owner)
{
	if (h->efd >= 0)
		bp_sys_close(h->efd);
	h->efd = fd;
	h->efd_loc = loc;
	h->efd_owner = owner;
}

/*
 * Find or fetch a local descriptor for the doorbell's current eventfd, or
 * (create) make one and publish it.  No lock is shared between processes:
 * the eventfd's location is one 64-bit word, published with a CAS.
 */
static int db_efd_get(struct bypass_doorbell *h, bool create)
{
	struct db_shared *sh = h->sh;
	int ret = -EBUSY;
	pthread_mutex_lock(&h->lock);
	for (int tries = 0; tries < 8; tries++) {
		uint64_t loc = atomic_load(&sh->efd_loc);
		if (loc && h->efd >= 0 && h->efd_loc == loc) {
			ret = h->efd;
			break;
		}
		if (loc) {
			int fd = efd_fetch(loc);
			if (fd >= 0) {
				efd_adopt(h, fd, loc, false);
				ret = fd;
				break;
			}
			pid_t owner = (pid_t)(loc >> 32);
			if (!create || bp_proc_alive(owner, NULL)) {
				bp_warn("bypass: doorbell %p: cannot reach the eventfd of pid %d",
					(void *)sh, (int)owner);
				ret = -EPERM;
				break;
			}
			/* Its owner is gone: replace it. */
		} else if (!create) {
			ret = -ENOENT;
			break;
		}
		int fd = bp_sys_eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		uint64_t mine = efd_loc_make(bp_pid(), fd);
		if (atomic_compare_exchange_strong(&sh->efd_loc, &loc, mine)) {
			efd_adopt(h, fd, mine, true);
			ret = fd;
			break;
		}
		bp_sys_close(fd); /* someone published first: use theirs */
	}
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int bp_db_post_eventfd(struct bypass_doorbell *h)
{
	int fd = h->efd;
	if (bp_unlikely(fd < 0 || h->efd_loc != atomic_load(&h->sh->efd_loc))) {
		fd = db_efd_get(h, false);
		if (fd == -ENOENT) /* withdrawn meanwhile */
			return 0;
		if (fd < 0)
			return fd;
	}
	uint64_t one = 1;
	ssize_t r = bp_sys_write(fd, &one, sizeof(one));
	return r == (ssize_t)sizeof(one) || errno == EAGAIN ? 0 : -errno;
}

int bypass_notify_fd(bypass_doorbell *h)
{
	if (!h || !db_live(h))
		return -EINVAL;
	db_check_fork(h);
	return db_efd_get(h, true);
}

int bypass_notify_arm(bypass_doorbell *h)
{
	if (!h || !db_live(h))
		return -EINVAL;
	db_check_fork(h);
	struct db_shared *sh = h->sh;
	if (h->efd < 0 || h->efd_loc != atomic_load(&sh->efd_loc)) {
		int r = db_efd_get(h, true);
		if (r < 0)
			return r;
	}
	atomic_store_explicit(&sh->efd_armed, 1, memory_order_seq_cst);
	if (!db_pending(sh))
		return 0;
	if (!atomic_exchange(&sh->efd_posted, 1)) {
		int r = bp_db_post_eventfd(h);
		if (r < 0)
			return r;
	}
	return 1;
}

/* ---------------------------------------------------------------- backends */

const char *bypass_notify_backend(const bypass_doorbell *h)
{
	if (!h)
		return NULL;
	return "futex";
}

int bypass_notify_backend_available(const char *name)
{
	if (!name)
		return -EINVAL;
	if (!strcmp(name, "futex") || !strcmp(name, "auto"))
		return 1;
	return -EINVAL;
}
