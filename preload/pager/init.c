/* SPDX-License-Identifier: MIT */
/* Configuration from the environment, the process's pager, fork, the statistics at exit, the real functions. */
#include "preload.h"
#include "pager/pager_internal.h" /* bp_engine_force */
#include "pager/tree.h"
#include "core/syscall.h"

#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <strings.h>
#include <sys/stat.h>

PL_REAL_DEFINE(PL_REAL_FUNCS)
PL_NAMES("pager", "the program runs unpaged")

struct bp_pp_cfg bp_pp_cfg;

/* ------------------------------------------------------------ configuration */

/* BYPASS_PAGER_POLICY, given to bypass_pager_set_policy() once the pager
 * exists ("" = the library's default, 2q).  Unset, the preload's own
 * default: prefetch (2Q plus asynchronous prefetch of fault streams).  An
 * unmodified program's heap is read in streams whose pages were not
 * evicted in address order, where the synchronous readahead (the
 * following swap slots only) reads single pages: quick pager.unmodified,
 * 16 MiB budget, the Python program 1.36 s against 3.05-3.70 s under 2q. */
static char policy_spec[512] = "prefetch";

/*
 * A policy spec that can work: a built-in name (2q, clock, prefetch,
 * window), or a readable shared object (path.so[:symbol]) with optional
 * ",args".  The rest is bypass_pager_set_policy()'s to check when the
 * pager is made.
 */
static bool policy_ok(const char *spec)
{
	char body[sizeof(policy_spec)];
	if (strlen(spec) >= sizeof(body))
		return false;
	strcpy(body, spec);
	char *comma = strchr(body, ',');
	if (comma)
		*comma = 0;
	size_t n = strlen(body);
	if (strchr(body, '/') || (n > 3 && !strcmp(body + n - 3, ".so")) || strstr(body, ".so:")) {
		char *slash = strrchr(body, '/');
		char *colon = strrchr(slash ? slash : body, ':');
		if (colon)
			*colon = 0;
		return access(body, R_OK) == 0;
	}
	static const char *const builtin[] = { "2q", "clock", "prefetch", "window" };
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcasecmp(body, builtin[i]))
			return !comma; /* they take no arguments */
	return false;
}

/* BYPASS_PAGER_ENGINE: the pager's mode and the engine held (explicit
 * options of the library, which reads no environment for them) */
static int engine_mode = BYPASS_PAGER_UPCALL;
static int engine_force = -1; /* enum bp_engine_force, -1: none */

static bool engine_env(void)
{
	const char *v = getenv("BYPASS_PAGER_ENGINE");
	if (!v || !*v || !strcasecmp(v, "upcall"))
		return true;
	engine_mode = BYPASS_PAGER_ADAPTIVE;
	if (!strcasecmp(v, "adaptive"))
		return true;
	if (!strcasecmp(v, "pool"))
		engine_force = BP_ENGINE_POOL;
	else if (!strcasecmp(v, "flip"))
		engine_force = BP_ENGINE_FLIP;
	else {
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_ENGINE=%s is not one of upcall, "
			       "adaptive, pool, flip; the program runs unpaged", v);
		return false;
	}
	return true;
}

/* BYPASS_PAGER_HEAT, _INTERVAL, _FILE: access heat, enabled once the pager
 * exists (the library starts no sampler by itself) */
static bool heat_on;
static struct bypass_pager_heat_config heat_cfg;
static char heat_tmpl[512], heat_path[1024];

/* The view file's path for this process: %p is its id (a forked child,
 * or a program a preloaded one starts, writes its own). */
static const char *heat_file(void)
{
	if (!heat_tmpl[0])
		return NULL;
	size_t o = 0;
	for (const char *q = heat_tmpl; *q && o + 16 < sizeof(heat_path); q++) {
		if (q[0] == '%' && q[1] == 'p') {
			o += (size_t)snprintf(heat_path + o, sizeof(heat_path) - o, "%d",
					      (int)getpid());
			q++;
		} else {
			heat_path[o++] = *q;
		}
	}
	heat_path[o] = 0;
	return heat_path;
}

static int heat_sources(const char *v, unsigned *out)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "all")) {
		*out = 0; /* every available one */
		return 0;
	}
	unsigned s = 0;
	for (const char *q = v; *q;) {
		size_t len = strcspn(q, ",");
		if (len == 6 && !strncmp(q, "faults", 6))
			s |= BYPASS_PAGER_HEAT_FAULTS;
		else if (len == 7 && !strncmp(q, "written", 7))
			s |= BYPASS_PAGER_HEAT_WRITTEN;
		else if (len == 5 && !strncmp(q, "damon", 5))
			s |= BYPASS_PAGER_HEAT_DAMON;
		else
			return -EINVAL;
		q += len;
		if (*q == ',')
			q++;
	}
	if (!s)
		return -EINVAL;
	*out = s;
	return 0;
}

