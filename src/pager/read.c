/* SPDX-License-Identifier: MIT */
/*
 * Swap-in reads that wait by polling.
 *
 * A thread that sleeps in pread() for a 4 KiB read leaves its CPU idle; an
 * idle CPU halts, and waking it for the completion costs more than the
 * read's own service time on some machines.  On the 2-vCPU VM of
 * docs/BENCHMARKS.md a random 4 KiB O_DIRECT read took 46.5-47.9 us when
 * the reader slept (pread, or io_uring_wait_cqe) and 33.3-36.3 us when it
 * submitted through io_uring and polled the completion queue.  Linux's own
 * swap-in sleeps; a user-space pager can choose not to.
 *
 * So a swap-in read takes one of a few small rings (made at create, never
 * on the fault path), submits the read and polls for up to SPIN_NS, then
 * sleeps in io_uring_wait_cqe.  Not while the disk is saturated (issue 32,
 * thrashing without waste): after MISS_MAX reads in a row on a ring whose
 * completion came after the spin, its reads sleep at once (a poll of
 * SPIN_NS would only burn the CPU the program needs), every PROBE-th one
 * still polling to find out when the disk is fast again.  Nor while the
 * thread thrashes: a thread that spends more than half its time in reads
 * (bp_rd_duty_spin(): its reads come back to back, the disk sets the pace)
 * sleeps in them, as Linux's swap-in does; polling would save the wake-up
 * of each read but cost a CPU for as long as the read takes, doubling the
 * CPU time or more of a program that mostly waits (docs/pager.md, GNU
 * sort at 16 MiB).  Not the adaptive engine's handler pool while the
 * machine has a CPU to spare (bp_rd_spare(), checked every few ms, not per
 * fault): its reads are back to back whenever faults queue, so the rule
 * would put its threads to sleep in every read, and a sleeping handler adds
 * two switches (its own sleep and wake-up) to the faulting thread's, about
 * what the poll saves (quiet, window 7: the exemption gave the pool at 2
 * threads 1.29x the rate for 1.23x the CPU per fault; loaded, it tied or
 * lost at about 2x the CPU, hence the guard).  The rings are the bound on spinning: at most one fewer
 * than the CPUs the process may run on (at most RD_MAX), so
 * that a CPU is always left to the program's other threads.  A read that
 * finds every ring taken, a pager made with BYPASS_PAGER_NO_SPIN, and a
 * single CPU all use pread() and sleep, as before.
 *
 * Everything here runs in signal handlers (the upcall engine): the rings
 * are taken with an atomic flag, and liburing's submit and peek are plain
 * memory operations and io_uring_enter().
 */
#include "pager/page.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/read.h"
#include "pager/fault.h"
#include "core/syscall.h"
#include "pager/tier.h"
#include "core/uring.h"
#include "core/fdhigh.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RD_MAX 8u            /* rings, so spinning readers, per pager */
#define RD_ENTRIES 4u
#define SPIN_NS 200000ull    /* poll this long, then sleep */
#define MISS_MAX 4u          /* spins in a row that missed: sleep at once */
#define PROBE 16u            /* then every PROBE-th read polls again */

struct pg_rdring {
	_Atomic bool busy;
	uint32_t misses; /* reads in a row not done within their poll (taker's) */
	uint32_t probe;
	struct io_uring ring;
};

/*
 * The system call itself, never the symbol pread: under the pager preload
 * that is the preload's wrapper, and this runs outside bypass too (the fork
 * handler's fetch_all serves the pages of every region from the forking
 * program's own thread).  The bounce buffer is no region, so the wrapper
 * would only pass it on, but nothing on the paths that hold page locks
 * should go through the preload.
 */
