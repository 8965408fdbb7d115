/* SPDX-License-Identifier: MIT */
/*
 * bypass doctor: one line per thing this kernel and CPU offer (or refuse)
 * to bypass's modules, and why not.  Where the library has its own detection
 * the answer is the library's (bypass_ipc_pkey_supported,
 * bypass_notify_backend_available, bp_uffd_features_available,
 * bp_bt_merged_wait_available, bp_uintr_available), so doctor
 * and the library cannot disagree; tests/core/cli-doctor checks that.
 */
#include "cli.h"

#include "core/internal.h"
#if BYPASS_WITH_BATCH
#include "batch/batch_internal.h"
#endif
#if BYPASS_WITH_PAGER
#include "pager/pager_internal.h"
#endif
#include <bypass/bypass.h>

#include <fcntl.h>
#include <liburing.h>
#include <linux/userfaultfd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* Newer than some distributions' headers. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_POISON
#define UFFD_FEATURE_POISON (1 << 14)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif

struct check {
	char name[32];
	int avail;
	char detail[480];
};

static struct check checks[64];
static unsigned nchecks;

__attribute__((format(printf, 3, 4)))
static void add(const char *name, int avail, const char *fmt, ...)
{
	if (nchecks == sizeof(checks) / sizeof(checks[0]))
		return;
	struct check *c = &checks[nchecks++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->avail = avail;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

static int avail_of(const char *name)
{
	for (unsigned i = 0; i < nchecks; i++)
		if (!strcmp(checks[i].name, name))
			return checks[i].avail;
	return 0;
}

/* A sysctl's first line, or NULL. */
static const char *sysctl(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *r = fgets(buf, (int)len, f);
	fclose(f);
	if (!r)
		return NULL;
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* ------------------------------------------------------------ io_uring */

/* Each opcode bypass submits, and a few it could use (what for: from the
 * modules' io_uring_prep_* calls). */
static const struct { const char *name; int op; const char *use; } ops[] = {
	{ "READ", IORING_OP_READ, "batch sendfile's file read, syslet read, pager prefetch" },
	{ "WRITE", IORING_OP_WRITE, "batch write, syslet write" },
	{ "WRITEV", IORING_OP_WRITEV, "batch writev, pager write-back" },
	{ "SEND", IORING_OP_SEND, "batch send and sendfile" },
	{ "SENDMSG", IORING_OP_SENDMSG, "batch sendmsg" },
	{ "SHUTDOWN", IORING_OP_SHUTDOWN, "batch shutdown" },
	{ "CLOSE", IORING_OP_CLOSE, "batch and syslet close" },
	{ "EPOLL_CTL", IORING_OP_EPOLL_CTL, "batch" },
	{ "SPLICE", IORING_OP_SPLICE, "batch sendfile by splice (BYPASS_BATCH_SPLICE=1)" },
	{ "POLL_ADD", IORING_OP_POLL_ADD, "batch: a splice round waits for room in the socket" },
	{ "OPENAT", IORING_OP_OPENAT, "syslet open" },
	{ "FSYNC", IORING_OP_FSYNC, "syslet fsync" },
	{ "URING_CMD", IORING_OP_URING_CMD, "batch setsockopt (socket commands: Linux 6.7)" },
	{ "EPOLL_WAIT", 59, "batch merges its flush and the event-loop wait (Linux 6.15)" },
	{ "OPENAT2", IORING_OP_OPENAT2, "not used" },
	{ "SEND_ZC", IORING_OP_SEND_ZC, "not used" },
	{ "WAITID", 50, "not used" },
	{ "FUTEX_WAIT", 51, "not used" },
};

static void check_io_uring(void)
{
	char buf[64];
	const char *dis = sysctl("/proc/sys/kernel/io_uring_disabled", buf, sizeof(buf));
	char why[160];
	if (!dis)
		snprintf(why, sizeof(why), "no kernel.io_uring_disabled (kernel before 6.6)");
	else if (!strcmp(dis, "0"))
		snprintf(why, sizeof(why), "kernel.io_uring_disabled = 0");
	else if (!strcmp(dis, "1"))
		snprintf(why, sizeof(why), "kernel.io_uring_disabled = 1: only for "
			 "kernel.io_uring_group and CAP_SYS_ADMIN");
	else
		snprintf(why, sizeof(why), "kernel.io_uring_disabled = %s: disabled for all", dis);

	/* A ring as the modules make theirs (liburing's defaults). */
	struct io_uring ring_mem, *ring = NULL;
	int e = io_uring_queue_init(256, &ring_mem, 0);
	if (!e)
		ring = &ring_mem;
	if (e) {
		add("io_uring", 0, "io_uring_setup: %s (%s); batch, syslet and the pager's "
		    "swap cannot work", strerror(-e), why);
	} else {
		add("io_uring", 1, "io_uring_setup works (%s)", why);
	}
	struct io_uring_probe *p = ring ? io_uring_get_probe_ring(ring) : NULL;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "io_uring.%s", ops[i].name);
		/* The same probe as the modules' (batch asks it for EPOLL_WAIT) */
		int have = p && io_uring_opcode_supported(p, ops[i].op);
		if (!p)
			add(name, 0, "%s", e ? "io_uring refused" : "IORING_REGISTER_PROBE failed");
		else
			add(name, have, "IORING_OP_%s %s; %s", ops[i].name,
			    have ? "supported" : "not supported by this kernel", ops[i].use);
	}
	if (p)
		io_uring_free_probe(p);
	if (ring)
		io_uring_queue_exit(ring);
}

/* ------------------------------------------------------------ userfaultfd */

static void check_uffd(void)
{
	char buf[32];
	const char *unpriv = sysctl("/proc/sys/vm/unprivileged_userfaultfd", buf, sizeof(buf));
	uint64_t f = 0;
	int e;
#if BYPASS_WITH_PAGER
	e = bp_uffd_features_available(&f); /* the pager's own check */
#else
	{
		int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
		struct uffdio_api a = { .api = UFFD_API };
		e = fd < 0 ? -errno : ioctl(fd, UFFDIO_API, &a) ? -errno : 0;
		f = a.features;
		if (fd >= 0)
			close(fd);
	}
#endif
	if (e)
		add("userfaultfd", 0, "userfaultfd(UFFD_USER_MODE_ONLY) + UFFDIO_API: %s%s",
		    strerror(-e), e == -ENOSYS ? " (kernel built without CONFIG_USERFAULTFD)" : "");
	else
		add("userfaultfd", 1, "UFFDIO_API handshake on a user-mode-only descriptor "
		    "(unprivileged): features %#llx", (unsigned long long)f);
	static const struct { const char *name; uint64_t bit; const char *what; } feat[] = {
		{ "uffd.sigbus", UFFD_FEATURE_SIGBUS,
		  "SIGBUS mode: the pager's upcall mode (the faulting thread serves its fault)" },
		{ "uffd.wp", UFFD_FEATURE_PAGEFAULT_FLAG_WP,
		  "write-protect faults: the pager's writes during write-back" },
		{ "uffd.wp_async", UFFD_FEATURE_WP_ASYNC,
		  "asynchronous write-protect (dirty tracking without a fault); not used" },
		{ "uffd.wp_unpopulated", UFFD_FEATURE_WP_UNPOPULATED,
		  "write-protect of unpopulated pages; not used" },
		{ "uffd.minor", UFFD_FEATURE_MINOR_SHMEM, "minor faults on shmem; not used" },
		{ "uffd.move", UFFD_FEATURE_MOVE, "UFFDIO_MOVE (remap without copy); not used" },
		{ "uffd.poison", UFFD_FEATURE_POISON, "UFFDIO_POISON; not used" },
		{ "uffd.thread_id", UFFD_FEATURE_THREAD_ID, "the faulting thread's id; not used" },
	};
	for (size_t i = 0; i < sizeof(feat) / sizeof(feat[0]); i++)
		add(feat[i].name, !e && (f & feat[i].bit), "%s%s", feat[i].what,
		    e ? ": userfaultfd unavailable" : (f & feat[i].bit) ? "" : ": not offered");

	/* Faults taken inside system calls need a full descriptor: the pager's
	 * handler mode (the same order as its uffd_open_kernel). */
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	const char *how = "userfaultfd(0)";
	if (fd < 0 && errno == EPERM) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
			close(dev);
			how = "/dev/userfaultfd";
		}
	}
	if (fd >= 0) {
		close(fd);
		add("uffd.kernel_faults", 1, "faults inside system calls can be served (%s; "
		    "vm.unprivileged_userfaultfd = %s%s): the pager's handler mode works",
		    how, unpriv ? unpriv : "?",
		    unpriv && !strcmp(unpriv, "0") && fd >= 0 && !strcmp(how, "userfaultfd(0)")
			    ? ", this process has CAP_SYS_PTRACE" : "");
	} else {
		add("uffd.kernel_faults", 0, "only user-mode faults for this process "
		    "(vm.unprivileged_userfaultfd = %s, no CAP_SYS_PTRACE, no access to "
		    "/dev/userfaultfd): the pager's handler mode is refused, upcall mode works",
		    unpriv ? unpriv : "?");
	}
}

