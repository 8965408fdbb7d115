/* SPDX-License-Identifier: MIT */
/*
 * The batch engine, shared by the explicit API (api.c) and the preload
 * (preload/batch/, whose decision layer is preload/batch/defer.h).
 *
 * Each thread has a queue (struct bt_thread) and its own io_uring.  Work is
 * kept per descriptor (struct bt_fdent, in a process-wide table indexed by
 * fd): a FIFO of operations owned by one thread at a time.  A flush writes
 * each descriptor's queued operations as one linked chain, in the order they
 * were made, and submits every chain with one io_uring_enter.  Operations
 * stay "in flight" until their completion is reaped; a descriptor never has
 * queued and in-flight operations at once (bp_bt_quiesce cancels and requeues
 * the in-flight ones first), so a chain never overtakes an earlier one.
 *
 * Locks: each thread's lock protects its queue and the streams it owns.  A
 * thread never holds two thread locks; taking a stream from another thread
 * goes through an ownerless step (bp_bt_acquire).  Waiting in the kernel is
 * done without the lock.  Thread states are never freed (a dead one is
 * reused), so a stale owner pointer stays safe to lock and re-check.
 */
#ifndef BYPASS_BATCH_INTERNAL_H
#define BYPASS_BATCH_INTERNAL_H

#include <bypass/batch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "core/internal.h"

struct io_uring;
struct io_uring_getevents_arg;
struct io_uring_cqe;
struct io_uring_sqe;
struct bp_link;
struct bt_thread;

/* ---------------------------------------------------------- configuration */

/*
 * The engine's settings: its rings, its exit, its splice pipes (the
 * preload's decisions have their own, preload/batch/defer.h).  Defaults in
 * fdtab.c; bypass_batch_configure sets the ring's (for threads that make
 * their ring afterwards), the preload's constructor the others (before any
 * thread state exists).  The library reads no environment.
 */
struct bt_engine_cfg {
	unsigned entries;        /* ring depth (256) */
	bool sqpoll;             /* IORING_SETUP_SQPOLL */
	unsigned sqpoll_idle_ms; /* its idle time (50) */
	uint64_t exit_wait_ms;   /* how long a thread's exit waits for its
				    deferred work (2000) */
	size_t pipe_size;        /* F_SETPIPE_SZ of the pipes splices go
				    through (256 KiB) */
};
extern struct bt_engine_cfg bp_bt_ecfg;
/* Probe th's ring for opcode op (and op2 unless < 0): the answer goes to
 * *cache (1 yes, -1 no) and, once, to the log at info (name, yes, no). */
bool bp_bt_have_ops(struct bt_thread *th, _Atomic int *cache, int op, int op2,
		    const char *name, const char *yes, const char *no);

/* ---------------------------------------------------------- descriptors */

#define BT_FD_KNOWN 0x01u    /* type known (probed, or seen being created) */
#define BT_FD_SOCK 0x02u
#define BT_FD_STREAM 0x04u   /* SOCK_STREAM socket */
#define BT_FD_INET 0x08u     /* AF_INET or AF_INET6 */
#define BT_FD_NONBLOCK 0x10u
#define BT_FD_REG 0x20u      /* regular file */
#define BT_FD_CLOSING 0x40u  /* the program closed it; our close is pending */
#define BT_FD_SIZE 0x80u     /* size holds st_size seen by fstat */
#define BT_FD_OPEN 0x100u    /* seen being opened (type may be unknown) */
#define BT_FD_BROKEN 0x200u  /* a deferred call failed: later ones go direct */
#define BT_FD_CLOSE_LAST 0x400u /* the program closed it while splices read
				   it: the last one to finish closes it */
#define BT_FD_CONN 0x800u    /* a connected stream socket (accepted,
				connected or from socketpair): its close may
				be queued (docs/batch.md, "Order") */
#define BT_FD_EP_EXCL 0x1000u /* an epoll instance given an EPOLLEXCLUSIVE
				 entry: its waits are never merged (the
				 kernel counts an exclusive wake-up only for
				 a thread asleep in epoll_wait: epwait.c) */

struct bt_thread;
struct bt_op;

/*
 * A sendfile deferred as splices: file -> pipe -> socket, in rounds of
 * linked pairs (splice.c).  op->len is the count promised to the program,
 * op->done what reached the socket; rd - done bytes wait in the pipe.
 */