static bool heat_env(void)
{
	/* every variable checked, set or not BYPASS_PAGER_HEAT */
	struct bypass_pager_heat_config c = { .flags = BYPASS_PAGER_HEAT_OPTIONAL };
	const char *iv = getenv("BYPASS_PAGER_HEAT_INTERVAL");
	if (iv && *iv) {
		char *end;
		errno = 0;
		unsigned long ms = strtoul(iv, &end, 10);
		if (errno || *end || !isdigit((unsigned char)*iv) || ms < 10 || ms > 60000) {
			bp_pl_complain("bypass: pager preload: BYPASS_PAGER_HEAT_INTERVAL=%s is not a "
				       "number of milliseconds from 10 to 60000; the program runs "
				       "unpaged", iv);
			return false;
		}
		c.interval_ms = (unsigned)ms;
	}
	const char *f = getenv("BYPASS_PAGER_HEAT_FILE");
	if (f && *f) {
		if (strlen(f) + 64 >= sizeof(heat_tmpl)) {
			bp_pl_complain("bypass: pager preload: BYPASS_PAGER_HEAT_FILE is too long; "
				       "the program runs unpaged");
			return false;
		}
		strcpy(heat_tmpl, f);
	}
	const char *v = bp_pl_env("BYPASS_PAGER_HEAT");
	if (!v || bp_env_switch(v) == 0)
		return true;
	if (heat_sources(v, &c.sources)) {
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_HEAT=%s is not 0, 1, all, or a "
			       "list of faults, written, damon; the program runs unpaged", v);
		return false;
	}
	heat_cfg = c;
	heat_on = true;
	return true;
}

/* BYPASS_PAGER_TIER: the compressed tier (bypass_pager_tier()), turned on
 * once the pager exists: 1/on for its defaults, or share=PCT,accept=PCT
 * (either or both; the library checks their ranges).  Off by default. */
static bool tier_on;
static struct bypass_pager_tier_config tier_cfg;
static char tier_spec[64];

static bool tier_env(void)
{
	const char *v = bp_pl_env("BYPASS_PAGER_TIER");
	if (!v || bp_env_switch(v) == 0)
		return true;
	struct bypass_pager_tier_config c;
	memset(&c, 0, sizeof(c));
	if (bp_env_switch(v) != 1) {
		const char *q = v;
		while (*q) {
			unsigned *dst;
			if (!strncmp(q, "share=", 6)) {
				dst = &c.share_pct;
				q += 6;
			} else if (!strncmp(q, "accept=", 7)) {
				dst = &c.accept_pct;
				q += 7;
			} else {
				goto bad;
			}
			char *end;
			errno = 0;
			unsigned long n = strtoul(q, &end, 10);
			if (errno || !isdigit((unsigned char)*q) || n > 100)
				goto bad;
			*dst = (unsigned)n;
			q = end;
			if (*q == ',' && q[1])
				q++;
			else if (*q)
				goto bad;
		}
	}
	/* the pool's share adapts (issue 35) unless BYPASS_PAGER_TIER_ADAPT=0 */
	bool adapt;
	if (!bp_pl_env_onoff("BYPASS_PAGER_TIER_ADAPT", &adapt))
		return false;
	if (!adapt)
		c.flags |= BYPASS_PAGER_TIER_FIXED;
	snprintf(tier_spec, sizeof(tier_spec), "%s", v);
	tier_cfg = c;
	tier_on = true;
	return true;
bad:
	bp_pl_complain("bypass: pager preload: BYPASS_PAGER_TIER=%s is not 0, 1, or "
		       "share=PCT,accept=PCT; the program runs unpaged", v);
	return false;
}

