/* SPDX-License-Identifier: MIT */
/*
 * bypass/pager.h - memory whose page faults are served in user space, with a
 * memory budget and a swap file: the stock-kernel counterpart of ExtMem.
 *
 * A pager owns a budget of resident memory and a swap file.  Regions mapped
 * from it behave like anonymous memory, but bypass serves their page faults:
 * a zero-filled page on first touch, a read from the swap file after the page
 * was evicted.  When the resident pages of all of a pager's regions reach the
 * high watermark, the least recently used ones (a 2Q active/inactive policy
 * like Linux's) are evicted down to the low watermark: dirty pages are
 * written to the swap file with io_uring and O_DIRECT (synchronously, when
 * a thread other than the handler thread evicts in a pager that has one),
 * clean pages that have a valid copy there are dropped without writing.
 * Resident pages never exceed the budget.
 *
 * Two fault modes:
 *
 *  - BYPASS_PAGER_UPCALL: userfaultfd in SIGBUS mode; the faulting thread
 *    serves its own fault in bypass's SIGBUS handler, so faults of several
 *    threads are served in parallel and no manager thread exists.  The
 *    kernel cannot upcall for its own accesses: a system call that reads or
 *    writes a page that is not resident (or, for a write, one that is
 *    write-protected because it is clean) fails with EFAULT.  Pin such
 *    buffers first (bypass_pager_pin), or map the region with
 *    BYPASS_PAGER_MAP_HANDLER.  A thread that blocks SIGBUS must not
 *    touch upcall memory: the kernel kills the process rather than queue a
 *    fault signal that is blocked.
 *  - BYPASS_PAGER_HANDLER: the classic userfaultfd read loop in a handler
 *    thread per pager (config.threads of them).  Faults taken by the kernel
 *    inside system calls are served too.  Needs CAP_SYS_PTRACE,
 *    vm.unprivileged_userfaultfd = 1, or access to /dev/userfaultfd.
 *  - BYPASS_PAGER_ADAPTIVE: upcalls while they serve faults fastest, and a
 *    pool of handler threads (a user-mode-only userfaultfd: no privilege,
 *    and system calls on non-resident pages fail with EFAULT as in upcall
 *    mode) when many threads fault at once and the signals of one process
 *    serialize in the kernel.  The pager measures its fault rate under
 *    each engine at the current number of faulting threads and keeps the
 *    faster one, trying the other now and then.  A switch blocks faults on
 *    the region for about a millisecond; none happens while pages are
 *    pinned.  The library reads no environment: the mode is config.mode
 *    (the preload's BYPASS_PAGER_ENGINE becomes that option).
 *
 * A forked child inherits the regions, every byte, as ordinary private
 * memory (copy-on-write, outside any budget): the pager's fork handlers
 * read every evicted page back before fork() returns (the parent is above
 * its budget until then, and evicts back within it before the fork
 * returns; vfork and posix_spawn need nothing).  The child unmaps them with
 * munmap().  In the child, every call on an inherited pager except
 * bypass_pager_destroy() (which frees the child's copy) and
 * bypass_pager_stats() returns -ECHILD; the child may create pagers of its
 * own.
 *
 * Every function returns 0 or a count on success and -errno on failure; none
 * sets errno or prints unless BYPASS_LOG asks.
 */
#ifndef BYPASS_PAGER_H
#define BYPASS_PAGER_H

#include <bypass/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bypass_pager bypass_pager;

/* Fault modes (config.mode). */
enum bypass_pager_mode {
	BYPASS_PAGER_UPCALL = 0,  /* SIGBUS upcall in the faulting thread */
	BYPASS_PAGER_HANDLER = 1, /* a userfaultfd handler thread */
	BYPASS_PAGER_ADAPTIVE = 2, /* upcalls, or a pool of handler threads
				      when that serves more faults per second
				      (measured); unprivileged like upcalls */
};

/* config.flags */
#define BYPASS_PAGER_SWAP_CREATE 0x1u /* create swap_path if it is missing,
					 and extend it to swap_size (a file
					 it created is removed again if
					 create fails) */
