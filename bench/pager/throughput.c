/* SPDX-License-Identifier: MIT */
/*
 * pager.throughput: ExtMem's same-policy comparison.  One access loop over a
 * region four times larger than the memory budget, run (a) on plain
 * anonymous memory in a memory cgroup limited to the budget, with Linux
 * swapping to a swap file, and (b) on a bypass region with the same budget,
 * swapping to a swap file of the same size on the same filesystem.  Both run
 * in a fresh child process, alternately, each round.
 *
 * The Linux side needs root (swapon, the cgroup); it is skipped with the
 * reason otherwise, and the bypass rows are still reported.
 */
#include "pager_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PH_POPULATE, PH_SEQ, PH_RAND, PH_N };
static const char *phase_name[PH_N] = { "first touch", "sequential", "random" };

struct result {
	double secs[PH_N];
	uint64_t accesses[PH_N];
	uint64_t swapins[PH_N]; /* bypass: swap-in reads; Linux: pswpin pages */
	struct bypass_pager_stats st; /* bypass side */
	/* bypass side, per phase: faults by kind, pages read ahead, time in
	 * the fault handler (the signal delivery not included) */
	uint64_t ph_zero[PH_N], ph_swapin[PH_N], ph_wp[PH_N], ph_ra[PH_N], ph_rad[PH_N],
		ph_lat_ns[PH_N];
	/* the check after the timed loops: every page's final contents */
	uint64_t pages_checked, pages_bad, first_bad;
	double verify_secs;
	int err;
	char msg[200];
};