static bool configure(void)
{
	bool on;
	if (!bp_pl_env_onoff("BYPASS_PAGER", &on) || !on)
		return false;
	struct bp_pp_cfg c;
	memset(&c, 0, sizeof(c));
	if (!bp_pl_env_size("BYPASS_PAGER_BUDGET", 1ul << 30, 16 * PP_PAGE, &c.budget) ||
	    !bp_pl_env_size("BYPASS_PAGER_THRESHOLD", 64ul << 20, PP_PAGE, &c.threshold) ||
	    !bp_pl_env_size("BYPASS_PAGER_SWAP_SIZE", 4ul << 30, 16 * PP_PAGE, &c.swap_size))
		return false;
	if (!engine_env() || !heat_env() || !tier_env())
		return false;
	/* One budget for the process tree by default (docs/pager-preload.md,
	 * "One budget for a process tree"); process: a budget each. */
	const char *scope = getenv("BYPASS_PAGER_BUDGET_SCOPE");
	c.tree = true;
	if (scope && *scope) {
		if (!strcmp(scope, "process")) {
			c.tree = false;
		} else if (strcmp(scope, "tree")) {
			bp_pl_complain("bypass: pager preload: BYPASS_PAGER_BUDGET_SCOPE=%s is neither "
				       "tree nor process; the program runs unpaged", scope);
			return false;
		}
	}
	const char *pol = getenv("BYPASS_PAGER_POLICY");
	if (pol && *pol && !policy_ok(pol)) {
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_POLICY=%s is neither a built-in "
			       "policy (2q, clock, prefetch, window; no arguments) nor a readable "
			       "shared object; the program runs unpaged", pol);
		return false;
	}
	if (pol)
		strcpy(policy_spec, pol); /* policy_ok() checked the length */
	const char *dir = getenv("BYPASS_PAGER_SWAP");
	if (!dir || !*dir)
		dir = "/var/tmp";
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) < 0) {
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_SWAP=%s is not a writable "
			       "directory (each process puts an unnamed swap file there); the "
			       "program runs unpaged", dir);
		return false;
	}
	if (strlen(dir) >= sizeof(c.swap_dir)) {
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_SWAP is too long; the program "
			       "runs unpaged");
		return false;
	}
	strcpy(c.swap_dir, dir);
	if (!bp_pl_env_onoff("BYPASS_PAGER_HEAP", &c.heap))
		return false;
	if (!bp_pl_env_size("BYPASS_PAGER_HEAP_AFTER", 16ul << 20, 0, &c.heap_after))
		return false;
	if (!bp_pl_env_onoff("BYPASS_PAGER_SAMPLE", &c.sample) ||
	    !bp_pl_env_onoff("BYPASS_PAGER_SPIN", &c.spin))
		return false;
	/* lock ranks checked (rank.c): on in debug builds, off in release
	 * builds unless this says 1 */
	const char *lr = getenv("BYPASS_PAGER_LOCK_RANKS");
	bool ranks = false;
	if (lr && *lr) {
		if (!bp_pl_env_onoff("BYPASS_PAGER_LOCK_RANKS", &ranks))
			return false;
		bp_rank_enable(ranks);
	}
	const char *sf = getenv("BYPASS_STATS_FILE");
	if (sf && strlen(sf) < sizeof(c.stats_file))
		strcpy(c.stats_file, sf);
	/* A system call pins at most an eighth of the budget at a time, or a
	 * quarter up to 256 KiB (the pager lets half of it be pinned, by all
	 * threads together). */
	c.pin_max = c.budget / 8;
	if (c.pin_max < (256ul << 10)) /* room for a 64 KiB datagram if possible */
		c.pin_max = c.budget / 4 < (256ul << 10) ? c.budget / 4 : 256ul << 10;
	c.pin_max &= ~(PP_PAGE - 1);
	if (c.pin_max < PP_PAGE)
		c.pin_max = PP_PAGE;
	c.enabled = true;
	bp_pp_cfg = c;
	return true;
}

/* ------------------------------------------------------------ the pager */

/* The tier on a new pager: 0, or -errno (the program then runs unpaged).
 * A build without LZ4 pages without it, and says so. */
static int tier_start(bypass_pager *p)
{
	int e = bypass_pager_tier(p, &tier_cfg);
	if (e == -EOPNOTSUPP) {
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_TIER: this build has no LZ4 "
			       "(liblz4); the program runs paged without the tier");
		tier_on = false;
		return 0;
	}
	if (e)
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_TIER=%s: %s; the program runs "
			       "unpaged", tier_spec, strerror(-e));
	return e;
}

/* ------------------------------------------------------------ the tree */

/* The process tree's ledger (src/pager/tree.c), NULL with
 * BYPASS_PAGER_BUDGET_SCOPE=process or if none could be made. */
static struct bp_ledger *ledger;
static int ledger_fd = -1; /* kept open across exec for the tree (tree.c) */

/*
 * Find the ledger named by BYPASS_PAGER_LEDGER (a descriptor inherited
 * from the parent, across exec too), or make one and name it there for
 * the processes this one starts.  A name that is not a ledger is refused
 * with a line on stderr: this process then begins a tree of its own.
 */
