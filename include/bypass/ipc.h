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
	uint64_t spin_ns;   /* adaptive spin budget; 0 = BYPASS_IPC_SPIN_NS from
			       the environment, else 20000 */
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

#ifdef __cplusplus
}
#endif
#endif /* BYPASS_IPC_H */