struct sizes {
	size_t region, budget; /* bytes */
	uint64_t seq_passes, rand_accesses;
	unsigned readahead; /* bypass's window, pages (0: the library's default) */
	unsigned batch;     /* bypass's eviction round, pages (0: the default) */
	bool no_spin;       /* bypass's swap-in reads sleep (BYPASS_PAGER_NO_SPIN) */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The weight of word i of a page in its checksum (odd, so that a word
 * that is off by any amount changes the sum). */
static inline uint64_t word_weight(uint64_t i)
{
	return (2 * i + 1) * 0x9e3779b97f4a7c15ull;
}

/*
 * One phase of accesses.  With m, an access adds 1 to a word of the page in
 * one read-modify-write instruction (so that it faults as a write on either
 * side).  With m NULL, it adds the word's weight to exp[page] instead: the
 * checksum every page must have at the end (computed by the parent, outside
 * the cgroup, from the same sequence).
 */
static inline __attribute__((always_inline)) uint64_t phase(int ph, char *m, uint64_t *exp,
							     const struct sizes *z)
{
	uint64_t np = z->region / PB_PAGE, n = 0;
#define ACCESS(page, word)                                                                 \
	do {                                                                               \
		if (m) {                                                                   \
			uint64_t *w_ = (uint64_t *)(m + (page) * PB_PAGE) + (word);        \
			__asm__ __volatile__("addq $1, %0" : "+m"(*w_));                   \
		} else {                                                                   \
			exp[page] += word_weight(word);                                   \
		}                                                                          \
		n++;                                                                       \
	} while (0)
	if (ph == PH_POPULATE) {
		for (uint64_t i = 0; i < np; i++)
			ACCESS(i, 0);
	} else if (ph == PH_SEQ) {
		for (uint64_t pass = 0; pass < z->seq_passes; pass++)
			for (uint64_t i = 0; i < np; i++)
				ACCESS(i, (pass + 1) % 512);
	} else {
		uint64_t x = 0x9e3779b97f4a7c15ull;
		for (uint64_t k = 0; k < z->rand_accesses; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			ACCESS(x % np, (x >> 52) & 511);
		}
	}
#undef ACCESS
	return n;
}

/* The checksum every page must end with (exp[], one word per page). */
static void expected_sums(const struct sizes *z, uint64_t *exp)
{
	memset(exp, 0, z->region / PB_PAGE * sizeof(*exp));
	for (int ph = 0; ph < PH_N; ph++)
		phase(ph, NULL, exp, z);
}

/* --param plant=pager.throughput: the bypass side changes one word before
 * the check, which must then fail the run (tests/pager/bench-plant.sh). */
static bool plant_loss;

/* swapins(): this side's count of swap-ins so far (see struct result). */
static void access_loop(char *m, const struct sizes *z, const uint64_t *exp,
			uint64_t (*swapins)(void *), void *arg, bypass_pager *bp,
			struct result *res, bool plant)
{
	for (int ph = 0; ph < PH_N; ph++) {
		struct bypass_pager_stats s0, s1;
		if (bp)
			bypass_pager_stats(bp, &s0);
		uint64_t in0 = swapins(arg);
		double t0 = now_s();
		res->accesses[ph] = phase(ph, m, NULL, z);
		res->secs[ph] = now_s() - t0;
		res->swapins[ph] = swapins(arg) - in0;
		if (bp && bypass_pager_stats(bp, &s1) == 0) {
			res->ph_zero[ph] = s1.faults_zero - s0.faults_zero;
			res->ph_swapin[ph] = s1.faults_swapin - s0.faults_swapin;
			res->ph_wp[ph] = s1.faults_wp - s0.faults_wp;
			res->ph_ra[ph] = s1.readahead_pages - s0.readahead_pages;
			res->ph_rad[ph] = s1.readahead_dirty - s0.readahead_dirty;
			res->ph_lat_ns[ph] = s1.lat_sum_ns - s0.lat_sum_ns;
		}
	}
	/* Untimed: read every word of every page back. */
	uint64_t np = z->region / PB_PAGE;
	if (plant)
		((volatile uint64_t *)m)[np / 2 * (PB_PAGE / 8) + 3] += 1;
	double t0 = now_s();
	res->first_bad = UINT64_MAX;
	for (uint64_t i = 0; i < np; i++) {
		const volatile uint64_t *w = (const volatile uint64_t *)(m + i * PB_PAGE);
		uint64_t sum = 0;
		for (uint64_t j = 0; j < PB_PAGE / 8; j++)
			sum += w[j] * word_weight(j);
		if (sum != exp[i]) {
			if (!res->pages_bad)
				res->first_bad = i;
			res->pages_bad++;
		}
	}
	res->pages_checked = np;
	res->verify_secs = now_s() - t0;
}

static uint64_t linux_swapins(void *arg)
{
	(void)arg;
	return pb_vmstat("pswpin");
}

static void linux_child(const struct pb_linux_env *env, const struct sizes *z, const uint64_t *exp,
			struct result *res)
{
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	int e = pb_write_small(env->procs, pid);
	if (e) {
		res->err = e;
		snprintf(res->msg, sizeof(res->msg), "joining the cgroup: %s", strerror(-e));
		_exit(1);
	}
	char *m = mmap(NULL, z->region, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		res->err = -errno;
		_exit(1);
	}
	madvise(m, z->region, MADV_NOHUGEPAGE); /* 4 KiB pages, as bypass's */
	access_loop(m, z, exp, linux_swapins, NULL, NULL, res, false);
	_exit(0);
}

/* ------------------------------------------------------------ bypass side */

static uint64_t bypass_swapins(void *arg)
{
	struct bypass_pager_stats st;
	return bypass_pager_stats(arg, &st) == 0 ? st.faults_swapin : 0;
}

static void bypass_child(const char *swapfile, const struct sizes *z, const uint64_t *exp,
			 struct result *res)
{
	struct bypass_pager_config cfg = {
		.budget = z->budget, .swap_path = swapfile, .swap_size = z->region,
		.mode = BYPASS_PAGER_UPCALL, .readahead = z->readahead, .batch = z->batch,
		.flags = z->no_spin ? BYPASS_PAGER_NO_SPIN : 0,
	};
	bypass_pager *p;
	char *m;
	int e = bypass_pager_create(&cfg, &p);
	if (!e)
		e = bypass_pager_map(p, z->region, 0, (void **)&m);
	if (e) {
		res->err = e;
		snprintf(res->msg, sizeof(res->msg), "bypass_pager: %s", strerror(-e));
		_exit(1);
	}
	access_loop(m, z, exp, bypass_swapins, p, p, res, plant_loss);
	bypass_pager_stats(p, &res->st);
	bypass_pager_destroy(p);
	_exit(0);
}

static int run_child(int side, const struct pb_linux_env *env, const char *bswap,
		     const struct sizes *z, const uint64_t *exp, struct result *res)
{
	memset(res, 0, sizeof(*res));
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		pb_cleanup_on_signal(NULL); /* the parent cleans up, not us */
		if (side != 1) /* the Linux side: its swap file, zram or zswap */
			linux_child(env, z, exp, res);
		else
			bypass_child(bswap, z, exp, res);
	}
	pb_running_child = pid;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	pb_running_child = 0;
	if (WIFSIGNALED(st)) {
		snprintf(res->msg, sizeof(res->msg), "killed by signal %d", WTERMSIG(st));
		return -EINTR;
	}
	if (WEXITSTATUS(st) != 0 || res->err)
		return res->err ? res->err : -EIO;
	return 0;
}

/* ------------------------------------------------------------ the device */

