/* SPDX-License-Identifier: MIT */
/*
 * Swap slots shared copy-on-write between a process and its forked
 * descendants (issue 32 item 2: fork without reading back).
 *
 * A forked child has the parent's page table (resident pages, shared
 * copy-on-write by the kernel) and a copy of the pager's page metadata,
 * which says where every evicted page is: a slot of the parent's swap file,
 * whose descriptor the child inherits.  So the child reads an evicted page
 * from there when it faults on it, and nothing is read back at the fork.
 * What must not happen is the parent writing something else into a slot
 * the child still needs.  Each swap file has an owner, the process that
 * made it (at level 0 the first process; a child makes its own at the next
 * level, where its own evictions go: pg.slot says the level); the owner
 * allocates its slots, and every descendant that references some of them
 * holds an entry in the owner's registry: a bitmap of the slots it still
 * needs, in memory every process of the tree shares (a memfd, MAP_SHARED,
 * made by the owner at its first fork and inherited from then on).  A
 * slot is free for its owner when its own bitmap and every live entry's
 * have it clear.  A descendant that no longer needs a slot (the page was
 * written, unmapped, or evicted into its own file) clears its bit.
 *
 * At a fork the parent gives the child an entry in the registry of every
 * level it references: for its own file, a copy of its slot bitmap (the
 * child references at most the slots the parent uses); for each ancestor's
 * file, a copy of its own entry there (a subset of what that entry already
 * holds, so the ancestor's allocator cannot race with it).  A copy of a
 * bitmap is a memcpy: the fork costs one bit per slot of each level, not a
 * reference count per page.
 *
 * An entry is given back when its process is gone: the owner collects
 * entries (bp_share_collect) when its slots run out, when its registry is
 * full, and on request (tests).  Gone means the process no longer exists,
 * or no longer maps the registry (it exec'd: a child that execs drops its
 * references; or its pid was reused).  An entry claimed for a fork that
 * failed is never adopted and stays until the owner exits (the fork
 * handlers cannot tell a failed fork from a slow child).
 *
 * The gate: a fork must find no page lock held and no LRU list half
 * changed, or the child would inherit a lock nobody releases.  Everything
 * that takes page locks outside the evict lock (serving a fault, pinning,
 * the prefetcher's reads, the access sampler) passes the gate; the fork
 * closes it and waits for the ones inside to leave (they never wait for
 * the fork: reservations take room at once while it is closed).  Serves
 * that arrive meanwhile wait at the gate; the prefetcher and the sampler
 * skip their work.
 */
#include "pager/page.h"
#include "pager/lock.h"
#include "pager/table.h"
#include "pager/stats.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/share.h"
#include "pager/fault.h"
#include "pager/setup.h"
#include "pager/read.h"
#include "pager/evict.h"
#include "pager/tier.h"
#include "pager/lru.h"
#include "pager/sample.h"
#include "pager/uffd.h"
#include "pager/policy.h"
#include "core/syscall.h"
#include "core/uring.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REF_MAGIC 0x66727062u /* "bprf" */
#define REF_HDR 4096u
#define REF_NAME "bypass-pager-refs"
enum { RE_FREE = 0, RE_PENDING = 1, RE_LIVE = 2 };

struct pg_refs {
	uint32_t magic, nwords;       /* bitmap words per entry */
	_Atomic uint32_t live;        /* bit e: entry e's bitmap holds slots */
	uint32_t pad;
	struct {
		_Atomic int32_t pid;  /* the process holding it (0: not adopted) */
		_Atomic uint32_t state;
	} e[PG_REF_ENTRIES];
};

static inline _Atomic uint64_t *ref_bm(struct pg_refs *r, unsigned e)
{
	return (_Atomic uint64_t *)((char *)r + REF_HDR + (size_t)e * r->nwords * 8);
}

static size_t refs_size(uint32_t nwords)
{
	return REF_HDR + (size_t)PG_REF_ENTRIES * nwords * 8;
}

/* ------------------------------------------------------------ the gate */

