/* SPDX-License-Identifier: MIT */
/* Doorbell internals shared by the files of src/notify/. */
#ifndef BYPASS_NOTIFY_INTERNAL_H
#define BYPASS_NOTIFY_INTERNAL_H

#include <bypass/notify.h>
#include <pthread.h>

#include "core/deadline.h"
#include "core/internal.h"

#define DB_MAGIC 0x6462656c6c6c7562ull
#define DB_ALIVE 0x414c4956u
#define DB_DEAD 0x44454144u
#define DB_PROCS 8
#define DB_BACKEND_FUTEX 1u /* the only one (shared memory, futex, signals) */

/* The doorbell as it lives in shared memory; it holds no pointers. */
struct db_shared {
	/* Line 0, written by ringers (and by listeners announcing themselves). */
	struct bp_waitword ww;       /* value: ring sequence; sleepers */
	_Atomic uint32_t state;      /* DB_ALIVE / DB_DEAD */
	_Atomic uint32_t efd_armed;  /* a consumer polls the eventfd */
	_Atomic uint32_t efd_posted; /* the eventfd was written since drained */
	_Atomic uint32_t intr_tid;   /* interrupt receiver thread, 0 = none */
	_Atomic uint32_t intr_posted;/* a signal is in flight */
	_Atomic int32_t intr_pid;
	_Atomic uint32_t intr_cookie;
	uint32_t backend;
	uint32_t pad0;
	uint64_t magic;
	/* Line 1, written by consumers. */
	_Atomic uint32_t consumed __attribute__((aligned(BP_CACHELINE)));
	/* Line 2, cold. */
	/* Where the eventfd lives: (pid << 32) | descriptor number, 0 = none. */
	_Atomic uint64_t efd_loc __attribute__((aligned(BP_CACHELINE)));
	_Atomic int32_t procs[DB_PROCS]; /* processes that use the doorbell */
	_Atomic uint32_t rang;           /* bit i: procs[i] has rung it */
	_Atomic uint32_t untracked;      /* a process found the table full */
};

struct bypass_doorbell {
	struct db_shared *sh;
	bypass_arena *arena;   /* not owned */
	void *map;             /* owned mapping, or NULL */
	size_t map_len;
	uint64_t map_off;      /* offset of map within memfd's file */
	int memfd;             /* owned descriptor of the shared memory, or -1 */
	int efd;               /* local descriptor of the eventfd, or -1 */
	uint64_t efd_loc;      /* which shared eventfd efd is (see efd_loc) */
	bool efd_owner;        /* this handle created it */
	int slot;              /* this process's entry in procs[], or -1 */
	_Atomic bool rang_marked; /* our bit in rang is set */
	int mode;
	uint64_t spin_ns;
	unsigned reg_gen;      /* fork generation we registered in */
	int intr_slot;         /* slot in this process's handler table, or -1 */
	pthread_mutex_t lock;  /* slow paths: eventfd and peer bookkeeping */
	int pidfd[DB_PROCS];
	pid_t pidfd_pid[DB_PROCS];
};

static inline bool db_live(const struct bypass_doorbell *h)
{
	return atomic_load_explicit(&h->sh->state, memory_order_acquire) == DB_ALIVE;
}

static inline bool db_pending(struct db_shared *sh)
{
	return atomic_load_explicit(&sh->ww.value, memory_order_seq_cst) !=
	       atomic_load_explicit(&sh->consumed, memory_order_seq_cst);
}

int bp_db_consume(struct bypass_doorbell *h);
int bp_db_post_eventfd(struct bypass_doorbell *h);
bool bp_db_is_eventfd(int fd);
void bp_db_register(struct bypass_doorbell *h);

/* After fork(), the first call in the child registers the child. */
static inline void db_check_fork(struct bypass_doorbell *h)
{
	if (bp_unlikely(h->reg_gen != bp_fork_gen_fast()))
		bp_db_register(h);
}
int bp_db_intr_post(struct bypass_doorbell *h);
void bp_db_intr_unregister(struct bypass_doorbell *h);
/* A live thread's handler consumes the rings (clears the registration of a
 * receiver thread that ended without unregistering). */
bool bp_db_intr_busy(struct db_shared *sh);

#endif
