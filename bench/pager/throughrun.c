/* SPDX-License-Identifier: MIT */
/*
 * pager.throughput's runs (split from throughput.c): the access loop and
 * its expected checksums, the Linux and bypass sides in child processes,
 * and the swap device's limits measured beside them.
 */
#include "throughput.h"

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
		for (uint64_t i = 0; i < np; i++) {
			/* --param fill=random: every word of the page a
			 * pseudo-random value (splitmix64 of its index): pages
			 * that do not compress */
			for (uint64_t j = 0; z->fill_random && j < PB_PAGE / 8; j++) {
				uint64_t v = (i * (PB_PAGE / 8) + j + 1) * 0x9e3779b97f4a7c15ull;
				v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
				v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
				v ^= v >> 31;
				if (m)
					((uint64_t *)(m + i * PB_PAGE))[j] = v;
				else
					exp[i] += v * word_weight(j);
			}
			ACCESS(i, 0);
		}
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
void pt_expected_sums(const struct sizes *z, uint64_t *exp)
{
	memset(exp, 0, z->region / PB_PAGE * sizeof(*exp));
	for (int ph = 0; ph < PH_N; ph++)
		phase(ph, NULL, exp, z);
}

/* --param plant=pager.throughput: the bypass side changes one word before
 * the check, which must then fail the run (tests/pager/bench-plant.sh). */
bool pt_plant_loss;

/* swapins(): this side's count of swap-ins so far (see struct result). */
static void access_loop(char *m, const struct sizes *z, const uint64_t *exp,
			uint64_t (*swapins)(void *), void *arg, bypass_pager *bp,
			struct result *res, bool plant, bool check)
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
	/* Untimed: read every word of every page back (where asked). */
	if (!check)
		return;
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
	access_loop(m, z, exp, linux_swapins, NULL, NULL, res, false, z->check_linux);
	_exit(0);
}

/* ------------------------------------------------------------ bypass side */

static uint64_t bypass_swapins(void *arg)
{
	struct bypass_pager_stats st;
	return bypass_pager_stats(arg, &st) == 0 ? st.faults_swapin : 0;
}

static void bypass_child(const char *swapfile, const struct sizes *z, const uint64_t *exp,
			 struct result *res, bool tier)
{
	struct bypass_pager_config cfg = {
		.budget = z->budget, .swap_path = swapfile, .swap_size = z->region,
		.mode = BYPASS_PAGER_UPCALL, .readahead = z->readahead, .batch = z->batch,
		.flags = z->no_spin ? BYPASS_PAGER_NO_SPIN : 0,
	};
	bypass_pager *p;
	char *m;
	int e = bypass_pager_create(&cfg, &p);
	struct bypass_pager_tier_config tc;
	memset(&tc, 0, sizeof(tc));
	if (!e && tier) { /* the compressed tier, its defaults (issue 35) */
		/* BYPASS_PAGER_TIER_ADAPT=0: its share fixed, as the pager
		 * preload's same variable does (the window's A/B) */
		const char *a = getenv("BYPASS_PAGER_TIER_ADAPT");
		if (a && !strcmp(a, "0"))
			tc.flags |= BYPASS_PAGER_TIER_FIXED;
		e = bypass_pager_tier(p, &tc);
	}
	if (!e)
		e = bypass_pager_map(p, z->region, 0, (void **)&m);
	if (e) {
		res->err = e;
		snprintf(res->msg, sizeof(res->msg), "bypass_pager%s: %s", tier ? " (tier)" : "",
			 strerror(-e));
		_exit(1);
	}
	access_loop(m, z, exp, bypass_swapins, p, p, res, pt_plant_loss, true);
	bypass_pager_stats(p, &res->st);
	if (tier)
		bypass_pager_tier_stats(p, &res->tst);
	bypass_pager_destroy(p);
	_exit(0);
}

int pt_run_child(int side, const struct pb_linux_env *env, const char *bswap,
		     const struct sizes *z, const uint64_t *exp, struct result *res)
{
	memset(res, 0, sizeof(*res));
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		pb_cleanup_on_signal(NULL); /* the parent cleans up, not us */
		if (side != 1 && side != T_TIER) /* Linux: its swap file, zram or zswap */
			linux_child(env, z, exp, res);
		else
			bypass_child(bswap, z, exp, res, side == T_TIER);
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
const char *const pt_dl_name[DL_N] = {
	"swap device: random 4 KiB O_DIRECT reads, queue depth 1",
	"swap device: random 4 KiB O_DIRECT reads, queue depth 2",
	"swap device: sequential 1 MiB O_DIRECT reads",
};
const char *const pt_dl_unit[DL_N] = { "reads/s", "reads/s", "MiB/s" };

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
int pt_device_limits(const char *path, size_t size, uint64_t nreads, size_t seq_bytes,
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