/* ------------------------------------------------------------ memory */

/* PAGEMAP_SCAN (Linux 6.7), defined here for older headers. */
struct doc_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages,
		category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct doc_page_region {
	uint64_t start, end, categories;
};
#define DOC_PAGEMAP_SCAN _IOWR('f', 16, struct doc_pm_scan_arg)
#define DOC_PAGE_IS_PRESENT (1 << 3)

static void check_memory(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *pg = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int r = -1, err = 0;
	if (pg != MAP_FAILED && fd >= 0) {
		pg[0] = 1;
		struct doc_page_region v;
		struct doc_pm_scan_arg a = {
			.size = sizeof(a), .start = (uint64_t)pg, .end = (uint64_t)pg + (uint64_t)ps,
			.vec = (uint64_t)&v, .vec_len = 1,
			.category_anyof_mask = DOC_PAGE_IS_PRESENT,
			.return_mask = DOC_PAGE_IS_PRESENT,
		};
		r = ioctl(fd, DOC_PAGEMAP_SCAN, &a);
		err = errno;
	} else {
		err = errno;
	}
	if (fd >= 0)
		close(fd);
	if (pg != MAP_FAILED)
		munmap(pg, (size_t)ps);
	if (r >= 0)
		add("pagemap_scan", 1, "ioctl(PAGEMAP_SCAN) on /proc/self/pagemap works; "
		    "the pager's access heat reads written bits with it");
	else
		add("pagemap_scan", 0, "ioctl(PAGEMAP_SCAN): %s%s; the pager's access heat has "
		    "no written source (left out when the sources are optional, "
		    "-EOPNOTSUPP when asked for alone)", strerror(err),
		    err == ENOTTY ? " (kernel before 6.7)" : "");

	if (access("/sys/kernel/mm/damon/admin", F_OK) == 0) {
		/* what the pager's access heat needs: no kdamond running (sysfs
		 * adds none while one runs) and virtual address monitoring */
		char nr[16] = "0", st[16], dops[64] = "?", running[64] = "";
		sysctl("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", nr, sizeof(nr));
		for (int i = 0; i < atoi(nr) && i < 16; i++) {
			char path[96];
			snprintf(path, sizeof(path), "/sys/kernel/mm/damon/admin/kdamonds/%d/state", i);
			if (sysctl(path, st, sizeof(st)) && !strcmp(st, "on")) {
				size_t o = strlen(running);
				snprintf(running + o, sizeof(running) - o, " %d", i);
			}
		}
		if (atoi(nr) > 0)
			sysctl("/sys/kernel/mm/damon/admin/kdamonds/0/contexts/0/avail_operations",
			       dops, sizeof(dops));
		add("damon", 1, "/sys/kernel/mm/damon/admin present (%s); operations: %s; "
		    "kdamonds running:%s; the pager's access heat uses it as root when none "
		    "runs and vaddr is offered",
		    access("/sys/kernel/mm/damon/admin", W_OK) == 0 ? "writable" : "needs root",
		    dops, running[0] ? running : " none");
	} else
		add("damon", 0, "no /sys/kernel/mm/damon/admin (kernel without CONFIG_DAMON_SYSFS); "
		    "the pager's access heat has no DAMON source");

	/* cgroup and swap: what the pager benchmark's Linux baseline needs */
	char ctl[256];
	if (sysctl("/sys/fs/cgroup/cgroup.controllers", ctl, sizeof(ctl)))
		add("cgroup", 1, "cgroup v2 at /sys/fs/cgroup (controllers: %s)%s", ctl,
		    strstr(ctl, "memory") ? "" : "; no memory controller here");
	else if (access("/sys/fs/cgroup/memory", F_OK) == 0)
		add("cgroup", 1, "cgroup v1 (memory controller at /sys/fs/cgroup/memory)");
	else
		add("cgroup", 0, "no cgroup file system at /sys/fs/cgroup");

	FILE *f = fopen("/proc/swaps", "r");
	unsigned areas = 0;
	unsigned long long kib = 0;
	if (f) {
		char line[512];
		while (fgets(line, sizeof(line), f)) {
			char name[256], type[32];
			unsigned long long size;
			if (sscanf(line, "%255s %31s %llu", name, type, &size) == 3) {
				areas++;
				kib += size;
			}
		}
		fclose(f);
	}
	if (areas)
		add("swap", 1, "%u swap area(s), %llu MiB", areas, kib >> 10);
	else
		add("swap", 0, "no swap area (the pager benchmark's Linux-swap baseline "
		    "makes one, as root)");
}