/*
 * The swap device's limits, measured in every round beside the two sides,
 * on the bypass side's swap file (written in full): random 4 KiB O_DIRECT
 * reads at queue depth 1 (one thread) and 2 (two threads, each with one
 * read in flight), and sequential 1 MiB O_DIRECT reads.
 */
enum { DL_QD1, DL_QD2, DL_SEQ, DL_N };
static const char *dl_name[DL_N] = {
	"swap device: random 4 KiB O_DIRECT reads, queue depth 1",
	"swap device: random 4 KiB O_DIRECT reads, queue depth 2",
	"swap device: sequential 1 MiB O_DIRECT reads",
};
static const char *dl_unit[DL_N] = { "reads/s", "reads/s", "MiB/s" };

struct dev_reader {
	int fd;
	uint64_t slots, n, seed;
	char *buf;
	int err;
};

static void *dev_random(void *arg)
{
	struct dev_reader *d = arg;
	uint64_t x = d->seed | 1;
	for (uint64_t i = 0; i < d->n && !d->err; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		off_t off = (off_t)(x % d->slots) * (off_t)PB_PAGE;
		if (pread(d->fd, d->buf, PB_PAGE, off) != (ssize_t)PB_PAGE)
			d->err = errno ? -errno : -EIO;
	}
	return NULL;
}

/* out[DL_*]: reads/s, reads/s, MiB/s.  Returns 0 or -errno. */
static int device_limits(const char *path, size_t size, uint64_t nreads, size_t seq_bytes,
			 unsigned round, double out[DL_N])
{
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t chunk = 1 << 20;
	char *buf = NULL;
	int e = posix_memalign((void **)&buf, 4096, chunk + PB_PAGE) ? -ENOMEM : 0;
	uint64_t slots = size / PB_PAGE;
	if (!e) { /* queue depth 1 */
		struct dev_reader d = { fd, slots, nreads, 0x243f6a8885a308d3ull + round, buf, 0 };
		errno = 0;
		double t0 = now_s();
		dev_random(&d);
		out[DL_QD1] = (double)nreads / (now_s() - t0);
		e = d.err;
	}
	if (!e) { /* queue depth 2: two threads, half the reads each */
		struct dev_reader d[2] = {
			{ fd, slots, nreads / 2, 0x13198a2e03707344ull + round, buf, 0 },
			{ fd, slots, nreads / 2, 0xa4093822299f31d0ull + round, buf + PB_PAGE, 0 },
		};
		pthread_t th;
		errno = 0;
		double t0 = now_s();
		if (pthread_create(&th, NULL, dev_random, &d[1]) != 0) {
			e = -EAGAIN;
		} else {
			dev_random(&d[0]);
			pthread_join(th, NULL);
			out[DL_QD2] = (double)(2 * (nreads / 2)) / (now_s() - t0);
			e = d[0].err ? d[0].err : d[1].err;
		}
	}
	if (!e) { /* sequential */
		if (seq_bytes > size)
			seq_bytes = size;
		seq_bytes -= seq_bytes % chunk;
		double t0 = now_s();
		for (size_t off = 0; off < seq_bytes && !e; off += chunk)
			if (pread(fd, buf, chunk, (off_t)off) != (ssize_t)chunk)
				e = errno ? -errno : -EIO;
		out[DL_SEQ] = (double)seq_bytes / 1048576.0 / (now_s() - t0);
	}
	free(buf);
	close(fd);
	return e;
}

/* ------------------------------------------------------------ the experiment */

/* The sides of a round: Linux with its swap file, bypass, Linux with zram,
 * Linux with zswap in front of the file (issue 35). */
enum { T_SIDES = 4 };
static const char *const t_row[T_SIDES] = { "Linux swap (memory cgroup)", "bypass (upcall)",
					    "Linux zram (memory cgroup)",
					    "Linux zswap + swap file (memory cgroup)" };
static const char *const t_key[T_SIDES] = { "file", "bypass", "zram", "zswap" };
static const int t_backend[T_SIDES] = { PB_FILE, -1, PB_ZRAM, PB_ZSWAP };

