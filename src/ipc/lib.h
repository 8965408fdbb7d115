/* SPDX-License-Identifier: MIT */
/*
 * Library mode (RPAL's call): what the files lib_*.c share.
 *
 * The service arena (a core arena: one memfd, the same address in every
 * process) is laid out as
 *
 *   page 0          core's arena header
 *   control         struct lib_ctl and the event slots: the library's own,
 *                   never guarded by the protection key (the kernel must be
 *                   able to write the robust locks' words there whatever
 *                   the dying thread's PKRU, and every call reads it)
 *   heap            the service's state (env->alloc), guarded by the key
 *                   in every process that has the gate
 *
 * Locks are glibc's robust, process-shared mutexes: the kernel marks a lock
 * whose owner died (FUTEX_OWNER_DIED in its word) while it walks the dying
 * thread's robust list.  The server's thread holds `live` from listen until
 * the service is closed; a call reads its word (one load, no system call)
 * and answers -EPIPE once it is unlocked or its owner died.
 */
#ifndef BYPASS_IPC_LIB_H
#define BYPASS_IPC_LIB_H

#include "ipc/ipc_internal.h"

#include <pthread.h>
#include <sys/stat.h>
#include <sys/un.h>

#define LIB_MAGIC 0x42504c4942525031ull /* "BPLIBRP1" */
#define LIB_VERSION 1u
#define LIB_NCLASS 40          /* block sizes 16 << k */
#define LIB_BLOCK_HDR 16u
#define LIB_MAX_HELD 16
#define LIB_DEFAULT_ARENA (64ull << 20)
#define LIB_DEFAULT_SLOTS 256u

#define LIB_BROKEN 1u
#define LIB_CLOSED 2u

/* The robust futex word's bits (the kernel's ABI, linux/futex.h). */
#define LIB_FUTEX_TID_MASK 0x3fffffffu
#define LIB_FUTEX_OWNER_DIED 0x40000000u

struct lib_ctl {
	uint64_t magic;
	uint32_t version;
	uint32_t nops;
	uint64_t dev, ino;          /* the service object, as the server opened it */
	uint64_t heap_off, heap_end;
	uint64_t state_off;         /* what init set, 0 = NULL */
	uint64_t ev_off;            /* the event slots */
	uint32_t ev_slots;          /* 0: no queue */
	uint32_t pad;
	char name[64];

	/* Read by every call. */
	pthread_mutex_t live __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint32_t broken;    /* LIB_BROKEN | LIB_CLOSED */

	/* The allocator: every change is one store under the lock, so a
	 * process killed inside leaks a block at most. */
	pthread_mutex_t alloc_lock __attribute__((aligned(BP_CACHELINE)));
	uint64_t brk;               /* next free offset (from the arena's base) */
	uint64_t free_head[LIB_NCLASS]; /* offsets, 0 = empty */
	_Atomic uint64_t used;      /* high water: brk - heap_off */

	pthread_mutex_t recover_lock __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint64_t faults, owner_dead, leaked, recoveries, events, dropped;

	/* Events: producers serialized by ev_lock; the server consumes. */
	pthread_mutex_t ev_lock __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint64_t ev_tail;
	_Atomic uint64_t ev_head __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint32_t ev_armed;  /* the server asked for a wake-up */
};

/* One allocated block's header, just before the payload. */
struct lib_block {
	uint32_t magic;             /* LIB_BLOCK_USED / LIB_BLOCK_FREE */
	uint32_t cls;
	uint64_t next;              /* free list link (offset), when free */
};
#define LIB_BLOCK_USED 0x55534544u
#define LIB_BLOCK_FREE 0x46524545u

/* One mapping of a service arena in this process (lib_map.c). */
struct lib_map {
	struct lib_map *next;
	dev_t dev;
	ino_t ino;                  /* the memfd */
	bypass_arena *arena;
	unsigned refs;
	int guarded;                /* -1 not decided yet, 0, 1 */
};

/*
 * What a call needs, shared by a client's handle and the server's service
 * (env is embedded: the env functions find their core through it).
 */
struct lib_core {
	struct bypass_ipc_env env;  /* first */
	struct lib_ctl *ctl;
	uintptr_t base;             /* the arena */
	size_t size;
	bypass_arena *arena;
	struct lib_map *map;        /* this process's mapping of it */
	void *state;
	const bypass_ipc_handler *ops;
	uint32_t nops;
	const struct bypass_ipc_lib_desc *desc;
	void *dl;                   /* dlopen handle */
	int evfd;                   /* the server's eventfd (a client's copy) */
	bool guarded;               /* the heap carries the key here */
	bool pkru_ok;               /* RDPKRU/WRPKRU usable (OSPKE) */
	bool landing;               /* calls recover by the landing (lib_gate.c) */
	bool server;
};