#define BYPASS_PAGER_SWAP_TEMP 0x2u   /* swap_path is a directory: use an
					 unnamed file there (O_TMPFILE) that
					 disappears with the pager */
#define BYPASS_PAGER_SAMPLE 0x4u      /* access samples without privilege:
					 while the pager evicts, a thread of
					 its own takes a few resident pages
					 out of the page table each interval
					 (their data kept aside), so that the
					 next access, a read too, faults and
					 marks the page referenced for 2Q,
					 clock and the policies (hint faults;
					 its cost is in the stats and bounds
					 its rate) */
#define BYPASS_PAGER_NO_SPIN 0x8u     /* swap-in reads sleep until the data
					 is there (pread), as Linux's do.  By
					 default a read polls its completion
					 for up to 200 us first, in at most
					 one thread fewer than the process's
					 CPUs: a sleeping reader's idle CPU
					 may take longer to wake than a 4 KiB
					 read takes */

struct bypass_pager_config {
	size_t budget;         /* resident bytes, at least 16 pages (64 KiB) */
	const char *swap_path; /* the swap file (or a block device) */
	size_t swap_size;      /* bytes of it to use; 0 = the file's size
				  (required with SWAP_CREATE / SWAP_TEMP).
				  Every page of every region has its place
				  there, so it bounds the total mapped size */
	int mode;              /* enum bypass_pager_mode */
	unsigned flags;        /* BYPASS_PAGER_SWAP_* */
	/* Eviction starts when the resident size reaches high_watermark and
	 * goes down to low_watermark (bytes, low < high <= budget); 0 = the
	 * defaults: high = budget - 2 batches, low = high - 1 batch. */
	size_t high_watermark;
	size_t low_watermark;
	unsigned batch;        /* pages evicted per round; 0 = 32 */
	unsigned readahead;    /* pages read per swap-in when the following
				  pages were evicted together (Linux's
				  page-cluster); 0 = 64 (at most 1/32 of
				  the budget, at least 8), 1 = none,
				  max 64; at most a quarter of the budget */
	/* Fault-around for first touch: a first-touch fault right after the
	 * pages before it were touched (an ascending stream) installs up to
	 * this many pages at once (zero-filled, mapped as the faulting page
	 * is: writable after a write, write-protected after a read), only
	 * pages of the same region that were never touched, and only while
	 * the resident pages stay at or below the high watermark (it never
	 * causes an eviction).  0 = 16, 1 = off, max 64. */
	unsigned fault_around;
	/* Handler threads reading the userfaultfd: 0 = 1 in handler mode,
	 * the online CPUs (at most 16) for the adaptive engine's pool;
	 * max 64.  Unused in upcall mode. */
	unsigned threads;
	uint64_t reserved[4];  /* must be zero */
};

/*
 * bypass_pager_create - a pager with a budget and a swap file.  Returns 0
 * and sets *out, or:
 *   -EINVAL  budget below 16 pages, a null swap_path, an unknown mode or
 *            flag, watermarks out of order, swap_size 0 with SWAP_CREATE or
 *            SWAP_TEMP, readahead, fault_around or threads above 64, a
 *            non-zero reserved field;
 *   -ENOENT  the swap file does not exist (and SWAP_CREATE is not set);
 *   -ENOSPC  the swap file is smaller than swap_size or than 16 pages, or
 *            the filesystem has no room to create it;
 *   -EISDIR  swap_path is a directory (and SWAP_TEMP is not set);
 *   -EPERM   userfaultfd refused: for BYPASS_PAGER_HANDLER, neither
 *            CAP_SYS_PTRACE, vm.unprivileged_userfaultfd = 1 nor
 *            /dev/userfaultfd allows kernel-mode faults to be handled;
 *   -ENOSYS  the kernel has no userfaultfd;
 *   -EOPNOTSUPP  userfaultfd lacks write-protection of anonymous memory
 *            (or, for BYPASS_PAGER_UPCALL and ADAPTIVE, SIGBUS mode);
 *   or another -errno from open, io_uring_queue_init or mmap.
 * The reason is logged at BYPASS_LOG=error.
 */
BYPASS_API int bypass_pager_create(const struct bypass_pager_config *cfg,
				   bypass_pager **out);

