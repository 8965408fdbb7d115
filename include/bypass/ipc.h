/* SPDX-License-Identifier: MIT */
/*
 * bypass/ipc.h - calls and messages between processes through shared
 * memory, with no system call while both sides are awake: the stock-kernel
 * counterpart of RPAL ("Run Process As Library").
 *
 * A server creates a named service (a Unix socket used only for the
 * handshake); a client connects.  The handshake checks the peer's
 * credentials (SO_PEERCRED: the same uid by default, or an allow-list) and
 * passes a shared arena (a sealed memfd mapped at the same address in both
 * processes) holding two rings, one per direction.
 *
 * Messages are loaned from the ring: loan, write in place, send; the
 * receiver reads the payload where it lies and releases it.  A payload built
 * in place is never copied; bypass_ipc_send() of a private buffer copies it
 * once.  bypass_ipc_call() sends a request and waits for the response; the
 * server receives the request with bypass_ipc_recv() in its own thread and
 * answers with bypass_ipc_reply().
 *
 * Waiting: a receiver (or a sender waiting for room) spins for a bounded
 * time, then sleeps on a futex in the arena; the other side makes the wake-up
 * system call only when it finds the waiter asleep.  In an epoll loop,
 * bypass_ipc_epoll_wait() reports ready connections and ordinary descriptors
 * together.
 *
 * The peer is not trusted: every value it can write in the arena is copied
 * and checked before use, so a hostile peer can corrupt only what it sends,
 * never make this process touch memory outside the arena.  A peer that dies
 * turns into -ECONNRESET (receiving) or -EPIPE (sending) within about 20 ms.
 *
 * Threads: a connection may have one sending thread and one receiving
 * thread at a time (bypass_ipc_call counts as both).  A connection belongs to
 * the process that opened it; in a child after fork() only bypass_ipc_close()
 * may be called on it (-EBADF otherwise).
 *
 * Every function returns 0 or a count on success and -errno on failure.
 */
#ifndef BYPASS_IPC_H
#define BYPASS_IPC_H

#include <bypass/core.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bypass_ipc_service bypass_ipc_service;
typedef struct bypass_ipc_conn bypass_ipc_conn;

/* opts.flags */
#define BYPASS_IPC_ANY_UID 0x1u /* accept peers of any uid (no credential check) */
#define BYPASS_IPC_PKEY 0x2u    /* guard this process's mapping of the arena with
				   a memory protection key (see bypass_ipc_pkey_supported) */
#define BYPASS_IPC_LAZY 0x4u    /* do not pre-fault this side's mapping of the
				   rings: memory is faulted in as messages use it
				   (a server with many idle clients pays only for
				   what they send) */

struct bypass_ipc_opts {
	/* Service only: the rings of each connection. */
	size_t ring_size;   /* bytes per direction: a power of two from 4 KiB
			       to 1 GiB; 0 = 1 MiB */
	size_t max_msg;     /* largest message; 0 = ring_size / 4; at most
			       ring_size / 2 - 128 */
	/* Both sides. */
	int mode;           /* how this side waits: BYPASS_WAIT_ADAPTIVE (default),
			       BYPASS_WAIT_SLEEP or BYPASS_WAIT_SPIN */
	uint64_t spin_ns;   /* adaptive spin budget; 0 = 20000 */
	int64_t handshake_timeout_ns; /* connect: wait for the server this long;
					 0 = 5 s */
	const uid_t *allow_uids; /* uids accepted besides this process's own */
	unsigned nallow;
	unsigned flags;     /* BYPASS_IPC_* */
	/* Client only: the largest ring (each direction) accepted from a
	   server; a larger offer fails connect with -EFBIG.  The arena the
	   client maps (and pre-faults) is then at most 2 * max_ring + 16 KiB.
	   0 = 16 MiB; else from 4 KiB to 1 GiB. */
	size_t max_ring;
	/* Service only: connections open at once per client process and per
	   client uid, counting connections this side closed while the client
	   still holds them (see bypass_ipc_close); a client over either is
	   refused with -EUSERS on both sides.  0 = 64 per process, 1024 per
	   uid; UINT32_MAX = no limit. */
	uint32_t max_per_pid;
	uint32_t max_per_uid;
	uint64_t reserved[4]; /* must be zero (-EINVAL otherwise) */
};

/*
 * A received message.  data points into the shared arena: read it in place,
 * then bypass_ipc_release() it.  The peer can still write there; copy what
 * you must validate if you do not trust it.
 */
