/* SPDX-License-Identifier: MIT */
/*
 * syslet.files: the Syslets async-test.  1000 small files (1 to 4 KiB, sizes
 * and contents from a fixed seed) in a fresh directory; open+read+close of
 * all of them in a random order (the same order for every variant):
 *
 *   - a synchronous loop (the source's baseline),
 *   - syslets: one three-atom program per file (openat, read with the
 *     descriptor openat returned, close), all submitted with one call, then
 *     reaped; the context's default engine (io_uring chains where io_uring
 *     works here),
 *   - the same programs on the worker engine alone (inline while nothing
 *     blocks, the rest on the cachemiss threads),
 *   - a hand-written liburing program: per file a linked chain openat_direct
 *     -> read (fixed file) -> close_direct with registered (sparse) files,
 *     all prepared, then entered together: the best a user writes by hand.
 *
 * Cached (after a warm pass) and uncached (caches dropped as root before
 * each run: sync, then 3 > /proc/sys/vm/drop_caches).  Wall time and CPU
 * time of the whole process (workers and io_uring's io-wq threads count),
 * and system calls per file.
 */
#include "syslet_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXSZ 4096
enum { V_SYNC, V_SYSLET, V_WORKERS, V_URING, V_N };
static const char *vname[V_N] = {
	"synchronous open+read+close",
	"syslets (default engine)",
	"syslets, worker engine only",
	"hand-written liburing chains, registered files",
};
static const char *vkind[V_N] = { BENCH_BASELINE, BENCH_BYPASS, BENCH_BYPASS,
				  BENCH_BASELINE };

struct fileset {
	char dir[200];
	unsigned n;
	char (*path)[256];
	uint32_t *size;
	uint32_t *order; /* file index of the k-th open */
	char *buf;       /* n * MAXSZ */
	int64_t *rd;     /* read results through ret */
	struct bypass_syslet_atom *atoms;
	struct bypass_syslet_prog *progs;
	bool made;
};

static struct fileset *cleanup_fs;

static void fs_remove(struct fileset *fs)
{
	if (!fs || !fs->made)
		return;
	for (unsigned i = 0; i < fs->n; i++)
		unlink(fs->path[i]);
	rmdir(fs->dir);
	fs->made = false;
}