static void tree_setup(void)
{
	const char *env = getenv("BYPASS_PAGER_LEDGER");
	const char *why;
	int fd;
	ledger = bp_tree_open(env, bp_pp_cfg.budget, &why, &fd);
	if (why)
		bp_pl_complain("bypass: pager preload: BYPASS_PAGER_LEDGER=%s is refused (%s); "
			       "this process and its children share a budget of their own", env,
			       why);
	if (!ledger) {
		bp_pl_complain("bypass: pager preload: no ledger for the process tree (%s); "
			       "this process keeps a budget of its own", strerror(-fd));
		return;
	}
	if (env && !why && bp_tree_budget(ledger) != bp_pp_cfg.budget)
		bp_info("bypass: pager preload: the tree's budget is %zu bytes (its ledger's), "
			"not BYPASS_PAGER_BUDGET's %zu", bp_tree_budget(ledger), bp_pp_cfg.budget);
	bp_pp_cfg.budget = bp_tree_budget(ledger);
	ledger_fd = fd;
	if (!env || why) {
		char v[24];
		snprintf(v, sizeof(v), "%d", fd);
		setenv("BYPASS_PAGER_LEDGER", v, 1);
	}
}

static pthread_mutex_t pager_lock = PTHREAD_MUTEX_INITIALIZER;
static bypass_pager *_Atomic the_pager;
static bypass_pager *stale_pager; /* a fork child's copy of the parent's */
static _Atomic bool pager_failed;

/* The descriptors the preload and its pager hold (fds.c): up to max into
 * out; how many.  Never makes the pager. */
int bp_pp_fds(int *out, int max)
{
	bypass_pager *p = atomic_load_explicit(&the_pager, memory_order_acquire);
	int n = p ? bp_pager_fds(p, out, max) : 0;
	if (ledger_fd >= 0) {
		if (n < max)
			out[n] = ledger_fd;
		n++;
	}
	return n;
}

bypass_pager *bp_pp_pager(void)
{
	bypass_pager *p = atomic_load_explicit(&the_pager, memory_order_acquire);
	if (bp_likely(p) || atomic_load_explicit(&pager_failed, memory_order_relaxed))
		return p;
	bp_mutex_lock(&pager_lock, BP_RANK_PP_PAGER);
	p = atomic_load(&the_pager);
	if (!p && !atomic_load(&pager_failed)) {
		bp_enter();
		if (stale_pager) {
			bypass_pager_destroy(stale_pager);
			stale_pager = NULL;
		}
		struct bypass_pager_config c;
		memset(&c, 0, sizeof(c));
		c.budget = bp_pp_cfg.budget;
		c.swap_path = bp_pp_cfg.swap_dir;
		c.swap_size = bp_pp_cfg.swap_size;
		c.mode = engine_mode;
		c.flags = BYPASS_PAGER_SWAP_TEMP | (bp_pp_cfg.sample ? BYPASS_PAGER_SAMPLE : 0) |
			  (bp_pp_cfg.spin ? 0 : BYPASS_PAGER_NO_SPIN);
		int e = bypass_pager_create(&c, &p);
		int te = !e && ledger ? bp_tree_join(p, ledger) : 0; /* before any map */
		if (te)
			bp_pl_complain("bypass: pager preload: joining the process tree's ledger: %s; "
				       "this process keeps a budget of its own", strerror(-te));
		if (e) {
			bp_pl_complain("bypass: pager preload: no pager (%s, budget %zu, swap %zu "
				       "bytes in %s); the program runs unpaged", strerror(-e),
				       c.budget, c.swap_size, c.swap_path);
		} else if (engine_force >= 0 && (e = bp_engine_force(p, engine_force))) {
			bp_pl_complain("bypass: pager preload: BYPASS_PAGER_ENGINE: %s; the program "
				       "runs unpaged", strerror(-e));
			bypass_pager_destroy(p);
		} else if (policy_spec[0] && (e = bypass_pager_set_policy(p, policy_spec))) {
			bp_pl_complain("bypass: pager preload: BYPASS_PAGER_POLICY=%s: %s; the program "
				       "runs unpaged", policy_spec, strerror(-e));
			bypass_pager_destroy(p);
		} else if (tier_on && (e = tier_start(p))) {
			bypass_pager_destroy(p);
		} else if (heat_on && (heat_cfg.stats_path = heat_file(),
				       e = bypass_pager_heat_enable(p, &heat_cfg))) {
			/* optional sources: only a failure to start at all */
			bp_pl_complain("bypass: pager preload: BYPASS_PAGER_HEAT: %s; heat stays off",
				       strerror(-e));
			e = 0;
		}
		bp_leave();
		if (e) {
			atomic_store(&pager_failed, true);
			p = NULL;
		} else {
			atomic_store_explicit(&the_pager, p, memory_order_release);
		}
	}
	bp_mutex_unlock(&pager_lock, BP_RANK_PP_PAGER);
	return p;
}

