/* SPDX-License-Identifier: MIT */
/*
 * The notify ping-pong's mechanisms: for each row, how the responder
 * process answers and how the timing side pings and waits (futex, pipes,
 * sockets, eventfds blocking and busy-polling, signals, each bypass
 * doorbell mode), and one round of a row (pp_run_round).  The driver is
 * pingpong.c.
 */
#include "notify_bench.h"

#include <bypass/notify.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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

void pp_inject_fail(bool on)
{
	inject_fail = on;
}

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

/* NVARIANTS (the header) must match: another count is a conflicting type */
const struct variant pp_variants[] = {
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

size_t pp_state_size(void)
{
	return sizeof(struct pp);
}

int pp_run_round(const struct variant *v, struct pp *p, uint64_t warm, uint64_t n,
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