struct bt_sreq {             /* one request of a round: its user_data */
	struct bt_op *op;
	uint32_t want;               /* bytes asked for */
	uint8_t kind;                /* splice.c: in, out, poll */
};
struct bt_splice {
	struct bt_sreq *req;  /* the round's requests (in the op's data[]) */
	int in_fd;
	off_t off;            /* the file offset of the first byte */
	size_t rd;            /* bytes moved from the file into the pipe */
	int pipe_r, pipe_w;   /* -1: none yet */
	unsigned cap;         /* the pipe's capacity in bytes */
	unsigned pending;     /* requests of this round not completed yet */
	unsigned ran;         /* of those, completed other than -ECANCELED */
	bool full;            /* the socket took less than asked (or EAGAIN) */
	size_t round_out;     /* bytes the round moved to the socket */
	int err;              /* first error of the round (not -ECANCELED) */
	bool eof;             /* the file ended before len */
};

struct bt_fdent {
	_Atomic uint32_t flags;
	_Atomic uint32_t gen;               /* bumped each time the number is
					       forgotten or made anew */
	_Atomic int err;                    /* errno to report (| BT_ERR_SIGPIPE) */
	_Atomic(struct bt_thread *) owner;  /* thread whose queue holds the stream */
	_Atomic int64_t size;               /* st_size, valid with BT_FD_SIZE */
	_Atomic int ep[2];                  /* epoll fds it was added to, +1 */
	_Atomic int readers;                /* queued sendfile calls reading it */
	_Atomic(struct bt_thread *) reader; /* their thread (BT_READERS_MANY) */
	_Atomic int splicers;               /* deferred splices reading it */
	/* The stream: protected by the owner's lock. */
	struct bt_op *head, *tail;
	unsigned nqueued, ninflight, nexplicit;
	size_t bytes;                       /* payload queued + in flight */
	struct bt_fdent *next_active;
	bool active;                        /* on the owner's active list */
	int fd;
};
#define BT_ERR_SIGPIPE 0x10000
#define BT_READERS_MANY ((struct bt_thread *)1)

/* The entry for fd (created on demand), or NULL for fd out of range. */
struct bt_fdent *bp_bt_fd(int fd);
/* The entry if its block exists, else NULL (never allocates). */
struct bt_fdent *bp_bt_fd_peek(int fd);
/* Learn fd's type and flags with a few system calls, once.  0 or -errno. */
int bp_bt_fd_probe(struct bt_fdent *fe);
/* Forget what is known about fd (closed, or replaced). */
void bp_bt_fd_forget(struct bt_fdent *fe);
/* Record a deferred error (the first one stays until reported). */
void bp_bt_fd_set_err(struct bt_fdent *fe, int err, bool sigpipe);
/* Take the deferred error: 0 or the errno (| BT_ERR_SIGPIPE). */
int bp_bt_fd_take_err(struct bt_fdent *fe);
/* Call fn on every entry of the table that exists (fork child, drains). */
void bp_bt_fd_each(void (*fn)(struct bt_fdent *fe, void *arg), void *arg);
/* Largest fd the table covers + 1. */
#define BT_FD_MAX (1 << 20)

/* ---------------------------------------------------------- operations */

enum bt_kind { BT_SEND, BT_SENDMSG, BT_WRITE, BT_WRITEV, BT_SENDFILE,
	       BT_SHUTDOWN, BT_CLOSE, BT_SOCKOPT, BT_SPLICE };
enum bt_state { BT_QUEUED, BT_INFLIGHT };

#define BT_OP_TRANSPARENT 0x01u /* preload: already returned; finish it */
#define BT_OP_SIGPIPE 0x02u     /* the call would have raised SIGPIPE */
#define BT_OP_READ_DONE 0x04u   /* sendfile: the data is in buf */
#define BT_OP_REQUEUE 0x08u     /* cancelled on purpose: requeue the rest */
#define BT_OP_FIXED 0x10u       /* use the registered file */
#define BT_OP_NEEDPOLL 0x40u    /* splice: the socket was full; the next
				   round waits for room first */
#define BT_OP_PARKED 0x80u      /* cancelled behind a splice round still in
				   flight: its fate waits for the round */
#define BT_OP_READING 0x100u    /* sendfile: its file read is in flight */
#define BT_OP_CUT 0x200u        /* behind a failure on its stream: dropped
				   when its file read in flight completes */
/* Completions interrupted (bt_restartable) are issued again, at most this
 * many times per op; then the op fails (bp_bt_visible_err). */
#define BT_MAX_RESTARTS 16