static __thread unsigned gate_slot __attribute__((tls_model("initial-exec")));

static _Atomic uint32_t *gate_mine(struct bypass_pager *p)
{
	if (!gate_slot) /* threads numbered on first use, as the counters */
		gate_slot = bp_stat_shard() + 1;
	return &p->gate.busy[(gate_slot - 1) % PG_ENG_SLOTS].n;
}

bool bp_gate_tryenter(struct bypass_pager *p)
{
	if (atomic_load_explicit(&p->gate.owner, memory_order_relaxed) == bp_tid())
		return true; /* the forking thread itself (fetch_all) */
	_Atomic uint32_t *c = gate_mine(p);
	atomic_fetch_add(c, 1);
	if (!atomic_load(&p->gate.closed))
		return true;
	atomic_fetch_sub(c, 1);
	return false;
}

void bp_gate_enter(struct bypass_pager *p)
{
	while (!bp_gate_tryenter(p)) {
		uint32_t v = atomic_load(&p->gate.closed);
		if (v)
			bp_futex_wait(&p->gate.closed, v, 100000000, false);
	}
}

void bp_gate_leave(struct bypass_pager *p)
{
	if (atomic_load_explicit(&p->gate.owner, memory_order_relaxed) == bp_tid())
		return;
	atomic_fetch_sub(gate_mine(p), 1);
}

bool bp_gate_closed(const struct bypass_pager *p)
{
	return atomic_load_explicit(&p->gate.closed, memory_order_acquire) != 0;
}

bool bp_gate_owned_by(const struct bypass_pager *p, pid_t tid)
{
	/* stable while tid's fault waits: only tid opens the gate */
	return tid && bp_gate_closed(p) && atomic_load(&p->gate.owner) == tid;
}

/* Close the gate and wait until nobody is inside (the calling thread
 * passes it from now on). */
static void gate_close(struct bypass_pager *p)
{
	atomic_store(&p->gate.owner, bp_tid());
	atomic_store(&p->gate.closed, 1);
	for (unsigned spins = 0;; spins++) {
		uint32_t n = 0;
		for (unsigned i = 0; i < PG_ENG_SLOTS; i++)
			n += atomic_load(&p->gate.busy[i].n);
		if (!n)
			return;
		if (spins < 100) {
			bp_cpu_relax();
		} else {
			struct timespec ts = { 0, 20000 };
			bp_sys_nanosleep(&ts, NULL);
		}
	}
}

static void gate_open(struct bypass_pager *p)
{
	atomic_store(&p->gate.owner, 0);
	atomic_store(&p->gate.closed, 0);
	bp_futex_wake(&p->gate.closed, INT_MAX, false);
}

/* ------------------------------------------------------------ registries */

static struct pg_refs *refs_make(struct bypass_pager *p)
{
	uint32_t nwords = (p->swap.nslots + 63) / 64;
	int fd = bp_sys_memfd_create(REF_NAME, MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	size_t len = refs_size(nwords);
	void *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)len) == 0 && bp_sys_fstat(fd, &st) == 0)
		m = bp_sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	bp_sys_close(fd);
	if (m == MAP_FAILED)
		return NULL;
	struct pg_refs *r = m;
	r->magic = REF_MAGIC;
	r->nwords = nwords;
	unsigned d = p->lin.depth;
	p->lin.refs[d] = r;
	p->lin.refs_ino = (uint64_t)st.st_ino;
	return r;
}

/* A free entry of r, claimed (PENDING); -1 if none. */
static int ent_claim(struct pg_refs *r)
{
	for (unsigned e = 0; e < PG_REF_ENTRIES; e++) {
		uint32_t fr = RE_FREE;
		if (atomic_compare_exchange_strong(&r->e[e].state, &fr, RE_PENDING)) {
			atomic_store(&r->e[e].pid, 0);
			return (int)e;
		}
	}
	return -1;
}

static void ent_release(struct pg_refs *r, unsigned e)
{
	atomic_fetch_and(&r->live, ~(1u << e));
	atomic_store(&r->e[e].pid, 0);
	atomic_store(&r->e[e].state, RE_FREE);
}

