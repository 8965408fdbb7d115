/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the validator with random programs (near-valid ones mostly: random
 * flags, jumps, argument kinds and references, forbidden and unknown call
 * numbers, non-zero reserved fields, step budgets).  For each program:
 * validate never crashes; it agrees with an independent checker written
 * here (dominance by reachability with the referenced atom removed, cycles
 * by search); an invalid program never runs (run and submit refuse it and a
 * counter its first atom would bump stays put); a valid one runs to the
 * completion a reference interpreter predicts (end atom, result, steps, the
 * counter, what each ret received).  Only harmless calls are ever valid
 * here: umem_add on a test variable, getppid, close(-1).
 *
 * Pointers the library dereferences are drawn bad too (issue 22): ret,
 * LOAD addresses and umem_add targets at NULL, small integers, a read-only
 * page (readable: a LOAD from it is fine), a PROT_NONE page, an unmapped
 * page, a file mapping past its end (SIGBUS), a non-canonical address; the
 * atom array at such an address or running into a PROT_NONE page; the
 * completion at one.  The reference says -EFAULT where a bad pointer is
 * met (the program ends there, or the call fails before anything ran).
 * Each program runs one of four ways: run() inline, run() with an ASYNC
 * atom (a worker), submit() on the auto engine (io_uring chains for the
 * close(-1) programs where io_uring works), submit() on the worker engine.
 *
 *   fuzz [N]        N programs (default 20000; BYPASS_SYSLET_FUZZ=N too)
 * TEST_LABELS: threads
 */
#include "util.h"

#include <sys/mman.h>

static int64_t ctr;
#define NRETS 4
static int64_t rets[NRETS];
#define SENTINEL ((int64_t)0x5a5a5a5a5a5a5a5all)
#define RO_VAL 3
static int64_t *ro_page, *none_page, *freed_page, *bus_page;
static char *two_pages; /* a read-write page, then a PROT_NONE one */
static long pg;
/* unreadable addresses (and the read-only page, readable but not writable) */
static void *bad_ptrs[7];

static void setup_memory(void)
{
	pg = sysconf(_SC_PAGESIZE);
	int rw = PROT_READ | PROT_WRITE, an = MAP_PRIVATE | MAP_ANONYMOUS;
	ro_page = mmap(NULL, (size_t)pg, rw, an, -1, 0);
	none_page = mmap(NULL, (size_t)pg, PROT_NONE, an, -1, 0);
	freed_page = mmap(NULL, (size_t)pg, rw, an, -1, 0);
	two_pages = mmap(NULL, 2 * (size_t)pg, rw, an, -1, 0);
	CHECK(ro_page != MAP_FAILED && none_page != MAP_FAILED &&
	      freed_page != MAP_FAILED && two_pages != MAP_FAILED);
	ro_page[0] = RO_VAL;
	CHECK_EQ(mprotect(ro_page, (size_t)pg, PROT_READ), 0);
	CHECK_EQ(munmap(freed_page, (size_t)pg), 0);
	CHECK_EQ(mprotect(two_pages + pg, (size_t)pg, PROT_NONE), 0);
	FILE *f = tmpfile();
	CHECK(f);
	bus_page = mmap(NULL, (size_t)pg, rw, MAP_SHARED, fileno(f), 0);
	CHECK(bus_page != MAP_FAILED);
	fclose(f);
	void *b[] = { (void *)8, (void *)24, none_page, freed_page, bus_page,
		      (void *)0x8000000000000000ull, ro_page };
	memcpy(bad_ptrs, b, sizeof(b));
}

/* A bad address; with ro, the read-only page may be drawn. */
static void *bad_ptr(bool ro);

static bool is_ret(const void *p)
{
	return p >= (const void *)rets && p < (const void *)(rets + NRETS);
}
static bool readable(const void *p)
{
	return p == &ctr || p == ro_page || is_ret(p);
}
static bool writable(const void *p)
{
	return p == &ctr || is_ret(p);
}
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static unsigned pick(unsigned n) { return (unsigned)(rnd() % n); }