#define BYPASS_IPC_MSG_CALL 0x1u /* a request: answer it with bypass_ipc_reply() */

struct bypass_ipc_msg {
	void *data;
	size_t len;
	unsigned flags;  /* BYPASS_IPC_MSG_* */
	/* private to the library */
	uint32_t priv_id;
	uint64_t priv_pos;
	uint64_t priv_end;
};

/* ---------------------------------------------------------------- services */

/*
 * bypass_ipc_listen - create a service.  name is a path in the file system
 * if it starts with '/' or '.', otherwise a name in the abstract Unix socket
 * namespace ("bypass-ipc:" + name); at most 100 bytes for a path, 96 for a
 * name.  opts may be NULL.
 * Returns 0, -EINVAL (bad name or options), -EADDRINUSE, -EOPNOTSUPP
 * (BYPASS_IPC_PKEY without protection keys), or another -errno.
 */
BYPASS_API int bypass_ipc_listen(const char *name, const struct bypass_ipc_opts *opts,
				 bypass_ipc_service **out);

/*
 * bypass_ipc_service_fd - the listening descriptor: it polls readable when a
 * client waits to be accepted (register it with epoll_ctl as usual).
 */
BYPASS_API int bypass_ipc_service_fd(const bypass_ipc_service *svc);

/*
 * bypass_ipc_accept - accept one client: check its credentials, create the
 * connection's arena and send it.  Waits at most timeout_ns for a client
 * (0 = not at all, BYPASS_FOREVER).  Returns 0 and *out, -EAGAIN or
 * -ETIMEDOUT (nobody waiting), -EACCES (the client's uid is not allowed: it
 * was told and disconnected), -EUSERS (the client's process or uid already
 * holds max_per_pid / max_per_uid connections: it was told and
 * disconnected), -ECONNABORTED (it left first), -ENOMEM (the rings could not
 * be pre-faulted), or -errno.
 *
 * What each connection costs the server: three descriptors (the socket, the
 * arena's memfd, the client's pidfd) and one shared mapping of
 * 2 * ring_size + 8 KiB, pre-faulted at accept unless BYPASS_IPC_LAZY.
 */
BYPASS_API int bypass_ipc_accept(bypass_ipc_service *svc, bypass_ipc_conn **out,
				 int64_t timeout_ns);

/* bypass_ipc_service_close - stop listening (unlinking a path it created). */
BYPASS_API int bypass_ipc_service_close(bypass_ipc_service *svc);

/* ------------------------------------------------------------- connections */

/*
 * bypass_ipc_connect - connect to a service and map its arena.  Returns 0
 * and *out, -ECONNREFUSED or -ENOENT (no such service), -EACCES (the server
 * refused our uid, or its uid is not allowed), -ETIMEDOUT (no answer within
 * the handshake timeout), -EPROTO (the server sent something that is not a
 * valid bypass arena, e.g. one that could be truncated under us), -EFBIG
 * (its rings are larger than opts.max_ring), -EUSERS (refused by the
 * server's per-client limits), -EEXIST (the arena's address range is taken
 * in this process), -ENOMEM (the rings could not be pre-faulted), or -errno.
 */
BYPASS_API int bypass_ipc_connect(const char *name, const struct bypass_ipc_opts *opts,
				  bypass_ipc_conn **out);

/*
 * bypass_ipc_close - tell the peer, unmap the arena, close the descriptors
 * and free the connection (messages still held become invalid).  The peer's
 * calls return -EPIPE / -ECONNRESET once it has read what was sent.
 *
 * On the server, the arena's pages are punched out of the memfd as soon as
 * the client has left too, so a client that keeps the memfd after leaving
 * holds only holes (what it faults in there is charged to it).  While the
 * client is still connected it may read what was sent: the service then
 * keeps the socket and the memfd (two descriptors) and counts the connection
 * against max_per_pid / max_per_uid until the client leaves;
 * bypass_ipc_accept frees those whose client has gone.  Once the service is
 * closed, such lingering arenas are released to the client (no longer
 * counted, not punched); so is the arena of a connection whose socket the
 * application took with bypass_ipc_fd (it may sit in the application's
 * own epoll set, so closing the connection closes it).
 */
BYPASS_API int bypass_ipc_close(bypass_ipc_conn *conn);

/* bypass_ipc_set_mode - how this side of conn waits (as opts.mode/spin_ns;
 * spin_ns 0 keeps the current budget). */
BYPASS_API int bypass_ipc_set_mode(bypass_ipc_conn *conn, int mode, uint64_t spin_ns);

