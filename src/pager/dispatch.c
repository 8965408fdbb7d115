/* SPDX-License-Identifier: MIT */
/*
 * Dispatching page faults to bp_pager_serve() (fault.c): in the faulting
 * thread's SIGBUS handler (upcall mode, the hook core's fault dispatcher
 * calls) or in a handler thread reading the userfaultfd (handler mode:
 * the messages, the fork's deferred faults, the wait between them).
 */
#include "pager/page.h"
#include "pager/rank.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/struct.h"
#include "pager/share.h"
#include "pager/fault.h"
#include "pager/engine.h"
#include "pager/evict.h"
#include "pager/uffd.h"
#include "pager/read.h"
#include "core/syscall.h"
#include "core/fdhigh.h"

#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <ucontext.h>

/* ------------------------------------------------------------ upcall */

static bool fault_is_write(void *uc)
{
#if defined(__x86_64__)
	/* The page-fault error code: bit 1 is set for a write. */
	const ucontext_t *u = uc;
	return (u->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
	(void)uc;
	return true; /* treat it as a write: correct, only less economical */
#endif
}

static int pager_hook(int sig, siginfo_t *si, void *uc)
{
	/* userfaultfd in SIGBUS mode raises BUS_ADRERR at the address; an
	 * adaptive region being switched between engines is PROT_NONE for a
	 * moment (SEGV_ACCERR). */
	bool bus = sig == SIGBUS && si->si_code == BUS_ADRERR;
	bool segv = sig == SIGSEGV && si->si_code == SEGV_ACCERR;
	if ((!bus && !segv) || !bp_tab_get())
		return 0;
	unsigned idx = bp_tab_enter();
	uintptr_t a = (uintptr_t)si->si_addr;
	struct region *r = bp_tab_find(bp_tab_get(), a);
	int handled = 0;
	unsigned frame = 0;
	bool framed = r && bus;
	if (framed) /* a fault of this thread: a lock frame (rank.c) */
		frame = bp_rank_frame_enter();
	/* After fork the child forgets the table (fork.c: its regions are
	 * ordinary memory there); a region of another generation is never
	 * served, its userfaultfd would act on the parent's memory. */
	if (!r || r->gen != bp_fork_gen_fast()) {
		/* not ours */
	} else if (segv) {
		handled = r->adaptive && bp_engine_segv(r, a);
	} else if (!atomic_load_explicit(&r->handler, memory_order_relaxed)) {
		bp_gate_enter(r->pager); /* a fork being prepared: after it */
		int e = bp_pager_serve(r, a, fault_is_write(uc), false);
		bp_gate_leave(r->pager);
		if (!e || e == -EAGAIN)
			handled = 1;
		else
			bp_err("bypass: pager: cannot serve the fault at %#lx: %s",
			       (unsigned long)a, strerror(-e));
	} else if (r->adaptive) {
		/* raised before the region moved to the pool: retry there */
		handled = 1;
	}
	if (framed)
		bp_rank_frame_leave(frame);
	bp_tab_leave(idx);
	return handled;
}

int bp_pager_hook_install(void)
{
	return bp_fault_hook_add(pager_hook);
}

/* ------------------------------------------------------------ handler */

/*
 * Faults that arrived while a fork was being prepared, kept by the handler
 * thread that read them until the gate opens: a handler thread waiting at
 * the gate would read no more messages, and the forking thread's own
 * faults (after the pager's prepare handler) would never be served: with
 * one handler thread, a fork while another thread faults hung.  A thread
 * has at most one fault waiting, so a full list (that many threads
 * faulting at once during one fork) is not expected; it waits at the gate.
 */
#define DEFER_MAX 128

struct hdefer {
	unsigned n;
	int uffd[DEFER_MAX];
	struct uffd_msg m[DEFER_MAX];
};

static void handle_msg(struct bypass_pager *p, int uffd, const struct uffd_msg *m,
		       struct hdefer *d)
{
	if (m->event != UFFD_EVENT_PAGEFAULT)
		return;
	uintptr_t a = (uintptr_t)m->arg.pagefault.address;
	bool write = m->arg.pagefault.flags &
		     (UFFD_PAGEFAULT_FLAG_WRITE | UFFD_PAGEFAULT_FLAG_WP);
	unsigned idx = bp_tab_enter();
	struct region *r = bp_tab_find(bp_tab_get(), a);
	uintptr_t pa = a & ~(uintptr_t)(PG_SIZE - 1);
	if (r && r->pager == p && atomic_load(&r->handler) && atomic_load(&r->uffd) == uffd) {
		/* who faulted (with UFFD_FEATURE_THREAD_ID; else 0, counted
		 * as this thread) */
		pid_t tid = (pid_t)m->arg.pagefault.feat.ptid;
		bp_serving_tid = tid;
		int e;
		if (bp_gate_owned_by(p, tid)) {
			/* The forking thread, after the pager's prepare
			 * handler (glibc's fork touches the program's heap
			 * then): nobody else is inside the gate, and the
			 * thread waits in the kernel until woken, so it is
			 * served through the closed gate, room taken without
			 * evicting (its evict lock), and woken only once all
			 * is done: the fork then finds no page lock held.
			 * The policy hears nothing of it. */
			e = bp_pager_serve_forking(r, a, write);
			if (!e)
				e = bp_uffd_wake(uffd, pa, PG_SIZE);
		} else {
			bool in = bp_gate_tryenter(p);
			if (!in && d->n < DEFER_MAX) {
				/* a fork being prepared: after it (handler_main) */
				d->uffd[d->n] = uffd;
				d->m[d->n++] = *m;
				bp_serving_tid = 0;
				bp_tab_leave(idx);
				return;
			}
			if (!in)
				bp_gate_enter(p);
			e = bp_pager_serve(r, a, write, true);
			bp_gate_leave(p);
		}
		bp_serving_tid = 0;
		if (e == -EAGAIN) { /* switched meanwhile: the thread faults again */
			bp_uffd_wake(uffd, pa, PG_SIZE);
		} else if (e) {
			/* The thread cannot be given its data: make its
			 * access fail (SIGBUS) rather than hang. */
			bp_err("bypass: pager: cannot serve the fault at %#lx: %s",
			       (unsigned long)a, strerror(-e));
			if (bp_uffd_poison(uffd, pa, PG_SIZE) != 0)
				bp_uffd_wake(uffd, pa, PG_SIZE);
		}
	} else {
		bp_uffd_wake(uffd, pa, PG_SIZE);
	}
	bp_tab_leave(idx);
}

static __thread bool in_handler __attribute__((tls_model("initial-exec")));

bool bp_pager_in_handler_thread(void)
{
	return in_handler;
}

/* Read and serve what one userfaultfd has; returns messages served. */
static size_t drain_uffd(struct bypass_pager *p, int uffd, bool *broken, struct hdefer *d)
{
	struct uffd_msg msgs[16];
	size_t total = 0;
	for (;;) {
		ssize_t n = bp_sys_read(uffd, msgs, sizeof(msgs));
		if (n > 0) {
			for (size_t i = 0; i < (size_t)n / sizeof(msgs[0]); i++)
				handle_msg(p, uffd, &msgs[i], d);
			total += (size_t)n / sizeof(msgs[0]);
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			bp_err("bypass: pager: reading the userfaultfd: %s", strerror(errno));
			*broken = true;
		}
		return total;
	}
}

/*
 * Where a handler thread sleeps: its own epoll instance, with the
 * userfaultfds added EPOLLEXCLUSIVE.  A userfaultfd wakes every poll()
 * waiter on its queue at each fault, so with a pool of 16 threads every
 * fault woke 16 threads, 15 of which found nothing and read the
 * userfaultfd again under the lock the faulting threads queue on (the pool
 * ran at 1/3 of one handler thread's rate on a 16-core Xeon).  Exclusive
 * entries wake one thread that is waiting; a thread that is busy serving
 * finds the message when it reads again.  stop_fd is not exclusive: it
 * wakes every thread.  fds[] are the userfaultfds added so far (uffd_pool
 * may open after the thread starts).
 */
struct hwait {
	int ep;     /* epoll descriptor, or -1: poll() instead */
	int fds[2]; /* userfaultfds in ep */
};

/*
 * Every handler thread's epoll descriptor in this process, so that a fork
 * child, which has none of the threads, closes them (bp_share_fork_fds();
 * they leaked, one per handler thread per fork).  Slots taken and freed
 * with atomics (a fork child may find them in any state): a descriptor is
 * noted after it is made and forgotten before it is closed, so the child
 * closes nothing that is not one (at worst one made or being closed at
 * the fork stays open, as before).  Past HWAIT_SLOTS, not noted.
 */
#define HWAIT_SLOTS 256
static _Atomic int g_hwait[HWAIT_SLOTS]; /* fd + 1; 0: free */

static void hwait_note(int fd, bool add)
{
	for (unsigned i = 0; i < HWAIT_SLOTS; i++) {
		int want = add ? 0 : fd + 1;
		if (atomic_load_explicit(&g_hwait[i], memory_order_relaxed) == want &&
		    atomic_compare_exchange_strong(&g_hwait[i], &want, add ? fd + 1 : 0))
			return;
	}
}

void bp_share_fork_fds(void)
{
	for (unsigned i = 0; i < HWAIT_SLOTS; i++) {
		int v = atomic_exchange(&g_hwait[i], 0);
		if (v > 0) {
			bp_fd_unlist(v - 1);
			bp_sys_close(v - 1);
		}
	}
}

static void hwait_close(struct hwait *w)
{
	hwait_note(w->ep, false);
	bp_fd_unlist(w->ep);
	bp_sys_close(w->ep);
	w->ep = -1;
}

static void hwait_init(struct bypass_pager *p, struct hwait *w)
{
	w->fds[0] = w->fds[1] = -1;
	/* high and listed (core/fdhigh.h): a program that closes every
	 * descriptor must not take it, or the thread would stop serving */
	w->ep = bp_fd_lift(epoll_create1(EPOLL_CLOEXEC), true);
	if (w->ep < 0)
		return;
	bp_fd_list(w->ep);
	hwait_note(w->ep, true);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p->srv.stop_fd };
	if (bp_sys_epoll_ctl(w->ep, EPOLL_CTL_ADD, p->srv.stop_fd, &ev) < 0)
		hwait_close(w);
}