static void *bad_ptr(bool ro)
{
	return bad_ptrs[pick(ro ? 7 : 6)];
}

#define STOPS (BYPASS_SYSLET_STOP_ON_NONZERO | BYPASS_SYSLET_STOP_ON_ZERO | \
	       BYPASS_SYSLET_STOP_ON_NEGATIVE | BYPASS_SYSLET_STOP_ON_NON_POSITIVE)

static const long harmless[] = { BYPASS_SYSLET_UMEM_ADD, SYS_getppid, SYS_close };
static const long forbidden[] = { SYS_fork, SYS_vfork, SYS_clone, SYS_clone3, SYS_execve,
	SYS_execveat, SYS_exit, SYS_exit_group, SYS_io_uring_enter, SYS_unshare,
	SYS_setuid, SYS_rt_sigprocmask, SYS_prctl };
static const long unknown[] = { -2, -1000, 512, 4096, 0x40000000 + 39 };

static int kind_of(long nr) /* 0 harmless, 1 forbidden/unknown */
{
	for (size_t i = 0; i < sizeof(harmless) / sizeof(harmless[0]); i++)
		if (nr == harmless[i])
			return 0;
	return 1;
}

static int succ(const atom_t *a, uint32_t i, uint32_t n, int out[2])
{
	uint16_t nx = a[i].next;
	out[0] = nx == 0 ? (i + 1 < n ? (int)i + 1 : -1) : nx == BYPASS_SYSLET_END ? -1 : nx - 1;
	out[1] = -1;
	if (a[i].flags & STOPS) {
		uint16_t os = a[i].on_stop;
		out[1] = os == 0 || os == BYPASS_SYSLET_END ? -1 : os - 1;
	}
	return 2;
}

/* Atoms reachable from 0 without entering atom 'skip' (-1: none). */
static uint64_t reach_without(const atom_t *a, uint32_t n, int skip)
{
	if (skip == 0)
		return 0;
	uint64_t seen = 1, todo = 1;
	while (todo) {
		int v = __builtin_ctzll(todo);
		todo &= todo - 1;
		int s[2];
		succ(a, (uint32_t)v, n, s);
		for (int k = 0; k < 2; k++)
			if (s[k] >= 0 && s[k] != skip && !(seen >> s[k] & 1)) {
				seen |= 1ull << s[k];
				todo |= 1ull << s[k];
			}
	}
	return seen;
}

/* A cycle among the reachable atoms: some reachable v reaches itself. */
static bool has_cycle(const atom_t *a, uint32_t n, uint64_t reach)
{
	for (uint32_t v = 0; v < n; v++) {
		if (!(reach >> v & 1))
			continue;
		uint64_t seen = 0, todo = 0;
		int s[2];
		succ(a, v, n, s);
		for (int k = 0; k < 2; k++)
			if (s[k] >= 0)
				todo |= 1ull << s[k];
		while (todo) {
			int w = __builtin_ctzll(todo);
			todo &= todo - 1;
			if ((uint32_t)w == v)
				return true;
			if (seen >> w & 1)
				continue;
			seen |= 1ull << w;
			int t[2];
			succ(a, (uint32_t)w, n, t);
			for (int k = 0; k < 2; k++)
				if (t[k] >= 0 && !(seen >> t[k] & 1))
					todo |= 1ull << t[k];
		}
	}
	return false;
}