static void cleanup_at_exit(void)
{
	fs_remove(cleanup_fs);
}

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static int fs_make(struct bench_ctx *c, struct fileset *fs, unsigned n)
{
	const char *base = bench_param(c, "dir", "/var/tmp");
	snprintf(fs->dir, sizeof(fs->dir), "%s/bypass-syslet-bench.XXXXXX", base);
	if (!mkdtemp(fs->dir))
		return -errno;
	fs->made = true;
	cleanup_fs = fs;
	static bool registered;
	if (!registered) {
		atexit(cleanup_at_exit);
		registered = true;
	}
	fs->n = n;
	fs->path = calloc(n, sizeof(*fs->path));
	fs->size = calloc(n, sizeof(uint32_t));
	fs->order = calloc(n, sizeof(uint32_t));
	fs->buf = aligned_alloc(4096, (size_t)n * MAXSZ);
	fs->rd = calloc(n, sizeof(int64_t));
	fs->atoms = calloc((size_t)n * 3, sizeof(*fs->atoms));
	fs->progs = calloc(n, sizeof(*fs->progs));
	if (!fs->path || !fs->size || !fs->order || !fs->buf || !fs->rd || !fs->atoms ||
	    !fs->progs)
		return -ENOMEM;
	uint64_t x = 0x5ee1d5ee1dull; /* fixed seed */
	char data[MAXSZ];
	for (unsigned i = 0; i < n; i++) {
		snprintf(fs->path[i], sizeof(fs->path[i]), "%s/f%05u", fs->dir, i);
		fs->size[i] = 1024 + (uint32_t)(xs(&x) % (MAXSZ - 1024 + 1));
		for (unsigned k = 0; k < fs->size[i]; k++)
			data[k] = (char)xs(&x);
		int fd = open(fs->path[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			return -errno;
		ssize_t w = write(fd, data, fs->size[i]);
		close(fd);
		if (w != (ssize_t)fs->size[i])
			return -EIO;
	}
	for (unsigned i = 0; i < n; i++)
		fs->order[i] = i;
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(xs(&x) % (i + 1));
		uint32_t t = fs->order[i];
		fs->order[i] = fs->order[j];
		fs->order[j] = t;
	}
	/* one three-atom program per file, in the random order */
	for (unsigned k = 0; k < n; k++) {
		unsigned i = fs->order[k];
		struct bypass_syslet_atom *a = &fs->atoms[3 * k];
		a[0] = (struct bypass_syslet_atom){
			.nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
			.arg = { BYPASS_SYSLET_C(AT_FDCWD), BYPASS_SYSLET_P(fs->path[i]),
				 BYPASS_SYSLET_C(O_RDONLY), BYPASS_SYSLET_C(0) } };
		a[1] = (struct bypass_syslet_atom){
			.nr = SYS_read, .ret = &fs->rd[i],
			.arg = { BYPASS_SYSLET_R(0), BYPASS_SYSLET_P(fs->buf + (size_t)i * MAXSZ),
				 BYPASS_SYSLET_C(MAXSZ) } };
		a[2] = (struct bypass_syslet_atom){ .nr = SYS_close,
						    .arg = { BYPASS_SYSLET_R(0) } };
		fs->progs[k] = (struct bypass_syslet_prog){ .atoms = a, .natoms = 3, .tag = i };
	}
	sync();
	return 0;
}

static void fs_free(struct fileset *fs)
{
	fs_remove(fs);
	cleanup_fs = NULL;
	free(fs->path);
	free(fs->size);
	free(fs->order);
	free(fs->buf);
	free(fs->rd);
	free(fs->atoms);
	free(fs->progs);
}

/* ------------------------------------------------------------- variants */

static int run_sync(struct fileset *fs, uint64_t *calls)
{
	int bad = 0;
	for (unsigned k = 0; k < fs->n; k++) {
		unsigned i = fs->order[k];
		int fd = open(fs->path[i], O_RDONLY);
		if (fd < 0)
			return -errno;
		ssize_t r = read(fd, fs->buf + (size_t)i * MAXSZ, MAXSZ);
		close(fd);
		bad += r != (ssize_t)fs->size[i];
	}
	*calls = 3ull * fs->n;
	return bad ? -EIO : 0;
}

static int run_syslet(struct fileset *fs, bypass_syslet *s, uint64_t *calls)
{
	struct bypass_syslet_stats st0, st1;
	bypass_syslet_stats(s, &st0);
	for (unsigned i = 0; i < fs->n; i++)
		fs->rd[i] = -1;
	int r = bypass_syslet_submit(s, fs->progs, fs->n);
	if (r != (int)fs->n)
		return r < 0 ? r : -EIO;
	unsigned got = 0;
	int bad = 0;
	struct bypass_syslet_completion cq[256];
	while (got < fs->n) {
		int n = bypass_syslet_reap(s, cq, 256);
		if (n == 0) {
			int w = bypass_syslet_wait(s, 1, 10 * 1000000000ll);
			if (w < 0)
				return w;
			continue;
		}
		for (int k = 0; k < n; k++)
			bad += cq[k].result != 0 || cq[k].atom != 2;
		got += (unsigned)n;
	}
	for (unsigned i = 0; i < fs->n; i++)
		bad += fs->rd[i] != (int64_t)fs->size[i];
	bypass_syslet_stats(s, &st1);
	*calls = st1.syscalls - st0.syscalls;
	return bad ? -EIO : 0;
}

struct hand_ring {
	struct io_uring ring;
	bool ok;
};

static int hand_setup(struct hand_ring *h, unsigned n)
{
	int r = io_uring_queue_init(4096, &h->ring, 0);
	if (r < 0)
		return r;
	r = io_uring_register_files_sparse(&h->ring, n);
	if (r < 0) {
		io_uring_queue_exit(&h->ring);
		return r;
	}
	h->ok = true;
	return 0;
}

static int run_uring(struct fileset *fs, struct hand_ring *h, uint64_t *calls)
{
	struct io_uring *ring = &h->ring;
	unsigned done = 0, want = 3 * fs->n;
	uint64_t enters = 0;
	int bad = 0;
	for (unsigned k = 0; k < fs->n; k++) {
		unsigned i = fs->order[k];
		if (io_uring_sq_space_left(ring) < 3) {
			io_uring_submit(ring);
			enters++;
		}
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		io_uring_prep_openat_direct(sqe, AT_FDCWD, fs->path[i], O_RDONLY, 0, i);
		sqe->flags |= IOSQE_IO_LINK;
		sqe->user_data = (uint64_t)i << 2;
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_read(sqe, (int)i, fs->buf + (size_t)i * MAXSZ, MAXSZ, 0);
		sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
		sqe->user_data = (uint64_t)i << 2 | 1;
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_close_direct(sqe, i);
		sqe->user_data = (uint64_t)i << 2 | 2;
	}
	while (done < want) {
		int r = io_uring_submit_and_wait(ring, 1);
		enters++;
		if (r < 0 && r != -EINTR)
			return r;
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(ring, head, cqe) {
			unsigned i = (unsigned)(cqe->user_data >> 2), op = cqe->user_data & 3;
			if (op == 1)
				bad += cqe->res != (int)fs->size[i];
			else
				bad += cqe->res != 0;
			n++;
		}
		io_uring_cq_advance(ring, n);
		done += n;
	}
	*calls = enters;
	return bad ? -EIO : 0;
}

/* ------------------------------------------------------------- driver */

static int drop_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, "3", 1);
	int e = errno;
	close(fd);
	return w == 1 ? 0 : -e;
}

