/* SPDX-License-Identifier: MIT */
/*
 * bypass/core.h - what every bypass module shares: the cycle clock, the
 * shared-memory arena, passing descriptors between processes, and logging.
 *
 * Conventions (as in liburing): a function returns 0 or a non-negative count
 * on success and -errno on failure; it never sets errno for its own errors
 * and prints nothing unless BYPASS_LOG asks for it.
 */
#ifndef BYPASS_CORE_H
#define BYPASS_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BYPASS_API __attribute__((visibility("default")))

#define BYPASS_VERSION_MAJOR 0
#define BYPASS_VERSION_MINOR 1

/* --------------------------------------------------------------- timeouts */

/*
 * Every bypass call that can wait takes int64_t timeout_ns: nanoseconds,
 * 0 = do not wait, BYPASS_FOREVER = no limit (any other negative value is
 * -EINVAL).  BYPASS_US, BYPASS_MS and BYPASS_SEC scale a count:
 * 20 * BYPASS_MS.
 */
#define BYPASS_FOREVER ((int64_t)-1)
#define BYPASS_US ((int64_t)1000)
#define BYPASS_MS ((int64_t)1000000)
#define BYPASS_SEC ((int64_t)1000000000)

/*
 * How a receiver waits (notify's doorbells, ipc's connections): the shared
 * spin-then-sleep policy of the library.
 */
enum bypass_wait_mode {
	BYPASS_WAIT_ADAPTIVE = 0, /* spin up to spin_ns, then sleep (default) */
	BYPASS_WAIT_SLEEP = 1,    /* sleep at once */
	BYPASS_WAIT_SPIN = 2,     /* never sleep: lowest latency, burns a CPU */
};

/* ------------------------------------------------------------------ clock */

/*
 * bypass_rdtscp - read the time-stamp counter, ordered after earlier loads.
 * Cheap (tens of cycles) and monotonic on CPUs with an invariant TSC.  If
 * cpu is non-NULL it receives the CPU number the read happened on.
 *
 * x86-64 only: BYPASS_HAVE_RDTSCP is 1 there.  On another architecture it is
 * 0 and bypass_rdtscp falls back to CLOCK_MONOTONIC_RAW in nanoseconds
 * (bypass_tsc_hz() then returns 1000000000, and *cpu is set to 0).
 */
#if defined(__x86_64__)
#define BYPASS_HAVE_RDTSCP 1
static inline uint64_t bypass_rdtscp(unsigned *cpu)
{
	uint32_t lo, hi, aux;
	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	if (cpu)
		*cpu = aux & 0xfff;
	return ((uint64_t)hi << 32) | lo;
}
#else
#define BYPASS_HAVE_RDTSCP 0
#include <time.h>
static inline uint64_t bypass_rdtscp(unsigned *cpu)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	if (cpu)
		*cpu = 0; /* no cheap CPU number here */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/*
 * bypass_tsc_hz - TSC ticks per second, calibrated once against
 * CLOCK_MONOTONIC_RAW (about 20 ms on first call).  Returns 0 if the TSC is
 * not usable.
 */
BYPASS_API uint64_t bypass_tsc_hz(void);

/* bypass_cycles_to_ns - convert a TSC interval to nanoseconds. */
BYPASS_API double bypass_cycles_to_ns(uint64_t cycles);

/* bypass_now_ns - CLOCK_MONOTONIC in nanoseconds. */
BYPASS_API uint64_t bypass_now_ns(void);

/* ------------------------------------------------------------------ arena */

/*
 * A shared-memory arena: a memfd mapped at the same virtual address in every
 * process that attaches, so pointers into it stay valid across processes.
 * Objects are carved from it with a lock-free bump allocator; eight "root"
 * slots let the creator publish offsets that an attaching process looks up.
 */
typedef struct bypass_arena bypass_arena;

struct bypass_arena_opts {
	size_t size;       /* bytes, rounded up to the page size; 0 = 1 MiB */
	void *addr;        /* fixed address wanted, or NULL to let bypass pick */
	const char *name;  /* memfd name (debugging), NULL = "bypass-arena" */
	unsigned flags;    /* reserved, must be 0 */
	uint64_t reserved[4]; /* room to grow: must be zero (else -EINVAL) */
};

