/* SPDX-License-Identifier: MIT */
/*
 * bypass/notify.h - doorbells: notifications between threads and processes
 * through shared memory, the stock-kernel counterpart of user interrupts.
 *
 * A doorbell counts rings.  A receiver waits for rings (spinning for a
 * bounded time, then sleeping on a futex), polls for them, waits through an
 * eventfd in an epoll loop, or has them delivered to a callback that
 * interrupts whatever the receiving thread is doing (a signal).  Ringing
 * costs no system call unless the receiver sleeps, has armed the eventfd, or
 * asked to be interrupted.
 *
 * Several threads and processes may ring.  Rings are consumed: a wait, try
 * or callback returns the number of rings since the last consumption, and
 * each ring is returned once (to one of several concurrent consumers).
 *
 * Trust: a doorbell is shared memory, and every process that maps it can
 * write it.  Such a peer can make rings be lost or invented, make waiters
 * wake or keep sleeping, and name the thread a ring interrupts (with this
 * library's signal only).  It cannot make us write into a descriptor that
 * is not an eventfd, nor make us spin on a lock.  Share doorbells only with
 * processes you trust; bypass/ipc.h is built for peers you do not.
 *
 * Every function returns 0 or a count on success and -errno on failure.
 */
#ifndef BYPASS_NOTIFY_H
#define BYPASS_NOTIFY_H

#include <bypass/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bypass_doorbell bypass_doorbell;

/* Timeouts (BYPASS_FOREVER, BYPASS_MS) and enum bypass_wait_mode are in core.h. */

/* opts.flags */
#define BYPASS_NOTIFY_EVENTFD 0x1u /* create the eventfd at once, so that
					fork() and bypass_notify_send()
					carry it to other processes */

struct bypass_notify_opts {
	const char *backend; /* NULL or "auto", "futex" */
	int mode;            /* enum bypass_wait_mode */
	uint64_t spin_ns;    /* adaptive spin budget; 0 = 20000 */
	unsigned flags;      /* BYPASS_NOTIFY_* */
	uint64_t reserved[4]; /* room to grow: must be zero (else -EINVAL) */
};

/*
 * bypass_notify_create - a doorbell in its own shared page, usable by the
 * threads of this process and by children forked after the call (and by any
 * process it is sent to).  opts may be NULL.  Returns 0, -EINVAL (bad
 * options: an unknown mode, flag or backend, reserved not zero),
 * -ENOMEM.
 */
BYPASS_API int bypass_notify_create(const struct bypass_notify_opts *opts,
				      bypass_doorbell **out);

/*
 * bypass_notify_create_in - a doorbell placed in a shared arena.  Another
 * process that attached the arena opens it with bypass_notify_open() and
 * the address from bypass_notify_addr() (publish it with
 * bypass_arena_set_root()).  Returns -ENOSPC when the arena is full.
 */
BYPASS_API int bypass_notify_create_in(bypass_arena *arena,
					 const struct bypass_notify_opts *opts,
					 bypass_doorbell **out);

/* bypass_notify_addr - where the doorbell's shared state lives. */
BYPASS_API void *bypass_notify_addr(const bypass_doorbell *db);

/*
 * bypass_notify_open - a new handle for the doorbell at addr inside arena.
 * Returns -EINVAL if addr is not a live doorbell inside the arena.
 */
BYPASS_API int bypass_notify_open(bypass_arena *arena, void *addr,
				    bypass_doorbell **out);

/*
 * bypass_notify_send / bypass_notify_recv - pass a doorbell to another
 * process over a connected Unix socket (its shared memory, and its eventfd if
 * it has one).  recv returns -EPROTO if the message is not a doorbell and
 * -ECONNRESET if the peer closed the socket.
 */
BYPASS_API int bypass_notify_send(int sock, bypass_doorbell *db);
BYPASS_API int bypass_notify_recv(int sock, bypass_doorbell **out);

/*
 * bypass_notify_close - release this process's handle; the doorbell keeps
 * working for every other handle.
 */
BYPASS_API int bypass_notify_close(bypass_doorbell *db);

/*
 * bypass_notify_destroy - end the doorbell for every handle in every
 * process (their calls return -EINVAL, their waiters wake with -EINVAL), and
 * release this handle.
 */
BYPASS_API int bypass_notify_destroy(bypass_doorbell *db);

/*
 * bypass_notify_ring - ring once.  No system call unless a receiver
 * sleeps, has armed its eventfd, or registered a handler.  Returns 0,
 * -EINVAL (null or destroyed), -EPERM (the receiver's process may not be
 * signalled or its eventfd reached by this process), -EAGAIN (the
 * receiver's queue of signals is full).  The ring is counted in any case.
 */