struct bt_op {
	struct bt_op *next;       /* in the descriptor's FIFO */
	struct bt_fdent *fe;
	int fd;
	uint8_t kind, state;
	uint16_t flags;
	int msg_flags;
	unsigned restarts;        /* interrupted completions issued again */
	char *buf;                /* payload (ours when transparent) */
	size_t len, done;
	size_t cap;               /* room in data[] (transparent sends grow) */
	ssize_t *res;             /* explicit: where the result goes */
	union {
		struct { int in_fd; off_t off; size_t at, len; } sf; /* read len
					bytes of in_fd at off into buf + at */
		struct bt_splice sp;  /* BT_SPLICE: len bytes of in_fd at off,
					 through a pipe (splice.c) */
		int how;
		struct { uint32_t gen; } cl;
		struct { int level, name; socklen_t len; } so;
		struct { struct msghdr msg; struct sockaddr_storage addr; } m;
		struct { int iovcnt; } v;
	} u;
	struct iovec *iov;        /* writev/sendmsg: copied array */
	char data[];              /* inline storage (payload, iovecs, values) */
};

/* Allocate an operation with extra inline bytes. */
struct bt_op *bp_bt_op_new(size_t extra);
/*
 * Under th's lock: the queued transparent send at fe's tail, grown to take
 * extra more bytes (moved if need be), or NULL when there is none to grow.
 * The caller fills the bytes and calls bp_bt_grown().
 */
struct bt_op *bp_bt_tail_grow(struct bt_thread *th, struct bt_fdent *fe, size_t extra,
			   int msg_flags);
void bp_bt_grown(struct bt_thread *th, struct bt_fdent *fe, struct bt_op *op, size_t extra);
void bp_bt_op_free(struct bt_op *op);
/* Under th's lock (engine.c): remove a finished op from its stream and free
 * it; put an op back in the queue in its place; an explicit call's result. */
void bp_bt_finish(struct bt_thread *th, struct bt_op *op);
void bp_bt_requeue(struct bt_thread *th, struct bt_op *op);
void bp_bt_store_result(struct bt_op *op, long res);
/* A queued sendfile's hold on its source file ends (its read is done, or
 * it is dropped; a splice: its pipe and file, splice.c). */
void bp_bt_release_reader(struct bt_op *op);

/* ---------------------------------------------------------- threads */

#define BT_SEG_PRELOAD 0x1u
#define BT_SEG_EXPLICIT 0x2u

/* Every counter, named as in struct bypass_batch_stats. */
#define BT_COUNTERS(X)                                                        \
	X(segments) X(deferred) X(direct) X(enters) X(submitted) X(bytes)     \
	X(partial) X(eagain) X(errors) X(reported) X(merged_waits) X(spliced)

struct bt_counters {
#define BT_COUNTER_FIELD(n) uint64_t n;
	BT_COUNTERS(BT_COUNTER_FIELD)
#undef BT_COUNTER_FIELD
};

struct bt_thread {
	pthread_mutex_t lock;
	struct io_uring *ring;     /* the thread's own ring (lifecycle.c), or NULL */
	struct io_uring *ring_mem; /* its memory, kept with the thread state */
	unsigned gen;              /* fork generation of ring */
	unsigned segment;          /* BT_SEG_* */
	uint64_t seg_ns;           /* when the oldest queued op was queued */
	struct bt_fdent *act_head, *act_tail; /* streams with queued ops */
	unsigned nqueued, ninflight, nexplicit, nreads;
	unsigned nreading;         /* of nreads, file reads in flight */
	unsigned seg_calls;        /* explicit calls queued in this segment */
	size_t bytes;              /* payload queued + in flight */
	struct bt_counters c;
	bool live;                 /* in use by a thread (else in the pool) */
	struct bt_thread *next;    /* all states, live or pooled */
	int fixed_slots;           /* registered file table size, 0 = none */
	/* The merged wait (preload/batch/epwait.c): an IORING_OP_EPOLL_WAIT of this thread
	 * in flight, its result once its completion was reaped. */
	bool epw_armed, epw_done;
	int epw_res;
	uint64_t *fixed_map;       /* which fds are registered (bit per fd) */
	/* Splices (splice.c): ops of this thread's streams, and free pipes. */
	unsigned nsplice;
	unsigned nparked;          /* ops waiting for those before them (engine.c) */
	bool merged_ok;            /* the thread's last epoll wait could merge:
				      its waits will resubmit splice rounds */
	unsigned npipes;
	struct { int r, w; unsigned cap; } pipes[16];
	/* Order across descriptors (preload/batch/defer.c, docs/batch.md
	 * "Order"): the stream the preload queued on last since the last
	 * submit, and whether a close was queued since then (a close takes
	 * effect when the enter that issues it returns). */
	struct bt_fdent *ord_fe;
	bool ord_fence;
};

/* The calling thread's state, or NULL. */
struct bt_thread *bp_bt_self(void);
/* The calling thread's state with its ring, made on first use.  0 or -errno. */
int bp_bt_self_make(struct bt_thread **out);