/*
 * bypass_ipc_peer - the peer's credentials as the kernel reported them at
 * connection time (either pointer may be NULL).
 */
BYPASS_API int bypass_ipc_peer(const bypass_ipc_conn *conn, pid_t *pid, uid_t *uid);

/* bypass_ipc_max_msg - the largest message conn carries. */
BYPASS_API int bypass_ipc_max_msg(const bypass_ipc_conn *conn, size_t *max);

/* ----------------------------------------------------------------- sending */

/*
 * bypass_ipc_loan - reserve room for a message of up to size bytes and set
 * *buf to it, in the shared arena: write the payload there, then send it with
 * bypass_ipc_send(conn, *buf, len, ...) (no copy) or drop it with
 * bypass_ipc_loan_cancel().  One loan at a time per connection.  Waits at most
 * timeout_ns for room (0 = not at all).  Returns 0, -EMSGSIZE (size >
 * max_msg), -EBUSY (a loan is outstanding), -EAGAIN / -ETIMEDOUT (the ring is
 * full), -EPIPE (the peer is gone), -EPROTO / -EFAULT (the peer corrupted the
 * connection, or its memory vanished: the connection is dead), -EBADF.
 */
BYPASS_API int bypass_ipc_loan(bypass_ipc_conn *conn, size_t size, void **buf,
			       int64_t timeout_ns);

/* bypass_ipc_loan_cancel - give a loan back unsent. */
BYPASS_API int bypass_ipc_loan_cancel(bypass_ipc_conn *conn, void *buf);

/*
 * bypass_ipc_send - send a one-way message of len bytes.  If buf is the
 * outstanding loan, the message is published in place (len at most the
 * loaned size); otherwise buf is copied into the ring once.  Waits at most
 * timeout_ns for room.  Returns 0 or the errors of bypass_ipc_loan (-EINVAL
 * for a NULL buf with len > 0, or a loan pointer with a larger len).
 */
BYPASS_API int bypass_ipc_send(bypass_ipc_conn *conn, const void *buf, size_t len,
			       int64_t timeout_ns);

/* --------------------------------------------------------------- receiving */

/*
 * bypass_ipc_recv - wait at most timeout_ns (0 = not at all) for the next
 * message and describe it in *msg, in place.  One received message may be
 * held at a time: release it before the next recv.  Returns 0, -EAGAIN /
 * -ETIMEDOUT (nothing), -EBUSY (a message is still held), -ECONNRESET (the
 * peer is gone and everything it sent has been read), -EPROTO / -EFAULT
 * (corrupted by the peer, or its memory vanished), -EBADF.
 */
BYPASS_API int bypass_ipc_recv(bypass_ipc_conn *conn, struct bypass_ipc_msg *msg,
			       int64_t timeout_ns);

/*
 * bypass_ipc_release - give a received message's room back to the sender.
 * Returns -EINVAL if msg is not a message held on conn.
 */
BYPASS_API int bypass_ipc_release(bypass_ipc_conn *conn, struct bypass_ipc_msg *msg);

/* ------------------------------------------------------------------- calls */

/*
 * bypass_ipc_call - send a request (in place if req is the outstanding loan,
 * else copied once) and wait at most timeout_ns in total for the response,
 * which *resp describes in place (release it like a received message).
 * One-way messages that the server sends meanwhile stay queued for
 * bypass_ipc_recv(), holding their room in the ring: a server that sends
 * more than the ring holds before it answers waits for room, and the call
 * for its response, until one of them times out.  One call at a time per
 * connection.  Returns 0,
 * -ETIMEDOUT (a late response is dropped), -ECONNRESET (the server died
 * before answering), -EBUSY (the previous response is still held), -EINVAL
 * (also for a timeout of 0), and the errors of send and recv.
 */
BYPASS_API int bypass_ipc_call(bypass_ipc_conn *conn, const void *req, size_t len,
			       struct bypass_ipc_msg *resp, int64_t timeout_ns);

/*
 * bypass_ipc_reply - answer the request req (a message received with
 * BYPASS_IPC_MSG_CALL) with len bytes from buf (in place if buf is the
 * outstanding loan).  req may be released before or after.  Returns 0,
 * -EINVAL (req is not a request), and the errors of bypass_ipc_send.
 */
BYPASS_API int bypass_ipc_reply(bypass_ipc_conn *conn, const struct bypass_ipc_msg *req,
				const void *buf, size_t len, int64_t timeout_ns);

/* ------------------------------------------------------------------- epoll */