/*
 * bypass_pager_destroy - unmap every region of the pager, stop its handler
 * thread, close (and for SWAP_TEMP, delete) its swap file.  Returns 0 or
 * -EINVAL for a null pager.  In a forked child it only releases the child's
 * copy of the bookkeeping.
 */
BYPASS_API int bypass_pager_destroy(bypass_pager *p);

/* bypass_pager_map flags */
#define BYPASS_PAGER_MAP_HANDLER 0x1u /* serve this region's faults in the
					 handler thread even if the pager is
					 in upcall mode, so that system calls
					 on it never fail with EFAULT */

/*
 * bypass_pager_map - map length bytes (a non-zero multiple of the page
 * size) of memory served by the pager.  It reads as zeros until written.
 * Returns 0 and sets *addr, or -EINVAL (bad length or flags), -ENOSPC (the
 * swap file has no room for length more bytes: the sizes of all regions of
 * a pager together may not exceed its swap size), -EPERM
 * (BYPASS_PAGER_MAP_HANDLER where userfaultfd refuses kernel-mode faults),
 * -ECHILD, -ENOMEM, or another -errno from mmap or from opening the handler
 * thread's userfaultfd (-EMFILE: nothing is left open then).
 */
BYPASS_API int bypass_pager_map(bypass_pager *p, size_t length, unsigned flags,
				void **addr);

/*
 * bypass_pager_unmap - unmap [addr, addr + length) of a region: a whole
 * region or a page-aligned part of one (the rest stays mapped and served).
 * Its swap space is released.  Returns 0, -EINVAL (unaligned, or not
 * entirely inside one region of this pager), -ENOMEM (nothing unmapped),
 * -ECHILD.
 */
BYPASS_API int bypass_pager_unmap(bypass_pager *p, void *addr, size_t length);

/* bypass_pager_pin flags */
#define BYPASS_PAGER_PIN_WRITE 0x1u /* the kernel will write the pages */

/*
 * bypass_pager_pin - make the pages of [addr, addr + length) resident (and
 * writable, with BYPASS_PAGER_PIN_WRITE) and keep them so until
 * bypass_pager_unpin(): the buffer can then be given to system calls
 * (read, recv, write, send, ...) in upcall mode.  Pins nest.  Pinned pages
 * count against the budget; at most half of it may be pinned.  Returns 0,
 * -EINVAL (a range outside the pager's regions, unknown flags), -ENOMEM
 * (more than half the budget would be pinned), -EIO (the swap file could not
 * be read), -ECHILD.  On failure nothing stays pinned.
 */
BYPASS_API int bypass_pager_pin(bypass_pager *p, void *addr, size_t length,
				unsigned flags);

/*
 * bypass_pager_unpin - undo one bypass_pager_pin() of the same range.
 * Returns 0, -EINVAL (a range outside the pager's regions, or a page that is
 * not pinned; then nothing is changed), -ECHILD.
 */
BYPASS_API int bypass_pager_unpin(bypass_pager *p, void *addr, size_t length);

/*
 * bypass_pager_discard - forget the data of [addr, addr + length), as
 * madvise(MADV_DONTNEED) does for anonymous memory: the pages read as zeros
 * afterwards.  addr and length must be page-aligned, length not zero, the
 * range inside regions of p.  Nothing is written or read for it: a
 * resident page leaves memory and the budget, a swapped one frees its slot
 * (and its copy in the compressed tier).  A page in use at that moment (a
 * fault or the prefetcher on it, pinned, under write-back) is zeroed by
 * writing to it instead.  Returns 0, -EINVAL (a null pager, an unaligned
 * or empty range, a range outside the pager's regions: then nothing is
 * changed), -ECHILD.
 */
BYPASS_API int bypass_pager_discard(bypass_pager *p, void *addr, size_t length);

#define BYPASS_PAGER_HIST 32

