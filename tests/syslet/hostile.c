/* SPDX-License-Identifier: MIT */
/*
 * A hostile or buggy program can neither crash the process nor break its
 * context, in any engine (issue 22).  Each case runs on a context of each
 * engine (io_uring, workers) in three ways: bypass_syslet_run() inline,
 * run() with the first atom ASYNC (a worker runs it), and submit() (an
 * io_uring chain where io_uring can express the program), and must give
 * the same completion every time:
 *
 *   - ret pointing into a read-only page, at address 8, into a PROT_NONE or
 *     unmapped page, past the end of a mapped file (SIGBUS), at a
 *     non-canonical address: the atom runs, the program ends there with
 *     -EFAULT, the process goes on;
 *   - prog.atoms (or the program, the program array, the completion) at
 *     such an address: the call returns -EFAULT and nothing runs;
 *   - a LOAD argument from such an address, a umem_add on a read-only page
 *     or at a misaligned address computed at run time: -EFAULT there;
 *   - a program that closes descriptors 3..40, then an ordinary program:
 *     it completes (the context's io_uring is not among them);
 *   - close, dup, dup2, dup3, fcntl, mmap and close_range on the context's
 *     own descriptor: -EBADF, and the context goes on;
 *   - a context whose io_uring the application itself closed or replaced:
 *     -EBADFD from run, submit and wait instead of a hang.
 *
 * refused-all.sh runs it again with io_uring refused (the worker engine).
 * TEST_LABELS: threads
 */
#include "util.h"

#include <sys/mman.h>
#include <sys/resource.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

enum way { RUN, ASYNC, SUBMIT, NWAYS };
static const char *const way_name[NWAYS] = { "run", "run+ASYNC", "submit" };

static int64_t ctr, ctr2;
static int64_t *ro_page, *none_page, *freed_page, *bus_page, *two_pages;
static int pw, pr; /* the test's pipe, far above 40 */

struct bad {
	const char *what;
	void *p;
	bool readable; /* the read-only page: a LOAD from it is fine */
};
static struct bad bads[8];
static unsigned nbads;

static void setup_memory(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	ro_page = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	none_page = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	freed_page = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	two_pages = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro_page != MAP_FAILED && none_page != MAP_FAILED && freed_page != MAP_FAILED &&
	      two_pages != MAP_FAILED);
	ro_page[0] = 7414;
	CHECK_EQ(mprotect(ro_page, (size_t)pg, PROT_READ), 0);
	CHECK_EQ(munmap(freed_page, (size_t)pg), 0);
	CHECK_EQ(mprotect((char *)two_pages + pg, (size_t)pg, PROT_NONE), 0);
	/* a shared mapping of an empty file: touching it is a SIGBUS */
	FILE *f = tmpfile();
	CHECK(f);
	bus_page = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
	CHECK(bus_page != MAP_FAILED);
	fclose(f);
	struct bad b[] = {
		{ "address 8", (void *)8, false },
		{ "address 16", (void *)16, false },
		{ "a read-only page", ro_page, true },
		{ "a PROT_NONE page", none_page, false },
		{ "an unmapped page", freed_page, false },
		{ "a file mapping past its end (SIGBUS)", bus_page, false },
		{ "a non-canonical address", (void *)0x8000000000000000ull, false },
	};
	memcpy(bads, b, sizeof(b));
	nbads = sizeof(b) / sizeof(b[0]);
}

/* Drain the test's pipe; returns the bytes that were in it. */
static int drain(void)
{
	char buf[256];
	int n = 0;
	for (;;) {
		ssize_t r = read(pr, buf, sizeof(buf));
		if (r <= 0)
			return n;
		n += (int)r;
	}
}