BYPASS_API int bypass_notify_ring(bypass_doorbell *db);

/*
 * bypass_notify_wait - wait for rings, at most timeout_ns (BYPASS_FOREVER
 * = no limit, 0 = do not wait), in the handle's mode.  Returns the number of
 * rings consumed (> 0), -ETIMEDOUT, -EINVAL (null, destroyed, or a negative
 * timeout other than BYPASS_FOREVER), -EPIPE (every
 * other process that used the doorbell has exited, and nothing is pending),
 * or -EBUSY (a handler consumes this doorbell's rings).  A waiter notices a
 * dead peer within about 20 ms.  -EPIPE is never returned to a process that
 * has rung the doorbell itself (another of its threads may ring again), nor
 * once more than 8 processes have used it (they are no longer tracked).
 */
BYPASS_API int bypass_notify_wait(bypass_doorbell *db, int64_t timeout_ns);

/* bypass_notify_try - consume pending rings without waiting: the count,
 * or -EAGAIN when there are none (and the errors of wait). */
BYPASS_API int bypass_notify_try(bypass_doorbell *db);

/*
 * bypass_notify_set_mode - how this handle waits: mode and, for
 * BYPASS_WAIT_ADAPTIVE, the spin budget in ns (0 = keep the current one).
 */
BYPASS_API int bypass_notify_set_mode(bypass_doorbell *db, int mode,
					uint64_t spin_ns);

/*
 * bypass_notify_fd - an eventfd that becomes readable when the doorbell
 * rings while armed, for epoll/poll loops.  The descriptor belongs to the
 * handle (do not close it).  Before each blocking poll, call
 * bypass_notify_arm(); after the fd polls readable, consume with
 * bypass_notify_try(), which also drains the fd and disarms.
 */
BYPASS_API int bypass_notify_fd(bypass_doorbell *db);

/*
 * bypass_notify_arm - ask ringers to signal the eventfd.  Returns 0 when
 * armed, 1 when rings were already pending (the fd was made readable so the
 * poll returns at once).  Ringing an unarmed doorbell makes no system call.
 */
BYPASS_API int bypass_notify_arm(bypass_doorbell *db);

/*
 * Interrupt mode.  bypass_notify_set_handler makes the calling thread the
 * doorbell's receiver: each ring (coalesced while one is in flight)
 * interrupts that thread, whatever it runs, with a signal whose small handler
 * consumes the rings and calls cb(db, count, arg).  cb runs in signal
 * context: it may ring doorbells and use async-signal-safe functions.
 * cb == NULL unregisters.  Returns -EBUSY if another thread or process is
 * the receiver, -EAGAIN if 64 doorbells in this process already have
 * handlers.  The signal is bypass_notify_signal(): SIGRTMIN+4 unless
 * bypass_notify_set_signal() chose another; do not use it for other things.
 */
typedef void (*bypass_notify_cb)(bypass_doorbell *db, unsigned count, void *arg);
BYPASS_API int bypass_notify_set_handler(bypass_doorbell *db,
					   bypass_notify_cb cb, void *arg);
BYPASS_API int bypass_notify_signal(void);

/*
 * bypass_notify_set_signal - the real-time signal interrupt mode uses in
 * this process, chosen before the first bypass_notify_set_handler() (which
 * installs its handler; the signal cannot change after that).  A ringer
 * sends its own process's signal: every process that shares a doorbell in
 * interrupt mode must choose the same one.  Returns 0, -EINVAL (not between
 * SIGRTMIN and SIGRTMAX), -EBUSY (the handler is installed with another).
 */
BYPASS_API int bypass_notify_set_signal(int sig);

/*
 * bypass_notify_peer_alive - 1 if another process that used the doorbell
 * still runs (or none other ever used it: a thread-only doorbell), 0 if they
 * have all exited, -EINVAL.  Costs a system call per peer.
 */
BYPASS_API int bypass_notify_peer_alive(bypass_doorbell *db);

/*
 * Backends.  "futex": shared memory, futex sleeps and signals (every Linux);
 * "auto" picks the best available, today always "futex".  (User interrupts
 * have no backend: bypass has no data path for them, and no mainline kernel
 * has their system calls; bypass doctor reports the CPU's bit.)
 * bypass_notify_backend_available returns 1, 0, or -EINVAL for an unknown
 * name; bypass_notify_backend names the one a doorbell uses.
 */
BYPASS_API int bypass_notify_backend_available(const char *name);
BYPASS_API const char *bypass_notify_backend(const bypass_doorbell *db);

#ifdef __cplusplus
}
#endif
#endif /* BYPASS_NOTIFY_H */