struct bypass_pager_stats {
	/* page faults served, by kind */
	uint64_t faults_zero;     /* first touch: a zero-filled page */
	uint64_t faults_swapin;   /* the page was read back from swap */
	uint64_t faults_wp;       /* a write to a clean (write-protected) page */
	uint64_t faults_other;    /* already served by another thread, or
				     discarded behind bypass's back */
	uint64_t readahead_pages; /* pages read along with a faulting one */
	uint64_t evictions;       /* pages evicted */
	uint64_t evictions_clean; /* ... of which dropped without a write */
	uint64_t bytes_read;      /* from the swap file */
	uint64_t bytes_written;   /* to the swap file */
	uint64_t write_errors;    /* failed write-backs (pages kept) */
	uint64_t resident_pages;  /* now */
	uint64_t resident_peak;   /* the most ever resident */
	uint64_t pinned_pages;    /* now */
	uint64_t budget_pages;
	uint64_t swap_pages;      /* capacity of the swap file */
	uint64_t swap_used;       /* pages with a copy in the swap file */
	uint64_t mapped_pages;    /* size of all regions */
	/*
	 * Time to serve a fault, from the handler's entry to its return
	 * (upcall) or from reading the message to waking the thread (handler):
	 * lat_hist[i] counts faults that took [2^i, 2^(i+1)) ns.  The signal
	 * delivery itself is not included.
	 */
	uint64_t lat_hist[BYPASS_PAGER_HIST];
	uint64_t lat_count, lat_sum_ns;
	uint64_t faultaround_pages; /* pages installed along with a first-touch
				       fault (not counted in faults_zero) */
	uint64_t engine_switches;   /* adaptive: switches between upcalls and
				       the pool of handler threads */
	uint64_t engine_pool;       /* adaptive: 1 while the pool serves */
	/* Policies and prefetch (see bypass_pager_set_policy): */
	uint64_t prefetch_pages;    /* pages installed by the asynchronous
				       prefetcher (not counted in
				       readahead_pages) */
	uint64_t prefetch_used;     /* ... of which seen used before their
				       eviction: a fault, pin or access sample
				       on the page, or a later fault of the
				       sequential stream that fetched it
				       beyond it (a lower bound: plain reads
				       of a mapped page are invisible) */
	uint64_t policy_rejects;    /* answers of a policy refused: victims
				       or prefetch ranges that are invalid or
				       too many, callbacks that failed */
	/* Access samples (BYPASS_PAGER_SAMPLE): pages taken out of the page
	 * table to see whether they are used, those of them accessed before
	 * they were put back (each a fault: hits / lat_count is the share of
	 * faults sampling adds), the sampler thread's time, and the time the
	 * faults of hits took (the cost per sampled page is their sum over
	 * access_samples). */
	uint64_t access_samples;
	uint64_t access_hits;
	uint64_t access_sample_ns;
	uint64_t access_hit_ns;
	uint64_t readahead_dirty;   /* readahead pages mapped writable and
				       dirty, in a write stream (counted in
				       readahead_pages too; docs/pager.md) */
	uint64_t reads_polled;      /* swap-in reads through the polling
				       rings: their completion polled for up
				       to 200 us, then slept for (at once
				       while the disk is saturated: see
				       docs/pager.md); the others slept in
				       pread (BYPASS_PAGER_NO_SPIN: all) */
	/* Room for counters to come: zero now.  The struct is 96 words (768
	 * bytes) and keeps that size; a new counter takes the first reserved
	 * word (tests/pager/counters.c asserts the size). */
	uint64_t reserved[33];
};

/* ---------------------------------------------------------- hints */

/* Per-range hints (bypass_pager_advise). */
#define BYPASS_PAGER_ADV_NORMAL 0     /* no hint: clears the others */
#define BYPASS_PAGER_ADV_SEQUENTIAL 1 /* accessed in ascending order: prefetch
					 ahead of the faults (the "window"
					 policy also evicts behind them) */
#define BYPASS_PAGER_ADV_RANDOM 2     /* no read-ahead, fault-around or
					 fault-driven prefetch */
#define BYPASS_PAGER_ADV_WILLNEED 3   /* bring the swapped pages in now,
					 asynchronously, within the budget */
#define BYPASS_PAGER_ADV_DONTNEED 4   /* evict these first (contents kept);
					 with the compressed tier, to the swap
					 file only, never the pool */