/* Run a (valid) program one way; its completion. */
static comp_t go(bypass_syslet *s, enum way w, const atom_t *a0, uint32_t n)
{
	atom_t a[64];
	memcpy(a, a0, n * sizeof(*a));
	if (w == ASYNC)
		a[0].flags |= BYPASS_SYSLET_ASYNC;
	prog_t p = prog_of(a, n, 99);
	comp_t c;
	memset(&c, 0, sizeof(c));
	int r;
	switch (w) {
	case RUN:
		r = bypass_syslet_run(s, &p, &c);
		if (r == 0 && a[0].nr == SYS_write) {
			/* a kernel without RWF_NOWAIT on pipes (before 6.x) runs
			 * the write on a worker: the answer must be the same */
			static bool said;
			if (!said)
				TEST_LOG("pipe writes do not run inline on this kernel");
			said = true;
			c = wait_one(s);
			break;
		}
		if (r != 1)
			TEST_FAIL("run: %d, want 1 (ended inline)", r);
		break;
	case ASYNC:
		r = bypass_syslet_run(s, &p, &c);
		if (r != 0)
			TEST_FAIL("run with ASYNC: %d, want 0", r);
		c = wait_one(s);
		CHECK(c.engine != BYPASS_SYSLET_ENGINE_INLINE);
		break;
	default:
		CHECK_EQ(bypass_syslet_submit(s, &p, 1), 1);
		c = wait_one(s);
	}
	CHECK_EQ(c.tag, 99);
	return c;
}

static void expect(comp_t c, unsigned atom, int64_t result, unsigned steps,
		   const char *what, const char *ctx, enum way w)
{
	if (c.atom != atom || c.result != result || c.steps != steps)
		TEST_FAIL("%s (%s, %s): ended at atom %u with %lld after %u steps; "
			  "want %u, %lld, %u", what, ctx, way_name[w], c.atom,
			  (long long)c.result, c.steps, atom, (long long)result, steps);
}

/* Rows 1-3: ret unwritable.  A write to the pipe (an io_uring chain
 * elsewhere) runs, then the program ends with -EFAULT. */
static void bad_ret(bypass_syslet *s, const char *ctx)
{
	for (unsigned b = 0; b < nbads; b++)
		for (int w = 0; w < NWAYS; w++) {
			atom_t a[2] = {
				{ .nr = SYS_write, .ret = bads[b].p, .arg = { C(pw), P("x"), C(1) } },
				{ .nr = SYS_write, .arg = { C(pw), P("y"), C(1) } },
			};
			comp_t c = go(s, (enum way)w, a, 2);
			char what[96];
			snprintf(what, sizeof(what), "ret into %s", bads[b].what);
			expect(c, 0, -EFAULT, 1, what, ctx, (enum way)w);
			CHECK_EQ(drain(), 1); /* the atom ran, the next did not */
		}
	CHECK_EQ(ro_page[0], 7414);
	/* a good ret next to them still works */
	int64_t got = -1;
	atom_t ok[1] = { { .nr = SYS_write, .ret = &got, .arg = { C(pw), P("x"), C(1) } } };
	for (int w = 0; w < NWAYS; w++) {
		got = -1;
		expect(go(s, (enum way)w, ok, 1), 0, 1, 1, "a good ret", ctx, (enum way)w);
		CHECK_EQ(got, 1);
		CHECK_EQ(drain(), 1);
	}
}

/* Row 4 (and the other pointers the call itself reads or writes): -EFAULT
 * before anything runs, in every engine. */