/* Does process pid map the registry whose inode is ino?  Read from
 * /proc/pid/maps with system calls only (this may run in a fault). */
static bool maps_registry(pid_t pid, uint64_t ino)
{
	char path[64], want[64];
	int n = snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	int wn = snprintf(want, sizeof(want), " %llu ", (unsigned long long)ino);
	if (n < 0 || wn < 0)
		return true;
	int fd = bp_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return errno != ENOENT && errno != ESRCH; /* unknown: keep it */
	char buf[8192];
	size_t have = 0;
	bool found = false, done = false;
	while (!found && !done) {
		ssize_t k = bp_sys_read(fd, buf + have, sizeof(buf) - 1 - have);
		if (k <= 0)
			done = true;
		else
			have += (size_t)k;
		buf[have] = 0;
		/* whole lines only */
		char *end = strrchr(buf, '\n');
		if (!end && !done && have < sizeof(buf) - 1)
			continue;
		size_t upto = end ? (size_t)(end - buf) + 1 : have;
		char save = buf[upto];
		buf[upto] = 0;
		for (char *line = buf; line && *line;) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = 0;
			if (strstr(line, REF_NAME) && strstr(line, want))
				found = true;
			line = nl ? nl + 1 : NULL;
		}
		buf[upto] = save;
		memmove(buf, buf + upto, have - upto);
		have -= upto;
	}
	bp_sys_close(fd);
	return found;
}

unsigned bp_share_collect(struct bypass_pager *p)
{
	struct pg_refs *r = p->lin.refs[p->lin.depth];
	if (!r)
		return 0;
	unsigned freed = 0;
	uint32_t live = atomic_load(&r->live);
	for (unsigned e = 0; e < PG_REF_ENTRIES; e++) {
		if (!(live & (1u << e)) || atomic_load(&r->e[e].state) != RE_LIVE)
			continue;
		pid_t pid = atomic_load(&r->e[e].pid);
		bool gone = pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH) ||
			    !maps_registry(pid, p->lin.refs_ino);
		if (gone) {
			ent_release(r, e);
			freed++;
		}
	}
	if (freed)
		bp_debug("bypass: pager: %u forked processes no longer hold swap slots", freed);
	return freed;
}

unsigned bp_share_holders(struct bypass_pager *p)
{
	struct pg_refs *r = p->lin.refs[p->lin.depth];
	return r ? (unsigned)__builtin_popcount(atomic_load(&r->live)) : 0;
}

/* ------------------------------------------------------------ slots */

uint64_t bp_share_busy(struct bypass_pager *p, uint32_t w)
{
	struct pg_refs *r = p->lin.refs[p->lin.depth];
	if (!r)
		return 0;
	uint32_t live = atomic_load_explicit(&r->live, memory_order_acquire);
	uint64_t m = 0;
	while (live) {
		unsigned e = (unsigned)__builtin_ctz(live);
		live &= live - 1;
		m |= atomic_load_explicit(&ref_bm(r, e)[w], memory_order_relaxed);
	}
	return m;
}

void bp_share_drop(struct bypass_pager *p, uint32_t slot1)
{
	unsigned l = slot_level(slot1);
	uint32_t s = slot_index(slot1);
	if (l >= p->lin.depth || !p->lin.mine[l])
		return; /* cannot happen: a slot of a level not ours */
	atomic_fetch_and_explicit(&p->lin.mine[l][s / 64], ~(1ull << (s % 64)),
				  memory_order_relaxed);
}

int bp_share_fd(struct bypass_pager *p, uint32_t slot1)
{
	unsigned l = slot_level(slot1);
	return l == p->lin.depth ? p->swap.fd : p->lin.fd[l];
}

/* ------------------------------------------------------------ fork */

