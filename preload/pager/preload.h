/* SPDX-License-Identifier: MIT */
/*
 * libbypass-pager.so: the large anonymous memory of unmodified programs,
 * served by a bypass pager, by LD_PRELOAD.
 *
 * Private anonymous mmaps and malloc-family requests at or above a threshold
 * become pager regions (one pager per process, created at the first such
 * request); smaller requests, and frees of pointers that are not regions, go
 * to the next allocator (dlsym(RTLD_NEXT)).  munmap, mremap, madvise and
 * mprotect keep their meaning on regions.  System calls that hand a region
 * buffer to the kernel pin it first (upcall mode cannot serve a fault the
 * kernel takes: the call would fail with EFAULT).  sigaction/signal for
 * SIGSEGV and SIGBUS go to core's chain, so a program's own handler gets
 * every fault bypass does not serve.  See man 3 libbypass-pager and
 * docs/pager-preload.md.
 *
 * Files: init.c (configuration, the pager, fork, exit statistics, the real
 * functions), regions.c (the table of regions and pinning around system
 * calls), alloc.c (malloc family), heap.c (small requests: jemalloc over
 * pager regions), pack.c (the heap's mid-size requests, packed), reserve.c
 * (what is allocated inside bypass when jemalloc must not be entered), mem.c
 * (mmap, munmap, mremap, madvise, mprotect), io.c
 * (system calls and stdio with buffers), wait.c (poll, select, epoll), sig.c
 * (sigaction, signal).
 */
#ifndef BYPASS_PRELOAD_PAGER_H
#define BYPASS_PRELOAD_PAGER_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/aio_abi.h> /* io_getevents (libaio's, where a program has it) */

#include <bypass/pager.h>

#include "core/internal.h"
#include "common/scaffold.h"

#define PP_PAGE 4096ul

/* ------------------------------------------------------------ real functions */

/* The functions the wrappers wrap, and the next allocator's
 * (preload/common/scaffold.h: REAL(name), resolved in init.c). */
#define PL_REAL_FUNCS(X)                                                      \
	X(void *, malloc, (size_t))                                           \
	X(void *, calloc, (size_t, size_t))                                   \
	X(void *, realloc, (void *, size_t))                                  \
	X(void, free, (void *))                                               \
	X(int, posix_memalign, (void **, size_t, size_t))                     \
	X(void *, aligned_alloc, (size_t, size_t))                            \
	X(void *, memalign, (size_t, size_t))                                 \
	X(void *, valloc, (size_t))                                           \
	X(void *, pvalloc, (size_t))                                          \
	X(size_t, malloc_usable_size, (void *))                               \
	X(void *, mmap, (void *, size_t, int, int, int, off_t))               \
	X(int, munmap, (void *, size_t))                                      \
	X(void *, mremap, (void *, size_t, size_t, int, ...))                 \
	X(int, madvise, (void *, size_t, int))                                \
	X(ssize_t, pread, (int, void *, size_t, off_t))                       \
	X(ssize_t, preadv, (int, const struct iovec *, int, off_t))           \
	X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int))     \
	X(ssize_t, pwrite, (int, const void *, size_t, off_t))                \
	X(ssize_t, pwritev, (int, const struct iovec *, int, off_t))          \
	X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int))    \
	X(size_t, fread, (void *, size_t, size_t, FILE *))                    \
	X(size_t, fread_unlocked, (void *, size_t, size_t, FILE *))           \
	X(size_t, fwrite, (const void *, size_t, size_t, FILE *))             \
	X(size_t, fwrite_unlocked, (const void *, size_t, size_t, FILE *))    \
	X(int, accept, (int, struct sockaddr *, socklen_t *))                 \
	X(int, accept4, (int, struct sockaddr *, socklen_t *, int))           \
	X(int, connect, (int, const struct sockaddr *, socklen_t))            \
	X(int, semop, (int, struct sembuf *, size_t))                         \
	X(int, semtimedop, (int, struct sembuf *, size_t,                     \
			    const struct timespec *))                         \
	X(int, sigwaitinfo, (const sigset_t *, siginfo_t *))                  \
	X(int, sigtimedwait, (const sigset_t *, siginfo_t *,                  \
			      const struct timespec *))                       \
	X(int, io_getevents, (aio_context_t, long, long, struct io_event *,   \
			      struct timespec *))                             \
	PL_REAL_BOTH(X)