/*
 * bypass_ipc_fd - a descriptor for poll/epoll: it polls readable when a
 * message arrives while the connection is armed (bypass_ipc_arm), and when
 * the peer hangs up.  It belongs to the connection (do not close it or read
 * from it).  After it polls readable, call bypass_ipc_recv(conn, &m, 0).
 * It may poll readable early (armed while a received message is still
 * held, the peer still finishing that message's publication may take the
 * arming for it): the receive then returns -EAGAIN; arm again and block
 * again.
 */
BYPASS_API int bypass_ipc_fd(const bypass_ipc_conn *conn);

/*
 * bypass_ipc_arm - before blocking in poll/epoll on bypass_ipc_fd(): ask the
 * peer to make the descriptor readable on its next message.  Returns 0 when
 * armed, 1 when a message is already waiting (do not block).
 */
BYPASS_API int bypass_ipc_arm(bypass_ipc_conn *conn);

/*
 * bypass_ipc_epoll_ctl - add (EPOLL_CTL_ADD), change (EPOLL_CTL_MOD) or remove
 * (EPOLL_CTL_DEL) a connection in the epoll instance epfd, like epoll_ctl()
 * with a connection for a descriptor.  ev->events may hold EPOLLIN and
 * EPOLLRDHUP (EPOLLHUP and EPOLLERR are always reported); ev->data is
 * returned as given.  Only bypass_ipc_epoll_wait() reports connections.
 * Remove connections (or close them) before closing epfd, and not while
 * another thread waits in bypass_ipc_epoll_wait() on epfd.  Returns 0,
 * -EINVAL, -EEXIST, -ENOENT, -EOPNOTSUPP (EPOLLOUT, EPOLLET, EPOLLONESHOT,
 * EPOLLEXCLUSIVE), -ENOMEM, -EBADF, or the -errno of epoll_ctl.
 */
BYPASS_API int bypass_ipc_epoll_ctl(int epfd, int op, bypass_ipc_conn *conn,
				struct epoll_event *ev);

/*
 * bypass_ipc_epoll_wait - epoll_wait() that also reports the connections added
 * with bypass_ipc_epoll_ctl: a connection is ready (EPOLLIN) while a message
 * waits, and reports EPOLLHUP (with EPOLLIN and EPOLLRDHUP if registered
 * for them) once its peer is gone.
 * Level-triggered.  While connections are busy no system call is made
 * (ordinary descriptors are still polled at least every 50 us); when nothing
 * is ready it spins for the connections' adaptive budget, then arms them and
 * sleeps in epoll_wait.  Waits at most timeout_ns nanoseconds (0 = do not
 * wait, BYPASS_FOREVER = no limit), like every bypass timeout.
 * Returns the number of events, or -errno (-EINTR when a signal interrupted
 * the sleep).
 */
BYPASS_API int bypass_ipc_epoll_wait(int epfd, struct epoll_event *events,
				     int maxevents, int64_t timeout_ns);

/* -------------------------------------------------------------- protection */

/*
 * bypass_ipc_pkey_supported - 1 if memory protection keys can guard arenas
 * here (BYPASS_IPC_PKEY), 0 if not; *why (if why is non-NULL) then says why
 * not (CPU without PKU, OS without OSPKE, pkey_alloc refused...).
 *
 * With BYPASS_IPC_PKEY, this process's mapping of each connection's arena
 * carries a protection key whose rights in PKRU forbid writes outside the
 * library: application code may read received messages in place, and may
 * write only into an outstanding loan, from the thread that took it.  A stray
 * write anywhere else in the arena faults (SIGSEGV, SEGV_PKUERR).
 */
BYPASS_API int bypass_ipc_pkey_supported(const char **why);

/* ------------------------------------------------------------ library mode */