/* Can p's regions go to a child without reading back? */
static bool can_share(struct bypass_pager *p)
{
	if (p->cfg.mode == BYPASS_PAGER_ADAPTIVE || atomic_load(&p->heat) || !p->swap.dir ||
	    p->lin.depth + 1 >= PG_LEVELS || p->swap.nslots > PG_SLOT_MASK - 1)
		return false;
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer refuses new threads in the child of a threaded
	 * process: a pager that needs its handler threads there reads back */
	if (p->srv.nlive)
		return false;
#endif
	return true;
}

/* Give the child (to be) an entry at every level p references; false (and
 * nothing claimed) if a registry cannot be made or is full. */
static bool claim_for_child(struct bypass_pager *p)
{
	unsigned d = p->lin.depth;
	for (unsigned l = 0; l <= d; l++)
		p->lin.pend[l] = -1;
	if (!p->lin.refs[d] && !refs_make(p))
		return false;
	for (unsigned l = 0; l <= d; l++) {
		struct pg_refs *r = p->lin.refs[l];
		int e = ent_claim(r);
		if (e < 0 && l == d && bp_share_collect(p))
			e = ent_claim(r);
		if (e < 0)
			goto undo;
		p->lin.pend[l] = e;
		/* what the child references: at our level our slot bitmap,
		 * below it our own entry there */
		const _Atomic uint64_t *from = l == d ? p->swap.slotmap : p->lin.mine[l];
		_Atomic uint64_t *to = ref_bm(r, (unsigned)e);
		for (uint32_t w = 0; w < r->nwords; w++)
			atomic_store_explicit(&to[w],
					      atomic_load_explicit(&from[w], memory_order_relaxed),
					      memory_order_relaxed);
		atomic_fetch_or_explicit(&r->live, 1u << e, memory_order_release);
	}
	return true;
undo:
	for (unsigned l = 0; l <= d; l++)
		if (p->lin.pend[l] >= 0) {
			ent_release(p->lin.refs[l], (unsigned)p->lin.pend[l]);
			p->lin.pend[l] = -1;
		}
	bp_info("bypass: pager: fork: no room in a registry of swap-slot holders; this "
		"fork reads the evicted pages back");
	return false;
}

bool bp_share_prepare(struct bypass_pager *p)
{
	p->lin.share = false;
	if (!can_share(p))
		return false;
	gate_close(p);
	/* nobody inside: no page lock held, no LRU list half changed, no
	 * prefetch read in flight; the parked pages back in the page table */
	bp_sample_unpark_now(p);
	bp_plock_lock_serialized(&p->ev.lock);
	bp_evict_drain(p);
	/* the child reads our slots from our file: the compressed pool's
	 * pool-only copies written there first (kept in the pool); if one
	 * cannot be, this fork reads back instead */
	struct bp_tier *t = atomic_load_explicit(&p->tier, memory_order_acquire);
	if (t && bp_tier_flush(p, t)) {
		bp_plock_unlock(&p->ev.lock);
		gate_open(p);
		return false;
	}
	p->lin.share = claim_for_child(p);
	if (!p->lin.share) {
		bp_plock_unlock(&p->ev.lock);
		gate_open(p);
	}
	return p->lin.share;
}

void bp_share_parent(struct bypass_pager *p)
{
	bp_plock_unlock(&p->ev.lock);
	gate_open(p);
	p->lin.share = false;
}

bool bp_share_kept(const struct bypass_pager *p)
{
	return p->lin.share;
}

/* ------------------------------------------------------------ the child */

/* A new userfaultfd in place of fd (the parent's context, inherited), at
 * the same descriptor number: the regions' records stay right. */
static int uffd_renew(int fd, bool user_mode_only, uint64_t features)
{
	int n = bp_uffd_open(user_mode_only);
	if (n < 0)
		return n;
	int e = bp_uffd_setup(n, features);
	if (!e && bp_sys_dup3(n, fd, O_CLOEXEC) < 0)
		e = -errno;
	bp_sys_close(n);
	return e;
}

/* A new descriptor from mk() in place of *fd (inherited: the parent's). */
static int fd_renew(int fd, int n)
{
	if (n < 0)
		return -errno;
	int e = bp_sys_dup3(n, fd, O_CLOEXEC) < 0 ? -errno : 0;
	bp_sys_close(n);
	return e;
}