PL_REAL_DECLARE(PL_REAL_FUNCS)

/* ------------------------------------------------------------ configuration */

struct bp_pp_cfg {
	bool enabled;        /* constructor ran, configuration good, not killed */
	size_t budget;       /* BYPASS_PAGER_BUDGET */
	size_t threshold;    /* BYPASS_PAGER_THRESHOLD */
	size_t swap_size;    /* BYPASS_PAGER_SWAP_SIZE */
	char swap_dir[512];  /* BYPASS_PAGER_SWAP */
	char stats_file[512];/* BYPASS_STATS_FILE ("" = none) */
	size_t pin_max;      /* bytes one system call pins at a time */
	bool heap;           /* BYPASS_PAGER_HEAP: small requests too (heap.c) */
	size_t heap_after;   /* BYPASS_PAGER_HEAP_AFTER */
	bool sample;         /* BYPASS_PAGER_SAMPLE: access samples */
	bool spin;           /* BYPASS_PAGER_SPIN: swap-in reads poll (else NO_SPIN) */
	bool tree;           /* BYPASS_PAGER_BUDGET_SCOPE=tree */
};
extern struct bp_pp_cfg bp_pp_cfg;

/*
 * Pass straight through to the real function (preload/common/scaffold.h):
 * the preload is off, or the calling thread is inside bypass (core's
 * per-thread depth: raised with bp_enter()/bp_leave() around the preload's
 * calls into the library, so that the library's own mmap, madvise, pread
 * ... pass; by core's fault handler around the pager's fault hook; for good
 * in the pager's threads).
 */
#define PASS() bp_pl_pass(bp_pp_cfg.enabled)

/* The process's pager, created on first use; NULL if that failed. */
bypass_pager *bp_pp_pager(void);

/* ------------------------------------------------------------ regions */

/* PP_STALE: in a fork child, a parent's region: ordinary memory here (the
 * library read every page back before the fork), the child's to unmap.
 * PP_HEAP: a region of the heap (heap.c): jemalloc's, never the program's
 * to unmap. */
enum { PP_MMAP = 1, PP_MALLOC = 2, PP_STALE = 4, PP_HEAP = 8 };

struct bp_pp_region {
	uintptr_t start, end;  /* the mapped pages */
	uintptr_t user;        /* PP_MALLOC: the pointer the program got */
	int kind;
};

/* Quick test: could [a, a + len) touch a region?  (No lock; may say yes.) */
extern _Atomic uintptr_t bp_pp_lo, bp_pp_hi;
static inline bool bp_pp_maybe(const void *a, size_t len)
{
	uintptr_t x = (uintptr_t)a;
	return x < atomic_load_explicit(&bp_pp_hi, memory_order_relaxed) &&
	       x + len > atomic_load_explicit(&bp_pp_lo, memory_order_relaxed);
}

/* The table lock: false if this thread holds it already (a signal handler
 * interrupted it), and then the caller must do without the table. */
bool bp_pp_lock(void);
void bp_pp_unlock(void);
/* Under the lock: the region holding a, or NULL. */
struct bp_pp_region *bp_pp_find(uintptr_t a);
/* Under the lock: the first region ending after a, or NULL. */
struct bp_pp_region *bp_pp_next(uintptr_t a);
/* Under the lock: add one; 0 or -ENOMEM. */
int bp_pp_add(const struct bp_pp_region *r);
/* Under the lock: forget [a, b) of the table (splits and trims records). */
void bp_pp_forget(uintptr_t a, uintptr_t b);
/* In the child of a fork: the lock free; with stale, every record becomes
 * PP_STALE (ordinary memory: the library read the pages back). */
void bp_pp_forked(bool stale);

/* Map a region of len bytes (a page multiple); 0 and *out, or -errno. */
int bp_pp_map(size_t len, void **out);
/* Unmap [a, b) of regions: the pager's part; the table is updated. */
int bp_pp_unmap(uintptr_t a, uintptr_t b);