void bp_bt_lock(struct bt_thread *th);
void bp_bt_unlock(struct bt_thread *th);

/*
 * Under th's lock: make th the owner of fe's stream.  May drop and retake
 * th's lock (to release the stream from another thread): callers re-read
 * th's state afterwards.
 */
void bp_bt_acquire(struct bt_thread *th, struct bt_fdent *fe);
/* Under th's lock: put fe on / take it off th's list of streams with queued
 * work (the order in which a flush writes their chains). */
void bp_bt_activate(struct bt_thread *th, struct bt_fdent *fe);
void bp_bt_deactivate(struct bt_thread *th, struct bt_fdent *fe);
/* Under th's lock: wait (at most a second) for a completion in th's ring
 * without dropping the lock, and reap. */
void bp_bt_wait_one_locked(struct bt_thread *th);
/* Under th's lock: wait as ga says with the lock dropped, then reap;
 * 0 or -errno. */
int bp_bt_wait_unlocked(struct bt_thread *th, const struct io_uring_getevents_arg *ga);
/* Under th's lock (th owns fe): append op to fe's stream. */
void bp_bt_enqueue(struct bt_thread *th, struct bt_fdent *fe, struct bt_op *op);
/* Under th's lock: submit everything queued (one enter), reap.  Returns the
 * number of requests submitted or -errno. */
int bp_bt_submit(struct bt_thread *th);
/*
 * The merged wait: an IORING_OP_EPOLL_WAIT submitted with the queued chains
 * in one io_uring_enter that also waits (for at most *ga's timeout, with
 * its signal mask).  BT_UD_EPWAIT tags its completion (th->epw_*).
 */
#define BT_UD_EPWAIT 2u
/* IORING_OP_EPOLL_WAIT (Linux 6.15), not in liburing 2.3's headers. */
#define BT_IORING_OP_EPOLL_WAIT 59
/* The kernel has IORING_OP_EPOLL_WAIT (probed once, on the calling thread's
 * ring). */
bool bp_bt_merged_wait_available(void);
/* The kernel has io_uring socket commands (SOCKET_URING_OP_SETSOCKOPT,
 * Linux 6.7): setsockopt can be queued; elsewhere it is a system call. */
bool bp_bt_uring_sockopt(void);
struct bt_epw_req {
	int epfd;
	void *events;
	int maxevents;
	const void *ga; /* struct io_uring_getevents_arg */
	bool wait_all;  /* wait for every request of this enter, not just one
			   (bounded by ga's timeout) */
};
/* Under th's lock (dropped while waiting in the kernel): submit what is
 * queued and the wait req together.  Returns requests submitted or -errno
 * (then the wait was not armed: th->epw_armed says). */
int bp_bt_submit_epw(struct bt_thread *th, const struct bt_epw_req *req);
/* Under th's lock: process completions, no system call. */
void bp_bt_reap(struct bt_thread *th);
/* Under th's lock (th owns fe, nothing in flight): run fe's queued sends
 * and socket options as system calls now.  0 all ran, 1 the socket is full
 * (the rest stays queued), or the -errno of one that failed. */
int bp_bt_run_queued(struct bt_thread *th, struct bt_fdent *fe, bool more);
/* Under th's lock (th owns fe): cancel fe's in-flight operations and requeue
 * what they did not do. */
void bp_bt_quiesce(struct bt_thread *th, struct bt_fdent *fe);
/*
 * Under th's lock: wait (lock dropped while in the kernel) until pred(th,
 * arg) holds, reaping as completions come.  timeout_ns < 0 = forever.
 * Returns 0, -ETIMEDOUT, or -EINTR when a signal interrupted and intr is set.
 */
int bp_bt_wait(struct bt_thread *th, bool (*pred)(struct bt_thread *, void *),
	    void *arg, int64_t timeout_ns, bool intr);
/* Under th's lock: wait until fe has nothing in flight (fe owned by th). */
int bp_bt_wait_fd_idle(struct bt_thread *th, struct bt_fdent *fe, bool intr);
/* Under th's lock: submit, then wait until th has nothing queued or in
 * flight, at most timeout_ns.  Returns 0 or -ETIMEDOUT. */
int bp_bt_drain(struct bt_thread *th, int64_t timeout_ns);
/* Drain every thread's work into the calling thread and wait (exit, exec). */
void bp_bt_drain_all(int64_t timeout_ns);
/* Release everything the thread owns and return it to the pool. */
void bp_bt_thread_retire(struct bt_thread *th);

/* Counters of the whole process. */
void bp_bt_stats_sum(struct bt_counters *out);