int bench_pager_throughput(struct bench_ctx *c)
{
	int ret = 0;
	const char *id = "pager.throughput";
	struct sizes z;
	/* quick: a sixteenth of the earlier 1 GiB, the same 4x budget ratio
	 * (issue 24, and issue 33's 5 rounds: make bench in 300 s) */
	uint64_t region_mib = bench_count(c, "region_mib", 32768, 64);
	if (region_mib < 16)
		region_mib = 16;
	/* Two swap files of the region's size must fit on the disk, with a
	 * third to spare for everyone else. */
	uint64_t want_mib = region_mib, avail_mib = 0;
	struct statvfs vfs;
	if (statvfs(pb_swapdir(c), &vfs) == 0) {
		avail_mib = (uint64_t)vfs.f_bavail * vfs.f_frsize >> 20;
		while (region_mib > 16 && region_mib * 3 > avail_mib)
			region_mib /= 2;
	}
	z.region = (size_t)region_mib << 20;
	z.budget = z.region / 4;
	z.seq_passes = bench_count(c, "seq_passes", 2, 1);
	if (bench_smoke(c))
		z.seq_passes = 1;
	z.rand_accesses = bench_count(c, "rand_accesses", 4000000, 6250);
	/* --param readahead=N: bypass's readahead window (pages) */
	z.readahead = (unsigned)strtoul(bench_param(c, "readahead", "0"), NULL, 10);
	/* --param batch=N: bypass's eviction round (pages) */
	z.batch = (unsigned)strtoul(bench_param(c, "batch", "0"), NULL, 10);
	/* --param spin=0: bypass's swap-in reads sleep, as Linux's do */
	z.no_spin = strcmp(bench_param(c, "spin", "1"), "0") == 0;
	uint64_t dev_reads = bench_count(c, "dev_reads", 20000, 1000);
	if (dev_reads < 2)
		dev_reads = 2;
	size_t dev_seq = (size_t)bench_count(c, "dev_seq_mib", 4096, 64) << 20;
	int rounds = bench_rounds(c);

	bench_begin(c, id, "accesses/s over a region 4x the budget: bypass vs Linux swap "
		    "in a memory cgroup of the same size, to a file, to zram or to a file behind "
		    "zswap", "the best of Linux's swap file, zram and zswap (per phase)");
	if (z.readahead > 64) {
		/* the library's limit (bypass_pager_config.readahead): say so
		 * here, not as an EINVAL from the bypass side's first round */
		bench_fail(c, "%s: --param readahead=%u: at most 64 pages", id, z.readahead);
		bench_end(c);
		return 0;
	}
	struct pb_linux_env env;
	char why[1024] = "", facts[1024] = "";
	bool have_linux = pb_linux_setup(c, z.budget, z.region, &env, why, sizeof(why), facts, sizeof(facts)) == 0;

	char bswap[300];
	snprintf(bswap, sizeof(bswap), "%s/bypass-bench-pager-%d.swap", pb_swapdir(c),
		 (int)getpid());
	env.bypass_file = bswap; /* removed by on_fatal too */
	int e = pb_write_file(bswap, z.region);
	if (e) {
		if (have_linux)
			pb_linux_teardown(&env);
		pb_cleanup_on_signal(NULL);
		bench_skip(c, id, "writing swap file %s: %s", bswap, strerror(-e));
		return 0;
	}
	/* the checksum every page must end with, on both sides */
	size_t exp_len = z.region / PB_PAGE * sizeof(uint64_t);
	uint64_t *exp = bench_shared_alloc(exp_len);
	expected_sums(&z, exp);

	struct result *res = bench_shared_alloc(sizeof(*res));
	double *aps[T_SIDES][PH_N];
	for (int s = 0; s < T_SIDES; s++)
		for (int ph = 0; ph < PH_N; ph++) {
			aps[s][ph] = calloc((size_t)rounds, sizeof(double));
			for (int i = 0; aps[s][ph] && i < rounds; i++)
				aps[s][ph][i] = NAN;
		}
	double *dl[DL_N], *rand_in[T_SIDES];
	for (int d = 0; d < DL_N; d++)
		dl[d] = calloc((size_t)rounds, sizeof(double));
	for (int s = 0; s < T_SIDES; s++) {
		rand_in[s] = calloc((size_t)rounds, sizeof(double));
		for (int i = 0; rand_in[s] && i < rounds; i++)
			rand_in[s][i] = NAN;
	}
	/* Linux's zram and zswap sides: tried once here (then back to the
	 * file); one that cannot run is skipped with its reason */
	bool lb[T_SIDES] = { have_linux, true, false, false };
	char lwhy[T_SIDES][1024], lfacts[T_SIDES][400];
	int oom[T_SIDES] = { 0 }, lruns[T_SIDES] = { 0 };
	uint64_t pool[T_SIDES] = { 0 }, lin[T_SIDES] = { 0 }, zin[T_SIDES] = { 0 };
	for (int s = 2; s < T_SIDES; s++) {
		lwhy[s][0] = lfacts[s][0] = 0;
		if (!have_linux)
			snprintf(lwhy[s], sizeof(lwhy[s]), "%s", why);
		else
			lb[s] = pb_linux_use(&env, t_backend[s], z.region, lwhy[s], sizeof(lwhy[s]),
					     lfacts[s], sizeof(lfacts[s])) == 0;
	}
	if (have_linux)
		pb_linux_use(&env, PB_FILE, z.region, why, sizeof(why), NULL, 0);
	bool have_dev = true;
	char dev_why[200] = "";
	double verify_s[T_SIDES] = { 0, 0, 0, 0 };
	struct bypass_pager_stats bst = { 0 };
	uint64_t ph_zero[PH_N] = { 0 }, ph_swapin[PH_N] = { 0 }, ph_wp[PH_N] = { 0 },
		 ph_ra[PH_N] = { 0 }, ph_rad[PH_N] = { 0 }, ph_lat_ns[PH_N] = { 0 };
	uint64_t pswpin = 0, pswpout = 0;
	int n = 0;
	const char *fail = NULL;
	plant_loss = bench_planted(c, id);
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds, 0);
	while (!fail && bench_round(c, &rr, &r)) {
		/* The same starting state for both sides, every round (issue 20,
		 * item 3): the side that goes first alternates by round (Linux
		 * always went first, on a machine the previous round had left
		 * in whatever state), dirty data of the previous side is written
		 * out first (sync), and the cgroup starts with nothing charged. */
		for (int k = 0; k < T_SIDES && !fail; k++) {
			/* the first side rotates by round */
			int side = (k + r) % T_SIDES;
			if (!lb[side])
				continue;
			if (side != 1 && env.backend != t_backend[side] &&
			    pb_linux_use(&env, t_backend[side], z.region, lwhy[side],
					 sizeof(lwhy[side]), NULL, 0)) {
				lb[side] = false;
				continue;
			}
			sync();
			if (side != 1) {
				pb_linux_reset(&env);
				pb_linux_pool_begin(&env);
			}
			uint64_t in0 = pb_vmstat("pswpin"), out0 = pb_vmstat("pswpout");
			uint64_t zin0 = pb_vmstat("zswpin");
			e = run_child(side, &env, bswap, &z, exp, res);
			if (side != 1) {
				uint64_t pl = pb_linux_pool_end(&env);
				if (pl > pool[side])
					pool[side] = pl;
			}
			if (e == -EINTR && side >= 2) {
				/* zram's or zswap's run killed (the cgroup's OOM
				 * killer): that backend's outcome, recorded; its
				 * round has no figure */
				oom[side]++;
				continue;
			}
			if (!e && res->pages_bad) {
				e = -EIO;
				snprintf(res->msg, sizeof(res->msg),
					 "LOST DATA: %llu of %llu pages have the wrong contents at the "
					 "end of the run (the first: page %llu)",
					 (unsigned long long)res->pages_bad,
					 (unsigned long long)res->pages_checked,
					 (unsigned long long)res->first_bad);
			}
			if (e) {
				fail = side == 1 ? "bypass" : t_row[side];
				snprintf(why, sizeof(why), "%s side: %s", fail,
					 res->msg[0] ? res->msg : strerror(-e));
				/* bypass failing (or either side losing data) is a
				 * failure of the run, not a skip */
				if (side == 1 || res->pages_bad)
					ret = 1;
				break;
			}
			for (int ph = 0; ph < PH_N; ph++)
				aps[side][ph][r] = (double)res->accesses[ph] / res->secs[ph];
			rand_in[side][r] = (double)res->swapins[PH_RAND] / res->secs[PH_RAND];
			verify_s[side] += res->verify_secs;
			if (side != 1) {
				lin[side] += pb_vmstat("pswpin") - in0;
				zin[side] += pb_vmstat("zswpin") - zin0;
				lruns[side]++;
			}
			if (side == 0) {
				pswpin += pb_vmstat("pswpin") - in0;
				pswpout += pb_vmstat("pswpout") - out0;
			} else if (side == 1) {
				bst.faults_zero += res->st.faults_zero;
				bst.faults_swapin += res->st.faults_swapin;
				bst.readahead_pages += res->st.readahead_pages;
				bst.evictions += res->st.evictions;
				bst.evictions_clean += res->st.evictions_clean;
				bst.faults_wp += res->st.faults_wp;
				for (int ph = 0; ph < PH_N; ph++) {
					ph_zero[ph] += res->ph_zero[ph];
					ph_swapin[ph] += res->ph_swapin[ph];
					ph_wp[ph] += res->ph_wp[ph];
					ph_ra[ph] += res->ph_ra[ph];
					ph_rad[ph] += res->ph_rad[ph];
					ph_lat_ns[ph] += res->ph_lat_ns[ph];
				}
				bst.bytes_read += res->st.bytes_read;
				bst.bytes_written += res->st.bytes_written;
				if (res->st.resident_peak > bst.resident_peak)
					bst.resident_peak = res->st.resident_peak;
			}
		}
		if (fail)
			break;
		if (have_dev) {
			double v[DL_N] = { 0 };
			e = device_limits(bswap, z.region, dev_reads, dev_seq, (unsigned)r, v);
			if (e) {
				have_dev = false;
				snprintf(dev_why, sizeof(dev_why), "%s", strerror(-e));
			} else {
				for (int d = 0; d < DL_N; d++)
					dl[d][r] = v[d];
			}
		}
		n = r + 1;
	}
	unlink(bswap);
	if (have_linux)
		pb_linux_teardown(&env);
	pb_cleanup_on_signal(NULL);
	if (fail && ret) {
		/* bypass failing, or either side losing data: a failure of
		 * the run, in "failures" (never a skip or a note) */
		bench_fail(c, "%s: %s", id, why);
		bench_end(c);
		goto out;
	}
	if (fail && !n) {
		bench_skip(c, id, "%s", why);
		goto out;
	}

	/* the ratio: the per-round ratios (both sides of a round ran minutes
	 * apart at most, on the same state), their mean with Student's t
	 * interval, over the rounds planned: a round the Linux side did not
	 * finish leaves the baseline incomplete.  (Computed before the
	 * summaries sort each side's figures: the rounds stay paired.) */
	struct bench_est est[PH_N], est_best[PH_N], est_sd[PH_N][T_SIDES];
	int best[PH_N];
	double med[PH_N][T_SIDES];
	for (int ph = 0; ph < PH_N; ph++) {
		struct bench_summary sum[T_SIDES];
		best[ph] = -1;
		for (int side = 0; side < T_SIDES; side++) {
			bench_summarize_finite(aps[side][ph], (size_t)n, &sum[side]);
			med[ph][side] = sum[side].n ? sum[side].median : NAN;
			bench_est_ratio(aps[1][ph], aps[side][ph], have_linux ? (size_t)n : 0, rounds,
					BENCH_CI_T, &est_sd[ph][side]);
		}
		/* the best of Linux's three: the highest median rate of those
		 * that ran every round (else of those that ran) */
		for (int pass = 0; pass < 2 && best[ph] < 0; pass++)
			for (int side = 0; side < T_SIDES; side++) {
				if (side == 1 || !lruns[side] || !isfinite(med[ph][side]))
					continue;
				if (!pass && (oom[side] || lruns[side] < n))
					continue;
				if (best[ph] < 0 || med[ph][side] > med[ph][best[ph]])
					best[ph] = side;
			}
		est[ph] = est_sd[ph][0];
		est_best[ph] = est_sd[ph][best[ph] >= 0 ? best[ph] : 0];
		char name[128], params[600], j[4][32];
		for (int side = 0; side < T_SIDES; side++) {
			if (side != 1 && !lruns[side])
				continue;
			snprintf(name, sizeof(name), "%s: %s", phase_name[ph], t_row[side]);
			if (side == 1)
				snprintf(params, sizeof(params),
					 "{\"phase\": \"%s\", \"region_mib\": %zu, \"budget_mib\": %zu, "
					 "\"side\": \"bypass\", \"best_of_linux\": \"%s\", "
					 "\"ratio_to_best\": %s, \"ratio_to_file\": %s, "
					 "\"ratio_to_zram\": %s, \"ratio_to_zswap\": %s}",
					 phase_name[ph], z.region >> 20, z.budget >> 20,
					 best[ph] >= 0 ? t_key[best[ph]] : "none",
					 pb_jratio(j[0], sizeof(j[0]), est_best[ph].value),
					 pb_jratio(j[1], sizeof(j[1]), est_sd[ph][0].value),
					 pb_jratio(j[2], sizeof(j[2]), est_sd[ph][2].value),
					 pb_jratio(j[3], sizeof(j[3]), est_sd[ph][3].value));
			else
				snprintf(params, sizeof(params),
					 "{\"phase\": \"%s\", \"region_mib\": %zu, \"budget_mib\": %zu, "
					 "\"side\": \"%s\", \"backend\": \"%s\", \"pool_peak_mib\": %.1f, "
					 "\"limit_includes\": \"%s\", \"oom_killed_runs\": %d, "
					 "\"best_of_linux\": %s}", phase_name[ph], z.region >> 20,
					 z.budget >> 20, t_key[side], pb_backend_name[t_backend[side]],
					 (double)pool[side] / 1048576.0,
					 side == 0 ? "the cgroup's charge (no pool)" :
					 "the cgroup's charge only: the pool is not charged on cgroup v1",
					 oom[side], side == best[ph] ? "true" : "false");
			struct bench_row row = {
				.variant = name, .kind = side == 1 ? BENCH_BYPASS : BENCH_BASELINE,
				.unit = "accesses/s", .s = sum[side], .higher_is_better = true,
				.ratio = side == 1 ? NAN : (side == best[ph] ? 1.0 : NAN),
				.params = params,
			};
			if (side == 1 && best[ph] >= 0)
				bench_row_est(&row, &est_best[ph]);
			bench_row(c, &row);
		}
	}
	struct bench_summary dsum[DL_N];
	if (have_dev)
		for (int d = 0; d < DL_N; d++) {
			bench_summarize_d(dl[d], (size_t)n, &dsum[d]);
			struct bench_row row = {
				.variant = dl_name[d], .kind = BENCH_LIMIT, .unit = dl_unit[d],
				.s = dsum[d], .higher_is_better = true, .ratio = NAN,
				.params = "{\"limit\": \"swap device\"}",
			};
			bench_row(c, &row);
		}
	bench_note(c, "region %zu MiB, budget (cgroup limit) %zu MiB, 4 KiB pages both sides; "
		   "swap files of %zu MiB each, written in full beforehand, in %s", z.region >> 20,
		   z.budget >> 20, z.region >> 20, pb_swapdir(c));
	bench_note(c, "an access adds 1 to one 8-byte word of a page in one read-modify-write "
		   "instruction; first touch: every page once, in order; sequential: %llu passes "
		   "in order; random: %llu accesses to uniformly random pages",
		   (unsigned long long)z.seq_passes, (unsigned long long)z.rand_accesses);
	bench_note(c, "each side runs in a fresh child process, alternately (the first side "
		   "alternates by round), %d round%s, each side after a sync and the Linux side "
		   "with its cgroup's charged memory reclaimed first; ratio = the mean of the "
		   "per-round ratios, with Student's t 95%% interval", n, n == 1 ? "" : "s");
	if (region_mib < want_mib)
		bench_note(c, "region scaled down from %llu MiB to fit the disk (%llu MiB free in %s)",
			   (unsigned long long)want_mib, (unsigned long long)avail_mib, pb_swapdir(c));
	if (bench_quick(c) || bench_smoke(c) || region_mib < 32768)
		bench_note(c, "scaled down: ExtMem limited RAM to 8 GB; full size here is a "
			   "32 GiB region and an 8 GiB budget, this run %zu MiB and %zu MiB",
			   z.region >> 20, z.budget >> 20);
	if (have_linux)
		bench_note(c, "Linux: %s; swapped in %llu, out %llu pages over all rounds "
			   "(vm.page-cluster readahead as configured)", facts,
			   (unsigned long long)pswpin, (unsigned long long)pswpout);
	else
		bench_note(c, "Linux side not run: %s", why);
	bench_note(c, "bypass over all rounds: %llu zero-fill and %llu swap-in faults "
		   "(+%llu readahead pages), %llu evictions (%llu clean), %.0f MiB read, %.0f MiB "
		   "written, resident peak %llu pages (budget %zu)",
		   (unsigned long long)bst.faults_zero, (unsigned long long)bst.faults_swapin,
		   (unsigned long long)bst.readahead_pages, (unsigned long long)bst.evictions,
		   (unsigned long long)bst.evictions_clean, (double)bst.bytes_read / 1048576.0,
		   (double)bst.bytes_written / 1048576.0, (unsigned long long)bst.resident_peak,
		   z.budget / PB_PAGE);
	for (int ph = 0; ph < PH_N; ph++)
		bench_note(c, "bypass, %s phase over all rounds: %llu zero-fill, %llu swap-in "
			   "(+%llu readahead pages, %llu of them mapped dirty) and %llu "
			   "write-protect faults, %.0f ms in the fault handler", phase_name[ph],
			   (unsigned long long)ph_zero[ph], (unsigned long long)ph_swapin[ph],
			   (unsigned long long)ph_ra[ph], (unsigned long long)ph_rad[ph],
			   (unsigned long long)ph_wp[ph], (double)ph_lat_ns[ph] / 1e6);
	bench_note(c, "not in either budget: bypass's page table (16 bytes a page: %zu MiB) and "
		   "Linux's page tables; the cgroup also charges the child's own small footprint",
		   (z.region / PB_PAGE * 16) >> 20);
	bench_note(c, "every page's final contents checked after each run, on both sides "
		   "(a checksum of all 512 words against the one the access sequence gives; "
		   "untimed): all %zu pages right in %s (reading them back took %.1f s "
		   "Linux, %.1f s bypass, over all rounds)", z.region / PB_PAGE,
		   fail ? "the runs before the failure" : "every run", verify_s[0], verify_s[1]);
	/* The pager opens its swap file with O_DIRECT where the file system
	 * takes it, as the device rows' reads do: their success says which. */
	if (have_dev)
		bench_fact(c, "pager.swap_o_direct", "true");
	else
		bench_fact(c, "pager.swap_o_direct", "false (O_DIRECT read of the swap file: %s)",
			   dev_why[0] ? dev_why : "not tried");
	if (have_dev) {
		struct bench_summary ri[2];
		for (int side = have_linux ? 0 : 1; side < 2; side++)
			bench_summarize_finite(rand_in[side], (size_t)n, &ri[side]);
		bench_note(c, "swap device rows: measured in every round after the two sides, on "
			   "bypass's swap file (%zu MiB); %llu random reads per queue depth, %zu MiB "
			   "sequential; ratio '-': a different unit", z.region >> 20,
			   (unsigned long long)dev_reads,
			   (dev_seq < z.region ? dev_seq : z.region) >> 20);
		bench_note(c, "random phase against the device (medians): bypass %.0f swap-in "
			   "reads/s = %.2fx the queue-depth-1 limit (one synchronous read per "
			   "faulting thread)", ri[1].median, ri[1].median / dsum[DL_QD1].median);
		if (have_linux)
			bench_note(c, "random phase, Linux: %.0f pages swapped in per second = %.2fx "
				   "the queue-depth-1 read rate (pswpin counts pages, readahead "
				   "included)", ri[0].median, ri[0].median / dsum[DL_QD1].median);
	} else {
		bench_note(c, "swap device rows missing: O_DIRECT reads of %s failed (%s)", bswap,
			   dev_why);
	}
	for (int side = 2; side < T_SIDES; side++) {
		if (lwhy[side][0])
			bench_note(c, "%s not run: %s", t_row[side], lwhy[side]);
		else if (lfacts[side][0])
			bench_note(c, "%s: %s; the same cgroup (limit: the budget) as the swap file's; "
				   "its compressed pool's peak %.1f MiB (sampled every 5 ms) is not "
				   "charged to the cgroup on v1: this side had the budget plus its pool; "
				   "%llu pages swapped in from the device and %llu from zswap over %d "
				   "runs; the pages hold one counter word each and compress very well",
				   t_row[side], lfacts[side], (double)pool[side] / 1048576.0,
				   (unsigned long long)lin[side], (unsigned long long)zin[side],
				   lruns[side]);
		if (oom[side])
			bench_note(c, "%s: killed by the memory cgroup's OOM killer in %d of %d runs "
				   "(recorded as its outcome: its rounds have no figure)", t_row[side],
				   oom[side], oom[side] + lruns[side]);
	}
	for (int ph = 0; ph < PH_N; ph++)
		if (best[ph] >= 0)
			bench_note(c, "%s: median accesses/s: swap file %.0f, zram %.0f, zswap %.0f, "
				   "bypass %.0f; best of Linux's three: %s; bypass / best %.2f, / file "
				   "%.2f, / zram %.2f, / zswap %.2f (per round, mean)", phase_name[ph],
				   med[ph][0], med[ph][2], med[ph][3], med[ph][1], t_key[best[ph]],
				   est_best[ph].value, est_sd[ph][0].value, est_sd[ph][2].value,
				   est_sd[ph][3].value);
	if (fail)
		bench_note(c, "stopped early: %s", why);
	if (have_linux) {
		bench_target_est(c, "random accesses/s, bypass / Linux (at least equal)",
				 &est[PH_RAND], ">=", 1.0);
		bench_target_est(c, "sequential accesses/s, bypass / Linux (at least 2x, "
				 "ExtMem's claim; issue 20)", &est[PH_SEQ], ">=", 2.0);
		bench_target_est(c, "random accesses/s, bypass / the best of Linux's swap file, "
				 "zram and zswap (issue 35: at least equal)", &est_best[PH_RAND],
				 ">=", 1.0);
		bench_target_est(c, "sequential accesses/s, bypass / the best of Linux's swap "
				 "file, zram and zswap (issue 35: at least equal)",
				 &est_best[PH_SEQ], ">=", 1.0);
	}
	bench_end(c);
out:
	for (int s = 0; s < T_SIDES; s++)
		for (int ph = 0; ph < PH_N; ph++)
			free(aps[s][ph]);
	for (int d = 0; d < DL_N; d++)
		free(dl[d]);
	for (int s = 0; s < T_SIDES; s++)
		free(rand_in[s]);
	bench_shared_free(exp, exp_len);
	bench_shared_free(res, sizeof(*res));
	if (ret)
		fprintf(stderr, "bypass-bench: pager.throughput failed: %s\n", why);
	return ret;
}