/* lib_gate.c: the protection key of library mode and the call gate. */
int bp_ipc_lib_key(void);                 /* the key, or -EOPNOTSUPP */
bool bp_ipc_lib_pkru_ok(void);            /* the OS enabled PKRU (OSPKE) */
bool bp_ipc_lib_landing_ok(void);         /* lib_gate.c's landing usable here */
bool bp_ipc_lib_in_call(void);            /* this thread runs a handler or hook */
const char *bp_ipc_lib_key_reason(void);
/* Tag [addr, addr+len) with the key and close it in this thread. */
int bp_ipc_lib_guard(void *addr, size_t len);
/* Outside calls, the key is access-disabled too from now on. */
void bp_ipc_lib_noread(void);
int bp_ipc_lib_run_init(struct lib_core *lc);
int bp_ipc_lib_run_recover(struct lib_core *lc);
/* -EPIPE / -ENOTRECOVERABLE / 0, without a system call. */
static inline int bp_ipc_lib_alive(const struct lib_core *lc)
{
	uint32_t w = __atomic_load_n((const uint32_t *)&lc->ctl->live, __ATOMIC_ACQUIRE);
	uint32_t b = atomic_load_explicit(&lc->ctl->broken, memory_order_acquire);
	if (bp_unlikely(!(w & LIB_FUTEX_TID_MASK) || (w & LIB_FUTEX_OWNER_DIED) || b)) {
		if (!(w & LIB_FUTEX_TID_MASK) || (w & LIB_FUTEX_OWNER_DIED) || (b & LIB_CLOSED))
			return -EPIPE;
		return -ENOTRECOVERABLE;
	}
	return 0;
}
void bp_ipc_lib_stats_fill(const struct lib_core *lc, struct bypass_ipc_lib_stats *st);

/* lib_map.c */
int bp_ipc_lib_map_open(int afd, struct lib_map **out);
int bp_ipc_lib_map_adopt(bypass_arena *a, int guarded, struct lib_map **out);
void bp_ipc_lib_map_put(struct lib_map *m);
int bp_ipc_lib_map_protect(struct lib_map *m, int gate, bool required, void *heap, size_t len);

/* lib_env.c: what handlers use. */
void bp_ipc_lib_env_init(struct lib_core *lc);
int bp_ipc_lib_mutex_init(pthread_mutex_t *m);
/* Lock a library mutex of the control page; EOWNERDEAD made consistent
 * (returns 1 then), else 0. */
int bp_ipc_lib_mutex_take(pthread_mutex_t *m);
/* The calling thread's held locks, released by the gate after a handler
 * that returned holding some or faulted; the count released. */
unsigned bp_ipc_lib_release_held(void);
void bp_ipc_lib_set_recovering(bool on);
/* This thread's call met a lock whose owner died (cleared by the read). */
bool bp_ipc_lib_take_owner_dead(void);
/* The calling thread's count of held locks and its owner-died mark, read
 * by the call path after a handler returns (one test for both). */
extern __thread unsigned bp_ipc_lib_nheld __attribute__((tls_model("initial-exec")));
extern __thread bool bp_ipc_lib_odead __attribute__((tls_model("initial-exec")));
int bp_ipc_lib_event_take(struct lib_core *lc, struct bypass_ipc_event *ev);
int bp_ipc_lib_events_waiting(struct lib_core *lc);

/* lib_object.c: the service object. */
/* Check fd (owner uid or root, not writable by group/others, a regular
 * file) and scan its executable segments; 0 or -EACCES/-EPERM/-ENOEXEC. */
int bp_ipc_lib_check_object(int fd, uid_t owner, bool allow_wrpkru);
/* Load the object open at fd (checked) and find its description; the
 * loaded file must be fd's (dev, ino).  0, -ENOEXEC, -EPERM, -ESTALE. */
int bp_ipc_lib_load(struct lib_core *lc, int fd, bool allow_wrpkru);
void bp_ipc_lib_unload(struct lib_core *lc);
/* Count WRPKRU / XRSTOR sequences in buf (for the tests through the
 * object check, and the memory scan). */
size_t bp_ipc_lib_scan(const unsigned char *buf, size_t len, size_t *first);

/* The lib hello: server -> library-mode client, with three descriptors
 * (the arena's memfd, the object, the eventfd). */
struct lib_hello {
	uint64_t magic;
	uint32_t version;
	int32_t status;             /* 0, or a positive errno */
	uint64_t base, size;        /* the arena */
	uint64_t ctl_off;           /* struct lib_ctl */
	uint64_t dev, ino;          /* the object */
	uint32_t nops;
	uint32_t pad;
};

/* lib_server.c */
int bp_ipc_lib_check_opts(const struct bypass_ipc_lib_opts *o);
int bp_ipc_lib_want_gate(const struct bypass_ipc_lib_opts *o); /* 1, 0, -EOPNOTSUPP */

/* lib_gate.c: run one call: the checks every call makes, then the gate. */
int bp_ipc_lib_invoke(struct lib_core *lc, uint32_t op, const void *req, size_t len,
		      void *resp, size_t cap);
int bp_ipc_lib_do_recover(struct lib_core *lc);

/* Message mode: a request is { op, 0 } + the payload; the response
 * { ret, 0 } + the answer. */
struct lib_wire {
	int32_t v;
	uint32_t pad;
};

#endif
