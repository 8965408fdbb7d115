/* SPDX-License-Identifier: MIT */
/*
 * The User Interrupts ping-pong (seeds/001): 1,000,000 round trips of a
 * 1-byte notification between two processes pinned to different CPUs, for
 * every classic mechanism, the reviewer's fairer variants (two eventfds;
 * busy-polling non-blocking descriptors), the physical limit (a shared-
 * memory spin on sequence numbers) and each bypass doorbell mode.  Variants alternate
 * round by round; each round forks a fresh responder process.
 */
#include "bench.h"

#include <bypass/notify.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* State shared by the two processes (MAP_SHARED, inherited over fork). */
struct pp {
	_Atomic uint32_t ping __attribute__((aligned(64)));
	_Atomic uint32_t pong __attribute__((aligned(64)));
	_Atomic uint32_t ready __attribute__((aligned(64)));
	_Atomic uint32_t stop;
	/* descriptors and handles are created before fork and inherited */
	int fd_ping[2], fd_pong[2]; /* pipe/socket: [0] read end, [1] write end */
	bypass_doorbell *db_ping, *db_pong;
	pid_t parent, child;
	uint64_t n;
};

/* Per-process flag set by signal handlers and doorbell callbacks. */
static volatile sig_atomic_t got_signal;

struct variant {
	const char *name;
	const char *kind;
	const char *source;  /* the source's ratio vs user IPI, or NULL */
	const char *note;
	int (*setup)(struct pp *p);
	void (*child)(struct pp *p);    /* respond to p->n (+ warm-up) pings */
	void (*ping)(struct pp *p);
	void (*wait_pong)(struct pp *p);
	void (*parent_after_fork)(struct pp *p);
	void (*teardown)(struct pp *p);
};

static void die(const char *what)
{
	perror(what);
	_exit(3);
}

/* -------------------------------------------------------------- futex */

static void futex_wait_flag(_Atomic uint32_t *w)
{
	while (!atomic_exchange(w, 0))
		syscall(SYS_futex, w, FUTEX_WAIT, 0, NULL, NULL, 0);
}
static void futex_post(_Atomic uint32_t *w)
{
	atomic_store(w, 1);
	syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}
static void futex_child(struct pp *p)
{
	for (uint64_t i = 0; i < p->n; i++) {
		futex_wait_flag(&p->ping);
		futex_post(&p->pong);
	}
}
static void futex_ping(struct pp *p)
{
	futex_post(&p->ping);
}
static void futex_pong(struct pp *p)
{
	futex_wait_flag(&p->pong);
}

/* --------------------------------------- pipe, socket, eventfd (blocking) */

static void close_fds(struct pp *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->fd_ping[i] >= 0)
			close(p->fd_ping[i]);
		if (p->fd_pong[i] >= 0)
			close(p->fd_pong[i]);
		p->fd_ping[i] = p->fd_pong[i] = -1;
	}
}

static int pipe_setup(struct pp *p)
{
	return pipe(p->fd_ping) || pipe(p->fd_pong) ? -errno : 0;
}

static int sock_setup(struct pp *p)
{
	/* One socketpair: each side writes its end and reads its end. */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -errno;
	p->fd_ping[0] = sv[1]; /* child reads pings from sv[1] */
	p->fd_ping[1] = sv[0]; /* parent writes pings to sv[0] */
	p->fd_pong[0] = dup(sv[0]);
	p->fd_pong[1] = dup(sv[1]);
	return 0;
}

static int efd_setup_flags(struct pp *p, int flags)
{
	int a = eventfd(0, flags), b = eventfd(0, flags);
	if (a < 0 || b < 0)
		return -errno;
	p->fd_ping[0] = a;
	p->fd_ping[1] = dup(a);
	p->fd_pong[0] = b;
	p->fd_pong[1] = dup(b);
	return 0;
}
static int efd_setup(struct pp *p)
{
	return efd_setup_flags(p, 0);
}
static int efd_nb_setup(struct pp *p)
{
	return efd_setup_flags(p, EFD_NONBLOCK);
}

/* 1-byte message for pipes and sockets, 8 bytes (the counter) for eventfd. */
static int msg_len(int fd)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = 0;
		if (strstr(link, "eventfd"))
			return 8;
	}
	return 1;
}

static __thread int len_ping = -1, len_pong = -1;