/* fork: prepare / parent / child handlers (installed by bp_bt_engine_init). */
void bp_bt_engine_init(void);

/* ---------------------------------------------------------- interrupted completions */

/*
 * io_uring may complete a request with -EINTR, or (from a worker that was
 * interrupted, on paths that do not translate them) with one of the
 * kernel's restart codes, which a program must never see: ERESTARTSYS 512,
 * ERESTARTNOINTR 513, ERESTARTNOHAND 514, ERESTART_RESTARTBLOCK 516.  None
 * says the request failed: it is issued again for what it has not done.
 */
static inline bool bt_restartable(int res)
{
	return res == -EINTR || (res <= -512 && res >= -516 && res != -515);
}
/*
 * An errno (> 0) a program may see for op: a restart code of a request that
 * could not be issued again becomes EINTR where op's system call could
 * have failed with it (the sends, write, writev, close: an explicit call,
 * whose result is that call's), else EIO.  A transparent op's error is
 * reported by a later call on the descriptor, whatever it is: EINTR there
 * would have the program retry that call, not the data that was lost, so
 * it is EIO.
 */
int bp_bt_visible_err(const struct bt_op *op, int err);

/*
 * Tests only (tests/batch/restart.c): the next count requests of class cls
 * that the engine prepares complete as if the kernel had answered res
 * (negative: the request is made to fail with EBADF, on an invalid
 * descriptor, so that it does nothing and breaks its chain as a failure
 * would, and its completion carries res instead), or, for BT_INJ_READ_SHORT,
 * read only part of what they ask (the rest is still to be read when they
 * complete).  count 0 disarms it.  Returns how many of the previous
 * arming's requests were left.
 */
enum { BT_INJ_READ, BT_INJ_READ_SHORT, BT_INJ_SEND, BT_INJ_SPLICE };
int bp_bt_inject(int cls, int res, int count);
/* The engine, for each request it prepares: apply an armed injection to
 * sqe (of class cls), returning the user_data bit that marks it. */
uint64_t bp_bt_inject_sqe(struct io_uring_sqe *sqe, int cls);
#define BT_TAG_INJECTED 4u

/* ---------------------------------------------------------- splices (splice.c) */

/* Completions: user_data is the op's address | the request's tag (a
 * splice request: its struct bt_sreq's address | BT_TAG_SPLICE). */
#define BT_TAG_MASK 7u
enum { BT_TAG_MAIN = 0, BT_TAG_READ = 1, BT_TAG_SPLICE = 2 };
/* Room a splice op needs after it for its requests (bp_bt_op_new). */
size_t bp_bt_splice_extra(void);

/* io_uring splices can serve sendfile here (opcode probed once, config). */
bool bp_bt_splice_available(struct bt_thread *th);
/* Under th's lock: give op a pipe (the thread's pool, or a new one).
 * false when none can be had. */
bool bp_bt_splice_pipe(struct bt_thread *th, struct bt_op *op);
/*
 * Under th's lock: prepare op's next round as entries linked into chain
 * (the caller checked room).  Returns the entries prepared (0: none fit);
 * *whole says whether the round finishes the op (else nothing may be
 * linked behind it).
 */
unsigned bp_bt_splice_prep(struct bt_thread *th, struct bt_op *op, struct bp_link *chain,
			   bool *whole);
/* The entries the next round of op wants (at most; for room checks). */
unsigned bp_bt_splice_want(const struct bt_op *op);
/*
 * The completion of a round's request (user_data without its tag).
 * Returns NULL while the round has requests outstanding; its op when it
 * ended, with *out as for a send: the bytes the round sent, or -errno (the
 * first error).
 */
struct bt_op *bp_bt_splice_cqe(struct bt_thread *th, void *req, int res, int *out);
/* op is finished or dropped: its pipe back to th's pool (th NULL or the
 * pipe not empty: closed), its file released (closed if the program did). */
void bp_bt_splice_free(struct bt_thread *th, struct bt_op *op);
/* The program closes fd while splices read it: 0 (closed when the last
 * one ends) or BT_PASS-like 1 (none left: close it now). */
int bp_bt_splice_close(struct bt_fdent *fe);
/* Under th's lock: wait until no splice reads fe's file. */
void bp_bt_splice_wait_file(struct bt_thread *th, struct bt_fdent *fe);
/* Under th's lock: wait until th's splices have all ended (a wait that
 * cannot resubmit their rounds is coming). */
void bp_bt_splice_finish_all(struct bt_thread *th);
/* Close the thread's free pipes (exit, fork child). */
void bp_bt_splice_pool_drop(struct bt_thread *th);


#endif