/* ------------------------------------------------------------ the heap */

/* The heap's reserved range: a pointer in [lo, hi) is the heap's. */
extern _Atomic uintptr_t bp_pp_heap_lo, bp_pp_heap_hi;
static inline bool bp_pp_in_heap(const void *a)
{
	uintptr_t x = (uintptr_t)a;
	return x >= atomic_load_explicit(&bp_pp_heap_lo, memory_order_relaxed) &&
	       x < atomic_load_explicit(&bp_pp_heap_hi, memory_order_relaxed);
}
/* The heap serves small requests now. */
bool bp_pp_heap_on(void);
/* Not engaged yet, and it may engage: bytes outside are being counted. */
bool bp_pp_heap_counting(void);
/* Bytes the process took (or gave back, negative) outside the pager: the
 * heap engages once they pass BYPASS_PAGER_HEAP_AFTER. */
void bp_pp_heap_outside(int64_t bytes);
/* The same for an mmap the process made (the caller may be the allocator,
 * its locks held): the heap engages at the next malloc or free, not in
 * this call. */
void bp_pp_heap_outside_mapped(int64_t bytes);
/* The constructor: engage at once if BYPASS_PAGER_HEAP_AFTER is 0. */
void bp_pp_heap_start(void);
/* A fork child: the heap's lock reset; its pages are ordinary memory here,
 * new extents come from the child's own pager. */
void bp_pp_heap_forked(void);
/* jemalloc's calls, or the packer's (pack.c): NULL if it has no memory
 * (the caller falls back). */
void *bp_pp_heap_alloc(size_t n, size_t align, bool zero);
void *bp_pp_heap_realloc(void *ptr, size_t n);
void bp_pp_heap_free(void *ptr);
size_t bp_pp_heap_size(void *ptr);

/* pack.c: the heap's requests in (PACK_MIN, PACK_MAX] bytes at an alignment
 * of at most 16, packed in slots of 16-byte multiples (jemalloc's size
 * classes there are 25% apart), in slabs of PACK_SLAB bytes in the top of
 * the heap's reserved range: a pointer in [lo, hi) is the packer's. */
#define PACK_MIN 4096u
#define PACK_MAX 16384u
#define PACK_SLAB (256ul << 10)
extern _Atomic uintptr_t bp_pp_pack_lo, bp_pp_pack_hi;
static inline bool bp_pp_in_pack(const void *a)
{
	uintptr_t x = (uintptr_t)a;
	return x >= atomic_load_explicit(&bp_pp_pack_lo, memory_order_relaxed) &&
	       x < atomic_load_explicit(&bp_pp_pack_hi, memory_order_relaxed);
}
/* The packer over [lo, hi) (PACK_SLAB-aligned), when the heap engages:
 * 0 or -errno (then no request is packed). */
int bp_pp_pack_start(uintptr_t lo, uintptr_t hi);
/* n bytes at this alignment are the packer's to serve (once started). */
bool bp_pp_pack_fits(size_t n, size_t align);
/* A slot for n bytes (zeroed if zero), or NULL (the caller uses jemalloc). */
void *bp_pp_pack_alloc(size_t n, bool zero);
void bp_pp_pack_free(void *ptr);
/* The slot's size (malloc_usable_size). */
size_t bp_pp_pack_size(const void *ptr);
/* A fork child: the packer's locks reset (its parent's fork handlers held
 * them across the fork). */
void bp_pp_pack_forked(void);
/* The packer's statistics appended to the preload's line at exit (nothing
 * if it never started). */
void bp_pp_pack_report(struct bp_pl_line *l);
/* heap.c: a new mapped slab of len bytes for the packer, or 0. */
uintptr_t bp_pp_heap_carve_pack(size_t len);

/* ------------------------------------------------------------ the reserve */

/* reserve.c: where the malloc family serves a thread inside bypass when
 * the program's next allocator is the heap's own jemalloc (which must not
 * be entered from inside the heap's extent hook).  Start: reserve the
 * range (the heap engages only if this works); use: this call is to be
 * served from the reserve; a pointer in [lo, hi) is the reserve's. */
