/* SPDX-License-Identifier: MIT */
/*
 * ipc internals shared by the files of src/ipc/.
 *
 * The connection's arena (a core arena: its first page is core's header):
 *
 *   page 1        struct ipc_shared: two ring control blocks
 *   data c2s      ring_size bytes, client -> server records
 *   data s2c      ring_size bytes, server -> client records
 *
 * A ring carries records aligned to 64 bytes: a 16-byte header, then the
 * payload.  The header's stamp is written last (release) and says where the
 * record is: stamp = absolute position | kind.  A consumer at position T
 * waits for stamp == T | kind; anything else there is "not yet", except a
 * stamp of a later lap (T + k * ring), which like a record ending more than
 * a ring past the released tail means the producer overran us.  Before it
 * publishes a record, the producer clears the stamp where the next record
 * will go, so that a stale payload byte pattern can never look like a
 * record.  A record never wraps; a PAD record fills the end of the ring.
 *
 * Each side keeps its own position privately (producer: head; consumer: rd
 * and tail); the shared copies only inform the other side and are checked
 * before use.  Addresses are always computed from private positions masked
 * to the ring, so nothing the peer writes can move an access out of the
 * arena.
 */
#ifndef BYPASS_IPC_INTERNAL_H
#define BYPASS_IPC_INTERNAL_H

#include <bypass/ipc.h>
#include <pthread.h>

#include "core/deadline.h"
#include "core/internal.h"
#include "core/syscall.h"

#define IPC_MAGIC 0x4250495043415231ull /* "BPIPCAR1" */
#define IPC_VERSION 1u
#define IPC_HDR 16u        /* record header bytes */
#define IPC_ALIGN 64u      /* record alignment */
#define IPC_SPARE IPC_ALIGN /* a producer keeps this much free: the next stamp */

enum ipc_kind {
	IPC_K_MSG = 1,  /* one-way message */
	IPC_K_REQ = 2,  /* call request */
	IPC_K_RESP = 3, /* call response */
	IPC_K_PAD = 4,  /* skip to the start of the ring */
};
#define IPC_KIND_MASK 63u

struct ipc_rec {
	_Atomic uint64_t stamp; /* position | kind, written last */
	uint32_t len;           /* payload bytes */
	uint32_t id;            /* call id (REQ, RESP) */
};

/* One direction's control block, in the arena; written by both sides. */
struct ipc_ctl {
	/* Line 0: the consumer, rarely (going to sleep, arming). */
	_Atomic uint32_t rx_sleepers;
	_Atomic uint32_t rx_armed;      /* wants a byte on the socket */
	_Atomic uint32_t rx_closed;     /* consumer closed the connection */
	/* Line 1: the consumer, at every release. */
	_Atomic uint64_t tail __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint32_t tx_wake;       /* futex word the producer sleeps on */
	/* Line 2: the producer, rarely. */
	_Atomic uint32_t rx_wake __attribute__((aligned(BP_CACHELINE)));
	_Atomic uint32_t tx_sleepers;
	_Atomic uint32_t tx_closed;     /* producer closed the connection */
	_Atomic int32_t tx_cpu;         /* CPU of the producer's last publish */
};

struct ipc_shared {
	uint64_t magic;
	uint32_t version;
	uint32_t pad;
	struct ipc_ctl c2s __attribute__((aligned(BP_CACHELINE)));
	struct ipc_ctl s2c __attribute__((aligned(BP_CACHELINE)));
};

/* The handshake message: server -> client, with the arena's memfd. */
struct ipc_hello {
	uint64_t magic;
	uint32_t version;
	int32_t status;         /* 0, or a positive errno (refused: EACCES) */
	int32_t pid;            /* the accepting process, in its own pid
				   namespace (informative: the client takes
				   the kernel's SCM_CREDENTIALS instead) */
	uint32_t pad;
	uint64_t ring_size;
	uint64_t max_msg;
	uint64_t off_shared;    /* offsets in the arena */
	uint64_t off_c2s;
	uint64_t off_s2c;
};

/* A ring as one side sees it: checked addresses, fixed at connect time. */
struct ipc_ring {
	struct ipc_ctl *ctl;
	unsigned char *data;
	uint64_t cap, mask;
};