static void bad_arrays(bypass_syslet *s)
{
	atom_t bump[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&ctr), C(1) } } };
	prog_t good = prog_of(bump, 1, 5);
	comp_t c;
	int64_t before = ctr;
	for (unsigned b = 0; b < nbads; b++) {
		if (bads[b].readable)
			continue;
		prog_t p = prog_of(bads[b].p, 1, 1);
		CHECK_ERR(bypass_syslet_validate(&p), -EFAULT);
		CHECK_ERR(bypass_syslet_run(s, &p, &c), -EFAULT);
		CHECK_ERR(bypass_syslet_submit(s, &p, 1), -EFAULT);
		prog_t two[2] = { good, p };
		CHECK_ERR(bypass_syslet_submit(s, two, 2), -EFAULT);
		const prog_t *bp = bads[b].p;
		CHECK_ERR(bypass_syslet_validate(bp), -EFAULT);
		CHECK_ERR(bypass_syslet_run(s, bp, &c), -EFAULT);
		CHECK_ERR(bypass_syslet_submit(s, bp, 1), -EFAULT);
		CHECK_ERR(bypass_syslet_run(s, &good, bads[b].p), -EFAULT);
	}
	/* the completion in a read-only page */
	CHECK_ERR(bypass_syslet_run(s, &good, (comp_t *)ro_page), -EFAULT);
	CHECK_EQ(ro_page[0], 7414);
	/* atoms that run into a PROT_NONE page: the first fits, the second not */
	long pg = sysconf(_SC_PAGESIZE);
	atom_t *edge = (atom_t *)((char *)two_pages + pg) - 1;
	*edge = bump[0];
	prog_t p = prog_of(edge, 2, 1);
	CHECK_ERR(bypass_syslet_validate(&p), -EFAULT);
	CHECK_ERR(bypass_syslet_run(s, &p, &c), -EFAULT);
	CHECK_ERR(bypass_syslet_submit(s, &p, 1), -EFAULT);
	CHECK_EQ(ctr, before); /* nothing ran */
	p.natoms = 1;
	CHECK_EQ(bypass_syslet_run(s, &p, &c), 1);
	CHECK_EQ(ctr, before + 1);
	/* a reap into bad memory takes nothing: the completion stays */
	CHECK_EQ(bypass_syslet_submit(s, &good, 1), 1);
	CHECK_EQ(bypass_syslet_wait(s, 1, 5000000000ll), 1);
	for (unsigned b = 0; b < nbads; b++)
		CHECK_ERR(bypass_syslet_reap(s, bads[b].p, 1), -EFAULT);
	CHECK_EQ(bypass_syslet_reap(s, &c, 1), 1);
	CHECK_EQ(c.tag, 5);
	CHECK_EQ(ro_page[0], 7414);
}

/* Rows 5-6: LOAD from, umem_add on bad memory. */
static void bad_args(bypass_syslet *s, const char *ctx)
{
	for (unsigned b = 0; b < nbads; b++)
		for (int w = 0; w < NWAYS; w++) {
			int64_t before = ctr, before2 = ctr2, r0 = 1;
			char what[96];
			/* LOAD */
			atom_t ld[2] = {
				{ .nr = BYPASS_SYSLET_UMEM_ADD, .ret = &r0,
				  .arg = { P(&ctr), LD(bads[b].p) } },
				{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&ctr2), C(1) } },
			};
			comp_t c = go(s, (enum way)w, ld, 2);
			snprintf(what, sizeof(what), "LOAD from %s", bads[b].what);
			if (bads[b].readable) {
				expect(c, 1, before2 + 1, 2, what, ctx, (enum way)w);
				CHECK_EQ(ctr, before + 7414);
				CHECK_EQ(r0, before + 7414);
				ctr = before;
				ctr2 = before2;
			} else {
				expect(c, 0, -EFAULT, 1, what, ctx, (enum way)w);
				CHECK_EQ(r0, -EFAULT); /* ret gets the atom's result */
			}
			CHECK_EQ(ctr, before);
			CHECK_EQ(ctr2, before2);
			/* umem_add on it (the read-only page too) */
			atom_t um[2] = {
				{ .nr = BYPASS_SYSLET_UMEM_ADD, .flags = BYPASS_SYSLET_NO_COMPLETE,
				  .arg = { P(bads[b].p), C(1) } },
				{ .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { P(&ctr2), C(1) } },
			};
			c = go(s, (enum way)w, um, 2);
			snprintf(what, sizeof(what), "umem_add on %s", bads[b].what);
			expect(c, 0, -EFAULT, 1, what, ctx, (enum way)w);
			CHECK_EQ(ctr2, before2);
		}
	CHECK_EQ(ro_page[0], 7414);
	/* a umem_add target computed at run time, misaligned */
	static char *misaligned;
	misaligned = (char *)&ctr + 4;
	atom_t mis[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .arg = { LD(&misaligned), C(1) } } };
	int64_t before = ctr;
	for (int w = 0; w < NWAYS; w++)
		expect(go(s, (enum way)w, mis, 1), 0, -EFAULT, 1, "umem_add misaligned", ctx,
		       (enum way)w);
	CHECK_EQ(ctr, before);
}