#define BYPASS_ARENA_ROOTS 8

/*
 * bypass_arena_create - create an arena and map it.  Returns 0 and sets *out,
 * or -EINVAL (bad options: flags or reserved not zero, a misaligned addr, a
 * size over 1 TiB), -EEXIST (opts->addr given and the range is
 * taken), -ENOMEM, or another -errno from memfd_create/mmap.
 */
BYPASS_API int bypass_arena_create(const struct bypass_arena_opts *opts,
				   bypass_arena **out);

/*
 * bypass_arena_open - map an arena received as a descriptor (from
 * bypass_arena_fd() in another process) at the creator's address.  The fd is
 * duplicated; the caller keeps its own.  Returns -EEXIST when that range is
 * already taken in this process (logged with the address), -EINVAL when fd is
 * not a bypass arena.
 */
BYPASS_API int bypass_arena_open(int fd, bypass_arena **out);

/* bypass_arena_close - unmap the arena and close its descriptor. */
BYPASS_API int bypass_arena_close(bypass_arena *arena);

/* bypass_arena_fd - the arena's memfd, to pass to another process. */
BYPASS_API int bypass_arena_fd(const bypass_arena *arena);

/* bypass_arena_base / bypass_arena_size - where it is mapped, and how big. */
BYPASS_API void *bypass_arena_base(const bypass_arena *arena);
BYPASS_API size_t bypass_arena_size(const bypass_arena *arena);

/*
 * bypass_arena_alloc - carve size bytes aligned to align (a power of two,
 * at most 4096; 0 means 64) from the arena; safe from several threads and
 * processes at once.  Memory is never freed before the arena is.  Returns 0
 * and sets *ptr, -EINVAL, or -ENOSPC when the arena is full.
 */
BYPASS_API int bypass_arena_alloc(bypass_arena *arena, size_t size,
				  size_t align, void **ptr);

/*
 * bypass_arena_set_root / bypass_arena_get_root - publish or look up one of
 * BYPASS_ARENA_ROOTS pointers into the arena.  get returns -ENOENT for an
 * empty slot, -EINVAL for a bad index or a pointer outside the arena.
 */
BYPASS_API int bypass_arena_set_root(bypass_arena *arena, unsigned idx, void *ptr);
BYPASS_API int bypass_arena_get_root(const bypass_arena *arena, unsigned idx, void **ptr);

/* bypass_arena_contains - 1 if [ptr, ptr+len) lies inside the arena. */
BYPASS_API int bypass_arena_contains(const bypass_arena *arena,
				     const void *ptr, size_t len);

/* ------------------------------------------------- descriptors over sockets */

/*
 * bypass_send_fds - send len bytes of data (at least 1) and nfds descriptors
 * (at most 16) over a connected Unix socket in one message.  Returns the
 * bytes sent or -errno.
 */
BYPASS_API int bypass_send_fds(int sock, const int *fds, unsigned nfds,
			       const void *data, size_t len);

/*
 * bypass_recv_fds - receive one message sent by bypass_send_fds: up to len
 * bytes into data and up to *nfds descriptors (close-on-exec) into fds; *nfds
 * is set to the number received.  If more descriptors arrive than fit, all
 * are closed and -EMSGSIZE is returned.  Returns the bytes received, 0 on
 * end of file, or -errno.
 */
BYPASS_API int bypass_recv_fds(int sock, int *fds, unsigned *nfds,
			       void *data, size_t len);

/* ------------------------------------------------------------------ misc */

/*
 * Log levels for the BYPASS_LOG environment variable: 0 or "none" (default),
 * 1 "error", 2 "warn", 3 "info", 4 "debug".  Messages go to stderr.
 * bypass_set_log_level overrides the environment; it returns the old level.
 */
enum { BYPASS_LOG_NONE, BYPASS_LOG_ERROR, BYPASS_LOG_WARN, BYPASS_LOG_INFO,
       BYPASS_LOG_DEBUG };
BYPASS_API int bypass_set_log_level(int level);

/* bypass_version - "major.minor". */
BYPASS_API const char *bypass_version(void);

#ifdef __cplusplus
}
#endif
#endif /* BYPASS_CORE_H */