struct ipc_epreg; /* epoll.c */

struct bypass_ipc_conn {
	bypass_arena *arena;
	uintptr_t lo;           /* arena range, for recovery points */
	size_t len;
	int sock;               /* handshake socket: hang-up and wake bytes */
	int pidfd;              /* the peer process, or -1 */
	pid_t peer_pid;
	uid_t peer_uid;
	unsigned fork_gen;
	struct ipc_ring tx, rx;
	uint64_t max_msg;
	int mode;
	uint64_t spin_cycles;

	/* Producer (tx), private. */
	uint64_t head;
	uint64_t tail_seen;     /* last valid shared tail */
	void *loan;             /* outstanding loan's payload, or NULL */
	uint64_t loan_pos;
	uint64_t loan_max;      /* payload bytes reserved */
	int tx_cpu;             /* last CPU written to tx.ctl->tx_cpu */

	/* Consumer (rx), private. */
	uint64_t rd;            /* next record recv() examines */
	uint64_t tail;          /* released up to */
	bool held;              /* a recv()'d message is outstanding */
	uint64_t held_pos, held_end;
	bool det;               /* a call response beyond rd */
	bool det_released;
	uint64_t det_pos, det_end;
	uint32_t call_id;

	/* State. */
	/* Written by the sending and the receiving thread alike. */
	_Atomic int broken;     /* sticky -EPROTO / -EFAULT */
	_Atomic bool peer_gone; /* hang-up seen */
	/* Liveness checks while busy, one set per side (tx, rx). */
	uint64_t next_check[2]; /* TSC of the next check */
	unsigned ops[2];        /* calls since the clock was last read */
	bool armed;             /* rx_armed set by us (bypass_ipc_arm) */
	bool pkey;              /* the arena carries the protection key */
	struct bp_ipc_quota *quota; /* server side: the service's accounting */
	uint64_t quota_id;
	bool fd_given;          /* bypass_ipc_fd handed the socket out */
	struct ipc_epreg *ep;   /* epoll registration, or NULL */
};

struct bypass_ipc_service {
	int fd;
	pid_t creator;
	char path[108];         /* file-system path to unlink, or "" */
	struct bypass_ipc_opts opts;
	uid_t *allow;
	uint64_t ring_size, max_msg;
	struct bp_ipc_quota *quota;
};

/* names.c */
struct sockaddr_un;
int bp_ipc_make_addr(const char *name, bool lib, struct sockaddr_un *sa, bool *is_path);
/* bind fd to sa; a path left by a server that is gone is removed first. */
int bp_ipc_bind(int fd, const struct sockaddr_un *sa, int alen, bool is_path);

/* conn.c */
int bp_ipc_wait_fd(int fd, short events, uint64_t deadline); /* 0, -ETIMEDOUT, -errno */
bool bp_ipc_uid_allowed(uid_t uid, unsigned flags, const uid_t *allow, unsigned n);
int bp_ipc_memfd_ok(int afd, uint64_t *size);
int bp_ipc_peer_check(bypass_ipc_conn *c);       /* 0 alive, -ECONNRESET gone */
void bp_ipc_drain_socket(bypass_ipc_conn *c);    /* read wake bytes; notes EOF */

/* quota.c: per-client limits and the server's arenas after close */
struct bp_ipc_quota;
struct bp_ipc_quota *bp_ipc_quota_new(uint32_t max_pid, uint32_t max_uid);
int bp_ipc_quota_admit(struct bp_ipc_quota *q, pid_t pid, uid_t uid, uint64_t *id);
/* The server closes connection id: punch its arena if the client is gone
 * (or gone is set), else linger if allowed (takes *sock, setting it to -1). */
void bp_ipc_quota_leave(struct bp_ipc_quota *q, uint64_t id, int *sock, int memfd,
			size_t len, bool gone, bool may_linger);
void bp_ipc_quota_close(struct bp_ipc_quota *q);