/* Row 7: close 3..40, then an ordinary program. */
static void close_low(bypass_syslet *s, const char *ctx)
{
	atom_t a[38];
	for (int i = 0; i < 38; i++)
		a[i] = (atom_t){ .nr = SYS_close, .arg = { C(3 + i) } };
	atom_t wr[1] = { { .nr = SYS_write, .arg = { C(pw), P("z"), C(1) } } };
	for (int w = 0; w < NWAYS; w++) {
		comp_t c = go(s, (enum way)w, a, 38);
		CHECK_EQ(c.atom, 37);
		CHECK_EQ(c.steps, 38);
		for (int k = 0; k < 3; k++) {
			expect(go(s, (enum way)w, wr, 1), 0, 1, 1, "a program after closing 3..40",
			       ctx, (enum way)w);
			CHECK_EQ(drain(), 1);
		}
	}
}

/* The io_uring descriptors open in this process (at most max of them). */
static int uring_fds(int *out, int max)
{
	int n = test_fds_linked("io_uring", out, max);
	CHECK(n >= 0);
	return n < max ? n : max;
}

/* A uring context and its descriptor (the one io_uring fd that is new). */
static bypass_syslet *uring_ctx(int *fd)
{
	int before[64], after[64];
	int nb = uring_fds(before, 64);
	bypass_syslet *s = ctx_for(BYPASS_SYSLET_ENGINE_URING, 0);
	if (!s)
		return NULL;
	int na = uring_fds(after, 64);
	CHECK_EQ(na, nb + 1);
	*fd = -1;
	for (int i = 0; i < na; i++) {
		bool old = false;
		for (int j = 0; j < nb; j++)
			old |= after[i] == before[j];
		if (!old)
			*fd = after[i];
	}
	CHECK(*fd >= 0);
	return s;
}

/* The contexts' own descriptors: out of reach of any context's programs. */
static void own_fds(bypass_syslet *s, const char *ctx, int ringfd)
{
	struct rlimit rl;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rlim_t top = rl.rlim_cur < 1024 ? rl.rlim_cur : 1024;
	if (top >= 128)
		CHECK((rlim_t)ringfd >= top - 64); /* moved high */
	atom_t cases[][1] = {
		{ { .nr = SYS_close, .arg = { C(ringfd) } } },
		{ { .nr = SYS_dup, .arg = { C(ringfd) } } },
		{ { .nr = SYS_dup2, .arg = { C(0), C(ringfd) } } },
		{ { .nr = SYS_dup2, .arg = { C(ringfd), C(100) } } },
		{ { .nr = SYS_dup3, .arg = { C(0), C(ringfd), C(0) } } },
		{ { .nr = SYS_fcntl, .arg = { C(ringfd), C(F_DUPFD), C(0) } } },
		{ { .nr = SYS_fcntl, .arg = { C(ringfd), C(F_SETFD), C(0) } } },
		{ { .nr = SYS_close_range, .arg = { C(3), C(~0u), C(0) } } },
		{ { .nr = SYS_close_range, .arg = { C(ringfd), C(ringfd), C(0) } } },
		{ { .nr = SYS_mmap, .arg = { C(0), C(4096), C(PROT_READ), C(MAP_SHARED), C(ringfd),
					     C(0) } } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int w = 0; w < NWAYS; w++)
			expect(go(s, (enum way)w, cases[i], 1), 0, -EBADF, 1,
			       "a call on the context's descriptor", ctx, (enum way)w);
	/* close_range below it still closes */
	int fd = dup2(pw, 300);
	CHECK_EQ(fd, 300);
	atom_t cr[1] = { { .nr = SYS_close_range, .arg = { C(300), C(300), C(0) } } };
	expect(go(s, RUN, cr, 1), 0, 0, 1, "close_range below", ctx, RUN);
	CHECK(fcntl(300, F_GETFD) < 0);
	char link[64], path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ringfd);
	ssize_t l = readlink(path, link, sizeof(link) - 1);
	CHECK(l > 0);
	link[l] = 0;
	CHECK(strstr(link, "io_uring"));
}

