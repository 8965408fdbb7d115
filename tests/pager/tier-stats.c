/* SPDX-License-Identifier: MIT */
/*
 * struct bypass_pager_tier_stats's ABI: 32 words, the counters of 0.1 in
 * their places, skipped the first word after them, the reserved tail zero;
 * libbypass.so exports the getter twice: bypass_pager_tier_stats@@BYPASS_0.2
 * fills the 32 words, bypass_pager_tier_stats@BYPASS_0.1 (a program built
 * against 0.1's 12-word struct) the first 12 only, leaving the rest of the
 * caller's memory as it was.  Both versions are taken from libbypass.so with
 * dlvsym and called on a pager of that library whose tier rejected and
 * skipped pages (random data), so every counter compared is non-zero where
 * it should be.  Counts, no timing.
 */
#include "tier-util.h"
#include "pager/pager_internal.h"
#include "pager/tier.h"
#include "pager/tier-int.h"

#include <dlfcn.h>

#define WORDS 32
#define V01_WORDS 12
#define BUDGET (64 * PAGE)
#define NPAGES 512ul
#define CANARY 0xa5a5a5a5a5a5a5a5ull

_Static_assert(sizeof(struct bypass_pager_tier_stats) == WORDS * sizeof(uint64_t),
	       "struct bypass_pager_tier_stats is 32 words");
_Static_assert(offsetof(struct bypass_pager_tier_stats, share_moves) == 11 * sizeof(uint64_t),
	       "0.1's last counter moved");
_Static_assert(offsetof(struct bypass_pager_tier_stats, skipped) == V01_WORDS * sizeof(uint64_t),
	       "skipped is the first word after 0.1's counters");
_Static_assert(offsetof(struct bypass_pager_tier_stats, readmitted) == 13 * sizeof(uint64_t),
	       "readmitted follows skipped");
_Static_assert(offsetof(struct bypass_pager_tier_stats, reserved) == 14 * sizeof(uint64_t),
	       "the reserved tail follows readmitted");

typedef int stats_fn(bypass_pager *, void *);
typedef int create_fn(const struct bypass_pager_config *, bypass_pager **);
typedef int tier_fn(bypass_pager *, const struct bypass_pager_tier_config *);
typedef int map_fn(bypass_pager *, size_t, unsigned, void **);
typedef int unmap_fn(bypass_pager *, void *, size_t);
typedef int destroy_fn(bypass_pager *);

static void *sym(void *h, const char *name)
{
	void *f = dlsym(h, name);
	if (!f)
		TEST_FAIL("libbypass.so: no %s: %s", name, dlerror());
	return f;
}

/* In this program (libbypass.a): skipped moves with random data, is
 * bp_tier_skipped, is part of rejected; the tail stays zero. */