/*
 * The child of a fork that kept p (bp_share_prepare): p becomes the
 * child's pager, one level down.  Runs in the fork handler, before the
 * program's code: every lock and counter of the parent's other threads
 * reset, new userfaultfds registered over the regions (what the kernel did
 * not copy: the registrations and the write-protection of clean pages), a
 * swap file of its own for its evictions, new rings, the pager's threads
 * again.  The pages resident at the fork are the child's (copy-on-write)
 * and count against its budget; the evicted ones stay in the parent's
 * slots, now held by the child's entries.  0, or -errno: the child cannot
 * page its regions (the caller aborts it rather than let it read zeros).
 */
int bp_share_child(struct bypass_pager *p)
{
	unsigned gen = bp_fork_gen();
	int e = 0;
	/* p->lock: taken by this very thread in the fork's prepare handler
	 * (bp_share_kept: it was prepared), so this thread unlocks it; a
	 * re-init would leave it locked in a sanitizer's eyes (TSan: "destroy
	 * of a locked mutex" at the child's bypass_pager_destroy).  Then what
	 * the parent's other threads held or counted. */
	pthread_mutex_unlock(&p->lock);
	atomic_store(&p->ev.lock.v, 0);
	atomic_store(&p->gate.closed, 0);
	atomic_store(&p->gate.owner, 0);
	for (unsigned i = 0; i < PG_ENG_SLOTS; i++)
		atomic_store(&p->gate.busy[i].n, 0);
	atomic_store(&p->bud.waiters, 0);
	p->cfg.gen = gen;
	memset(p->st, 0, sizeof(p->st));
	atomic_store(&p->bud.peak, atomic_load(&p->bud.resident));
	/* the parent's threads' copies, freed before anything new is mapped
	 * (the sampler's parking area is not inherited: MADV_DONTFORK) */
	bool sampler = atomic_load(&p->samp) != NULL, sampler_thread = false;
	if (sampler)
		sampler_thread = bp_sample_forget_child(p);
	bool prefetcher = atomic_load(&p->pf) != NULL;
	bp_pf_forget(p);

	/* one level down: the parent's file is read from here, ours is new */
	unsigned d = p->lin.depth;
	for (unsigned l = 0; l <= d; l++) {
		struct pg_refs *r = p->lin.refs[l];
		unsigned ent = (unsigned)p->lin.pend[l];
		p->lin.ent[l] = (int)ent;
		p->lin.mine[l] = ref_bm(r, ent);
		atomic_store(&r->e[ent].pid, (int32_t)getpid());
		atomic_store(&r->e[ent].state, RE_LIVE);
		p->lin.pend[l] = -1;
	}
	p->lin.fd[d] = p->swap.fd;
	p->lin.depth = d + 1;
	p->lin.refs_ino = 0;
	p->swap.fd = bp_swap_tmpfile(p, p->swap.dir, p->swap.direct);
	if (p->swap.fd < 0) {
		e = p->swap.fd;
		bp_err("bypass: pager: fork: the child's swap file in %s: %s", p->swap.dir,
		       strerror(-e));
		return e;
	}
	uint32_t words = (p->swap.nslots + 63) / 64;
	bp_pg_free((void *)p->swap.slotmap); /* the parent's, copied into our entry */
	p->swap.slotmap = bp_pg_calloc(words, sizeof(uint64_t));
	if (!p->swap.slotmap)
		return -ENOMEM;
	if (p->swap.nslots % 64) /* slots past the end are never free */
		atomic_store(&p->swap.slotmap[words - 1], ~0ull << (p->swap.nslots % 64));
	atomic_store(&p->swap.used, 0);
	p->swap.cursor = 0;

	/* process_madvise on ourselves, not on the parent; rings of our own
	 * (the parent's are mapped shared with it) */
	bp_evict_child(p);
	bool spin = p->srv.nrd != 0;
	bp_swap_read_fini(p);
	bp_swap_read_init(p, spin);

	/* userfaultfds, and the regions registered with them */
	if (p->srv.uffd_sigbus >= 0)
		e = uffd_renew(p->srv.uffd_sigbus, true,
			       UFFD_FEATURE_SIGBUS | UFFD_FEATURE_PAGEFAULT_FLAG_WP);
	if (!e && p->srv.uffd_thread >= 0)
		e = uffd_renew(p->srv.uffd_thread, false, bp_thread_uffd_features(p));
	if (!e && p->srv.stop_fd >= 0)
		e = fd_renew(p->srv.stop_fd, eventfd(0, EFD_CLOEXEC));
	if (e) {
		bp_err("bypass: pager: fork: the child's userfaultfd: %s", strerror(-e));
		return e;
	}
	struct regtab *t = bp_tab_get();
	for (size_t i = 0; t && !e && i < t->n; i++) {
		struct region *r = t->r[i];
		if (r->pager != p)
			continue;
		r->gen = gen;
		int fd = atomic_load(&r->uffd);
		e = bp_uffd_register(fd, r->start, r->end - r->start);
		/* the kernel dropped the write-protection of the clean pages:
		 * every present page again (a dirty one takes one spurious
		 * write-protect fault, resolve_other()) */
		if (!e)
			e = bp_uffd_wp(fd, r->start, r->end - r->start, true, false);
	}
	if (e) {
		bp_err("bypass: pager: fork: registering the child's regions: %s", strerror(-e));
		return e;
	}
	/* pins of the parent's other threads (system calls under way) */
	if (atomic_load(&p->bud.pinned))
		bp_share_unpin_all(p);

	/* threads */
	for (unsigned i = 0; i < p->srv.nlive; i++)
		bp_thread_forget(&p->srv.threads[i]); /* the parent's: stacks only */
	p->srv.nlive = 0;
	if (p->srv.uffd_thread >= 0 && (e = bp_pager_thread_start(p)) != 0) {
		bp_err("bypass: pager: fork: the child's handler threads: %s", strerror(-e));
		return e;
	}
#if !defined(__SANITIZE_THREAD__)
	/* optional: a child without them pages as well, with less foresight */
	if (prefetcher && bp_pf_start(p))
		bp_info("bypass: pager: fork: the child runs without prefetch");
	if (sampler && bp_sample_start(p, sampler_thread))
		bp_info("bypass: pager: fork: the child runs without access samples");
#else
	(void)prefetcher;
	(void)sampler_thread;
#endif
	p->lin.share = false;
	return 0;
}