/* ------------------------------------------------------------ CPU */

static void check_cpu(void)
{
#if BYPASS_WITH_IPC
	const char *why = NULL;
	int pk = bypass_ipc_pkey_supported(&why); /* ipc's own probe */
	add("pkeys", pk == 1, "%s", pk == 1 ? "pkey_alloc works: ipc can guard arenas "
	    "with memory protection keys" : why ? why : "not supported");
#else
	add("pkeys", 0, "the ipc module (its only user) is not built");
#endif

	int u = bp_uintr_available();
	/* The CPU's bit, reported for what it is: notify has no uintr data
	 * path, so nothing of bypass uses it. */
	add("uintr", u, "%s", u ? "user interrupts usable" : bp_uintr_absent_reason());

	int mwaitx = 0, waitpkg = 0;
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000001, &a, &b, &c, &d))
		mwaitx = (c >> 29) & 1;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
		waitpkg = (c >> 5) & 1;
#endif
	add("cpu.monitorx", mwaitx, "MONITORX/MWAITX (AMD, CPUID 0x80000001:ECX[29]) %s; "
	    "bypass waits with pause, then futex", mwaitx ? "offered" : "not offered");
	add("cpu.waitpkg", waitpkg, "UMONITOR/UMWAIT/TPAUSE (Intel WAITPKG, CPUID.7.0:ECX[5]) "
	    "%s; bypass waits with pause, then futex", waitpkg ? "offered" : "not offered");
	add("cpu.tsc", BYPASS_HAVE_RDTSCP, "%s",
	    BYPASS_HAVE_RDTSCP ? "rdtscp cycle clock (x86-64)"
			       : "no rdtscp: cycle figures are CLOCK_MONOTONIC_RAW nanoseconds");
}