static void in_archive(void)
{
	bypass_pager *p = tier_pager(BYPASS_PAGER_UPCALL, BUDGET, NPAGES * PAGE, 0);
	char *m;
	CHECK_EQ(bypass_pager_map(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);
	struct bypass_pager_tier_stats t;
	memset(&t, 0xa5, sizeof(t));
	CHECK_EQ(bypass_pager_tier_stats(p, &t), 0);
	TEST_LOG("archive: %lu rejected, %lu of them skipped", (unsigned long)t.rejected,
		 (unsigned long)t.skipped);
	CHECK(t.skipped > 0);
	CHECK_EQ(t.skipped, bp_tier_skipped(atomic_load(&p->tier)));
	CHECK(t.skipped <= t.rejected);
	for (size_t i = 0; i < sizeof(t.reserved) / sizeof(t.reserved[0]); i++)
		CHECK_EQ(t.reserved[i], 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("archive: page %lu wrong", (unsigned long)i);
	CHECK_EQ(bypass_pager_unmap(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(bypass_pager_destroy(p), 0);
}

/* Through libbypass.so, as a program linked to each version sees it. */
static void in_shared(void)
{
	const char *build = getenv("BYPASS_BUILD");
	char path[4096];
	snprintf(path, sizeof(path), "%s/libbypass.so", build ? build : ".");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h && build)
		TEST_FAIL("%s: %s", path, dlerror()); /* ctest sets BYPASS_BUILD */
	if (!h) {
		TEST_LOG("BYPASS_BUILD unset: libbypass.so's versions are not checked");
		return;
	}
	stats_fn *v02 = (stats_fn *)dlvsym(h, "bypass_pager_tier_stats", "BYPASS_0.2");
	stats_fn *v01 = (stats_fn *)dlvsym(h, "bypass_pager_tier_stats", "BYPASS_0.1");
	if (!v02 || !v01)
		TEST_FAIL("libbypass.so: bypass_pager_tier_stats@BYPASS_0.2 %s, @BYPASS_0.1 %s",
			  v02 ? "found" : "missing", v01 ? "found" : "missing");
	CHECK(v02 != v01);
	/* the default a new program links to is 0.2's */
	CHECK(dlsym(h, "bypass_pager_tier_stats") == (void *)v02);

	struct bypass_pager_config c = { .budget = BUDGET, .swap_size = NPAGES * PAGE,
					 .mode = BYPASS_PAGER_UPCALL,
					 .swap_path = tmpdir(), .flags = BYPASS_PAGER_SWAP_TEMP };
	bypass_pager *p = NULL;
	CHECK_EQ(((create_fn *)sym(h, "bypass_pager_create"))(&c, &p), 0);
	int r = ((tier_fn *)sym(h, "bypass_pager_tier"))(p, &(struct bypass_pager_tier_config){ 0 });
	if (r == -EOPNOTSUPP)
		SKIP("built without liblz4");
	CHECK_EQ(r, 0);
	char *m;
	CHECK_EQ(((map_fn *)sym(h, "bypass_pager_map"))(p, NPAGES * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < NPAGES; i++)
		fill_page(m + i * PAGE, i, 1);

	/* No access between the calls: the counters stand still. */
	uint64_t a[WORDS], b[WORDS];
	for (int i = 0; i < WORDS; i++)
		a[i] = b[i] = CANARY;
	CHECK_EQ(v02(p, a), 0);
	CHECK_EQ(v01(p, b), 0);
	struct bypass_pager_tier_stats t;
	memcpy(&t, a, sizeof(t));
	TEST_LOG("shared: %lu rejected, %lu of them skipped", (unsigned long)t.rejected,
		 (unsigned long)t.skipped);
	CHECK(t.rejected > 0);
	CHECK(t.skipped > 0);
	for (int i = 14; i < WORDS; i++)
		CHECK_EQ(a[i], 0);
	for (int i = 0; i < V01_WORDS; i++)
		if (a[i] != b[i])
			TEST_FAIL("word %d: @BYPASS_0.2 %lu, @BYPASS_0.1 %lu", i, (unsigned long)a[i],
				  (unsigned long)b[i]);
	for (int i = V01_WORDS; i < WORDS; i++)
		if (b[i] != CANARY)
			TEST_FAIL("@BYPASS_0.1 wrote word %d, past 0.1's 12-word struct", i);
	CHECK_EQ(v01(p, NULL), -EINVAL);
	CHECK_EQ(v01(NULL, b), -EINVAL);

	for (uint64_t i = 0; i < NPAGES; i++)
		if (!page_ok(m + i * PAGE, i, 1))
			TEST_FAIL("shared: page %lu wrong", (unsigned long)i);
	CHECK_EQ(((unmap_fn *)sym(h, "bypass_pager_unmap"))(p, m, NPAGES * PAGE), 0);
	CHECK_EQ(((destroy_fn *)sym(h, "bypass_pager_destroy"))(p), 0);
	/* not dlclose'd: the library's process-wide tables (grown with
	 * realloc, reachable from its globals) would read as leaks */
}

int main(void)
{
	in_archive();
	in_shared();
	return 0;
}