#define BYPASS_PAGER_ADV_PRIORITY 5   /* keep resident ahead of everything
					 else: evicted only when nothing else
					 can be */

/*
 * bypass_pager_advise - give a hint for the pages of [addr, addr + len)
 * (rounded out to pages), which must lie in regions of p.  The hint stays
 * with the pages until another one replaces it (WILLNEED is an action, not
 * kept) or they are unmapped; every policy honours it.  Returns 0, -EINVAL
 * (a null pager, an unknown advice, a range outside the pager's regions),
 * -ENOSPC (the pager's hint table, 64 ranges, is full), -ENOMEM, -ECHILD.
 */
BYPASS_API int bypass_pager_advise(bypass_pager *p, void *addr, size_t len, int advice);

/* ---------------------------------------------------------- policies */

#define BYPASS_PAGER_POLICY_VERSION 1

/* struct bypass_pager_fault.kind */
#define BYPASS_PAGER_FAULT_ZERO 1   /* first touch */
#define BYPASS_PAGER_FAULT_SWAPIN 2 /* read back from swap */
#define BYPASS_PAGER_FAULT_WP 3     /* write to a clean page */
#define BYPASS_PAGER_FAULT_OTHER 4  /* already resident (served meanwhile,
				       e.g. by the prefetcher) */

/* A fault just served, as a policy sees it. */
struct bypass_pager_fault {
	void *addr;          /* the page */
	void *region;        /* the region holding it, and its length */
	size_t region_len;
	unsigned kind;       /* BYPASS_PAGER_FAULT_* */
	unsigned write;      /* 1 for a write access */
	unsigned npages;     /* pages mapped by it (read-ahead included) */
	int advice;          /* BYPASS_PAGER_ADV_* of the page */
};

/* A range a policy asks to prefetch. */
struct bypass_pager_range {
	void *addr;
	size_t len;
};

/* on_access flags */
#define BYPASS_PAGER_ACCESSED 0x1u
#define BYPASS_PAGER_WRITTEN 0x2u

/*
 * A policy: callbacks that the pager calls, any of them may be NULL (then
 * the pager's 2Q does that part).  The callbacks marked [signal] may run in
 * a SIGBUS handler that interrupted any code of the program, in several
 * threads at once, and re-entered on one thread: they must be
 * async-signal-safe (no malloc, stdio or locks that may sleep; atomics and
 * their own preallocated memory only), must not touch memory of the
 * pager's regions, and must return quickly.  [normal] callbacks run in the
 * thread that called the API function and may do anything but call the
 * pager back.  Whatever a policy returns is checked: victims that are not
 * resident evictable pages of the pager's regions, prefetch ranges outside
 * them or beyond the limit, and failed calls are refused (counted in
 * stats.policy_rejects) and the 2Q policy supplies what is missing, so a
 * faulty policy may cost performance but never data.
 */
struct bypass_pager_policy {
	unsigned version;     /* BYPASS_PAGER_POLICY_VERSION */
	const char *name;     /* 1-31 characters, no ',' ':' '/' */
	/* [normal] set_policy: allocate the state (*state, may stay NULL)
	 * from args (the text after ',' in the spec, or NULL); 0 or -errno
	 * (then set_policy fails and the old policy stays). */
	int (*init)(bypass_pager *p, const char *args, void **state);
	/* [normal] the policy is replaced or the pager destroyed; no
	 * callback of this instance runs any more. */
	void (*fini)(void *state);
	/* [signal] a fault was served. */
	void (*on_fault)(void *state, const struct bypass_pager_fault *f);
	/* [signal] an access sample: npages pages at addr were accessed
	 * (BYPASS_PAGER_ACCESSED) or written (BYPASS_PAGER_WRITTEN). */
	void (*on_access)(void *state, void *addr, size_t npages, unsigned flags);
	/* [signal] eviction needs up to n pages: write the addresses of the
	 * victims, most wanted first, into addrs[0..n); returns how many or
	 * -errno.  Runs under the pager's evict lock (one at a time). */
	int (*choose_victims)(void *state, void **addrs, unsigned n);
	/* [signal] after on_fault: ranges to read in asynchronously, up to n
	 * of them into out[]; returns how many or -errno.  At most a quarter
	 * of the budget (and 1024 pages) per call is prefetched. */
	int (*prefetch)(void *state, const struct bypass_pager_fault *f,
			struct bypass_pager_range *out, unsigned n);
	/* [normal] bypass_pager_advise() was called (after the pager applied
	 * the hint); 0 or -errno (counted as a rejection). */
	int (*on_hint)(void *state, void *addr, size_t len, int advice);
	void *reserved[4];    /* must be NULL */
};