/* ------------------------------------------------------------ modules */

static void check_modules(void)
{
#if BYPASS_WITH_NOTIFY
	add("notify", bypass_notify_backend_available("futex") == 1,
	    "futex backend (shared memory, spin then futex; interrupt mode: a real-time signal)");
#else
	add("notify", 0, "not built");
#endif
#if BYPASS_WITH_IPC
	add("ipc", 1, "Unix socket handshake, memfd arenas, futex waits%s",
	    avail_of("pkeys") ? "; arenas guarded with protection keys" : "; no protection keys");
	/* Library mode's gate needs what message mode's guard needs (its own
	 * key, allocated the same way). */
	add("ipc.lib", 1, "library mode (handlers in the caller's thread): %s",
	    avail_of("pkeys") ? "behind the protection-key gate (protect=auto)"
			      : "unguarded with protect=auto; protect=required refused");
#else
	add("ipc", 0, "not built");
#endif
	int ring = avail_of("io_uring");
	(void)ring; /* unused when no module that needs io_uring is built */
#if BYPASS_WITH_BATCH
	/* batch's own probe of IORING_OP_EPOLL_WAIT, on its own ring */
	int merged = ring && bp_bt_merged_wait_available();
	add("batch", ring, "%s", !ring ? "needs io_uring, which this process is refused"
		: merged ? "io_uring; the preload's flush and event-loop wait share one "
			   "io_uring_enter (IORING_OP_EPOLL_WAIT)"
			 : "io_uring; the preload's flush and event-loop wait stay two system "
			   "calls (no IORING_OP_EPOLL_WAIT)");
	if (merged != avail_of("io_uring.EPOLL_WAIT"))
		add("batch.epoll_wait", 0, "batch's probe says %d, the opcode probe %d: a bug",
		    merged, avail_of("io_uring.EPOLL_WAIT"));
	/* batch's own answer (the explicit API's and the preload's) */
	add("batch.sockopt", ring && bp_bt_uring_sockopt(), "%s",
	    !ring ? "needs io_uring"
	    : bp_bt_uring_sockopt()
		? "setsockopt is queued as an io_uring socket command (Linux 6.7)"
		: "no io_uring socket commands (Linux 6.7): bypass_batch_setsockopt() and "
		  "the preload's TCP_CORK/TCP_NODELAY run as system calls, in order");
#else
	add("batch", 0, "not built");
#endif
#if BYPASS_WITH_PAGER
	int up = avail_of("userfaultfd") && avail_of("uffd.sigbus") && avail_of("uffd.wp");
	add("pager.upcall", up && ring, "%s",
	    up && ring ? "userfaultfd SIGBUS mode + write-protect + io_uring swap"
	    : !ring ? "needs io_uring for its swap file"
		    : "needs userfaultfd with SIGBUS mode and write-protect");
	/* how eviction discards pages: what src/pager/evict.c tries first */
	{
		long ps = sysconf(_SC_PAGESIZE);
		void *pg = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		long r = -1;
		int e = ENOMEM;
		if (pg != MAP_FAILED && pfd >= 0) {
			struct iovec v = { pg, (size_t)ps };
			r = syscall(SYS_process_madvise, pfd, &v, 1UL, MADV_DONTNEED, 0U);
			e = r < 0 ? errno : 0;
		} else if (pfd < 0) {
			e = errno;
		}
		if (pfd >= 0)
			close(pfd);
		if (pg != MAP_FAILED)
			munmap(pg, (size_t)ps);
		add("pager.drop", r >= 0, r >= 0
		    ? "process_madvise(MADV_DONTNEED): eviction discards each batch of pages "
		      "with one system call"
		    : "process_madvise(MADV_DONTNEED): %s; eviction discards pages with one "
		      "madvise per range", strerror(e));
	}
	int hm = avail_of("userfaultfd") && avail_of("uffd.wp") && avail_of("uffd.kernel_faults");
	add("pager.handler", hm && ring, "%s",
	    hm && ring ? "a handler thread serves faults, those inside system calls too"
	    : !ring ? "needs io_uring for its swap file"
		    : "needs userfaultfd for kernel-mode faults (see uffd.kernel_faults)");
	/* the pager preload's heap (BYPASS_PAGER_HEAP): what the build gave it
	 * (preload/pager/extra.cmake) */
#ifdef BYPASS_PP_HEAP_BUILT
	add("pager.heap", BYPASS_PP_HEAP_BUILT, "%s%s", BYPASS_PP_HEAP_WHY,
	    BYPASS_PP_HEAP_BUILT ? ": the preload's BYPASS_PAGER_HEAP=1 pages small "
				   "allocations too"
				 : ": the preload pages large allocations only "
				   "(BYPASS_PAGER_HEAP has no effect)");
#else
	add("pager.heap", 0, "the pager preload is not built");
#endif
#else
	add("pager.upcall", 0, "not built");
	add("pager.handler", 0, "not built");
	add("pager.heap", 0, "not built");
#endif
#if BYPASS_WITH_SYSLET
	add("syslet", 1, "%s", ring ? "io_uring links, and worker threads where a chain does not fit"
				    : "inline and on worker threads only (no io_uring)");
	/* what bypass_syslet_run tries on a pipe: preadv2(RWF_NOWAIT) */
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) == 0) {
		char c;
		struct iovec v = { &c, 1 };
		long r = syscall(SYS_preadv2, pp[0], &v, 1, -1L, 0L, 0x8L /* RWF_NOWAIT */);
		int e = r < 0 ? errno : 0;
		close(pp[0]);
		close(pp[1]);
		add("syslet.pipe_nowait", e == EAGAIN, "%s", e == EAGAIN
		    ? "RWF_NOWAIT on pipes: a syslet's pipe reads and writes run inline "
		      "when they would not block"
		    : "no RWF_NOWAIT on pipes (Linux 6.1 refuses it): a syslet's pipe reads "
		      "and writes go to a worker thread");
	}