/*
 * Library mode: RPAL's call.  A service is written once, as handlers in a
 * shared object.  The server loads it (bypass_ipc_lib_listen) and builds
 * the service's state in a service arena, a memfd that every process maps at
 * the same address, so pointers inside the state are valid everywhere.  A
 * client that opens the service in library mode (bypass_ipc_lib_open) maps
 * the arena, loads the same object (the same file: device and inode checked
 * through the server's own descriptor) and then runs the handlers in its
 * own thread: bypass_ipc_lib_call costs about a function call and wakes
 * nobody.  A client may instead open in message mode (process isolation):
 * the same calls then travel through an ordinary connection's rings to the
 * server's threads, which run the same handlers (bypass_ipc_lib_serve).
 *
 * Threat model (as RPAL's): library mode trusts the peer's code; it guards
 * against accidents, not malice.  Message mode is the choice for an
 * untrusted peer.  Where the CPU has protection keys, the state is
 * writable (and, with BYPASS_IPC_LIB_NOREAD, readable) only inside a call:
 * a call gate writes PKRU on entry and on exit and checks the value it set;
 * a stray write from the application into the state faults (SIGSEGV,
 * SEGV_PKUERR).  The object is scanned at load for WRPKRU and XRSTOR byte
 * sequences and refused if it holds one.  A fault inside a handler returns
 * -EFAULT to its caller and marks the service broken for every process
 * until the service's recover hook has run (bypass_ipc_lib_recover); a
 * process killed inside a handler while holding a lock leaves the next
 * taker -EOWNERDEAD (and the service broken), never a hang; a server that
 * died is seen at the next call without a system call (-EPIPE).
 *
 * A handler runs in the caller's process: its descriptors, credentials,
 * signal dispositions and errno are the caller's.  What needs the server's
 * own resources (its files, sockets, a log) is posted to the server's loop
 * (env->post) and done by the server's threads.  Signal handlers that run
 * during a call run without access to the state (the kernel starts them
 * with the default PKRU) where protection keys guard it.  A handler may
 * not call a service itself (-EDEADLK).
 */

#define BYPASS_IPC_LIB_ABI 1
/* The symbol a service's shared object defines: a struct bypass_ipc_lib_desc. */
#define BYPASS_IPC_LIB_ENTRY "bypass_ipc_lib_entry"

/*
 * A process-shared lock for state in the service arena whose owner's death
 * is seen (a word naming the owning process, which the kernel vouches for:
 * see docs/ipc.md).  Initialise it with env->lock_init before its first
 * use.
 */
typedef struct bypass_ipc_lock {
	uint64_t opaque[8];
} bypass_ipc_lock;

struct bypass_ipc_env;

/*
 * A handler: answer the request req (len bytes, in the caller's memory)
 * by writing at most cap bytes to resp (the caller's memory too).
 * Returns the response's length, or a negative errno of its own (which the
 * caller receives; avoid those the library reserves: -EPIPE, -EFAULT,
 * -EOWNERDEAD, -ENOTRECOVERABLE, -EDEADLK, -EOVERFLOW).  state is what init
 * set.
 */
typedef int (*bypass_ipc_handler)(const struct bypass_ipc_env *env, void *state,
				  const void *req, size_t len, void *resp, size_t cap);

/*
 * What a handler may use, passed to every handler and hook.  The service
 * object calls these through the pointers, so it needs no link to
 * libbypass (a second copy of the library in one process would not work).
 */
struct bypass_ipc_env {
	uint32_t abi;    /* BYPASS_IPC_LIB_ABI */
	uint32_t flags;  /* BYPASS_IPC_ENV_SERVER in the server's process */
	/* alloc/free: memory in the service arena (16-byte aligned),
	 * process-shared and robust (a process killed inside leaks at most
	 * the block it was taking or giving back).  alloc: 0, -EINVAL,
	 * -ENOMEM (the arena is full), -ENOTRECOVERABLE (the allocator's
	 * state in the control block is out of bounds: the service is marked
	 * broken), -ENOLCK (its lock stayed held past 1 s: the service is
	 * marked broken).  free: 0, -EINVAL (not a block of this arena, or
	 * freed already), -ENOLCK. */
	int (*alloc)(const struct bypass_ipc_env *env, size_t size, void **ptr);
	int (*free)(const struct bypass_ipc_env *env, void *ptr);
	/* Robust locks in the arena.  lock returns 0; -EOWNERDEAD when the
	 * previous owner died holding it (or the word named no live owner):
	 * the lock is now held and usable again, but what it protects may be
	 * half-changed, so the service is marked broken (unlock it and
	 * return; the recover hook repairs); -ENOTRECOVERABLE (not held) when
	 * the service was marked broken while this call ran, or the lock
	 * stayed held by a live process past 10 s (the service is then marked
	 * broken); -EDEADLK if this thread holds it already; -ENOLCK beyond
	 * 16 locks held at once.  Locks still held when a handler returns are
	 * released and the service is marked broken. */
	int (*lock_init)(const struct bypass_ipc_env *env, bypass_ipc_lock *l);
	int (*lock)(const struct bypass_ipc_env *env, bypass_ipc_lock *l);
	int (*unlock)(const struct bypass_ipc_env *env, bypass_ipc_lock *l);
	/* post: queue an event (type and up to BYPASS_IPC_EVENT_MAX bytes)
	 * for the server's loop (bypass_ipc_lib_event).  The queue is in the
	 * arena; the poster makes a system call (an eventfd write) only when
	 * the server asked for a wake-up (bypass_ipc_lib_arm).  0, -EAGAIN
	 * (the queue is full: dropped and counted), -EMSGSIZE, -ENOTSUP (the
	 * server set event_slots to UINT32_MAX: no queue), -ENOLCK (the
	 * queue's lock stayed held past 1 s: the service is marked broken). */
	int (*post)(const struct bypass_ipc_env *env, uint32_t type, const void *data,
		    size_t len);
	void *reserved[4];
};