/*
 * bypass_pager_policy_register - make pol known by its name to
 * bypass_pager_set_policy().  pol must stay valid as long as the process
 * uses it.  Returns 0, -EINVAL (null, a wrong version, a bad name, a
 * non-null reserved field), -EEXIST (the name is taken), -ENOSPC (32
 * policies are registered).
 */
BYPASS_API int bypass_pager_policy_register(const struct bypass_pager_policy *pol);

/*
 * bypass_pager_set_policy - choose the pager's policy, also while regions
 * are mapped and faults are served.  spec is a name: a built-in ("2q", the
 * default: 2Q eviction and synchronous cluster read-ahead; "clock": the
 * clock algorithm over the reference bits of faults and access samples;
 * "prefetch": 2Q eviction plus sequential (ascending, descending) and
 * constant-stride detection per region, prefetching asynchronously ahead
 * of the faults with a growing window; "window": the sliding window for
 * CSR graphs, PRIORITY ranges stay resident while SEQUENTIAL ranges are
 * streamed, prefetched ahead of the stream and evicted behind it) or a
 * registered one, or a shared object "path.so" (a spec containing '/' or
 * ending in ".so"), optionally ":symbol" (default "bypass_pager_policy"),
 * exporting a struct bypass_pager_policy; either optionally followed by
 * ",args" for its init.  Returns 0, -EINVAL (null, empty or malformed
 * spec, a policy struct with a wrong version), -ENOENT (no such policy,
 * file or symbol), -ECHILD, or the error of the policy's init.
 */
BYPASS_API int bypass_pager_set_policy(bypass_pager *p, const char *spec);

/*
 * bypass_pager_stats - a snapshot of the pager's counters (each read
 * atomically; the set is not one instant).  Returns 0, -EINVAL.
 */
BYPASS_API int bypass_pager_stats(bypass_pager *p, struct bypass_pager_stats *st);

/* ------------------------------------------------------------ compressed tier */

/*
 * The compressed tier: evicted pages that compress to accept_pct of a page
 * (LZ4) are kept in a pool of memory that counts in the budget, as well as
 * written to the swap file (write-through: the file always has them); when
 * the pool passes its share of the budget it forgets its oldest copies.
 * A swap-in from the pool is a decompression, not a read.  Off by default.
 */
struct bypass_pager_tier_config {
	unsigned share_pct;   /* the pool's most memory, in percent of the
				 budget: 0 = 50, 5 .. 90 */
	unsigned accept_pct;  /* a page is kept if it compresses to this
				 percent of its size: 0 = 60, 10 .. 95 */
	unsigned flags;       /* BYPASS_PAGER_TIER_FIXED, or 0 */
	unsigned reserved_u;  /* must be zero */
	uint64_t reserved[4]; /* must be zero */
};

/* The pool's share stays share_pct.  Without it the share starts there and
 * adapts to what the pool saves, within 5 .. 90% of the budget, one step
 * (a 64th of the budget) per window of evictions: it grows when pages the
 * pool forgot are read back from the file soon after (each weighs 7 of
 * the others: a file read against a swap-in from the pool), shrinks when
 * pages evicted shortly before are read back (more resident memory would
 * have kept them) once they outweigh the copies the step down writes to
 * the file, and not while the pool is a step below its share, or when the
 * pool writes to the file more of its copies than it serves swap-ins
 * (docs/pager.md, "Compressed tier"). */
#define BYPASS_PAGER_TIER_FIXED 0x1u