#else
	add("syslet", 0, "not built");
#endif
}

/* ------------------------------------------------------------ output */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

int cli_doctor(int argc, char **argv)
{
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: bypass doctor [--json]\n"
			       "one line per feature: name, yes/no, and what it means for bypass\n");
			return CLI_EXIT_OK;
		} else {
			fprintf(stderr, "bypass doctor: unknown option '%s' (--json)\n", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	check_io_uring();
	check_uffd();
	check_memory();
	check_cpu();
	check_modules();

	struct utsname u;
	uname(&u);
	char model[128] = "?";
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
				snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
				model[strcspn(model, "\n")] = 0;
				break;
			}
		fclose(f);
	}
	if (json) {
		printf("{\"bypass\": ");
		json_str(bypass_version());
		printf(", \"kernel\": ");
		json_str(u.release);
		printf(", \"machine\": ");
		json_str(u.machine);
		printf(", \"cpu\": ");
		json_str(model);
		printf(", \"cpus\": %ld, \"checks\": [", sysconf(_SC_NPROCESSORS_ONLN));
		for (unsigned i = 0; i < nchecks; i++) {
			printf("%s\n  {\"name\": ", i ? "," : "");
			json_str(checks[i].name);
			printf(", \"available\": %s, \"detail\": ", checks[i].avail ? "true" : "false");
			json_str(checks[i].detail);
			putchar('}');
		}
		printf("\n]}\n");
	} else {
		printf("bypass %s on Linux %s %s, %s, %ld CPUs\n", bypass_version(), u.release,
		       u.machine, model, sysconf(_SC_NPROCESSORS_ONLN));
		for (unsigned i = 0; i < nchecks; i++)
			printf("%-20s %-3s  %s\n", checks[i].name, checks[i].avail ? "yes" : "no",
			       checks[i].detail);
	}
	return fflush(stdout) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