#define BYPASS_IPC_ENV_SERVER 0x1u

/*
 * A service's description: the object defines
 *     const struct bypass_ipc_lib_desc bypass_ipc_lib_entry = { ... };
 */
struct bypass_ipc_lib_desc {
	uint32_t abi;      /* BYPASS_IPC_LIB_ABI */
	uint32_t nops;     /* entries in ops: the call's op is an index */
	const char *name;  /* for logs */
	size_t arena_size; /* bytes for the state; 0 = 64 MiB */
	/* The server, once, at listen (inside the gate): build the state with
	 * env->alloc and set *state.  0, or -errno (listen fails with it). */
	int (*init)(const struct bypass_ipc_env *env, void **state);
	/* Optional: repair the state after a fault or a dead lock owner (any
	 * process may run it, through bypass_ipc_lib_recover; one at a time).
	 * 0 when the state is whole again.  Without it a broken service stays
	 * broken. */
	int (*recover)(const struct bypass_ipc_env *env, void *state);
	const bypass_ipc_handler *ops;
	uint64_t reserved[4];
};

/* An event posted by a handler (env->post). */
#define BYPASS_IPC_EVENT_MAX 48
struct bypass_ipc_event {
	uint32_t type;
	uint32_t len;
	int32_t pid;       /* the posting process, in its own pid namespace */
	uint32_t reserved;
	unsigned char data[BYPASS_IPC_EVENT_MAX];
};

typedef struct bypass_ipc_lib bypass_ipc_lib;                 /* a client's handle */
typedef struct bypass_ipc_lib_service bypass_ipc_lib_service; /* the server's */

/* opts.protect */
enum bypass_ipc_protect {
	BYPASS_IPC_PROTECT_AUTO = 0,     /* the gate where the CPU has protection keys,
					    unguarded elsewhere (stats.guarded says) */
	BYPASS_IPC_PROTECT_REQUIRED = 1, /* the gate or nothing (-EOPNOTSUPP) */
	BYPASS_IPC_PROTECT_NONE = 2,     /* never the gate */
};

/* opts.flags (and BYPASS_IPC_ANY_UID) */
#define BYPASS_IPC_LIB_FALLBACK 0x100u     /* open: message mode where library
					      mode cannot be had */
#define BYPASS_IPC_LIB_MESSAGE 0x200u      /* open: message mode, always */
#define BYPASS_IPC_LIB_NOREAD 0x400u       /* the state is not even readable
					      outside a call (protection keys) */
#define BYPASS_IPC_LIB_ALLOW_WRPKRU 0x800u /* load an object that holds WRPKRU
					      or XRSTOR byte sequences */

struct bypass_ipc_lib_opts {
	int protect;          /* enum bypass_ipc_protect */
	unsigned flags;       /* BYPASS_IPC_LIB_*, BYPASS_IPC_ANY_UID */
	const uid_t *allow_uids; /* peers' uids accepted besides our own (the
				    server's object may then be owned by that
				    uid too) */
	unsigned nallow;
	size_t arena_size;    /* server: overrides desc->arena_size */
	uint32_t event_slots; /* server: events queued; 0 = 256, UINT32_MAX = none */
	int64_t handshake_timeout_ns; /* open: 0 = 5 s */
	int64_t call_timeout_ns;      /* message mode: a call's limit; 0 = none */
	/* Message mode: the options of the server's message service, or of
	 * the client's connection (NULL: defaults, with the uids above). */
	const struct bypass_ipc_opts *msg;
	uint64_t reserved[4]; /* must be zero (-EINVAL otherwise) */
};

/* stats.mode */
#define BYPASS_IPC_LIB_MODE_LIBRARY 1
#define BYPASS_IPC_LIB_MODE_MESSAGE 2