static int pread_full(int fd, char *buf, size_t len, off_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = bp_sys_ret(bp_syscall4(SYS_pread64, fd, buf + done, len - done,
						  off + (off_t)done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* the swap file was truncated */
		done += (size_t)n;
	}
	return 0;
}

static struct pg_rdring *ring_take(struct bypass_pager *p)
{
	for (uint32_t i = 0; i < p->srv.nrd; i++) {
		struct pg_rdring *d = &p->srv.rd[i];
		if (!atomic_load_explicit(&d->busy, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&d->busy, true, memory_order_acquire))
			return d;
	}
	return NULL;
}

static void ring_give(struct pg_rdring *d)
{
	atomic_store_explicit(&d->busy, false, memory_order_release);
}

#define RD_BROKEN INT_MIN /* the ring refused the read: do not use it again */

/* ------------------------------------------------------------ the duty */

#define DUTY_SHIFT 3 /* the average's weight: 1/8 per read */
#define DUTY_FORGET_NS 1000000ull /* a gap this long: the past forgotten */

bool bp_rd_duty_spin(const struct bp_rd_duty *d)
{
	return d->q16 < BP_RD_DUTY_SPIN_MAX;
}

void bp_rd_duty_note(struct bp_rd_duty *d, uint64_t start, uint64_t end)
{
	uint64_t busy = end > start ? end - start : 0;
	uint64_t gap = d->last_end && start > d->last_end ? start - d->last_end : 0;
	d->last_end = end;
	if (!busy && !gap)
		return;
	/* the first read counts as one after a long gap: nothing known */
	uint32_t sample = d->q16 || gap ? (uint32_t)((busy << 16) / (busy + gap)) : 0;
	if (gap >= DUTY_FORGET_NS) { /* the program computed: not thrashing now */
		d->q16 = sample;
		return;
	}
	int64_t diff = (int64_t)sample - (int64_t)d->q16;
	d->q16 = (uint32_t)((int64_t)d->q16 + diff / (1 << DUTY_SHIFT));
}

/* this thread's (signal handlers included: initial-exec, no allocation) */
static __thread struct bp_rd_duty my_duty __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------ a CPU to spare */

#define SPARE_NS 4000000ull /* the machine's load read at most this often */
#define SPARE_SHIFT 2       /* the average's weight: 1/4 per reading */

int bp_rd_loadavg_running(const char *text, size_t len)
{
	size_t i = 0;
	for (int field = 0; field < 3; field++) { /* the three averages */
		while (i < len && text[i] != ' ') {
			if (!(text[i] == '.' || (text[i] >= '0' && text[i] <= '9')))
				return -1;
			i++;
		}
		if (i == len || i == 0 || text[i - 1] == ' ')
			return -1;
		i++;
	}
	long n = 0;
	size_t from = i;
	for (; i < len && text[i] >= '0' && text[i] <= '9' && n < INT_MAX / 10; i++)
		n = n * 10 + (text[i] - '0');
	if (i == from || i == len || text[i] != '/')
		return -1;
	return (int)n;
}

void bp_rd_spare_note(struct bp_rd_spare *s, int running, unsigned ours)
{
	if (running < 0) { /* unknown: no spare CPU until a good reading */
		s->known = false;
		return;
	}
	/* the reader runs: it is one of them */
	uint64_t mine = (uint64_t)ours + 1;
	uint32_t others = (uint64_t)running > mine ? (uint32_t)((uint64_t)running - mine) : 0;
	if (others > 4096)
		others = 4096;
	uint32_t sample = others << 8;
	if (!s->known) {
		s->others_q8 = sample;
		s->known = true;
		return;
	}
	/* rounded away from the average: a steady count is reached */
	if (sample > s->others_q8)
		s->others_q8 += (sample - s->others_q8 + (1u << SPARE_SHIFT) - 1) >> SPARE_SHIFT;
	else
		s->others_q8 -= (s->others_q8 - sample + (1u << SPARE_SHIFT) - 1) >> SPARE_SHIFT;
}

bool bp_rd_spare(const struct bp_rd_spare *s, unsigned ncpu)
{
	/* a CPU left for the poll after the others' average */
	return s->known && ncpu >= 2 && (uint64_t)s->others_q8 < ((uint64_t)ncpu - 1) << 8;
}

/*
 * The process's: the load is the machine's, whichever pager reads it.
 * /proc/loadavg stays open (high and listed: core/fdhigh.h) while a pager
 * with a handler pool lives, so that no reading opens a descriptor the
 * program could see; one handler at a time reads it (g_checking).
 */
static _Atomic int g_load_fd = -1;
static _Atomic unsigned g_load_refs;
static _Atomic unsigned g_ncpu;
static _Atomic unsigned g_awake;   /* handler threads not asleep (dispatch.c) */
static _Atomic unsigned g_pollers; /* other threads polling a read now */
static _Atomic uint64_t g_spare_next; /* when the next reading is due */
static _Atomic bool g_checking;
static _Atomic bool g_spare; /* the last decision */
static struct bp_rd_spare g_spare_avg; /* g_checking's holder's */
static _Atomic uint64_t g_readings, g_spared; /* for BYPASS_LOG=debug */

static bool has_pool(const struct bypass_pager *p)
{
	return p->cfg.mode == BYPASS_PAGER_ADAPTIVE && p->cfg.nthreads > 1;
}

static void spare_ref(void)
{
	atomic_store(&g_ncpu, bp_cpus_allowed());
	if (atomic_fetch_add(&g_load_refs, 1))
		return;
	int fd = bp_fd_lift(bp_sys_open("/proc/loadavg", O_RDONLY | O_CLOEXEC, 0), true);
	if (fd < 0)
		return; /* every reading fails: the pool keeps the duty rule */
	bp_fd_list(fd);
	int none = -1;
	if (!atomic_compare_exchange_strong(&g_load_fd, &none, fd)) { /* a last unref's */
		bp_fd_unlist(fd);
		bp_sys_close(fd);
	}
}

static void spare_unref(void)
{
	if (atomic_fetch_sub(&g_load_refs, 1) != 1)
		return;
	int fd = atomic_load(&g_load_fd);
	if (fd >= 0 && atomic_compare_exchange_strong(&g_load_fd, &fd, -1)) {
		bp_fd_unlist(fd);
		bp_sys_close(fd);
	}
	bp_debug("bypass: pager: the handler pool read the load %llu times, a CPU to spare "
		 "at %llu of them",
		 (unsigned long long)atomic_load(&g_readings),
		 (unsigned long long)atomic_load(&g_spared));
}

static void spare_check(uint64_t now)
{
	if (now < atomic_load_explicit(&g_spare_next, memory_order_relaxed) ||
	    atomic_exchange_explicit(&g_checking, true, memory_order_acquire))
		return;
	if (now >= atomic_load_explicit(&g_spare_next, memory_order_relaxed)) {
		atomic_store_explicit(&g_spare_next, now + SPARE_NS, memory_order_relaxed);
		char buf[128];
		int fd = atomic_load_explicit(&g_load_fd, memory_order_relaxed);
		ssize_t n = fd >= 0 ? bp_sys_pread(fd, buf, sizeof(buf), 0) : -1;
		int running = n > 0 ? bp_rd_loadavg_running(buf, (size_t)n) : -1;
		/* ours besides the reader: the other handler threads awake
		 * (serving, polling or not), the program's threads polling */
		unsigned awake = atomic_load_explicit(&g_awake, memory_order_relaxed);
		unsigned ours = (awake ? awake - 1 : 0) +
				atomic_load_explicit(&g_pollers, memory_order_relaxed);
		bp_rd_spare_note(&g_spare_avg, running, ours);
		bool spare = bp_rd_spare(&g_spare_avg, atomic_load(&g_ncpu));
		atomic_store_explicit(&g_spare, spare, memory_order_relaxed);
		atomic_fetch_add_explicit(&g_readings, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&g_spared, spare, memory_order_relaxed);
	}
	atomic_store_explicit(&g_checking, false, memory_order_release);
}

/* A thread of the adaptive engine's handler pool (several threads) while
 * the machine has a CPU to spare: it polls whatever its duty.  Not the
 * single handler thread of handler mode, which polling keeps from reading
 * the next fault's message (window 6: 0.91x the rate at 1.89x the CPU). */
void bp_rd_handler_awake(bool awake)
{
	if (awake)
		atomic_fetch_add_explicit(&g_awake, 1, memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&g_awake, 1, memory_order_relaxed);
}

void bp_rd_fork_child(void)
{
	atomic_store(&g_awake, 0);
	atomic_store(&g_pollers, 0);
	atomic_store(&g_checking, false);
}

static bool pool_polls(const struct bypass_pager *p, uint64_t now)
{
	if (!has_pool(p) || !bp_pager_in_handler_thread())
		return false;
	spare_check(now);
	return atomic_load_explicit(&g_spare, memory_order_relaxed);
}

/* ------------------------------------------------------------ reads */

/* Submit one read and wait for it, polling first unless the last reads
 * all outlasted their poll, or the thread thrashes (poll false).  Returns
 * the bytes read, -errno from the completion, or RD_BROKEN. */
static int ring_read(struct pg_rdring *d, int fd, char *buf, size_t len, off_t off, bool poll)
{
	struct io_uring *ring = &d->ring;
	bool spin = poll && (d->misses < MISS_MAX || ++d->probe % PROBE == 0);
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return RD_BROKEN; /* cannot happen: each read is waited for */
	io_uring_prep_read(sqe, fd, buf, (unsigned)len, (uint64_t)off);
	int e;
	do
		e = io_uring_submit(ring);
	while (e == -EINTR);
	if (e != 1)
		return RD_BROKEN; /* the read may still go later: keep the ring away */
	struct io_uring_cqe *cqe = NULL;
	uint64_t t0 = spin ? bypass_now_ns() : 0;
	unsigned spins = 0;
	/* a handler thread polling is counted awake already */
	bool counted = spin && !bp_pager_in_handler_thread();
	if (counted)
		atomic_fetch_add_explicit(&g_pollers, 1, memory_order_relaxed);
	while (io_uring_peek_cqe(ring, &cqe) != 0) {
		bp_cpu_relax();
		if (!spin || ((++spins & 63) == 0 && bypass_now_ns() - t0 > SPIN_NS)) {
			if (spin && d->misses < MISS_MAX)
				d->misses++;
			if (counted)
				atomic_fetch_sub_explicit(&g_pollers, 1, memory_order_relaxed);
			counted = spin = false;
			/* the buffer is the kernel's until the completion:
			 * wait for it whatever interrupts the wait */
			while (io_uring_wait_cqe(ring, &cqe) != 0)
				;
			break;
		}
	}
	if (spin) /* done within the poll */
		d->misses = 0;
	if (counted)
		atomic_fetch_sub_explicit(&g_pollers, 1, memory_order_relaxed);
	int res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static int file_read(struct bypass_pager *p, int fd, char *buf, size_t len, off_t off);

/*
 * The compressed tier (tier.c): the pages of our own file's slots that the
 * pool holds are decompressed into buf (the fault's bounce buffer, which
 * the fault then installs with UFFDIO_COPY); runs of the others are read
 * from the file.  The caller holds every page's lock (tier.h).
 */
static int tier_read(struct bypass_pager *p, struct bp_tier *t, int fd, char *buf, size_t len,
		     off_t off)
{
	uint32_t n = (uint32_t)(len / PG_SIZE), s0 = (uint32_t)(off / (off_t)PG_SIZE);
	uint32_t from_pool = 0, run = 0; /* run: file pages before page i */
	int e = 0;
	for (uint32_t i = 0; i <= n && !e; i++) {
		int got = i < n ? bp_tier_load(t, s0 + i, buf + (size_t)i * PG_SIZE) : 0;
		if (got < 0) {
			e = got;
			break;
		}
		if (got == 0 && i < n) {
			run++;
			continue;
		}
		from_pool += got;
		if (run) {
			uint32_t j = i - run;
			e = file_read(p, fd, buf + (size_t)j * PG_SIZE, (size_t)run * PG_SIZE,
				      off + (off_t)j * (off_t)PG_SIZE);
			bp_tier_count_reads(t, 0, run);
			run = 0;
		}
	}
	bp_tier_count_reads(t, from_pool, 0);
	return e;
}

int bp_swap_read(struct bypass_pager *p, int fd, char *buf, size_t len, off_t off)
{
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	if (t && fd == p->swap.fd && !(len % PG_SIZE) && !(off % (off_t)PG_SIZE))
		return tier_read(p, t, fd, buf, len, off);
	return file_read(p, fd, buf, len, off);
}

static int file_read_in(struct bypass_pager *p, int fd, char *buf, size_t len, off_t off,
			bool poll)
{
	struct pg_rdring *d = ring_take(p);
	if (!d)
		return pread_full(fd, buf, len, off);
	int n = ring_read(d, fd, buf, len, off, poll);
	if (n == RD_BROKEN) /* stays taken: never used again */
		return pread_full(fd, buf, len, off);
	ring_give(d);
	stat_add(&ST(p).polled, 1);
	if (n >= 0 && (size_t)n == len)
		return 0;
	if (n > 0) /* a short read: the rest the usual way */
		return pread_full(fd, buf + n, len - (size_t)n, off + n);
	if (n == 0 || n == -EINTR || n == -EAGAIN)
		return pread_full(fd, buf, len, off); /* pread says why, or reads */
	return n;
}

static int file_read(struct bypass_pager *p, int fd, char *buf, size_t len, off_t off)
{
	uint64_t t0 = bypass_now_ns();
	/* the duty is noted for a pool thread too: the rule is current
	 * when the machine's CPUs are taken */
	bool poll = pool_polls(p, t0) || bp_rd_duty_spin(&my_duty);
	int e = file_read_in(p, fd, buf, len, off, poll);
	bp_rd_duty_note(&my_duty, t0, bypass_now_ns());
	return e;
}

int bp_swap_read_init(struct bypass_pager *p, bool spin)
{
	p->srv.nrd = 0;
	p->srv.rd = NULL;
	uint32_t ncpu = bp_cpus_allowed();
	uint32_t n = ncpu > 1 ? ncpu - 1 : 0;
	if (n > RD_MAX)
		n = RD_MAX;
	if (!spin || !n)
		return 0;
	p->srv.rd = bp_pg_calloc(n, sizeof(*p->srv.rd));
	if (!p->srv.rd)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int e = bp_uring_init(RD_ENTRIES, &p->srv.rd[i].ring, NULL);
		if (e < 0) {
			/* fewer rings, fewer polling readers; with none,
			 * every read sleeps in pread (not an error) */
			if (!i) {
				bp_pg_free(p->srv.rd);
				p->srv.rd = NULL;
				bp_info("bypass: pager: swap-in reads sleep: io_uring: %s",
					strerror(-e));
				return 0;
			}
			break;
		}
		p->srv.nrd = i + 1;
	}
	if (has_pool(p)) /* its reads may poll on spare CPU: the load's reading */
		spare_ref();
	return 0;
}

void bp_swap_read_fini(struct bypass_pager *p)
{
	if (p->srv.nrd && has_pool(p))
		spare_unref();
	for (uint32_t i = 0; i < p->srv.nrd; i++)
		bp_uring_exit(&p->srv.rd[i].ring);
	bp_pg_free(p->srv.rd);
	p->srv.rd = NULL;
	p->srv.nrd = 0;
}