static void fd_send(int fd, int len)
{
	uint64_t v = 1;
	while (write(fd, &v, (size_t)len) != len)
		if (errno != EINTR && errno != EAGAIN)
			die("write");
}

static void fd_recv_block(int fd, int len)
{
	uint64_t v;
	while (read(fd, &v, (size_t)len) != len)
		if (errno != EINTR)
			die("read");
}

static void fd_recv_poll(int fd, int len)
{
	uint64_t v;
	for (;;) {
		ssize_t r = read(fd, &v, (size_t)len);
		if (r == len)
			return;
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			die("read");
		__builtin_ia32_pause();
	}
}

static void fd_child(struct pp *p)
{
	int lp = msg_len(p->fd_ping[0]), lo = msg_len(p->fd_pong[1]);
	int fl = fcntl(p->fd_ping[0], F_GETFL);
	bool nb = fl >= 0 && (fl & O_NONBLOCK);
	for (uint64_t i = 0; i < p->n; i++) {
		if (nb)
			fd_recv_poll(p->fd_ping[0], lp);
		else
			fd_recv_block(p->fd_ping[0], lp);
		fd_send(p->fd_pong[1], lo);
	}
}
static void fd_ping(struct pp *p)
{
	if (len_ping < 0)
		len_ping = msg_len(p->fd_ping[1]);
	fd_send(p->fd_ping[1], len_ping);
}
static void fd_pong_block(struct pp *p)
{
	if (len_pong < 0)
		len_pong = msg_len(p->fd_pong[0]);
	fd_recv_block(p->fd_pong[0], len_pong);
}
static void fd_pong_poll(struct pp *p)
{
	if (len_pong < 0)
		len_pong = msg_len(p->fd_pong[0]);
	fd_recv_poll(p->fd_pong[0], len_pong);
}
static void fd_teardown(struct pp *p)
{
	close_fds(p);
	len_ping = len_pong = -1;
}
static int sock_nb_setup(struct pp *p)
{
	int r = sock_setup(p);
	for (int i = 0; i < 2 && !r; i++) {
		fcntl(p->fd_ping[i], F_SETFL, O_NONBLOCK);
		fcntl(p->fd_pong[i], F_SETFL, O_NONBLOCK);
	}
	return r;
}

/* ------------------------------------------------------------ signals */

/* Blocking: the receiver sleeps in sigwaitinfo. */
static sigset_t sig_set;
static int sig_setup(struct pp *p)
{
	(void)p;
	sigemptyset(&sig_set);
	sigaddset(&sig_set, SIGUSR1);
	sigaddset(&sig_set, SIGUSR2);
	return sigprocmask(SIG_BLOCK, &sig_set, NULL) ? -errno : 0;
}
static void sig_wait(int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	while (sigwaitinfo(&s, NULL) < 0)
		if (errno != EINTR)
			die("sigwaitinfo");
}
static void sig_child(struct pp *p)
{
	for (uint64_t i = 0; i < p->n; i++) {
		sig_wait(SIGUSR1);
		kill(p->parent, SIGUSR2);
	}
}
static void sig_ping(struct pp *p)
{
	kill(p->child, SIGUSR1);
}
static void sig_pong(struct pp *p)
{
	(void)p;
	sig_wait(SIGUSR2);
}
static void sig_teardown(struct pp *p)
{
	(void)p;
	sigprocmask(SIG_UNBLOCK, &sig_set, NULL);
}

/* Busy receiver: a handler sets a flag that the (running) receiver spins on. */
static void flag_handler(int sig)
{
	(void)sig;
	got_signal = 1;
}
static int sigbusy_setup(struct pp *p)
{
	(void)p;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = flag_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	return 0;
}
static void spin_on_signal(void)
{
	while (!got_signal)
		__builtin_ia32_pause();
	got_signal = 0;
}
static void sigbusy_child(struct pp *p)
{
	for (uint64_t i = 0; i < p->n; i++) {
		spin_on_signal();
		kill(p->parent, SIGUSR2);
	}
}
static void sigbusy_pong(struct pp *p)
{
	(void)p;
	spin_on_signal();
}
static void sigbusy_teardown(struct pp *p)
{
	(void)p;
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
}

/* ----------------------------------------------------------- doorbells */