struct bypass_ipc_lib_stats {
	int mode;              /* BYPASS_IPC_LIB_MODE_* (the server: LIBRARY) */
	int guarded;           /* 1: this process runs handlers behind the
				  protection-key gate; 0: unguarded */
	uint32_t broken;       /* 1 while the service is broken */
	uint32_t pad;
	/* The service's, counted by every process. */
	uint64_t faults;       /* handlers that faulted */
	uint64_t owner_dead;   /* locks found with a dead owner */
	uint64_t leaked_locks; /* handlers that returned holding a lock */
	uint64_t recoveries;   /* recover hooks that succeeded */
	uint64_t events;       /* events posted */
	uint64_t events_dropped; /* posted to a full queue */
	uint64_t arena_used;   /* bytes of the state's heap handed out (high water) */
	uint64_t arena_size;   /* bytes of the state's heap */
	uint64_t arena_base;   /* where the service arena is mapped (every process) */
	uint64_t reserved[8];  /* room to grow: zero today */
};

/* --- the server */

/*
 * bypass_ipc_lib_listen - load the service object at path, build its state
 * (desc->init) in a fresh service arena and listen for clients under name
 * (as bypass_ipc_listen: message-mode clients connect to name, library-mode
 * openers to a second socket beside it).  The object must be a regular
 * file owned by us or root, not writable by group or others, and free of
 * WRPKRU/XRSTOR sequences (unless BYPASS_IPC_LIB_ALLOW_WRPKRU).  The
 * calling thread holds the service's liveness lock until
 * bypass_ipc_lib_service_close: clients see -EPIPE once it exits.
 * Returns 0, -EINVAL, -EACCES (owner or permissions), -EPERM (a WRPKRU or
 * XRSTOR sequence), -ENOEXEC (not a loadable x86-64 object, no
 * bypass_ipc_lib_entry, another ABI), -EOPNOTSUPP (protection keys
 * required but absent), -EADDRINUSE, the error of init, or -errno.
 */
BYPASS_API int bypass_ipc_lib_listen(const char *name, const char *path,
				     const struct bypass_ipc_lib_opts *opts,
				     bypass_ipc_lib_service **out);

/*
 * bypass_ipc_lib_service_fd - one descriptor for the server's loop (an
 * epoll instance): it polls readable when a client waits to be accepted
 * (either mode) or, once armed, when an event was posted.
 */
BYPASS_API int bypass_ipc_lib_service_fd(const bypass_ipc_lib_service *svc);

/*
 * bypass_ipc_lib_accept - admit one client, waiting at most timeout_ns.  A
 * library-mode opener is handed the arena and the object and needs nothing
 * more: returns 1 with *out NULL.  A message-mode client: returns 0 and
 * *out, a connection to serve with bypass_ipc_lib_serve (and to close with
 * bypass_ipc_close).  -EAGAIN / -ETIMEDOUT when nobody waits, and the
 * errors of bypass_ipc_accept.
 */
BYPASS_API int bypass_ipc_lib_accept(bypass_ipc_lib_service *svc, bypass_ipc_conn **out,
				     int64_t timeout_ns);

/*
 * bypass_ipc_lib_serve - wait at most timeout_ns for one message-mode call
 * on conn, run its handler in this thread (behind the gate) and answer.
 * Returns 1 (served), -EAGAIN / -ETIMEDOUT (nothing came), -ECONNRESET (the
 * client left: close conn), or another error of bypass_ipc_recv/reply.
 */
BYPASS_API int bypass_ipc_lib_serve(bypass_ipc_lib_service *svc, bypass_ipc_conn *conn,
				    int64_t timeout_ns);

/*
 * bypass_ipc_lib_arm - before the server's loop sleeps: ask posters for a
 * wake-up of bypass_ipc_lib_service_fd.  Returns 0 when armed, 1 when
 * events already wait (do not sleep).
 */
BYPASS_API int bypass_ipc_lib_arm(bypass_ipc_lib_service *svc);

/* bypass_ipc_lib_event - take the oldest posted event: 0, or -EAGAIN. */
BYPASS_API int bypass_ipc_lib_event(bypass_ipc_lib_service *svc, struct bypass_ipc_event *ev);

/*
 * bypass_ipc_lib_service_close - stop the service: library-mode clients get
 * -EPIPE at their next call, message-mode ones -ECONNRESET/-EPIPE once
 * their connections are closed.  The arena stays mapped in clients until
 * they close.
 */
BYPASS_API int bypass_ipc_lib_service_close(bypass_ipc_lib_service *svc);

