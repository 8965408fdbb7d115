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
 * Nothing a peer writes there may decide an address, a length, a divisor
 * or a lock's fate in another process: each side copies the layout (the
 * heap's bounds, the event slots) once, checked, into its private struct
 * lib_core and never reads it again; every index into the event slots is
 * taken modulo the private count; the allocator's break and free lists
 * are checked against the private bounds before use.  The locks are
 * lib_lock.c's (a word, an owner the kernel vouches for, a bounded wait),
 * not glibc's robust mutexes, whose list pointers would sit in the shared
 * memory.  The server's liveness word is kept by a thread of its own
 * (lib_lock.c): a call reads it (one load, no system call) and answers
 * -EPIPE once it is cleared or the kernel marked its owner dead; a client
 * also asks the kernel about the server process now and then, so that a
 * word a peer rewrote cannot hide the server's death for long.
 */
#ifndef BYPASS_IPC_LIB_H
#define BYPASS_IPC_LIB_H

#include "ipc/ipc_internal.h"

#include <pthread.h>
#include <sys/stat.h>
#include <sys/un.h>

#define LIB_MAGIC 0x42504c4942525031ull /* "BPLIBRP1" */
#define LIB_VERSION 2u
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

/* A lock word (lib_lock.c): the owner's id + 1, and a waiters bit. */
#define LIB_LK_ID 0x3fffffffu
#define LIB_LK_WAITERS 0x80000000u
/* Owner ids are bytes of the arena's memfd from here (F_OFD_SETLK locks
 * far beyond its end: they change nothing in it). */
#define LIB_OWNER_BASE (1ull << 40)
/* How long a lock is waited for before the service is marked broken: the
 * library's own (held for a few instructions), and the state's. */
#define LIB_LOCK_BOUND_NS 1000000000ll
#define LIB_SVC_LOCK_BOUND_NS 10000000000ll

struct lib_ctl {
	uint64_t magic;
	uint32_t version;
	uint32_t nops;
	uint64_t dev, ino;          /* the service object as loaded (informative) */
	uint64_t heap_off, heap_end;
	uint64_t state_off;         /* what init set, 0 = NULL */
	uint64_t ev_off;            /* the event slots */
	uint32_t ev_slots;          /* 0: no queue */
	uint32_t pad;
	char name[64];

	/* Read by every call: the server's liveness word (its liveness
	 * thread's id; FUTEX_OWNER_DIED once the kernel saw it die; 0 once
	 * closed) and the broken mark. */
	_Atomic uint32_t live __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint32_t broken;    /* LIB_BROKEN | LIB_CLOSED */

	/* The allocator: every change is one store under the lock, so a
	 * process killed inside leaks a block at most. */
	_Atomic uint32_t alloc_lock __attribute__((aligned(BP_CACHELINE)));
	uint64_t brk;               /* next free offset (from the arena's base) */
	uint64_t free_head[LIB_NCLASS]; /* offsets, 0 = empty */
	_Atomic uint64_t used;      /* high water: brk - heap_off */

	_Atomic uint32_t recover_lock __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint64_t faults, owner_dead, leaked, recoveries, events, dropped;