/* Sleep until one of fds[] (or stop_fd) is readable, or for ms
 * milliseconds (-1: no limit); false: stop. */
static bool hwait_sleep(struct bypass_pager *p, struct hwait *w, const int fds[2], int ms)
{
	for (int i = 0; i < 2 && w->ep >= 0; i++) {
		if (fds[i] < 0 || fds[i] == w->fds[i])
			continue;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = fds[i] };
		if (bp_sys_epoll_ctl(w->ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
			hwait_close(w); /* poll() from now on */
			break;
		}
		w->fds[i] = fds[i];
	}
	if (w->ep >= 0) {
		struct epoll_event ev[3];
		int n = bp_sys_epoll_wait(w->ep, ev, 3, ms);
		if (n < 0)
			return errno == EINTR;
		for (int i = 0; i < n; i++)
			if (ev[i].data.fd == p->srv.stop_fd)
				return false;
		return true;
	}
	struct pollfd pf[3];
	nfds_t n = 0;
	pf[n++] = (struct pollfd){ .fd = p->srv.stop_fd, .events = POLLIN };
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			pf[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	if (bp_sys_poll(pf, n, ms) < 0)
		return errno == EINTR;
	return !pf[0].revents;
}

/*
 * A handler thread.  Several may read the same userfaultfds (each message
 * goes to one reader).  After serving, one thread at a time keeps reading
 * for 20 us before it sleeps, so that a burst of faults is served without
 * a wake-up each; a spin that finds nothing turns spinning off for that
 * thread's next 16 batches.  One spinner, not all: every read takes the
 * userfaultfd's queue lock, which the faulting threads need too.
 */
static void *handler_main(void *arg)
{
	bp_enter_for_good(); /* the library's own thread */
	struct bypass_pager *p = arg;
	in_handler = true;
	uint64_t spin_cyc = (uint64_t)(p->cfg.cyc_per_ns_q16 * 20000) >> 16; /* 20 us */
	unsigned no_spin = 0; /* batches to serve without spinning after */
	struct hwait w;
	hwait_init(p, &w);
	bp_rd_handler_awake(true); /* until it sleeps (read.c's CPU to spare) */
	struct hdefer d;
	d.n = 0;
	for (;;) {
		int fds[2] = { p->srv.uffd_thread, atomic_load(&p->eng.uffd_pool) };
		bool broken = false;
		size_t got = 0;
		if (d.n && !bp_gate_closed(p)) { /* the fork is done: serve them */
			unsigned n = d.n;
			d.n = 0; /* kept again, in place, if another fork began */
			for (unsigned i = 0; i < n; i++)
				handle_msg(p, d.uffd[i], &d.m[i], &d);
			got += n;
		}
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				got += drain_uffd(p, fds[i], &broken, &d);
		if (broken)
			break;
		if (got && no_spin) {
			no_spin--;
			continue;
		} else if (got && atomic_fetch_add(&p->srv.spinners, 1) == 0) {
			uint64_t t0 = bypass_rdtscp(NULL);
			size_t more = 0;
			while (!more && !broken && bypass_rdtscp(NULL) - t0 < spin_cyc) {
				bp_cpu_relax();
				for (int i = 0; i < 2; i++)
					if (fds[i] >= 0)
						more += drain_uffd(p, fds[i], &broken, &d);
			}
			atomic_fetch_sub(&p->srv.spinners, 1);
			if (broken)
				break;
			/* A spin that found nothing only took the CPU from the
			 * threads that fault (all of it, where they share one):
			 * spin again only after 16 batches. */
			if (!more)
				no_spin = 16;
			continue;
		} else if (got) {
			atomic_fetch_sub(&p->srv.spinners, 1); /* another spins */
			continue;
		}
		/* with faults kept, look at the gate every millisecond */
		bp_rd_handler_awake(false);
		bool more = hwait_sleep(p, &w, fds, d.n ? 1 : -1);
		bp_rd_handler_awake(true);
		if (!more)
			break;
	}
	bp_rd_handler_awake(false);
	/* stopping: the threads of faults kept fault again (their regions
	 * are being unmapped) */
	for (unsigned i = 0; i < d.n; i++)
		bp_uffd_wake(d.uffd[i], (uintptr_t)d.m[i].arg.pagefault.address & ~(uintptr_t)(PG_SIZE - 1),
			     PG_SIZE);
	if (w.ep >= 0)
		hwait_close(&w);
	return NULL;
}

int bp_pager_thread_start(struct bypass_pager *p)
{
	if (p->srv.nlive)
		return 0;
	int e = 0;
	unsigned want = p->cfg.nthreads ? p->cfg.nthreads : 1;
	while (p->srv.nlive < want) {
		/* a stack of its own: in a fork child, one from glibc's cache
		 * would touch memory that only these threads can serve */
		e = bp_thread_start(&p->srv.threads[p->srv.nlive], handler_main, p);
		if (e)
			break;
		p->srv.nlive++;
	}
	if (e && !p->srv.nlive)
		return e;
	/*
	 * From now on a thread may block in a fault until a handler thread
	 * serves it, and then runs no task work: write-backs started by
	 * application threads are synchronous (submit_writeback()), and those
	 * already under way finish now, while no handler-served region of
	 * this pager exists that their threads could be blocked on.
	 */
	atomic_store(&p->ev.sync_wb, true);
	if (p->ev.ring_live) {
		bp_plock_lock(&p->ev.lock);
		bp_evict_drain(p);
		bp_plock_unlock(&p->ev.lock);
	}
	return 0;
}

void bp_pager_thread_stop(struct bypass_pager *p)
{
	if (!p->srv.nlive)
		return;
	uint64_t one = 1;
	ssize_t n = bp_sys_write(p->srv.stop_fd, &one, sizeof(one));
	(void)n;
	for (unsigned i = 0; i < p->srv.nlive; i++)
		bp_thread_join(&p->srv.threads[i]);
	p->srv.nlive = 0;
	n = bp_sys_read(p->srv.stop_fd, &one, sizeof(one)); /* reset, for a restart */
}
