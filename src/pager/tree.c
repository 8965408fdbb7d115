/* SPDX-License-Identifier: MIT */
/*
 * One budget for a process tree (issue 32, item 3): the ledger.  See
 * tree.h for the layout and docs/pager-preload.md, "One budget for a
 * process tree", for the rules and their cost.
 *
 * Everything in the ledger is a process-shared atomic: processes of the
 * tree change it from any context (a fault's signal handler included: only
 * atomics, futexes and system calls here).
 */
#include "core/syscall.h"
#include "core/fdhigh.h"
#include "pager/page.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/share.h"
#include "pager/evict.h"
#include "pager/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TREE_MAGIC 0x6270747265656c67ull /* "bptreelg" */
#define TREE_VERSION 1u
#define TREE_SLOTS 1000u
#define ASK_WAIT_NS 100000000ull /* an ask unanswered this long: fall back */
#define STUCK_NS 10000000000ull  /* no room at all this long: -ENOMEM */
#define ASK_MIN 64u              /* pages asked for at least (amortized) */
#define IDLE_NS 100000000ull     /* a member that needed no room this long is idle */
#define IDLE_HOLD_NS 1000000000ull /* one whose ask timed out: not idle for this long */

struct tslot {
	_Atomic int32_t pid;      /* 0: free; -1: being given back */
	_Atomic uint32_t charge;  /* pages resident in this process */
	_Atomic uint32_t req;     /* futex: bumped to ask for eviction */
	_Atomic uint32_t want;    /* pages asked for, not yet served */
	_Atomic uint64_t answered;
	/* what this member's reservations cost (read by bp_tree_stats, and by
	 * a measuring script through /proc/PID/fd: the ledger is a memfd) */
	_Atomic uint32_t asks_made;    /* asks this member made */
	_Atomic uint32_t waits;        /* waits on the ledger's progress */
	_Atomic uint64_t wait_ns;      /* in bp_tree_reserve with the tree full */
	_Atomic uint64_t own_pages;    /* its own evicted there for room */
	_Atomic uint64_t served_pages; /* evicted by its thread for others */
	_Atomic uint64_t active_ns;    /* when it last needed room (or joined) */
};

struct bp_ledger {
	uint64_t magic;
	uint32_t version, size;
	uint32_t budget, slack; /* pages */
	_Atomic uint32_t total;
	_Atomic uint32_t peak;
	_Atomic uint32_t progress; /* futex: bumped when pages are given back */
	_Atomic uint32_t waiters;
	_Atomic uint64_t over, asks, ask_timeouts, reclaimed;
	char pad[BP_CACHELINE];
	struct tslot slot[TREE_SLOTS];
};

_Static_assert(sizeof(struct bp_ledger) <= BP_TREE_SIZE, "ledger too large");
_Static_assert(sizeof(struct tslot) == 64, "a slot is a cache line");

/* A process's membership (one per joined pager). */
struct bp_tree {
	struct bp_ledger *L;
	unsigned slot;
	pid_t pid;            /* the process the slot is ours in */
	_Atomic bool stop;
	bool start_pending;   /* a fork child's thread, started after the fork */
	int listed;           /* its index in g_trees, or -1 */
	struct bp_thread thread;
	struct bypass_pager *p;
};

/*
 * The memberships of this process, for the fork child's handler below.  A
 * child that keeps the pager takes its slot in bp_tree_child, called from
 * the pager's own fork child handler (evict.c) before the child's ring,
 * write-back records and handler threads are its own (share.c); a ledger
 * thread started there could be asked at once and evict meanwhile, without
 * the evict lock that the re-arming does not take: Redis's BGSAVE child
 * under scope=tree hung in bp_evict_drain, waiting for write-backs that
 * were never in its ring, its ledger thread waiting for the evict lock.
 * So the child's thread starts from a child handler of ours, registered at
 * the first join, after the pager's (registered when the pager was
 * created): child handlers run in the order they were registered.
 */