struct env {
	struct fileset *fs;
	bypass_syslet *s_auto, *s_workers;
	struct hand_ring *hand;
};

static int run_variant(struct env *e, int v, uint64_t *wall, uint64_t *cpu,
		       uint64_t *calls)
{
	uint64_t c0 = sb_cpu_ns(), t0 = bypass_now_ns();
	int r;
	switch (v) {
	case V_SYNC: r = run_sync(e->fs, calls); break;
	case V_SYSLET: r = run_syslet(e->fs, e->s_auto, calls); break;
	case V_WORKERS: r = run_syslet(e->fs, e->s_workers, calls); break;
	default: r = run_uring(e->fs, e->hand, calls); break;
	}
	*wall = bypass_now_ns() - t0;
	*cpu = sb_cpu_ns() - c0;
	return r;
}

static void report(struct bench_ctx *c, const char *id, const char *title,
		   double *wall[V_N], double *cpu[V_N], double *calls[V_N],
		   int rounds, unsigned per, bool cached, const char *engine, unsigned nfiles)
{
	size_t ns = (size_t)rounds * per;
	struct bench_summary w[V_N], u[V_N], k[V_N];
	/* each variant's median wall time in every round (the variants
	 * alternate, order rotated, within a round) */
	double *rw[V_N];
	for (int v = 0; v < V_N; v++) {
		rw[v] = calloc((size_t)rounds, sizeof(double));
		for (int r = 0; rw[v] && r < rounds; r++) {
			double *x = malloc(per * sizeof(double));
			struct bench_summary m;
			for (unsigned i = 0; x && i < per; i++)
				x[i] = wall[v][(size_t)r * per + i];
			bench_summarize_d(x, x ? per : 0, &m);
			rw[v][r] = m.median;
			free(x);
		}
		bench_summarize_d(wall[v], ns, &w[v]);
		bench_summarize_d(cpu[v], ns, &u[v]);
		bench_summarize_d(calls[v], ns, &k[v]);
	}
	struct bench_est est[V_N], speed_e, uring_e;
	for (int v = 0; v < V_N; v++)
		bench_est_ratio(rw[v], rw[V_SYNC], (size_t)rounds, rounds, BENCH_CI_T, &est[v]);
	bench_est_ratio(rw[V_SYNC], rw[V_SYSLET], (size_t)rounds, rounds, BENCH_CI_T, &speed_e);
	bench_est_ratio(rw[V_SYSLET], rw[V_URING], (size_t)rounds, rounds, BENCH_CI_T, &uring_e);
	for (int v = 0; v < V_N; v++)
		free(rw[v]);
	bench_begin(c, id, title, vname[V_SYNC]);
	static const char *src_cached[V_N] = { "31.6 ms", "26.5 ms (+19.2%)", NULL,
					       NULL };
	static const char *src_uncached[V_N] = { "45.8 s", "34.2 s (+33.9%)", NULL,
						 NULL };
	for (int v = 0; v < V_N; v++) {
		char note[160], params[200];
		snprintf(note, sizeof(note), "CPU %.2f ms (%.0f%% of wall); %.2f syscalls/file%s%s",
			 u[v].median, 100.0 * u[v].median / w[v].median, k[v].median / nfiles,
			 v == V_SYSLET ? "; engine " : "", v == V_SYSLET ? engine : "");
		snprintf(params, sizeof(params),
			 "{\"files\": %u, \"cpu_ms_median\": %.4f, \"cpu_ms_p99\": %.4f, "
			 "\"syscalls_per_file\": %.4f}",
			 nfiles, u[v].median, u[v].p99, k[v].median / nfiles);
		struct bench_row row = {
			.variant = vname[v], .kind = vkind[v], .unit = "ms", .s = w[v],
			.ratio = w[v].median / w[V_SYNC].median,
			.source = cached ? src_cached[v] : src_uncached[v],
			.note = note, .params = params,
		};
		if (v != V_SYNC)
			bench_row_est(&row, &est[v]);
		bench_row(c, &row);
	}
	for (int v = 0; v < V_N; v++) {
		char name[96];
		snprintf(name, sizeof(name), "  CPU time: %s", vname[v]);
		struct bench_row row = {
			.variant = name, .kind = vkind[v], .unit = "ms CPU", .s = u[v],
			.ratio = u[v].median / u[V_SYNC].median,
		};
		bench_row(c, &row);
	}
	double speed = w[V_SYNC].median / w[V_SYSLET].median;
	bench_note(c, "speed-up = synchronous / syslets (median wall): %.3f; workers only: %.3f; "
		   "hand-written liburing: %.3f", speed,
		   w[V_SYNC].median / w[V_WORKERS].median, w[V_SYNC].median / w[V_URING].median);
	bench_note(c, "ratios with an interval and the targets: the mean over %d rounds of "
		   "the per-round ratio of the two variants' median runs, Student's t 95%% "
		   "interval", rounds);
	if (cached) {
		bench_target_est(c, "cached: syslets at least 19% faster than synchronous "
				 "(speed-up)", &speed_e, ">=", 1.19);
		bench_target_est(c, "cached: syslets not slower than hand-written liburing (time "
				 "ratio)", &uring_e, "<=", 1.0);
	} else {
		bench_target_est(c, "uncached: syslets at least 2x faster than synchronous "
				 "(speed-up)", &speed_e, ">=", 2.0);
		bench_target_est(c, "uncached: syslets not slower than hand-written liburing (time "
				 "ratio)", &uring_e, "<=", 1.0);
	}
}