/* ring.c */
int bp_ipc_tx_check(bypass_ipc_conn *c);         /* 0, or -EPIPE: the peer closed */
int bp_ipc_produce(bypass_ipc_conn *c, size_t size, int64_t timeout_ns, void **payload);
int bp_ipc_publish(bypass_ipc_conn *c, size_t len, unsigned kind, uint32_t id);
void bp_ipc_unloan(bypass_ipc_conn *c);
/* Examine the record at pos: 1 ready (*kind, *len, *id, *end set), 0 not
 * yet, < 0 corrupt. */
int bp_ipc_peek(bypass_ipc_conn *c, uint64_t pos, unsigned *kind, uint32_t *len,
	     uint32_t *id, uint64_t *end);
int bp_ipc_wait_record(bypass_ipc_conn *c, uint64_t pos, uint64_t deadline_ns);
void bp_ipc_update_tail(bypass_ipc_conn *c);
bool bp_ipc_rx_ready(bypass_ipc_conn *c);
bool bp_ipc_peer_on_my_cpu(bypass_ipc_conn *c);

/* pkey.c: ipc's one protection-key layer, for message mode's arenas and
 * library mode's gate (lib_gate.c): the probe, the keys, RDPKRU/WRPKRU. */
/* Does the CPU have protection keys (PKU) and has the OS enabled them
 * (OSPKE)?  If not, the reason in why (may be NULL).  RDPKRU/WRPKRU may
 * run only where it is true. */
bool bp_ipc_pkey_cpu(char *why, size_t n);
/* Allocate a protection key with the given rights in this thread's PKRU
 * after bp_ipc_pkey_cpu: the key, or -errno and the reason in why. */
int bp_ipc_pkey_alloc(unsigned rights, char *why, size_t n);
/*
 * A key of ipc's, allocated once on first use (bp_ipc_key_get) with its
 * rights: key is the key or -errno, reason says which key or why none.
 * Message mode's arenas and library mode's gate have one each: the gate's
 * goes access-disabled outside calls once a server asks for NOREAD, while
 * the arenas' must stay readable for in-place reads, so one key cannot
 * serve both.
 */
struct bp_ipc_key {
	pthread_mutex_t lock;
	_Atomic int state;  /* 0: not tried; 1: done (key and reason final) */
	unsigned rights;
	int key;
	char reason[160];
};
#define BP_IPC_KEY_INIT(r) \
	{ PTHREAD_MUTEX_INITIALIZER, 0, (r), -EOPNOTSUPP, "not checked" }
int bp_ipc_key_get(struct bp_ipc_key *k);        /* k->key, allocated at first */

/* PKRU, read and written whole; only after bp_ipc_pkey_cpu (or a key). */
static inline uint32_t bp_ipc_rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static inline void bp_ipc_wrpkru(uint32_t v)
{
	__asm__ __volatile__(".byte 0x0f,0x01,0xef" : : "a"(v), "c"(0), "d"(0) : "memory");
}

int bp_ipc_pkey_get(void);                       /* the arenas' key, or -errno */
void bp_ipc_pkey_open(void);                     /* this thread may write arenas */
void bp_ipc_pkey_close(void);
void bp_ipc_pkey_after_fault(void);              /* PKRU of the last open, key closed */
int bp_ipc_pkey_tag(void *addr, size_t len);

/* msg.c, for epoll.c: is a message (or a hang-up) waiting?  Optionally arm. */
int bp_ipc_poll_ready(bypass_ipc_conn *c, bool arm);
int bp_ipc_disarm(bypass_ipc_conn *c);
int bp_ipc_poll_peer_elsewhere(bypass_ipc_conn *c); /* 1: spinning may pay */

/* epoll.c */
void bp_ipc_epoll_forget(bypass_ipc_conn *c);

/* Mark the connection dead (sticky) and return the error. */
static inline int ipc_set_broken(bypass_ipc_conn *c, int err)
{
	atomic_store(&c->broken, err);
	return err;
}

static inline int ipc_usable(bypass_ipc_conn *c)
{
	if (bp_unlikely(!c))
		return -EINVAL;
	if (bp_unlikely(c->fork_gen != bp_fork_gen_fast()))
		return -EBADF;
	return c->broken;
}

#endif