static bool ref_valid(const prog_t *p)
{
	const atom_t *a = p->atoms;
	uint32_t n = p->natoms;
	if (n == 0 || n > BYPASS_SYSLET_MAX_ATOMS || p->reserved[0] || p->reserved[1])
		return false;
	for (uint32_t i = 0; i < n; i++) {
		if (a[i].flags & ~(uint32_t)(0x7 | STOPS) || a[i].reserved)
			return false;
		if ((a[i].flags & 3) == 3 || kind_of(a[i].nr))
			return false;
		if ((uintptr_t)a[i].ret % 8)
			return false;
		if ((a[i].next && a[i].next != BYPASS_SYSLET_END && a[i].next > n) ||
		    (a[i].on_stop && a[i].on_stop != BYPASS_SYSLET_END && a[i].on_stop > n))
			return false;
		for (int k = 0; k < 6; k++) {
			const struct bypass_syslet_arg *g = &a[i].arg[k];
			if (g->reserved || g->kind > 3 || (g->kind == 0 && g->val))
				return false;
			if (g->kind == BYPASS_SYSLET_ARG_LOAD && (!g->val || g->val % 8))
				return false;
			if (g->kind == BYPASS_SYSLET_ARG_RESULT && g->val >= n)
				return false;
		}
		if (a[i].nr == BYPASS_SYSLET_UMEM_ADD) {
			const struct bypass_syslet_arg *g = &a[i].arg[0];
			if (g->kind == 0 || (g->kind == 1 && (!g->val || g->val % 8)))
				return false;
			for (int k = 2; k < 6; k++)
				if (a[i].arg[k].kind)
					return false;
		}
	}
	uint64_t reach = reach_without(a, n, -1);
	for (uint32_t i = 0; i < n; i++) {
		if (!(reach >> i & 1))
			continue;
		for (int k = 0; k < 6; k++)
			if (a[i].arg[k].kind == BYPASS_SYSLET_ARG_RESULT) {
				uint32_t j = (uint32_t)a[i].arg[k].val;
				if (j == i || (reach_without(a, n, (int)j) >> i & 1))
					return false;
			}
	}
	return !(has_cycle(a, n, reach) && p->max_steps == 0);
}

/*
 * What the program does, computed here (no system call but getppid): the
 * completion, whether one is posted, the counter and the rets after it.
 */
static bool simulate(const prog_t *p, comp_t *out, int64_t *ctr_after, int64_t *rets_after)
{
	const atom_t *a = p->atoms;
	int64_t res[BYPASS_SYSLET_MAX_ATOMS] = { 0 }, c = ctr;
	uint32_t pc = 0, steps = 0, max = p->max_steps ? p->max_steps : p->natoms;
	bool loop = false, fault = false;
	for (;;) {
		if (steps >= max) {
			out->result = -ELOOP;
			loop = true;
			break;
		}
		const atom_t *at = &a[pc];
		long v[6];
		for (int k = 0; k < 6 && !fault; k++) {
			const struct bypass_syslet_arg *g = &at->arg[k];
			const void *addr = (const void *)(uintptr_t)g->val;
			if (g->kind == BYPASS_SYSLET_ARG_LOAD && !readable(addr)) {
				fault = true;
				break;
			}
			v[k] = g->kind == BYPASS_SYSLET_ARG_RESULT ? res[g->val] :
			       g->kind != BYPASS_SYSLET_ARG_LOAD ? (long)g->val :
			       addr == ro_page ? RO_VAL :
			       addr == &ctr ? c : rets_after[(const int64_t *)addr - rets];
		}
		int64_t r = 0;
		if (!fault) {
			if (at->nr == SYS_getppid)
				r = getppid();
			else if (at->nr == SYS_close)
				r = v[0] == -1 ? -EBADF : -999;
			else if ((void *)v[0] != &ctr)
				fault = true; /* only &ctr is a good umem_add target here */
			else
				r = c = (int64_t)((uint64_t)c + (uint64_t)v[1]);
		}
		steps++;
		if (fault) {
			if (at->ret && writable(at->ret))
				rets_after[at->ret - rets] = -EFAULT;
			out->result = -EFAULT;
			break;
		}
		if (at->ret) {
			if (!writable(at->ret)) {
				fault = true;
				out->result = -EFAULT;
				break;
			}
			rets_after[at->ret - rets] = r;
		}
		res[pc] = r;
		uint16_t to;
		if (((at->flags & BYPASS_SYSLET_STOP_ON_NONZERO) && r != 0) ||
		    ((at->flags & BYPASS_SYSLET_STOP_ON_ZERO) && r == 0) ||
		    ((at->flags & BYPASS_SYSLET_STOP_ON_NEGATIVE) && r < 0) ||
		    ((at->flags & BYPASS_SYSLET_STOP_ON_NON_POSITIVE) && r <= 0))
			to = at->on_stop ? at->on_stop : BYPASS_SYSLET_END;
		else
			to = at->next ? at->next :
			     pc + 1 < p->natoms ? BYPASS_SYSLET_GOTO(pc + 1) : BYPASS_SYSLET_END;
		if (to == BYPASS_SYSLET_END) {
			out->result = r;
			break;
		}
		pc = to - 1u;
	}
	out->atom = (uint16_t)pc;
	out->steps = steps;
	*ctr_after = c;
	return loop || fault || !(a[pc].flags & BYPASS_SYSLET_NO_COMPLETE);
}