static int db_setup_opts(struct pp *p, int mode, unsigned flags)
{
	struct bypass_notify_opts o = { .mode = mode, .flags = flags };
	int r = bypass_notify_create(&o, &p->db_ping);
	if (!r)
		r = bypass_notify_create(&o, &p->db_pong);
	return r;
}
static int db_adaptive_setup(struct pp *p)
{
	return db_setup_opts(p, BYPASS_WAIT_ADAPTIVE, 0);
}
static int db_sleep_setup(struct pp *p)
{
	return db_setup_opts(p, BYPASS_WAIT_SLEEP, 0);
}
static int db_spin_setup(struct pp *p)
{
	return db_setup_opts(p, BYPASS_WAIT_SPIN, 0);
}
static int db_efd_setup(struct pp *p)
{
	return db_setup_opts(p, BYPASS_WAIT_SLEEP, BYPASS_NOTIFY_EVENTFD);
}
static void db_teardown(struct pp *p)
{
	if (p->db_ping)
		bypass_notify_destroy(p->db_ping);
	if (p->db_pong)
		bypass_notify_destroy(p->db_pong);
	p->db_ping = p->db_pong = NULL;
}
/* --param fail=responder: the doorbell responders exit 3 after answering
 * (tests/notify/bench-fail.sh proves a failed variant fails the run). */
static bool inject_fail;

static void db_child(struct pp *p)
{
	for (uint64_t i = 0; i < p->n; i++) {
		if (bypass_notify_wait(p->db_ping, BYPASS_FOREVER) < 1)
			die("doorbell wait");
		bypass_notify_ring(p->db_pong);
	}
	if (inject_fail)
		_exit(3);
}
static void db_ping(struct pp *p)
{
	bypass_notify_ring(p->db_ping);
}
static void db_pong(struct pp *p)
{
	if (bypass_notify_wait(p->db_pong, BYPASS_FOREVER) < 1)
		die("doorbell wait");
}

/* eventfd-armed: the receiver sleeps in epoll_wait on the doorbell's fd. */
static __thread int ep_fd = -1;
static void db_epoll_wait(bypass_doorbell *db)
{
	if (ep_fd < 0) {
		ep_fd = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN };
		epoll_ctl(ep_fd, EPOLL_CTL_ADD, bypass_notify_fd(db), &ev);
	}
	for (;;) {
		if (bypass_notify_arm(db) == 0) {
			struct epoll_event ev;
			if (epoll_wait(ep_fd, &ev, 1, -1) < 0 && errno != EINTR)
				die("epoll_wait");
		}
		if (bypass_notify_try(db) > 0)
			return;
	}
}
static void db_efd_child(struct pp *p)
{
	for (uint64_t i = 0; i < p->n; i++) {
		db_epoll_wait(p->db_ping);
		bypass_notify_ring(p->db_pong);
	}
}
static void db_efd_pong(struct pp *p)
{
	db_epoll_wait(p->db_pong);
}
static void db_efd_teardown(struct pp *p)
{
	if (ep_fd >= 0)
		close(ep_fd);
	ep_fd = -1;
	db_teardown(p);
}

/* interrupt: both sides run other code; callbacks deliver the rings. */
static struct pp *intr_pp;
static void intr_child_cb(bypass_doorbell *db, unsigned n, void *arg)
{
	(void)db;
	(void)n;
	struct pp *p = arg;
	bypass_notify_ring(p->db_pong);
}
static void intr_parent_cb(bypass_doorbell *db, unsigned n, void *arg)
{
	(void)db;
	(void)n;
	(void)arg;
	got_signal = 1;
}
static volatile uint64_t busy_work;
static void intr_child(struct pp *p)
{
	if (bypass_notify_set_handler(p->db_ping, intr_child_cb, p))
		die("set_handler");
	atomic_store(&p->ready, 1);
	/* Other code: a compute loop that never looks at the doorbell. */
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed))
		busy_work++;
	bypass_notify_set_handler(p->db_ping, NULL, NULL);
}
static void intr_after_fork(struct pp *p)
{
	intr_pp = p;
	if (bypass_notify_set_handler(p->db_pong, intr_parent_cb, p))
		die("set_handler");
	while (!atomic_load(&p->ready))
		__builtin_ia32_pause();
}
static void intr_pong(struct pp *p)
{
	(void)p;
	while (!got_signal)
		busy_work++;
	got_signal = 0;
}
static void intr_teardown(struct pp *p)
{
	bypass_notify_set_handler(p->db_pong, NULL, NULL);
	db_teardown(p);
}

/* ------------------------------------------------------------ variants */