extern _Atomic uintptr_t bp_pp_res_lo, bp_pp_res_hi;
static inline bool bp_pp_in_reserve(const void *a)
{
	uintptr_t x = (uintptr_t)a;
	return x >= atomic_load_explicit(&bp_pp_res_lo, memory_order_relaxed) &&
	       x < atomic_load_explicit(&bp_pp_res_hi, memory_order_relaxed);
}
int bp_pp_reserve_start(void);
/* Set by bp_pp_reserve_start(): the next allocator is the heap's jemalloc. */
extern _Atomic bool bp_pp_res_mode;
/* Before entering the next allocator: where it is the heap's jemalloc, a
 * ranked take (lock ranks, pager_internal.h), checked where they are on. */
void bp_pp_next_check(void);
bool bp_pp_reserve_use(void);
void *bp_pp_reserve_alloc(size_t n, size_t align, bool zero);
void *bp_pp_reserve_realloc(void *ptr, size_t n);
void bp_pp_reserve_free(void *ptr);
size_t bp_pp_reserve_size(void *ptr);
void bp_pp_reserve_forked(void);

/* ------------------------------------------------------------ task work */

/*
 * A call that may block and that the kernel does not restart after task
 * work with no signal to deliver: epoll_wait and its siblings, semop,
 * sigtimedwait, io_getevents, a socket's calls under SO_RCVTIMEO or
 * SO_SNDTIMEO.  The completion of a write-back this thread submitted (in a
 * fault: the pager's ring has no IORING_SETUP_COOP_TASKRUN) is such task
 * work, and ended the call with EINTR though no signal came (issue 32,
 * item 3; src/pager/evict.h, bp_evict_settle_mine).  bp_pp_settled(call,
 * arg) is call(arg, true), the call itself; but where write-backs of this
 * thread are in flight (after reaping the completions already there:
 * bp_evict_mine_reap), first call(arg, false): the call made so that
 * it cannot block (a zero timeout, MSG_DONTWAIT, IPC_NOWAIT), returning
 * PP_WOULD_WAIT if it would have, else the call's result (errno set); or
 * PP_WOULD_WAIT at once where the call has no such form; or the call
 * itself where it cannot end with that EINTR (no timeout on the socket,
 * say).  Only when it would wait are the thread's write-backs finished
 * (wait.c) before it waits.  No EINTR is retried: a signal's is the
 * program's, as without the preload.
 */
#define PP_WOULD_WAIT ((ssize_t)INT32_MIN) /* no call's result */
ssize_t bp_pp_settled(ssize_t (*call)(void *arg, bool wait), void *arg);
/* Is the socket fd's timeout for receiving (or else sending) set?  Then a
 * blocking call on it ends with EINTR after task work (wait.c). */
bool bp_pp_sock_timed(int fd, bool receive);

/* ------------------------------------------------------------ pinning */

#define PP_MAXPIN 16
struct bp_pp_pins {
	int n;
	struct {
		void *a;
		size_t len;
	} r[PP_MAXPIN];
};

/*
 * Make the first bytes of the buffers v[0..n) safe for the kernel: the parts
 * that lie in regions are pinned (writable when write is set), at most
 * bp_pp_cfg.pin_max bytes of them.  Returns how many bytes from the start
 * (across the buffers, in order) are safe: all of them when nothing is in a
 * region; or -errno (nothing pinned).  Release with bp_pp_unpin().
 */
ssize_t bp_pp_pin(const struct iovec *v, int n, bool write, struct bp_pp_pins *pins);
void bp_pp_unpin(struct bp_pp_pins *pins);
/*
 * call(arg), then the pins released (errno kept); released too if the
 * thread is cancelled in the call (read, recv, poll ... are cancellation
 * points): a thread cancelled there left its pages pinned for good, out of
 * the budget's reach.  Returns what call returned.
 */
ssize_t bp_pp_pinned(struct bp_pp_pins *pins, ssize_t (*call)(void *arg), void *arg);

#endif