/* --- the client */

/*
 * bypass_ipc_lib_open - open the service name in library mode (or in
 * message mode with BYPASS_IPC_LIB_MESSAGE).  Library mode checks the
 * server's uid (SO_PEERCRED: ours unless BYPASS_IPC_ANY_UID or
 * allow_uids), the arena (a sealed memfd), the object (the server's own
 * descriptor: owned by the server's uid or root, not writable by group or
 * others, scanned), maps the arena at the server's address and loads the
 * object.  Returns 0 and *out, or -EEXIST (the arena's address range is
 * taken here), -EACCES, -EPERM, -ENOEXEC, -EOPNOTSUPP (protection keys
 * required, absent), -EPROTO (the server sent something inconsistent, or
 * the control block is out of bounds), -ECONNREFUSED / -ENOENT (no such
 * service), -ETIMEDOUT, or -errno.  With BYPASS_IPC_LIB_FALLBACK, the
 * errors of library mode itself (-EEXIST, -EACCES, -EPERM, -ENOEXEC,
 * -EOPNOTSUPP, -EPROTO) open message mode instead;
 * bypass_ipc_lib_stats says which mode was had.
 */
BYPASS_API int bypass_ipc_lib_open(const char *name, const struct bypass_ipc_lib_opts *opts,
				   bypass_ipc_lib **out);

/*
 * bypass_ipc_lib_call - call handler op with len bytes of req; the response
 * goes to resp (at most cap bytes).  Returns the response's length or
 * -errno: the handler's own error; -EINVAL (op out of range, NULL buffers
 * with a length); -EPIPE (the server died or closed the service); -EFAULT
 * (the handler faulted: the service is now broken); -EOWNERDEAD (the handler
 * found a lock whose owner died: the service is now broken);
 * -ENOTRECOVERABLE (the service is broken: bypass_ipc_lib_recover);
 * -EDEADLK (called from inside a call, in either mode: a handler, or a
 * signal handler that interrupted one); -EOVERFLOW (the handler said it
 * wrote more than cap).  In library mode any number of threads may call
 * at once.  In message mode calls on one handle take turns (one
 * connection; open a handle per thread to call in parallel), wait at most
 * call_timeout_ns, and may also return the errors of bypass_ipc_call
 * (-EMSGSIZE when len + 8 exceeds the connection's max_msg, whatever len),
 * and -EFAULT when req cannot be read or resp written (the call is not
 * sent, or its answer is dropped; the handle stays usable); in a child
 * after fork() a message-mode handle can only be closed (-EBADF).  A call
 * that a signal handler leaves by siglongjmp is repaired at the thread's
 * next call (see docs/ipc.md): in library mode its locks are released and
 * the service marked broken (that next call returns -ENOTRECOVERABLE); in
 * message mode the handle gets a new connection.
 */
BYPASS_API int bypass_ipc_lib_call(bypass_ipc_lib *lib, unsigned op, const void *req,
				   size_t len, void *resp, size_t cap);

/*
 * bypass_ipc_lib_recover - run the service's recover hook (if the service
 * is broken) and clear the broken mark when it succeeds.  Returns 0
 * (recovered, or was not broken), -ENOTRECOVERABLE (no recover hook, or it
 * failed: still broken), -EFAULT (the hook faulted), -EPIPE, or -EOPNOTSUPP
 * (a message-mode handle: the server recovers).
 */
BYPASS_API int bypass_ipc_lib_recover(bypass_ipc_lib *lib);

/* bypass_ipc_lib_service_recover - the same, from the server. */
BYPASS_API int bypass_ipc_lib_service_recover(bypass_ipc_lib_service *svc);

/*
 * bypass_ipc_lib_stats / bypass_ipc_lib_service_stats - the mode, the
 * protection this process got, and the service's counters.  0 or -EINVAL.
 */
BYPASS_API int bypass_ipc_lib_stats(const bypass_ipc_lib *lib, struct bypass_ipc_lib_stats *st);
BYPASS_API int bypass_ipc_lib_service_stats(const bypass_ipc_lib_service *svc,
					    struct bypass_ipc_lib_stats *st);

/*
 * bypass_ipc_lib_close - unload: unmap the arena, drop the object, close
 * the connection of message mode.  Not while a call runs on the handle.
 */
BYPASS_API int bypass_ipc_lib_close(bypass_ipc_lib *lib);

#ifdef __cplusplus
}
#endif
#endif /* BYPASS_IPC_H */