/*
 * The child of a fork.  Usually the library keeps the pager in the child
 * (its own fork handler, which runs after this one, re-arms it: the
 * parent's evicted pages are read from the parent's swap slots, nothing
 * was read back): the regions, the heap and the table go on as they are.
 * Where it cannot (pager.md, "Fork"), it read every evicted page back
 * before the fork: the regions are ordinary memory here, and the parent's
 * pager cannot be used; the records become PP_STALE (the child frees and
 * unmaps them as ordinary memory), and it makes a pager of its own when
 * it needs one (its new large allocations, the heap's new extents).
 */
static void atfork_child(void)
{
	pthread_mutex_init(&pager_lock, NULL);
	bp_pp_heap_forked();
	bp_pp_reserve_forked();
	bypass_pager *p = atomic_load(&the_pager);
	if (p && bp_share_kept(p)) {
		bp_pp_forked(false);
		return;
	}
	if (p)
		stale_pager = p;
	atomic_store(&the_pager, NULL);
	bp_pp_forked(true);
}

/* ------------------------------------------------------------ statistics */

/* One JSON object on one line (libbypass-pager(3)): {"module":"pager",
 * "pid":N, every counter of the public struct by name in its order, from
 * the pager's one list (src/pager/stats.h), lat_hist as an array; the
 * tier's and the tree's counters where they are on; "heap"}, appended to
 * BYPASS_STATS_FILE (preload/common/scaffold.h). */
static void write_stats(void)
{
	if (!bp_pp_cfg.enabled || !bp_pp_cfg.stats_file[0])
		return;
	struct bypass_pager_stats st;
	memset(&st, 0, sizeof(st));
	bypass_pager *p = atomic_load(&the_pager);
	if (p) {
		bp_enter();
		bypass_pager_stats(p, &st);
		bp_leave();
	}
	struct bp_pl_line l;
	bp_pl_line_open(&l, "pager", false);
#define J_HIST(name)                                                          \
	do {                                                                  \
		bp_pl_line_key(&l, #name);                                    \
		bp_pl_line_put(&l, "[");                                      \
		for (int i = 0; i < BYPASS_PAGER_HIST; i++)                   \
			bp_pl_line_put(&l, "%s%llu", i ? "," : "",            \
				       (unsigned long long)st.name[i]);       \
		bp_pl_line_put(&l, "]");                                      \
	} while (0);
#define J_SHARD(name) bp_pl_line_u64(&l, #name, st.name);
#define J_ATOMIC(name) bp_pl_line_u64(&l, #name, st.name);
#define J_PLAIN(name) bp_pl_line_u64(&l, #name, st.name);
#define J_SAMPLE(name) bp_pl_line_u64(&l, #name, st.name);
#define J(name, kind, from) J_##kind(name)
	BP_PAGER_COUNTERS(J)
#undef J
	if (p && tier_on) {
		struct bypass_pager_tier_stats ts;
		memset(&ts, 0, sizeof(ts));
		bp_enter();
		bypass_pager_tier_stats(p, &ts);
		bp_leave();
#define T(name) bp_pl_line_u64(&l, "tier_" #name, ts.name)
		T(stored); T(rejected); T(dropped); T(swapin_pool); T(swapin_file);
		T(pool_pages); T(pool_bytes); T(pool_only); T(pool_writes); T(share_moves);
		T(skipped); T(readmitted);
#undef T
	}
	if (p && bp_tree_ledger(p)) {
		struct bp_tree_stats ts;
		bp_tree_stats(p, &ts);
#define T(name) bp_pl_line_u64(&l, "tree_" #name, ts.name)
		T(budget_pages); T(slack_pages); T(total_pages); T(peak_pages); T(over_pages);
		T(asks); T(ask_timeouts); T(reclaimed); T(answered); T(members);
#undef T
	}
	bp_pl_line_u64(&l, "heap", bp_pp_heap_on());
	bp_pp_pack_report(&l);
	bp_pl_line_write(&l, bp_pp_cfg.stats_file, NULL);
}

/* ------------------------------------------------------------ life */

__attribute__((constructor)) static void pp_init(void)
{
	bp_pl_resolve();
	if (!configure())
		return;
	if (bp_pp_cfg.tree)
		tree_setup();
	bp_pl_on_fork(atfork_child);
	bp_pp_heap_start();
}

__attribute__((destructor)) static void pp_fini(void)
{
	write_stats();
}