	/* Events: producers serialized by ev_lock; the server consumes. */
	_Atomic uint32_t ev_lock __attribute__((aligned(BP_CACHELINE)));
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

/* This process's identity as a lock owner in one service arena (lib_lock.c). */
struct lib_owner {
	int afd;                    /* the arena's memfd (the arena's own descriptor) */
	int fd;                     /* our own description of it, holding our id */
	_Atomic uint32_t id;        /* id + 1: the lock word's value */
	_Atomic unsigned gen;       /* the fork generation id belongs to */
	pthread_mutex_t mu;
};

/* One mapping of a service arena in this process (lib_map.c). */
struct lib_map {
	struct lib_map *next;
	dev_t dev;
	ino_t ino;                  /* the memfd */
	bypass_arena *arena;
	unsigned refs;
	int guarded;                /* -1 not decided yet, 0, 1 */
	struct lib_owner owner;
};

struct lib_live;

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
	struct lib_owner *owner;    /* &map->owner */
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
	/* The control block's layout, copied once and checked (never read
	 * from the arena again). */
	uint64_t heap_off, heap_end;
	struct bypass_ipc_event *ev; /* the slots, or NULL */
	uint32_t ev_slots;
	char name[64];
	_Atomic uint64_t brk_seen;  /* the allocator's break, as last seen here */
	uint64_t ev_head;           /* server: the next event to take */
	struct lib_live *live;      /* server: the liveness thread */
	/* Client: the server process, asked about now and then. */
	pid_t srv_pid;
	int srv_pidfd;
	_Atomic uint64_t next_look; /* TSC of the next look */
	_Atomic bool gone;          /* the server is gone (seen by a look) */
	struct lib_core *next_open; /* lib_map.c's registry */
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
/* The gate frame whose CFA was rec is gone, seen from a gate whose CFA is
 * here (false also when it cannot be told). */
bool bp_ipc_lib_frame_gone(uintptr_t rec, uintptr_t here);
/* Not inside a call (0; a call this thread left by siglongjmp, seen by
 * its frame being gone from here, is repaired first), or inside one
 * (-EDEADLK: a nested call, or a signal handler's during a call).  here:
 * the CFA of the caller's gate. */
int bp_ipc_lib_depth_check(uintptr_t here);
/* After a call left by siglongjmp: unlink this thread's recovery points
 * if the innermost is gone from here (back to outer, the one outside the
 * call, if that still lives). */
void bp_ipc_lib_drop_dead_records(uintptr_t here, struct bp_recover *outer);
int bp_ipc_lib_run_init(struct lib_core *lc);
int bp_ipc_lib_run_recover(struct lib_core *lc);
/* -EPIPE / -ENOTRECOVERABLE / 0, without a system call. */
static inline int bp_ipc_lib_alive(const struct lib_core *lc)
{
	uint32_t w = atomic_load_explicit(&lc->ctl->live, memory_order_acquire);
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
/* The cores (handles and services) open in this process: a repair of a
 * call left by siglongjmp touches its core only while it is open
 * (core_hold: true and the registry held until core_release). */
void bp_ipc_lib_core_add(struct lib_core *lc);
void bp_ipc_lib_core_del(struct lib_core *lc);
bool bp_ipc_lib_core_hold(struct lib_core *lc);
void bp_ipc_lib_core_release(void);
int bp_ipc_lib_map_open(int afd, struct lib_map **out);
int bp_ipc_lib_map_adopt(bypass_arena *a, int guarded, struct lib_map **out);
void bp_ipc_lib_map_put(struct lib_map *m);
int bp_ipc_lib_map_protect(struct lib_map *m, int gate, bool required, void *heap, size_t len);

/* lib_lock.c: locks and the liveness word. */
void bp_ipc_lib_owner_init(struct lib_owner *o, int afd);
int bp_ipc_lib_owner_take(struct lib_owner *o);
void bp_ipc_lib_owner_fini(struct lib_owner *o);
void bp_ipc_lib_owner_forked(struct lib_owner *o);
/* Take the lock word w: 0, 1 (taken from an owner that died, or from a
 * word that named no owner), -ETIMEDOUT (still held after bound_ns), or
 * -errno (no owner id here). */
int bp_ipc_lib_lock(struct lib_owner *o, _Atomic uint32_t *w, int64_t bound_ns);
void bp_ipc_lib_unlock(_Atomic uint32_t *w);
int bp_ipc_lib_live_start(_Atomic uint32_t *word, struct lib_live **out);
void bp_ipc_lib_live_stop(struct lib_live *lv);

/* lib_env.c: what handlers use. */
void bp_ipc_lib_env_init(struct lib_core *lc);
/* A library lock of the control block, for a section of a few stores:
 * 0 (a dead owner's is taken over silently: those sections leave it
 * consistent), or -ENOLCK (not within the bound: the service is marked
 * broken).  The lock is released by a fault's or an abandoned call's
 * repair if the section does not get to bp_ipc_lib_ctl_unlock. */
int bp_ipc_lib_ctl_lock(struct lib_core *lc, _Atomic uint32_t *w);
void bp_ipc_lib_ctl_unlock(_Atomic uint32_t *w);
/* The calling thread's held locks (env->lock's, and a control-block lock
 * a section left held), released by the gate after a handler that
 * returned holding some, faulted, or was left by siglongjmp; the count
 * released. */
unsigned bp_ipc_lib_release_held(void);
/* Forget them without touching them (their arena is gone). */
void bp_ipc_lib_forget_held(void);
void bp_ipc_lib_set_recovering(bool on);
/* This thread's call met a lock whose owner died (cleared by the read). */
bool bp_ipc_lib_take_owner_dead(void);
/* The calling thread's count of held locks and its owner-died mark, read
 * by the call path after a handler returns (one test for both). */
extern __thread unsigned bp_ipc_lib_nheld __attribute__((tls_model("initial-exec")));
extern __thread bool bp_ipc_lib_odead __attribute__((tls_model("initial-exec")));
int bp_ipc_lib_event_take(struct lib_core *lc, struct bypass_ipc_event *ev);
int bp_ipc_lib_events_waiting(struct lib_core *lc);
/* Copy the control block's layout from c (the server's own, or a client's
 * checked copy of it) into lc. */
void bp_ipc_lib_layout(struct lib_core *lc, const struct lib_ctl *c);

/* lib_object.c: the service object. */
/* Check fd (owner uid or root, not writable by group/others, a regular
 * file) and scan its executable segments; 0 or -EACCES/-EPERM/-ENOEXEC. */
int bp_ipc_lib_check_object(int fd, uid_t owner, bool allow_wrpkru);
/* A copy of the object open at fd in a memfd sealed against writing,
 * shrinking and growing (*out), or -errno (-EACCES/-EPERM: memfds may not
 * be executable here). */
int bp_ipc_lib_object_copy(int fd, int *out);
/* The object a server sent: 1 a sealed memfd, 0 a file (a server where
 * memfds may not be executable), -EACCES a memfd still writable. */
int bp_ipc_lib_object_sealed(int fd);
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

/* A client's handle (lib_client.c; message mode: lib_msg.c). */
struct bypass_ipc_lib {
	struct lib_core lc;         /* first: handlers' env */
	int mode;                   /* BYPASS_IPC_LIB_MODE_* */
	/* Message mode. */
	bypass_ipc_conn *conn;      /* NULL after a failed reconnection */
	_Atomic uint32_t conn_lock; /* the calling thread's id, LIB_LK_WAITERS:
				       calls on one connection take turns */
	bool reconnect;             /* a call was left by siglongjmp */
	unsigned fork_gen;
	char *name;                 /* to connect again */
	struct bypass_ipc_opts mopts;
	uid_t *allow;               /* mopts.allow_uids, our copy */
	int64_t call_timeout;
	size_t max_req;             /* the largest request's payload */
};

/* lib_msg.c */
int bp_ipc_lib_msg_open(struct bypass_ipc_lib *h, const char *name,
			const struct bypass_ipc_lib_opts *o);
void bp_ipc_lib_msg_close(struct bypass_ipc_lib *h);
int bp_ipc_lib_msg_call(struct bypass_ipc_lib *h, unsigned op, const void *req, size_t len,
			void *resp, size_t cap);

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