static const struct variant variants[] = {
	{ "cache-line round trip (the limit)", BENCH_LIMIT, NULL,
	  "bench_cacheline_rtt: each side writes its own line, spins on the other's",
	  NULL, NULL, NULL, NULL, NULL, NULL },
	{ "signal (receiver sleeps in sigwaitinfo)", BENCH_BASELINE, "14.8", NULL,
	  sig_setup, sig_child, sig_ping, sig_pong, NULL, sig_teardown },
	{ "signal (busy receiver: handler + spin)", BENCH_BASELINE, NULL,
	  "the receiver spins on a flag its handler sets", sigbusy_setup, sigbusy_child,
	  sig_ping, sigbusy_pong, NULL, sigbusy_teardown },
	{ "eventfd (two, blocking)", BENCH_BASELINE, "9.7", "the reviewer's fix: one eventfd per direction",
	  efd_setup, fd_child, fd_ping, fd_pong_block, NULL, fd_teardown },
	{ "eventfd (two, busy-polling non-blocking)", BENCH_BASELINE, NULL,
	  "the reviewer's fair peer of a spinning receiver", efd_nb_setup, fd_child,
	  fd_ping, fd_pong_poll, NULL, fd_teardown },
	{ "pipe (two, blocking)", BENCH_BASELINE, "16.3", NULL, pipe_setup, fd_child,
	  fd_ping, fd_pong_block, NULL, fd_teardown },
	{ "Unix socket (blocking)", BENCH_BASELINE, "17.3", NULL, sock_setup, fd_child,
	  fd_ping, fd_pong_block, NULL, fd_teardown },
	{ "Unix socket (busy-polling non-blocking)", BENCH_BASELINE, NULL, NULL, sock_nb_setup,
	  fd_child, fd_ping, fd_pong_poll, NULL, fd_teardown },
	{ "futex (wait/wake every time)", BENCH_BASELINE, NULL, NULL, NULL, futex_child,
	  futex_ping, futex_pong, NULL, NULL },
	{ "bypass doorbell: adaptive", BENCH_BYPASS, NULL, "spin 20 us, then futex",
	  db_adaptive_setup, db_child, db_ping, db_pong, NULL, db_teardown },
	{ "bypass doorbell: spin", BENCH_BYPASS, NULL, NULL, db_spin_setup, db_child, db_ping,
	  db_pong, NULL, db_teardown },
	{ "bypass doorbell: sleeping", BENCH_BYPASS, NULL, "futex at once", db_sleep_setup,
	  db_child, db_ping, db_pong, NULL, db_teardown },
	{ "bypass doorbell: interrupt (busy receiver)", BENCH_BYPASS, NULL,
	  "signal + callback into running code", db_adaptive_setup, intr_child, db_ping,
	  intr_pong, intr_after_fork, intr_teardown },
	{ "bypass doorbell: eventfd-armed (epoll)", BENCH_BYPASS, NULL,
	  "receiver sleeps in epoll_wait", db_efd_setup, db_efd_child, db_ping, db_efd_pong,
	  NULL, db_efd_teardown },
	{ "cache-line round trip with a doorbell's atomics (reference)", BENCH_LIMIT, NULL,
	  "the limit's lines, but a ring is a locked add and the receiver takes it with a "
	  "compare-and-swap on a line of its own, as a doorbell does: what the atomics cost "
	  "without the library", NULL, NULL, NULL, NULL, NULL, NULL },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

enum { V_LIMIT = 0, V_SIGNAL = 1, V_SIGBUSY = 2, V_EFD = 3, V_EFD_POLL = 4, V_SOCK_POLL = 7,
       V_ADAPTIVE = 9, V_SPIN = 10, V_SLEEP = 11, V_INTR = 12, V_SHAPED = 14 };

/*
 * The limit's shape against a doorbell's (issue 24: the ratio of the awake
 * doorbell to the limit moved 2.17x, 1.08x, 1.00x in three runs): the same
 * two lines in two shared pages, a responder thread, but each side rings
 * with a locked add on its own sequence line and takes the other's ring
 * with a compare-and-swap on a consumed counter in a third line of its own,
 * as bypass_notify_ring and bp_db_consume do; no library code, no clock in
 * the spin.
 */
struct shaped_side {
	_Atomic uint32_t seq __attribute__((aligned(64)));
	_Atomic uint32_t consumed __attribute__((aligned(64)));
};
struct shaped_arg {
	struct shaped_side *ping, *pong;
	uint64_t iters;
	int cpu;
};

static void shaped_take(struct shaped_side *s)
{
	uint32_t c = atomic_load_explicit(&s->consumed, memory_order_relaxed);
	for (;;) {
		uint32_t v = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (v == c) {
			__builtin_ia32_pause();
			continue;
		}
		if (atomic_compare_exchange_weak_explicit(&s->consumed, &c, v,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			return;
	}
}

static void *shaped_responder(void *p)
{
	struct shaped_arg *a = p;
	bench_pin(a->cpu);
	for (uint64_t i = 0; i < a->iters; i++) {
		shaped_take(a->ping);
		atomic_fetch_add_explicit(&a->pong->seq, 1, memory_order_seq_cst);
	}
	return NULL;
}

static int shaped_rtt(int cpu_a, int cpu_b, uint64_t *out, size_t iters)
{
	/* each side's lines in a page of their own, as a doorbell's */
	char *mem = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	struct shaped_side *ping = (void *)mem, *pong = (void *)(mem + 4096);
	size_t warm = bench_cacheline_warmup(iters);
	struct shaped_arg a = { ping, pong, warm + iters, cpu_b };
	cpu_set_t old;
	bool restore = pthread_getaffinity_np(pthread_self(), sizeof(old), &old) == 0;
	bench_pin(cpu_a);
	pthread_t t;
	int e = pthread_create(&t, NULL, shaped_responder, &a);
	if (!e) {
		for (size_t i = 0; i < warm + iters; i++) {
			uint64_t t0 = bypass_rdtscp(NULL);
			atomic_fetch_add_explicit(&ping->seq, 1, memory_order_seq_cst);
			shaped_take(pong);
			if (i >= warm)
				out[i - warm] = bypass_rdtscp(NULL) - t0;
		}
		pthread_join(t, NULL);
	}
	if (restore)
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	munmap(mem, 2 * 4096);
	return -e;
}

/* One round of one variant: fork the responder, time n round trips.
 * Returns 0 or -errno (-EIO: the responder did not exit cleanly). */
static int run_round(const struct variant *v, struct pp *p, uint64_t warm, uint64_t n,
		     uint64_t *samples, int cpu_a, int cpu_b)
{
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 2; i++)
		p->fd_ping[i] = p->fd_pong[i] = -1;
	p->n = warm + n;
	p->parent = getpid();
	got_signal = 0;
	int e = v->setup ? v->setup(p) : 0;
	if (e < 0)
		return e;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		bench_pin(cpu_b);
		v->child(p);
		_exit(0);
	}
	p->child = pid;
	/* A round trip takes 0.1-50 us on an idle machine, but a spinning
	 * side pinned to a CPU shared with a build can wait a scheduler slice
	 * for each hand-over (seen: 25 ms a round trip at load 12 on 2 CPUs):
	 * 60 s + 50 ms a round trip is a stall, not a loaded machine. */
	bench_watchdog(60 + (unsigned)((warm + n) / 20), v->name, pid);
	bench_pin(cpu_a);
	if (v->parent_after_fork)
		v->parent_after_fork(p);
	for (uint64_t i = 0; i < warm; i++) {
		v->ping(p);
		v->wait_pong(p);
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = bypass_rdtscp(NULL);
		v->ping(p);
		v->wait_pong(p);
		samples[i] = bypass_rdtscp(NULL) - t0;
	}
	atomic_store(&p->stop, 1);
	int st;
	waitpid(pid, &st, 0);
	bench_watchdog(0, NULL, 0);
	if (v->teardown)
		v->teardown(p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Rows whose receiver sleeps in the kernel (tens of microseconds a round
 * trip): fewer round trips in the quick suite, the median settles long
 * before. */
static bool slow_row(size_t v)
{
	return !(v == V_LIMIT || v == V_EFD_POLL || v == V_SOCK_POLL || v == V_ADAPTIVE ||
		 v == V_SPIN || v == V_SHAPED);
}

static double median_u64(uint64_t *v, size_t n)
{
	struct bench_summary s;
	bench_summarize(v, n, &s);
	return s.median;
}

/* Limit blocks: LIM_BLOCK cache-line round trips right before and right
 * after every row's run, in every round. */
#define LIM_BLOCK 2000

int bench_notify_pingpong(struct bench_ctx *c)
{
	uint64_t total = bench_count(c, "roundtrips", 1000000, 100000);
	/* More rounds than the harness's 3: the ratio's interval is over the
	 * rounds (each round's row against the limit measured beside it). */
	int rounds = bench_rounds_or(c, 6, 10);
	uint64_t per = (total + (uint64_t)rounds - 1) / (uint64_t)rounds;
	uint64_t per_slow = bench_quick(c) ? (per / 5 ? per / 5 : 1) : per;
	uint64_t warm = per / 100 < 100 ? 100 : per / 100;
	/* Round 0 warms everything up (page cache of the binaries, the
	 * scheduler's view of both CPUs, frequency) and is not recorded. */
	uint64_t warm_round = per / 4 < 100 ? (per < 100 ? per : 100) : per / 4;
	size_t lim_block = bench_smoke(c) ? 200 : LIM_BLOCK;
	int cpu_a, cpu_b;
	bench_cpus(c, &cpu_a, &cpu_b);
	inject_fail = !strcmp(bench_param(c, "fail", ""), "responder");

	bench_begin(c, "notify.pingpong",
		    "1-byte ping-pong between two processes on different CPUs (User Interrupts RFC table)",
		    "the cache-line round trip measured beside the row in the same round (the "
		    "limit row: all those blocks); the source column is relative to a hardware "
		    "user IPI");

	struct pp *p = bench_shared_alloc(sizeof(*p));
	uint64_t *samples[NVARIANTS];
	uint64_t *scratch = malloc(sizeof(uint64_t) * (warm_round > lim_block ? warm_round
									  : lim_block));
	size_t nlim = 2 * (NVARIANTS - 1) * lim_block;
	uint64_t *lim_all = malloc(sizeof(uint64_t) * nlim * (size_t)rounds);
	double *lim_r[NVARIANTS], *row_r[NVARIANTS];
	for (size_t v = 0; v < NVARIANTS; v++) {
		samples[v] = malloc(sizeof(uint64_t) * per * (size_t)rounds);
		lim_r[v] = calloc((size_t)rounds, sizeof(double));
		row_r[v] = calloc((size_t)rounds, sizeof(double));
	}
	bool failed[NVARIANTS] = { false };
	size_t order[NVARIANTS];
	struct bench_rounds rr;
	int r;
	bench_rounds_init(c, &rr, rounds + 1, 1); /* round 0: the warm-up */
	while (bench_round(c, &rr, &r)) {
		bench_order(r, NVARIANTS, order);
		size_t li = 0; /* limit blocks of this round */
		for (size_t k = 0; k < NVARIANTS; k++) {
			size_t v = order[k];
			if (failed[v] || v == V_LIMIT)
				continue;
			uint64_t n = r ? (slow_row(v) ? per_slow : per) : warm_round;
			uint64_t *dst = r ? samples[v] + (size_t)(r - 1) * per : scratch;
			double lm[2] = { 0, 0 };
			int e = 0;
			for (int side = 0; side < 3 && !e; side++) {
				if (side == 1) {
					e = v == V_SHAPED ? shaped_rtt(cpu_a, cpu_b, dst, n)
							  : run_round(&variants[v], p, warm, n, dst,
								      cpu_a, cpu_b);
					continue;
				}
				/* the limit, right before and right after the row */
				uint64_t *lb = r ? lim_all + (size_t)(r - 1) * nlim + li * lim_block
						 : scratch;
				e = bench_cacheline_rtt(cpu_a, cpu_b, lb, lim_block);
				if (!e) {
					uint64_t *tmp = malloc(lim_block * sizeof(uint64_t));
					memcpy(tmp, lb, lim_block * sizeof(uint64_t));
					lm[side / 2] = median_u64(tmp, lim_block);
					free(tmp);
					if (r)
						li++;
				} else {
					v = V_LIMIT;
				}
			}
			if (e < 0) {
				failed[v] = true;
				bench_fail(c, "%s: failed in %s %d (%s)", variants[v].name,
					   r ? "round" : "warm-up round", r,
					   e == -EIO ? "its responder did not exit cleanly"
						     : strerror(-e));
				continue;
			}
			if (r) {
				uint64_t *tmp = malloc(n * sizeof(uint64_t));
				memcpy(tmp, dst, n * sizeof(uint64_t));
				row_r[v][r - 1] = median_u64(tmp, n);
				free(tmp);
				lim_r[v][r - 1] = (lm[0] + lm[1]) / 2;
			}
		}
		if (r) /* the limit row: every block of the round */
			row_r[V_LIMIT][r - 1] = (double)li;
	}

	/* per-round ratios: the row's median over the limit's beside it */
	double ratio_r[NVARIANTS][64];
	struct bench_summary s[NVARIANTS];
	for (size_t v = 0; v < NVARIANTS; v++) {
		size_t n = slow_row(v) ? per_slow : per;
		if (v == V_LIMIT) {
			/* all the blocks (each round's count in row_r) */
			size_t m = 0;
			for (int k = 0; k < rounds; k++) {
				size_t nb = (size_t)row_r[V_LIMIT][k] * lim_block;
				memmove(lim_all + m, lim_all + (size_t)k * nlim, nb * sizeof(uint64_t));
				m += nb;
			}
			bench_summarize(lim_all, failed[v] ? 0 : m, &s[v]);
			continue;
		}
		/* the samples of each round sit at round * per: pack them */
		for (int k = 1; k < rounds; k++)
			memmove(samples[v] + (size_t)k * n, samples[v] + (size_t)k * per,
				n * sizeof(uint64_t));
		bench_summarize(samples[v], failed[v] ? 0 : n * (size_t)rounds, &s[v]);
		for (int k = 0; k < rounds && k < 64; k++)
			ratio_r[v][k] = lim_r[v][k] > 0 ? row_r[v][k] / lim_r[v][k] : NAN;
	}
	for (size_t v = 0; v < NVARIANTS; v++) {
		if (failed[v])
			continue;
		struct bench_row row = {
			.variant = variants[v].name,
			.kind = variants[v].kind,
			.unit = "cycles",
			.s = s[v],
			.is_base = v == V_LIMIT,
			.source = variants[v].source,
			.note = variants[v].note,
		};
		char params[1200];
		if (v != V_LIMIT) {
			int nr = rounds < 64 ? rounds : 64;
			struct bench_summary rs;
			double tmp[64];
			memcpy(tmp, ratio_r[v], (size_t)nr * sizeof(double));
			bench_summarize_d(tmp, (size_t)nr, &rs);
			row.ratio = rs.median;
			if (bench_median_ci(ratio_r[v], (size_t)nr, &row.ci_lo, &row.ci_hi))
				row.ci_lo = row.ci_hi = 0;
			/* each round's ratio and the limit beside it, for the reader */
			int o = snprintf(params, sizeof(params), "{\"round_ratio\": [");
			for (int k = 0; k < nr && o < (int)sizeof(params) - 40; k++)
				o += snprintf(params + o, sizeof(params) - (size_t)o, "%s%.4g",
					      k ? ", " : "", ratio_r[v][k]);
			o += snprintf(params + o, sizeof(params) - (size_t)o,
				      "], \"round_limit_cycles\": [");
			for (int k = 0; k < nr && o < (int)sizeof(params) - 8; k++)
				o += snprintf(params + o, sizeof(params) - (size_t)o, "%s%.0f",
					      k ? ", " : "", lim_r[v][k]);
			snprintf(params + o, sizeof(params) - (size_t)o, "]}");
			row.params = params;
		}
		bench_row(c, &row);
	}
	bench_note(c, "%llu round trips per row, %llu for the rows that sleep in the kernel "
		   "(the source: 1,000,000)", (unsigned long long)(per * (uint64_t)rounds),
		   (unsigned long long)(per_slow * (uint64_t)rounds));
	bench_note(c, "%d rounds after one warm-up round (%llu round trips per row, not recorded); "
		   "the order of the rows rotates each round; each round forks a fresh responder; "
		   "CPUs %d and %d; %llu warm-up round trips per round", rounds,
		   (unsigned long long)warm_round, cpu_a, cpu_b, (unsigned long long)warm);
	bench_note(c, "ratio: the median over rounds of (the row's median in the round / the "
		   "median of the cache-line round trips measured right before and right after "
		   "it, %zu each), with a bootstrap 95%% interval over the rounds: the limit "
		   "moves with where the hypervisor puts the two vCPUs (SMT siblings or not), "
		   "and it is measured where the row ran", lim_block);
	{
		double lo = 1e300, hi = 0;
		for (size_t v = 0; v < NVARIANTS; v++)
			for (int k = 0; k < rounds && k < 64 && v != V_LIMIT && !failed[v]; k++)
				if (lim_r[v][k] > 0) {
					lo = lim_r[v][k] < lo ? lim_r[v][k] : lo;
					hi = lim_r[v][k] > hi ? lim_r[v][k] : hi;
				}
		if (hi > 0)
			bench_note(c, "the limit beside the rows ranged from %.0f to %.0f cycles over "
				   "the rounds (row params: round_ratio, round_limit_cycles)", lo, hi);
	}
	/* the awake doorbell's ratio against where the vCPUs sat, round by round */
	if (!failed[V_ADAPTIVE] && !failed[V_SHAPED]) {
		char txt[600];
		int o = 0;
		int nrr = rounds < 64 ? rounds : 64;
		size_t idx[64];
		for (int k = 0; k < nrr; k++)
			idx[k] = (size_t)k;
		for (int i = 1; i < nrr; i++) /* by the limit beside it */
			for (int j = i; j > 0 && lim_r[V_ADAPTIVE][idx[j]] <
						      lim_r[V_ADAPTIVE][idx[j - 1]]; j--) {
				size_t t = idx[j];
				idx[j] = idx[j - 1];
				idx[j - 1] = t;
			}
		double tmpr[64];
		struct bench_summary shs;
		memcpy(tmpr, ratio_r[V_SHAPED], (size_t)nrr * sizeof(double));
		bench_summarize_d(tmpr, (size_t)nrr, &shs);
		double shaped_med = shs.median;
		for (int k = 0; k < nrr && o < (int)sizeof(txt) - 32; k++)
			o += snprintf(txt + o, sizeof(txt) - (size_t)o, "%s%.2fx at %.0f",
				      k ? ", " : "", ratio_r[V_ADAPTIVE][idx[k]],
				      lim_r[V_ADAPTIVE][idx[k]]);
		bench_note(c, "adaptive doorbell per round, by the limit beside it (cycles): %s; the "
			   "doorbell's atomics alone (the reference row) %.2fx: what a round trip "
			   "costs beyond the limit is the library's own work, and its share shrinks "
			   "where the line is slow", txt, shaped_med);
	}
	bench_note(c, "the limit row is bench_cacheline_rtt, the routine every module's limit uses: "
		   "one line per side, each in its own shared page like a doorbell; all rows "
		   "summarized alike (every sample, no trimming)");
	bench_note(c, "source column: the RFC's mean latency relative to user IPI "
		   "(Sapphire Rapids, not this machine)");
	/* the targets: per-round ratios, with their intervals */
	int nr = rounds < 64 ? rounds : 64;
	double lo = 0, hi = 0, tmp[64];
	struct bench_summary rs;
	memcpy(tmp, ratio_r[V_ADAPTIVE], (size_t)nr * sizeof(double));
	bench_summarize_d(tmp, (size_t)nr, &rs);
	if (bench_median_ci(ratio_r[V_ADAPTIVE], (size_t)nr, &lo, &hi))
		lo = hi = 0;
	bench_target_ci(c, "adaptive doorbell, awake receiver: median / cache-line limit median "
			"(per round, the limit beside it)",
			failed[V_ADAPTIVE] ? NAN : rs.median, lo, hi, "<=", 1.5);
	static const struct {
		size_t a, b;
		const char *what, *op;
	} pairs[] = {
		{ V_SLEEP, V_EFD, "sleeping doorbell median / two-eventfd blocking median", "<=" },
		{ V_INTR, V_SIGBUSY,
		  "interrupt (busy receiver) median / signal to a busy receiver median", "<" },
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		size_t a = pairs[i].a, b = pairs[i].b;
		lo = hi = 0;
		if (bench_ratio_ci(row_r[a], (size_t)nr, row_r[b], (size_t)nr, &lo, &hi))
			lo = hi = 0;
		bench_target_ci(c, pairs[i].what,
				failed[a] || failed[b] ? NAN : s[a].median / s[b].median, lo, hi,
				pairs[i].op, 1.0);
	}
	bench_end(c);

	for (size_t v = 0; v < NVARIANTS; v++) {
		free(samples[v]);
		free(lim_r[v]);
		free(row_r[v]);
	}
	free(lim_all);
	free(scratch);
	bench_shared_free(p, sizeof(*p));
	for (size_t v = 0; v < NVARIANTS; v++)
		if (failed[v])
			return -1;
	return 0;
}