int bench_syslet_files(struct bench_ctx *c)
{
	unsigned n = (unsigned)bench_count(c, "files", 1000, 1000);
	if (n < 1 || n > 65536) {
		bench_skip(c, "syslet.files", "files=%u out of range", n);
		return BENCH_SKIP;
	}
	int rounds = bench_rounds(c);
	unsigned reps = (unsigned)bench_count(c, "reps", 20, 10);
	/* uncached runs per round: each drops the caches first */
	unsigned ureps = (unsigned)bench_count(c, "ureps", 5, 3);
	if (bench_smoke(c))
		reps = 2, ureps = 1;
	struct fileset fs;
	memset(&fs, 0, sizeof(fs));
	struct hand_ring hand;
	memset(&hand, 0, sizeof(hand));
	struct env e = { .fs = &fs, .hand = &hand };
	int ret = 0;
	int r = fs_make(c, &fs, n);
	if (r) {
		bench_skip(c, "syslet.files", "cannot make %u files in %s: %s", n, fs.dir,
			   strerror(-r));
		ret = BENCH_SKIP;
		goto out;
	}
	unsigned entries = 1;
	while (entries < n)
		entries <<= 1;
	struct bypass_syslet_opts o = { .entries = entries };
	r = bypass_syslet_create(&o, &e.s_auto);
	o.engine = BYPASS_SYSLET_ENGINE_WORKERS;
	int r2 = bypass_syslet_create(&o, &e.s_workers);
	int r3 = hand_setup(&hand, n);
	if (r || r2 || r3) {
		bench_skip(c, "syslet.files", "setup: syslet %s / %s, io_uring %s",
			   strerror(-r), strerror(-r2), strerror(-r3));
		ret = BENCH_SKIP;
		goto out;
	}
	struct bypass_syslet_stats st;
	bypass_syslet_stats(e.s_auto, &st);
	const char *engine = st.engine == BYPASS_SYSLET_ENGINE_URING ? "io_uring" : "workers";
	uint64_t calls;
	run_sync(&fs, &calls); /* the warm pass */

	for (int pass = 0; pass < 2; pass++) {
		bool cached = pass == 0;
		const char *id = cached ? "syslet.files.cached" : "syslet.files.uncached";
		unsigned per = cached ? reps : ureps;
		if (!cached && !strcmp(bench_param(c, "uncached", "1"), "0"))
			break; /* --param uncached=0: the cached table only */
		if (!cached) {
			int d = geteuid() == 0 ? drop_caches() : -EPERM;
			if (d) {
				bench_skip(c, id, "dropping the page cache needs root "
					   "(/proc/sys/vm/drop_caches: %s)", strerror(-d));
				break;
			}
		}
		size_t ns = (size_t)rounds * per;
		double *wall[V_N], *cpu[V_N], *cl[V_N];
		for (int v = 0; v < V_N; v++) {
			wall[v] = calloc(ns, sizeof(double));
			cpu[v] = calloc(ns, sizeof(double));
			cl[v] = calloc(ns, sizeof(double));
		}
		bool failed = false;
		char load0[64] = "?";
		FILE *lf = fopen("/proc/loadavg", "r");
		if (lf) {
			if (!fgets(load0, sizeof(load0), lf))
				strcpy(load0, "?");
			fclose(lf);
			load0[strcspn(load0, "\n")] = 0;
		}
		struct bench_rounds rr;
		int rd;
		bench_rounds_init(c, &rr, rounds, 0);
		while (!failed && bench_round(c, &rr, &rd))
			for (unsigned k = 0; k < per && !failed; k++) {
				size_t idx = (size_t)rd * per + k;
				for (int j = 0; j < V_N; j++) {
					int v = (j + (int)idx) % V_N; /* rotate the order */
					if (!cached && (r = drop_caches())) {
						bench_skip(c, id, "drop_caches: %s", strerror(-r));
						failed = true;
						break;
					}
					uint64_t w, u;
					r = run_variant(&e, v, &w, &u, &calls);
					if (!r && bench_planted(c, "syslet.files") &&
					    v == V_SYSLET)
						r = -EIO; /* tests/syslet/bench-plant.sh */
					if (r) {
						/* a variant that fails or reads the
						 * wrong bytes: a failure, not a skip */
						bench_begin(c, id, "failed", NULL);
						bench_fail(c, "%s: %s failed: %s", id, vname[v],
							   r == -EIO ? "wrong results (a read of the "
							   "wrong size, or an atom that failed)"
								     : strerror(-r));
						bench_end(c);
						failed = true;
						ret = 1;
						break;
					}
					wall[v][idx] = (double)w / 1e6;
					cpu[v][idx] = (double)u / 1e6;
					cl[v][idx] = (double)calls;
				}
			}
		if (!failed) {
			char title[200];
			snprintf(title, sizeof(title),
				 "open+read+close of %u files of 1-4 KiB, %s%s", n,
				 cached ? "cached (after a warm pass)"
					: "uncached (caches dropped as root before each run)",
				 n != 1000 ? " (scaled: the source used 1000)" : "");
			report(c, id, title, wall, cpu, cl, rounds, per, cached, engine, n);
			bench_note(c, "load average before this table's runs: %s", load0);
			sb_note_load(c, "after them");
			bench_note(c, "%zu runs per variant (%d rounds x %u, order rotated); "
				   "files in %s; %u worker threads at most; %d CPUs",
				   ns, rounds, per, fs.dir, 8, bench_ncpus());
			if (!cached)
				bench_note(c, "run as root: sync + echo 3 > /proc/sys/vm/drop_caches "
					   "before every run of every variant");
			bench_end(c);
		}
		for (int v = 0; v < V_N; v++) {
			free(wall[v]);
			free(cpu[v]);
			free(cl[v]);
		}
		if (failed)
			break;
	}
out:
	if (e.s_auto)
		bypass_syslet_destroy(e.s_auto);
	if (e.s_workers)
		bypass_syslet_destroy(e.s_workers);
	if (hand.ok)
		io_uring_queue_exit(&hand.ring);
	fs_free(&fs);
	return ret;
}