/* The application itself closes (or replaces) the context's io_uring. */
static void broken(bool replace)
{
	int fd;
	bypass_syslet *s = uring_ctx(&fd);
	if (!s)
		return;
	/* a chain in flight: a read of an empty pipe */
	int p2[2];
	CHECK_EQ(pipe(p2), 0);
	char buf[8];
	atom_t rd[1] = { { .nr = SYS_read, .arg = { C(p2[0]), P(buf), C(8) } } };
	prog_t p = prog_of(rd, 1, 1);
	CHECK_EQ(bypass_syslet_submit(s, &p, 1), 1);
	int other = -1;
	if (replace) {
		other = open("/dev/null", O_RDONLY);
		CHECK(other >= 0);
		CHECK_EQ(dup2(other, fd), fd);
	} else {
		CHECK_EQ(close(fd), 0);
	}
	CHECK_ERR(bypass_syslet_wait(s, 1, 5000000000ll), -EBADFD);
	CHECK_ERR(bypass_syslet_submit(s, &p, 1), -EBADFD);
	atom_t g[1] = { { .nr = SYS_getppid } };
	prog_t q = prog_of(g, 1, 2);
	comp_t c;
	CHECK_ERR(bypass_syslet_run(s, &q, &c), -EBADFD);
	CHECK_ERR(bypass_syslet_wait(s, 1, BYPASS_FOREVER), -EBADFD);
	CHECK(bypass_syslet_reap(s, &c, 1) >= 0);
	CHECK_EQ(write(p2[1], "k", 1), 1);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
	if (replace) { /* destroy did not close what is not its own */
		CHECK(fcntl(fd, F_GETFD) >= 0);
		close(fd);
		close(other);
	}
	close(p2[0]);
	close(p2[1]);
}

static void one_ctx(bypass_syslet *s, const char *ctx, int ringfd, int otherfd)
{
	bad_ret(s, ctx);
	bad_arrays(s);
	bad_args(s, ctx);
	if (ringfd >= 0)
		own_fds(s, ctx, ringfd);
	if (otherfd >= 0) /* another context's descriptor is out of reach too */
		own_fds(s, ctx, otherfd);
	close_low(s, ctx);
	/* the context still works, in every way */
	atom_t wr[1] = { { .nr = SYS_write, .arg = { C(pw), P("!"), C(1) } } };
	for (int w = 0; w < NWAYS; w++) {
		expect(go(s, (enum way)w, wr, 1), 0, 1, 1, "the last program", ctx, (enum way)w);
		CHECK_EQ(drain(), 1);
	}
}

int main(void)
{
	test_timeout(60);
	unsetenv("BYPASS_SYSLET_ENGINE");
	setup_memory();
	int p[2];
	CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
	pr = dup2(p[0], 200);
	pw = dup2(p[1], 201);
	CHECK(pr == 200 && pw == 201);
	close(p[0]);
	close(p[1]);

	int ringfd = -1;
	bypass_syslet *u = uring_ctx(&ringfd);
	int fds = test_count_fds();
	bypass_syslet *w = ctx_for(BYPASS_SYSLET_ENGINE_WORKERS, 0);
	CHECK_EQ(test_count_fds(), fds); /* the worker engine holds none */
	if (u)
		one_ctx(u, "uring", ringfd, -1);
	else
		TEST_LOG("io_uring refused here: the worker engine only");
	one_ctx(w, "workers", -1, u ? ringfd : -1);
	if (u) {
		struct bypass_syslet_stats st;
		CHECK_EQ(bypass_syslet_stats(u, &st), 0);
		CHECK(st.programs_uring > 0); /* the chains did go to io_uring */
	}
	CHECK_EQ(bypass_syslet_destroy(w), 0);
	if (u)
		CHECK_EQ(bypass_syslet_destroy(u), 0);
	broken(false);
	broken(true);
	return test_pass("syslet/hostile");
}