/* The child's pager is destroyed: its entries are given back, its copies
 * of the ancestors' files and registries closed. */
void bp_share_fini(struct bypass_pager *p, bool release)
{
	for (unsigned l = 0; l <= p->lin.depth && l < PG_LEVELS; l++) {
		struct pg_refs *r = p->lin.refs[l];
		if (!r)
			continue;
		if (l < p->lin.depth) {
			if (release && p->lin.ent[l] >= 0)
				ent_release(r, (unsigned)p->lin.ent[l]);
			if (p->lin.fd[l] >= 0)
				bp_sys_close(p->lin.fd[l]);
		}
		bp_sys_munmap(r, refs_size(r->nwords));
		p->lin.refs[l] = NULL;
	}
}

static void unpin_one(struct bypass_pager *p, struct region *r, uint32_t id, void *arg)
{
	(void)r, (void)arg;
	struct pg *pg = pg_of(p, id);
	uint32_t w = atomic_load(&pg->w);
	if (!(w >> PW_PIN_SHIFT))
		return;
	atomic_fetch_and(&pg->w, (1u << PW_PIN_SHIFT) - 1);
	if (pg_state(w) == PS_RESIDENT)
		bp_lru_add(p, id, false);
}

void bp_share_unpin_all(struct bypass_pager *p)
{
	bp_tab_each_page(p, unpin_one, NULL);
	atomic_store(&p->bud.pinned, 0);
}