struct bypass_pager_tier_stats {
	uint64_t pool_bytes;   /* memory the pool holds now (counted in the
				  budget's resident pages) */
	uint64_t pool_pages;   /* pages whose data is in the pool now */
	uint64_t comp_bytes;   /* their compressed size */
	uint64_t stored;       /* pages put in the pool */
	uint64_t rejected;     /* pages that did not compress: to the file */
	uint64_t dropped;      /* copies the pool forgot (oldest first) */
	uint64_t swapin_pool;  /* pages read back from the pool */
	uint64_t swapin_file;  /* pages read back from the file (tier on) */
	uint64_t cold;         /* pages sent to the file by the DONTNEED hint */
	uint64_t pool_only;    /* evicted pages kept in the pool only: not
				  written to the file when evicted */
	uint64_t pool_writes;  /* of those, written to the file later (the
				  pool forgot them, or before a fork) */
	uint64_t share_moves;  /* times the pool's share moved (one step up
				  or down; 0 with BYPASS_PAGER_TIER_FIXED) */
	uint64_t skipped;      /* of rejected, pages not tried: their 2 MiB
				  of address space had not compressed lately */
	uint64_t readmitted;   /* of stored, clean pages read from the file
				  put back in the pool when evicted (the
				  file keeps its copy) */
	/* Room for counters to come: zero now.  The struct is 32 words (256
	 * bytes) and keeps that size; a new counter takes the first reserved
	 * word (tests/pager/tier-stats.c asserts the size).  A program built
	 * against the 12-word struct of 0.1 (without skipped and reserved)
	 * links to bypass_pager_tier_stats@BYPASS_0.1, which fills those 12
	 * words only. */
	uint64_t reserved[18];
};

/*
 * bypass_pager_tier - turn the compressed tier on (cfg: its settings) or
 * off (cfg NULL: the pool is emptied).  Regions may be mapped and faulting
 * meanwhile.  Returns 0, -EINVAL (a null pager, a setting out of range, a
 * non-zero reserved field), -EOPNOTSUPP (built without liblz4), -ENOMEM,
 * -ECHILD.
 */
BYPASS_API int bypass_pager_tier(bypass_pager *p, const struct bypass_pager_tier_config *cfg);

/*
 * bypass_pager_tier_stats - the tier's counters (zeros if it was never on).
 * Returns 0, -EINVAL.
 */
BYPASS_API int bypass_pager_tier_stats(bypass_pager *p, struct bypass_pager_tier_stats *st);

/* ------------------------------------------------------------ access heat */

/*
 * Access heat: which parts of a pager's regions are used, from sources that
 * need no kernel patch, each detected when heat is enabled (docs/pager.md,
 * "Access heat").  A sampler thread of the pager's folds what the sources
 * saw in each interval into a score per page (it halves in about 2.4
 * intervals without an access); pages of high score are marked referenced
 * for the 2Q lists, so that reads of resident pages (visible to DAMON only)
 * keep them resident.  Nothing runs and nothing is allocated until heat is
 * enabled.
 */
#define BYPASS_PAGER_HEAT_FAULTS 0x1u  /* every fault served is an access, a
					  write fault a write (always available) */
#define BYPASS_PAGER_HEAT_WRITTEN 0x2u /* PAGEMAP_SCAN on /proc/self/pagemap:
					  pages written since they were last
					  cleaned (Linux 6.7) */
#define BYPASS_PAGER_HEAT_DAMON 0x4u   /* a kdamond of this process's own
					  (DAMON sysfs, root, virtual address
					  monitoring): accesses of resident
					  pages, reads included */
#define BYPASS_PAGER_HEAT_ALL 0x7u

/* bypass_pager_heat_config.flags */
#define BYPASS_PAGER_HEAT_OPTIONAL 0x1u /* skip requested sources that are
					   unavailable (stats say why) instead
					   of failing */