static struct bypass_syslet_arg rand_arg(uint32_t n, bool first)
{
	switch (pick(first ? 4 : 12)) {
	case 0: return (struct bypass_syslet_arg)C((int64_t)pick(5) - 2);
	case 1:
		if (pick(6) == 0)
			return (struct bypass_syslet_arg)LD(bad_ptr(true));
		if (pick(6) == 0)
			return (struct bypass_syslet_arg)LD(&rets[pick(NRETS)]);
		return (struct bypass_syslet_arg)LD(&ctr);
	case 2: return (struct bypass_syslet_arg)R(pick(n + 1));
	case 3: return (struct bypass_syslet_arg){ (uint32_t)pick(6), pick(20) == 0, pick(3) };
	default: return (struct bypass_syslet_arg){ 0, 0, 0 };
	}
}

static void make(atom_t *a, prog_t *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		atom_t *x = &a[i];
		memset(x, 0, sizeof(*x));
		unsigned w = pick(100);
		x->nr = (int32_t)(w < 90 ? harmless[pick(3)] : w < 96 ? forbidden[pick(13)]
								     : unknown[pick(5)]);
		x->flags = (uint32_t)(rnd() & STOPS & rnd());
		if (pick(20) == 0)
			x->flags |= BYPASS_SYSLET_SYNC;
		if (pick(40) == 0)
			x->flags |= 1u << pick(32);
		if (pick(4) == 0)
			x->next = pick(10) == 0 ? BYPASS_SYSLET_END : (uint16_t)pick(n + 2);
		if (x->flags & STOPS && pick(2))
			x->on_stop = pick(10) == 0 ? BYPASS_SYSLET_END : (uint16_t)pick(n + 2);
		if (pick(100) == 0)
			x->reserved = 1;
		unsigned r = pick(32);
		if (r < 8)
			x->ret = &rets[pick(NRETS)];
		else if (r < 10)
			x->ret = bad_ptr(true);
		else if (r == 10)
			x->ret = (int64_t *)((char *)&rets[0] + 4);
		if (x->nr == BYPASS_SYSLET_UMEM_ADD) {
			unsigned t = pick(30);
			x->arg[0] = t > 3 ? (struct bypass_syslet_arg)P(&ctr) :
				    t > 0 ? (struct bypass_syslet_arg)P(bad_ptr(true))
					  : (struct bypass_syslet_arg)P((char *)&ctr + 4);
			x->arg[1] = rand_arg(n, true);
			if (pick(30) == 0)
				x->arg[2] = (struct bypass_syslet_arg)C(1);
		} else if (x->nr == SYS_close) {
			x->arg[0] = pick(8) ? (struct bypass_syslet_arg)C(-1) : rand_arg(n, false);
			if (x->arg[0].kind != BYPASS_SYSLET_ARG_CONST || (int64_t)x->arg[0].val != -1)
				x->nr = SYS_getppid; /* never close a real descriptor */
		} else if (pick(10) == 0) {
			x->arg[pick(6)] = rand_arg(n, false);
		}
	}
	memset(p, 0, sizeof(*p));
	p->atoms = a;
	p->natoms = pick(60) == 0 ? 0 : n;
	p->max_steps = pick(2) ? 0 : pick(50);
	if (pick(100) == 0)
		p->reserved[pick(2)] = 1;
}