#define TREE_LISTED 16
static struct bp_tree *_Atomic g_trees[TREE_LISTED];
static pthread_once_t g_tree_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------ the ledger */

static void ledger_init(struct bp_ledger *L, size_t budget)
{
	uint64_t pages = budget >> PG_SHIFT;
	L->budget = pages > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)pages;
	/* what a member may take above the budget when nobody answers and it
	 * has nothing of its own to evict: 1/32 of it, at least 64 pages */
	L->slack = L->budget / 32 > 64 ? L->budget / 32 : 64;
	L->version = TREE_VERSION;
	L->size = BP_TREE_SIZE;
	atomic_store(&L->total, 0);
	L->magic = TREE_MAGIC;
}

static const char *ledger_check(int fd, struct bp_ledger **out)
{
	struct stat st;
	if (bp_sys_fcntl(fd, F_GETFD, 0) < 0)
		return "not an open descriptor";
	if (bp_sys_fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return "not a memfd";
	int seals = bp_sys_fcntl(fd, F_GET_SEALS, 0);
	if (seals < 0)
		return "not a memfd (no seals)";
	int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	if ((seals & need) != need)
		return "not sealed against resizing";
	if (st.st_size != BP_TREE_SIZE)
		return "not the size of a ledger";
	struct bp_ledger *L =
		bp_sys_mmap(NULL, BP_TREE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (L == MAP_FAILED)
		return "cannot be mapped";
	if (L->magic != TREE_MAGIC || L->version != TREE_VERSION || L->size != BP_TREE_SIZE ||
	    !L->budget || L->slack < 64) {
		bp_sys_munmap(L, BP_TREE_SIZE);
		return "not a ledger (magic, version or budget)";
	}
	*out = L;
	return NULL;
}

static bool slot_reclaim(struct bp_ledger *L, unsigned i, int32_t pid);

struct bp_ledger *bp_tree_open(const char *env, size_t budget, const char **why, int *fdp)
{
	*why = NULL;
	if (env && *env) {
		char *end;
		errno = 0;
		long v = strtol(env, &end, 10);
		struct bp_ledger *L = NULL;
		if (errno || *end || v < 0 || v > INT_MAX)
			*why = "not a descriptor number";
		else
			*why = ledger_check((int)v, &L);
		if (!*why) {
			/* A slot of our pid is our image before the exec: its
			 * pages are gone (a forked child that kept the pager,
			 * then exec'd a program that may never make one). */
			pid_t me = bp_sys_getpid();
			for (unsigned i = 0; i < TREE_SLOTS; i++)
				if (atomic_load(&L->slot[i].pid) == me)
					slot_reclaim(L, i, me);
			*fdp = (int)v;
			bp_fd_mark(*fdp); /* the library's: made before the exec */
			return L;
		}
	}
	int fd = bp_sys_memfd_create("bypass-pager-ledger", MFD_ALLOW_SEALING);
	if (fd < 0) {
		*fdp = -errno;
		return NULL;
	}
	fd = bp_fd_lift(fd, false); /* out of the way (core/fdhigh.h); exec keeps it */
	struct bp_ledger *L = MAP_FAILED;
	if (bp_sys_ftruncate(fd, BP_TREE_SIZE) == 0 &&
	    bp_sys_fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		L = bp_sys_mmap(NULL, BP_TREE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (L == MAP_FAILED) {
		*fdp = -errno;
		bp_sys_close(fd);
		return NULL;
	}
	ledger_init(L, budget);
	*fdp = fd;
	return L;
}

size_t bp_tree_budget(const struct bp_ledger *L)
{
	return (size_t)L->budget << PG_SHIFT;
}

static void ledger_progress(struct bp_ledger *L)
{
	atomic_fetch_add(&L->progress, 1);
	if (atomic_load(&L->waiters))
		bp_futex_wake(&L->progress, INT_MAX, true);
}

static void peak_raise(struct bp_ledger *L, uint32_t t)
{
	uint32_t pk = atomic_load_explicit(&L->peak, memory_order_relaxed);
	while (t > pk && !atomic_compare_exchange_weak(&L->peak, &pk, t))
		;
}

/* A slot's process is gone: give its charge back (whoever wins the CAS). */
static bool slot_reclaim(struct bp_ledger *L, unsigned i, int32_t pid)
{
	if (!atomic_compare_exchange_strong(&L->slot[i].pid, &pid, -1))
		return false;
	uint32_t c = atomic_exchange(&L->slot[i].charge, 0);
	atomic_store(&L->slot[i].want, 0);
	atomic_fetch_sub(&L->total, c);
	atomic_store(&L->slot[i].pid, 0);
	ledger_progress(L);
	return true;
}

static bool pid_gone(pid_t pid)
{
	int fd = -1;
	int alive = bp_proc_alive(pid, &fd);
	if (fd >= 0)
		bp_sys_close(fd);
	return !alive;
}

/* A free slot for pid (its charge 0), or -1: every slot in use. */
static int slot_take(struct bp_ledger *L, pid_t pid)
{
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < TREE_SLOTS; i++) {
			int32_t z = 0;
			if (atomic_load_explicit(&L->slot[i].pid, memory_order_relaxed) == 0 &&
			    atomic_compare_exchange_strong(&L->slot[i].pid, &z, (int32_t)pid)) {
				struct tslot *s = &L->slot[i];
				atomic_store(&s->want, 0);
				/* the counters are the new member's (a reused slot) */
				atomic_store(&s->answered, 0);
				atomic_store(&s->asks_made, 0);
				atomic_store(&s->waits, 0);
				atomic_store(&s->wait_ns, 0);
				atomic_store(&s->own_pages, 0);
				atomic_store(&s->served_pages, 0);
				atomic_store(&s->active_ns, bypass_now_ns());
				return (int)i;
			}
		}
		/* full: give back the slots of gone processes, once */
		for (unsigned i = 0; i < TREE_SLOTS; i++) {
			int32_t q = atomic_load(&L->slot[i].pid);
			if (q > 0 && pid_gone(q) && slot_reclaim(L, i, q))
				atomic_fetch_add(&L->reclaimed, 1);
		}
	}
	return -1;
}

/* ------------------------------------------------------------ charges */

static struct bp_tree *tree_of(struct bypass_pager *p)
{
	return atomic_load_explicit(&p->tree, memory_order_acquire);
}

void bp_tree_charge(struct bypass_pager *p, uint32_t n)
{
	struct bp_tree *T = tree_of(p);
	if (!T || !n)
		return;
	struct bp_ledger *L = T->L;
	atomic_fetch_add(&L->slot[T->slot].charge, n);
	uint32_t t = atomic_fetch_add(&L->total, n) + n;
	if (t > L->budget)
		atomic_fetch_add(&L->over, n);
	peak_raise(L, t);
}

void bp_tree_uncharge(struct bypass_pager *p, uint32_t n)
{
	struct bp_tree *T = tree_of(p);
	if (!T || !n)
		return;
	struct bp_ledger *L = T->L;
	/* a slot given back (we were taken for gone, or left) charges nothing */
	uint32_t c = atomic_load(&L->slot[T->slot].charge);
	for (;;) {
		uint32_t k = c < n ? c : n;
		if (!k)
			return;
		if (atomic_compare_exchange_weak(&L->slot[T->slot].charge, &c, c - k)) {
			atomic_fetch_sub(&L->total, k);
			break;
		}
	}
	ledger_progress(L);
}

/* n more pages in the tree if that keeps it at or below limit. */
static bool ledger_take(struct bp_tree *T, uint32_t n, uint32_t limit)
{
	struct bp_ledger *L = T->L;
	uint32_t t = atomic_load(&L->total);
	while (t + n <= limit)
		if (atomic_compare_exchange_weak(&L->total, &t, t + n)) {
			atomic_fetch_add(&L->slot[T->slot].charge, n);
			peak_raise(L, t + n);
			return true;
		}
	return false;
}

static void local_add(struct bypass_pager *p, uint32_t n)
{
	uint32_t r = atomic_fetch_add(&p->bud.resident, n) + n;
	uint64_t peak = atomic_load_explicit(&p->bud.peak, memory_order_relaxed);
	while (r > peak && !atomic_compare_exchange_weak(&p->bud.peak, &peak, r))
		;
}

/* The member holding the most pages, other than us; -1 if none holds any.
 * *idle: the idle member (no room needed for IDLE_NS) holding the most, at
 * least ASK_MIN pages, or -1. */
static int biggest_other(struct bp_tree *T, uint32_t *charge, uint64_t now, int *idle)
{
	struct bp_ledger *L = T->L;
	int best = -1, cold = -1;
	uint32_t most = 0, most_cold = ASK_MIN - 1;
	for (unsigned i = 0; i < TREE_SLOTS; i++) {
		if (i == T->slot)
			continue;
		int32_t q = atomic_load_explicit(&L->slot[i].pid, memory_order_relaxed);
		uint32_t c = atomic_load_explicit(&L->slot[i].charge, memory_order_relaxed);
		if (q <= 0)
			continue;
		if (c > most) {
			best = (int)i;
			most = c;
		}
		uint64_t a = atomic_load_explicit(&L->slot[i].active_ns, memory_order_relaxed);
		if (c > most_cold && now > a + IDLE_NS) { /* a after now: active */
			cold = (int)i;
			most_cold = c;
		}
	}
	*charge = most;
	*idle = cold;
	return best;
}

static void ask(struct bp_tree *T, unsigned v, uint32_t n)
{
	struct bp_ledger *L = T->L;
	atomic_fetch_add(&L->slot[v].want, n);
	atomic_fetch_add(&L->slot[v].req, 1);
	bp_futex_wake(&L->slot[v].req, 1, true);
	atomic_fetch_add(&L->asks, 1);
	atomic_fetch_add_explicit(&L->slot[T->slot].asks_made, 1, memory_order_relaxed);
}

static void wait_ledger(struct bp_tree *T, uint32_t seen)
{
	struct bp_ledger *L = T->L;
	atomic_fetch_add_explicit(&L->slot[T->slot].waits, 1, memory_order_relaxed);
	atomic_fetch_add(&L->waiters, 1);
	if (atomic_load(&L->progress) == seen)
		bp_futex_wait(&L->progress, seen, 1000000, true);
	atomic_fetch_sub(&L->waiters, 1);
}

static int tree_reserve(struct bp_tree *T, struct bypass_pager *p, uint32_t n, uint32_t limit);

int bp_tree_reserve(struct bypass_pager *p, uint32_t n, bool must, uint32_t limit)
{
	struct bp_tree *T = tree_of(p);
	if (ledger_take(T, n, limit)) {
		local_add(p, n);
		return 0;
	}
	if (!must)
		return -EAGAIN;
	uint64_t t0 = bypass_now_ns();
	atomic_store_explicit(&T->L->slot[T->slot].active_ns, t0, memory_order_relaxed);
	int e = tree_reserve(T, p, n, limit);
	atomic_fetch_add_explicit(&T->L->slot[T->slot].wait_ns, bypass_now_ns() - t0,
				  memory_order_relaxed);
	return e;
}

/* The tree was full: room for n pages, waiting, evicting or asking. */
static int tree_reserve(struct bp_tree *T, struct bypass_pager *p, uint32_t n, uint32_t limit)
{
	struct bp_ledger *L = T->L;
	uint64_t asked = 0, stuck = 0, answered = 0;
	int victim = -1;
	for (;;) {
		if (ledger_take(T, n, limit)) {
			local_add(p, n);
			return 0;
		}
		/* A fork of this process is being prepared (the gate closed,
		 * or the read-back path's forking flag): take the room at once,
		 * above the budget if need be and counted, as bp_pager_reserve
		 * does at its entry (reserve_forking).  Checked at every turn:
		 * a fork that begins while this thread waits here waits for it
		 * (gate_close: this thread is inside the gate), and the evict
		 * lock our own eviction needs is the forking thread's. */
		if (bp_unlikely(atomic_load(&p->bud.forking) || bp_gate_closed(p))) {
			local_add(p, n);
			bp_tree_charge(p, n);
			return 0;
		}
		uint32_t seen = atomic_load(&L->progress);
		uint32_t own = atomic_load(&L->slot[T->slot].charge), most;
		uint64_t now = bypass_now_ns();
		int idle;
		int v = biggest_other(T, &most, now, &idle);
		bool timed_out = asked && now - asked > ASK_WAIT_NS;
		/* An idle member's pages are the tree's coldest: taken first,
		 * whoever holds more (a BGSAVE child reading its whole copy
		 * while the server waits: without this they split the budget
		 * in half, and the child faulted 1.65x as often).  Asked for
		 * more at once: it is not using them. */
		uint32_t want = n < ASK_MIN ? ASK_MIN : n;
		if (idle >= 0 && !timed_out) {
			v = idle;
			most = own + 1;
			if (want < L->budget / 32)
				want = L->budget / 32;
		}
		if (v >= 0 && most > own && !timed_out) {
			/* another holds more: ask it, if it is there */
			int32_t q = atomic_load(&L->slot[v].pid);
			if (q > 0 && pid_gone(q)) {
				if (slot_reclaim(L, (unsigned)v, q))
					atomic_fetch_add(&L->reclaimed, 1);
				continue;
			}
			/* again once it answered (others may have taken what
			 * it freed) or when another holds the most now */
			uint64_t a = atomic_load(&L->slot[v].answered);
			if (v != victim || !asked || a != answered) {
				answered = a;
				ask(T, (unsigned)v, want);
				victim = v;
				if (!asked)
					asked = now;
			}
			wait_ledger(T, seen);
			continue;
		}
		if (timed_out && victim >= 0) {
			atomic_fetch_add(&L->ask_timeouts, 1);
			/* not answering (stopped, say): not taken for idle again
			 * before IDLE_HOLD_NS, or every reservation would wait
			 * out its ask */
			atomic_store(&L->slot[victim].active_ns, now + IDLE_HOLD_NS);
			victim = -1;
		}
		/* our own pages: we hold the most, or nobody answered */
		uint32_t got = own ? bp_evict_for_tree(p, n, false) : 0;
		if (got) {
			atomic_fetch_add_explicit(&L->slot[T->slot].own_pages, got,
						  memory_order_relaxed);
			continue;
		}
		if (atomic_load(&L->progress) != seen) {
			stuck = 0;
			continue;
		}
		/* nothing of ours to evict, and nobody else has any or answers:
		 * above the budget, bounded */
		uint32_t t = atomic_load(&L->total);
		if (!own && (timed_out || v < 0)) {
			if (t + n <= L->budget + L->slack &&
			    atomic_compare_exchange_strong(&L->total, &t, t + n)) {
				atomic_fetch_add(&L->slot[T->slot].charge, n);
				atomic_fetch_add(&L->over, n);
				peak_raise(L, t + n);
				local_add(p, n);
				return 0;
			}
			asked = 0; /* ask again */
		}
		if (!stuck) {
			stuck = now;
		} else if (now - stuck > STUCK_NS) {
			bp_err("bypass: pager: the process tree's budget is full (%u of %u "
			       "pages, %u ours) and nobody gives room back",
			       atomic_load(&L->total), L->budget, own);
			return -ENOMEM;
		}
		wait_ledger(T, seen);
	}
}

/* ------------------------------------------------------------ the thread */

/* Serve requests: evict what the others ask for.  Asleep on the request
 * word otherwise (one futex wait; no polling). */
static void *tree_main(void *arg)
{
	struct bp_tree *T = arg;
	bp_enter_for_good(); /* the library's own thread */
	struct tslot *s = &T->L->slot[T->slot];
	while (!atomic_load(&T->stop)) {
		uint32_t seen = atomic_load(&s->req);
		uint32_t want = atomic_exchange(&s->want, 0);
		if (want) {
			uint32_t done = 0;
			for (int k = 0; k < 16 && done < want && atomic_load(&s->charge); k++) {
				uint32_t got = bp_evict_for_tree(T->p, want - done, true);
				if (!got)
					break;
				done += got;
			}
			atomic_fetch_add_explicit(&s->served_pages, done, memory_order_relaxed);
			atomic_fetch_add(&s->answered, 1);
			ledger_progress(T->L);
			continue;
		}
		bp_futex_wait(&s->req, seen, -1, true);
	}
	return NULL;
}

static int thread_start(struct bp_tree *T)
{
	return bp_thread_start(&T->thread, tree_main, T);
}

static void tree_fork_child(void)
{
	pid_t me = bp_sys_getpid();
	for (unsigned i = 0; i < TREE_LISTED; i++) {
		struct bp_tree *T = atomic_load(&g_trees[i]);
		if (!T || !T->start_pending || T->pid != me)
			continue;
		T->start_pending = false;
		/* The parent's thread is forgotten (its stack unmapped) only
		 * now, just before ours is made: under AddressSanitizer that
		 * stack's shadow still says what the parent's frames were, and
		 * a region mapped into the hole meanwhile (the program's, after
		 * the fork) was reported as a bad stack access; a new stack
		 * there is made clean. */
		bp_thread_forget(&T->thread);
		if (thread_start(T))
			bp_err("bypass: pager: fork: the child's ledger thread did not start; "
			       "it evicts only for itself");
	}
}

static void tree_fork_init(void)
{
	pthread_atfork(NULL, NULL, tree_fork_child);
}

static void tree_list(struct bp_tree *T)
{
	T->listed = -1;
	for (unsigned i = 0; i < TREE_LISTED; i++) {
		struct bp_tree *z = NULL;
		if (atomic_compare_exchange_strong(&g_trees[i], &z, T)) {
			T->listed = (int)i;
			return;
		}
	}
}

static void tree_unlist(struct bp_tree *T)
{
	if (T->listed >= 0)
		atomic_store(&g_trees[T->listed], NULL);
	T->listed = -1;
}

static void thread_stop(struct bp_tree *T)
{
	atomic_store(&T->stop, true);
	atomic_fetch_add(&T->L->slot[T->slot].req, 1);
	bp_futex_wake(&T->L->slot[T->slot].req, INT_MAX, true);
	bp_thread_join(&T->thread);
	atomic_store(&T->stop, false);
}

/* ------------------------------------------------------------ membership */

int bp_tree_join(struct bypass_pager *p, struct bp_ledger *L)
{
	/* The slots of our pid's image before an exec were given back when
	 * the ledger was found (bp_tree_open); one of our pid now is another
	 * pager's of this process (tests join two): not to be given back. */
	pid_t me = bp_sys_getpid();
	pthread_once(&g_tree_once, tree_fork_init); /* after the pager's handlers */
	struct bp_tree *T = bp_pg_calloc(1, sizeof(*T));
	if (!T)
		return -ENOMEM;
	int s = slot_take(L, me);
	if (s < 0) {
		bp_pg_free(T);
		bp_err("bypass: pager: the process tree's ledger has no free slot (%u "
		       "processes); this one keeps a budget of its own", TREE_SLOTS);
		return -EUSERS;
	}
	T->L = L;
	T->slot = (unsigned)s;
	T->pid = me;
	T->p = p;
	int e = thread_start(T);
	if (e) {
		atomic_store(&L->slot[s].pid, 0);
		bp_pg_free(T);
		return e;
	}
	tree_list(T);
	/* pages already resident (none, before the first map) */
	atomic_store_explicit(&p->tree, T, memory_order_release);
	bp_tree_charge(p, atomic_load(&p->bud.resident));
	return 0;
}

void (*bp_tree_test_child_hook)(struct bypass_pager *p);

static void tree_child(struct bypass_pager *p)
{
	struct bp_tree *T = tree_of(p);
	if (!T)
		return;
	atomic_store(&T->stop, false);
	pid_t me = bp_sys_getpid();
	int s = slot_take(T->L, me);
	if (s < 0) {
		bp_thread_forget(&T->thread); /* the parent's */
		bp_err("bypass: pager: fork: the process tree's ledger has no free slot; "
		       "this child keeps a budget of its own");
		atomic_store(&p->tree, NULL);
		return;
	}
	T->slot = (unsigned)s;
	T->pid = me;
	/* The copies of the parent's resident pages are ours too (shared
	 * copy-on-write until written): charged, so the tree evicts them
	 * before it grows, but not a peak (no memory was added) */
	uint32_t n = atomic_load(&p->bud.resident);
	atomic_fetch_add(&T->L->slot[s].charge, n);
	atomic_fetch_add(&T->L->total, n);
	if (T->listed >= 0) { /* once the fork's handlers are done (above) */
		T->start_pending = true;
		return;
	}
	bp_thread_forget(&T->thread); /* the parent's */
	if (thread_start(T))
		bp_err("bypass: pager: fork: the child's ledger thread did not start; it "
		       "evicts only for itself");
}

void bp_tree_child(struct bypass_pager *p)
{
	tree_child(p);
	/* tests/pager/tree-fork-ask: where an ask may reach the child before
	 * its pager is re-armed */
	if (bp_unlikely(bp_tree_test_child_hook != NULL))
		bp_tree_test_child_hook(p);
}

void bp_tree_leave(struct bypass_pager *p)
{
	struct bp_tree *T = tree_of(p);
	if (!T)
		return;
	atomic_store(&p->tree, NULL);
	tree_unlist(T);
	if (T->pid != bp_sys_getpid()) { /* a fork child's copy of the parent's */
		bp_thread_forget(&T->thread);
		bp_pg_free(T);
		return;
	}
	if (T->start_pending) /* left before its fork's handlers ended */
		bp_thread_forget(&T->thread); /* the parent's */
	else
		thread_stop(T);
	int32_t me = T->pid;
	slot_reclaim(T->L, T->slot, me);
	bp_pg_free(T);
}

void bp_tree_stats(struct bypass_pager *p, struct bp_tree_stats *st)
{
	memset(st, 0, sizeof(*st));
	struct bp_tree *T = p ? tree_of(p) : NULL;
	if (!T)
		return;
	struct bp_ledger *L = T->L;
	st->budget_pages = L->budget;
	st->slack_pages = L->slack;
	st->total_pages = atomic_load(&L->total);
	st->peak_pages = atomic_load(&L->peak);
	st->over_pages = atomic_load(&L->over);
	st->asks = atomic_load(&L->asks);
	st->ask_timeouts = atomic_load(&L->ask_timeouts);
	st->reclaimed = atomic_load(&L->reclaimed);
	struct tslot *s = &L->slot[T->slot];
	st->answered = atomic_load(&s->answered);
	st->asks_made = atomic_load(&s->asks_made);
	st->waits = atomic_load(&s->waits);
	st->wait_ns = atomic_load(&s->wait_ns);
	st->own_pages = atomic_load(&s->own_pages);
	st->served_pages = atomic_load(&s->served_pages);
	for (unsigned i = 0; i < TREE_SLOTS; i++)
		st->members += atomic_load_explicit(&L->slot[i].pid, memory_order_relaxed) > 0;
}

struct bp_ledger *bp_tree_ledger(struct bypass_pager *p)
{
	struct bp_tree *T = tree_of(p);
	return T ? T->L : NULL;
}