struct bypass_pager_heat_config {
	unsigned sources;       /* BYPASS_PAGER_HEAT_*; 0 = every available one
				   (as with BYPASS_PAGER_HEAT_OPTIONAL) */
	unsigned interval_ms;   /* sampling interval: 0 = 100, 10 .. 60000 */
	unsigned flags;         /* BYPASS_PAGER_HEAT_OPTIONAL */
	const char *stats_path; /* if set: the live view, rewritten (atomic
				   rename) every stats_ms; `bypass heat FILE`
				   prints it */
	unsigned stats_ms;      /* 0 = 1000, at least the interval */
	unsigned reserved_u;    /* must be zero */
	uint64_t reserved[4];   /* must be zero */
};

/*
 * bypass_pager_heat_enable - start sampling access heat.  Returns 0, or
 *   -EINVAL  a null pager, unknown sources or flags, an interval out of
 *            range, a stats_path too long, a non-zero reserved field;
 *   -EBUSY   heat is enabled already (disable it first);
 *   -ECHILD  in a forked child;
 *   the reason a requested source is unavailable, unless
 *   BYPASS_PAGER_HEAT_OPTIONAL: -EOPNOTSUPP (no PAGEMAP_SCAN, or no DAMON
 *   virtual address monitoring), -ENOENT (no DAMON sysfs), -EPERM (DAMON
 *   needs root), -EBUSY (a kdamond that is not this pager's runs);
 *   -ENOMEM, or another -errno from pthread_create.
 * Counters and scores start from zero only the first time (see reset).
 */
BYPASS_API int bypass_pager_heat_enable(bypass_pager *p,
					const struct bypass_pager_heat_config *cfg);

/*
 * bypass_pager_heat_disable - stop sampling (the thread is joined, DAMON's
 * kdamond removed); scores and counters stay readable.  Returns 0 (also if
 * heat was not enabled), -EINVAL, -ECHILD.
 */
BYPASS_API int bypass_pager_heat_disable(bypass_pager *p);

struct bypass_pager_heat_stats {
	uint64_t samples;         /* sampling rounds */
	uint64_t fault_accessed;  /* page-intervals with a fault */
	uint64_t fault_written;   /* ... with a write fault */
	uint64_t written_pages;   /* page-intervals newly PAGE_IS_WRITTEN */
	uint64_t damon_accessed;  /* page-intervals in regions DAMON saw accessed */
	uint64_t damon_regions;   /* accessed regions DAMON reported */
	uint64_t refs_set;        /* page-intervals a resident page was marked
				     referenced for 2Q */
	uint64_t sample_ns;       /* time the sampler spent in its rounds */
	unsigned sources;         /* the sources in use (0 while disabled) */
	unsigned interval_ms;
	int written_status;       /* 0 in use, else -errno: why not */
	int damon_status;
	char written_why[128];    /* the reason in words ("" if in use) */
	char damon_why[128];
	uint64_t reserved[4];
};

/* bypass_pager_heat_stats - the counters.  Returns 0, -EINVAL. */
BYPASS_API int bypass_pager_heat_stats(bypass_pager *p, struct bypass_pager_heat_stats *st);

struct bypass_pager_heat_range {
	void *addr;
	size_t length;
	unsigned heat;  /* the mean score of its pages: 0 (cold) .. 256 */
	unsigned flags; /* reserved, 0 */
};

/* bypass_pager_heat_ranges which */
#define BYPASS_PAGER_HEAT_HOT 0  /* hottest first (only heat > 0) */
#define BYPASS_PAGER_HEAT_COLD 1 /* coldest first, the longer of equal heat first */

/*
 * bypass_pager_heat_ranges - the hottest or coldest ranges of the pager's
 * regions: runs of neighbouring pages of one region at a similar heat
 * level, with their mean score.  Fills up to n entries of out and returns
 * how many, or -EINVAL (null pager, null out with n > 0, unknown which),
 * -ENODATA (heat never enabled), -ECHILD.
 */
BYPASS_API int bypass_pager_heat_ranges(bypass_pager *p, int which,
					struct bypass_pager_heat_range *out, size_t n);

/*
 * bypass_pager_heat_reset - forget every score and zero the counters.
 * Returns 0, -EINVAL, -ENODATA (heat never enabled), -ECHILD.
 */
BYPASS_API int bypass_pager_heat_reset(bypass_pager *p);

#ifdef __cplusplus
}
#endif
#endif /* BYPASS_PAGER_H */