enum way { RUN, ASYNC, SUBMIT, SUBMIT_WORKERS };

/* Programs that ended, by any engine (the inline ones are counted before
 * run or submit returns, the others after their last atom). */
static uint64_t ended(bypass_syslet *s)
{
	struct bypass_syslet_stats st;
	CHECK_EQ(bypass_syslet_reap(s, NULL, 0), 0); /* collects io_uring's */
	CHECK_EQ(bypass_syslet_stats(s, &st), 0);
	return st.programs_inline + st.programs_workers + st.programs_uring;
}

static void dump(const prog_t *p, const atom_t *a)
{
	for (uint32_t i = 0; i < p->natoms; i++) {
		fprintf(stderr, "  atom %u: nr %d flags %#x next %u on_stop %u res %u ret %p args", i,
			a[i].nr, a[i].flags, a[i].next, a[i].on_stop, a[i].reserved, (void *)a[i].ret);
		for (int k = 0; k < 6; k++)
			fprintf(stderr, " %u/%u/%llx", a[i].arg[k].kind, a[i].arg[k].reserved,
				(unsigned long long)a[i].arg[k].val);
		fprintf(stderr, "\n");
	}
	fprintf(stderr, "  max_steps %u\n", p->max_steps);
}

int main(int argc, char **argv)
{
	unsetenv("BYPASS_SYSLET_ENGINE");
	long count = argc > 1 ? atol(argv[1]) : (long)bp_env_u64("BYPASS_SYSLET_FUZZ", 20000);
	if (TEST_TSAN && argc < 2)
		count /= 10;
	test_timeout(count > 100000 ? 3600 : 120);
	setup_memory();
	bypass_syslet *sa = ctx_for(BYPASS_SYSLET_ENGINE_AUTO, 0);
	bypass_syslet *sw = ctx_for(BYPASS_SYSLET_ENGINE_WORKERS, 0);
	atom_t a[8];
	long nvalid = 0, nfault = 0, ncallfault = 0, nway[4] = { 0 };
	for (long it = 0; it < count; it++) {
		prog_t p;
		make(a, &p, 1 + pick(8));
		enum way way = (enum way)pick(4);
		bypass_syslet *s = way == SUBMIT_WORKERS ? sw : sa;
		if (way == ASYNC) { /* a random atom goes to a worker */
			unsigned k = pick(p.natoms ? p.natoms : 1);
			if (!(a[k].flags & BYPASS_SYSLET_SYNC))
				a[k].flags |= BYPASS_SYSLET_ASYNC;
		}
		/* the program, the atoms or the completion at a bad address */
		const prog_t *pp = &p;
		comp_t got, *done = &got;
		unsigned bad = pick(64);
		bool edge = false;
		int want_call = 0;
		if (bad == 0 && p.natoms) {
			p.atoms = bad_ptr(false);
		} else if (bad == 1 && p.natoms) {
			/* the first m atoms fit before a PROT_NONE page */
			unsigned m = pick(p.natoms);
			atom_t *e = (atom_t *)(two_pages + pg) - m;
			memcpy(e, a, m * sizeof(*a));
			p.atoms = e;
			edge = true;
		} else if (bad == 2) {
			pp = bad_ptr(false);
		} else if (bad == 3 && way == RUN) {
			done = bad_ptr(true);
			want_call = -EFAULT;
		}
		/* what validate answers, and run or submit (ref_valid reads the
		 * atoms: only where they are readable) */
		int want_v = pp != &p ? -EFAULT :
			     p.natoms && (bad == 0 || edge) ? -EFAULT :
			     ref_valid(&p) ? 0 : -EINVAL;
		if (!want_call)
			want_call = want_v;
		if (want_call == -EFAULT)
			ncallfault++;
		int v = bypass_syslet_validate(pp);
		if (v != want_v) {
			if (want_v != -EFAULT)
				dump(&p, a);
			TEST_FAIL("program %ld: validate %d, the reference says %d", it, v, want_v);
		}
		int64_t before = ctr, before_rets[NRETS];
		for (int k = 0; k < NRETS; k++)
			rets[k] = SENTINEL;
		memcpy(before_rets, rets, sizeof(rets));
		if (want_call) {
			if (way == RUN || way == ASYNC)
				CHECK_ERR(bypass_syslet_run(s, pp, done), want_call);
			else
				CHECK_ERR(bypass_syslet_submit(s, pp, 1), want_call);
			CHECK_EQ(ctr, before);
			CHECK(!memcmp(rets, before_rets, sizeof(rets)));
			continue;
		}
		nvalid++;
		nway[way]++;
		comp_t want_c;
		int64_t want_ctr, want_rets[NRETS];
		memcpy(want_rets, rets, sizeof(rets));
		bool completes = simulate(&p, &want_c, &want_ctr, want_rets);
		if (want_c.result == -EFAULT && (p.natoms > 0))
			nfault++;
		uint64_t ended0 = ended(s);
		int r;
		if (way == RUN || way == ASYNC)
			r = bypass_syslet_run(s, &p, &got);
		else
			r = bypass_syslet_submit(s, &p, 1) == 1 ? 0 : -1;
		if (r == 0) {
			if (!completes) {
				/* no completion to compare: wait until it ended */
				for (int t = 0; t < 5000 && ended(s) == ended0; t++)
					test_sleep_ms(1);
				CHECK_EQ(ended(s), ended0 + 1);
				CHECK_EQ(bypass_syslet_reap(s, &got, 1), 0);
				got = want_c; /* only the counter and rets to check */
			} else {
				got = wait_one(s);
			}
		} else if (r != 1) {
			TEST_FAIL("program %ld: run or submit returned %d", it, r);
		}
		if (got.atom != want_c.atom || got.result != want_c.result ||
		    got.steps != want_c.steps || ctr != want_ctr ||
		    memcmp(rets, want_rets, sizeof(rets))) {
			dump(&p, a);
			TEST_FAIL("program %ld (way %d): ended at %u with %lld after %u steps, ctr %lld, "
				  "rets %llx %llx %llx %llx; expected %u, %lld, %u, %lld, rets %llx %llx "
				  "%llx %llx", it, way, got.atom, (long long)got.result, got.steps,
				  (long long)ctr, (long long)rets[0], (long long)rets[1],
				  (long long)rets[2], (long long)rets[3], want_c.atom,
				  (long long)want_c.result, want_c.steps, (long long)want_ctr,
				  (long long)want_rets[0], (long long)want_rets[1],
				  (long long)want_rets[2], (long long)want_rets[3]);
		}
	}
	CHECK_EQ(bypass_syslet_destroy(sa), 0);
	CHECK_EQ(bypass_syslet_destroy(sw), 0);
	CHECK_EQ(ro_page[0], RO_VAL);
	TEST_LOG("%ld random programs: %ld valid (each run and checked: %ld run, %ld run with "
		 "ASYNC, %ld submitted, %ld submitted to workers), %ld of them ended by a bad "
		 "pointer (-EFAULT); %ld refused with -EFAULT, %ld with -EINVAL",
		 count, nvalid, nway[RUN], nway[ASYNC], nway[SUBMIT], nway[SUBMIT_WORKERS], nfault,
		 ncallfault, count - nvalid - ncallfault);
	/*
	 * The generator is seeded: these are fixed shares of the programs, and
	 * a change that made the valid or the faulting ones rare would test
	 * nothing.  (20,000 programs: about 19% valid, 1.5% ended by a fault.)
	 */
	if (nvalid < count / 8 || nfault < count / 200 || ncallfault < count / 100)
		TEST_FAIL("too few programs of a kind: %ld valid, %ld ended by a fault, %ld "
			  "refused with -EFAULT (of %ld)", nvalid, nfault, ncallfault, count);
	return test_pass("syslet/fuzz");
}
