/* SPDX-License-Identifier: MIT */
/*
 * bypass run's report: when the program has ended, what the preloads did
 * for the whole process tree, one fact a line, in words and units.  It
 * reads the counters each process's preload appended to the stats file at
 * its exit (one JSON object a line: preload/pager/init.c write_stats,
 * preload/batch/settings.c bp_bt_stats_dump) and what the monitor saw of
 * the tree's memory while it ran (monitor.c).  A fact no counter gives is
 * said to be unknown rather than guessed.
 */
#include "cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if BYPASS_WITH_BATCH
#include "batch/batch_internal.h"
#endif
#if BYPASS_WITH_PAGER
#include "pager/stats.h" /* BP_PAGER_COUNTERS */
#endif

#define MAXH 64

/* A process's counters, as many as its line has (the preloads add
 * counters release by release: no cap here that a newer preload could
 * pass and lose the last ones silently). */
struct counter {
	char key[32];
	uint64_t val;
};

struct proc {
	char module[16];
	int pid;
	unsigned nk, capk;
	struct counter *k;
	uint64_t hist[MAXH];
	unsigned nhist;
};

#if BYPASS_WITH_PAGER || BYPASS_WITH_BATCH
static uint64_t get(const struct proc *p, const char *k)
{
	for (unsigned i = 0; i < p->nk; i++)
		if (!strcmp(p->k[i].key, k))
			return p->k[i].val;
	return 0;
}
#endif

#if BYPASS_WITH_PAGER
static bool has_key(const struct proc *p, const char *k)
{
	for (unsigned i = 0; i < p->nk; i++)
		if (!strcmp(p->k[i].key, k))
			return true;
	return false;
}
#endif

static int add_counter(struct proc *p, const char *key, uint64_t v)
{
	if (p->nk == p->capk) {
		unsigned cap = p->capk ? 2 * p->capk : 64;
		struct counter *nk = realloc(p->k, cap * sizeof(*nk));
		if (!nk)
			return -1;
		p->k = nk;
		p->capk = cap;
	}
	snprintf(p->k[p->nk].key, sizeof(p->k[0].key), "%s", key);
	p->k[p->nk++].val = v;
	return 0;
}

/* One flat JSON object: strings, numbers, and one array of numbers
 * (lat_hist).  Returns 0, or -1 when the line is not one (or memory ran
 * out: the line is then left out, like a line that is not one). */
static int parse_line(const char *line, struct proc *p)
{
	const char *s = strchr(line, '{');
	if (!s)
		return -1;
	s++;
	for (;;) {
		while (*s == ' ' || *s == ',')
			s++;
		if (*s != '"')
			break;
		const char *k = ++s;
		const char *ke = strchr(s, '"');
		if (!ke)
			return -1;
		char key[32];
		snprintf(key, sizeof(key), "%.*s", (int)(ke - k), k);
		s = ke + 1;
		while (*s == ' ' || *s == ':')
			s++;
		if (*s == '"') {
			const char *v = ++s;
			const char *ve = strchr(s, '"');
			if (!ve)
				return -1;
			if (!strcmp(key, "module"))
				snprintf(p->module, sizeof(p->module), "%.*s", (int)(ve - v), v);
			s = ve + 1;
		} else if (*s == '[') {
			s++;
			while (*s && *s != ']') {
				while (*s == ' ' || *s == ',')
					s++;
				if (!isdigit((unsigned char)*s))
					break;
				char *e;
				uint64_t v = strtoull(s, &e, 10);
				if (p->nhist < MAXH && !strcmp(key, "lat_hist"))
					p->hist[p->nhist++] = v;
				s = e;
			}
			if (*s == ']')
				s++;
		} else if (isdigit((unsigned char)*s) || *s == '-') {
			char *e;
			uint64_t v = strtoull(s, &e, 10);
			if (!strcmp(key, "pid"))
				p->pid = (int)v;
			else if (add_counter(p, key, v))
				return -1;
			s = e;
		} else {
			return -1;
		}
	}
	return p->module[0] ? 0 : -1;
}

static int parse(const char *line, struct proc *p)
{
	memset(p, 0, sizeof(*p));
	if (!parse_line(line, p))
		return 0;
	free(p->k);
	p->k = NULL;
	return -1;
}

/* ------------------------------------------------------------ units */

#if BYPASS_WITH_PAGER || BYPASS_WITH_BATCH
static const char *size_str(char *b, size_t len, uint64_t bytes)
{
	if (bytes >= (1ull << 30))
		snprintf(b, len, "%.1f GiB", (double)bytes / (1ull << 30));
	else if (bytes >= (1ull << 20))
		snprintf(b, len, "%.1f MiB", (double)bytes / (1ull << 20));
	else if (bytes >= 1024)
		snprintf(b, len, "%.1f KiB", (double)bytes / 1024);
	else
		snprintf(b, len, "%" PRIu64 " bytes", bytes);
	return b;
}

#define plural(n) (n), ((n) == 1 ? "" : "s")
#endif

#if BYPASS_WITH_PAGER /* the units only the pager's report uses, and the report */
static const char *ns_str(char *b, size_t len, double ns)
{
	if (ns >= 1e9)
		snprintf(b, len, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(b, len, "%.1f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(b, len, "%.1f us", ns / 1e3);
	else
		snprintf(b, len, "%.0f ns", ns);
	return b;
}

static const char *pct(char *b, size_t len, double part, double whole)
{
	if (whole <= 0)
		snprintf(b, len, "n/a");
	else if (part / whole < 0.001 && part > 0)
		snprintf(b, len, "<0.1%%");
	else
		snprintf(b, len, "%.*f%%", part / whole < 0.1 ? 1 : 0, 100.0 * part / whole);
	return b;
}

/* The histogram bucket [2^i, 2^(i+1)) ns that holds quantile q. */
static int quantile(const uint64_t *h, unsigned n, double q)
{
	uint64_t total = 0, acc = 0;
	for (unsigned i = 0; i < n; i++)
		total += h[i];
	if (!total)
		return -1;
	uint64_t want = (uint64_t)(q * (double)total);
	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < n; i++) {
		acc += h[i];
		if (acc >= want)
			return (int)i;
	}
	return (int)n - 1;
}

static const char *bucket_str(char *b, size_t len, int i)
{
	double lo = (double)(1ull << i), hi = (double)(1ull << (i + 1));
	double scale = hi <= 1e3 ? 1 : hi <= 1e6 ? 1e3 : hi <= 1e9 ? 1e6 : 1e9;
	const char *unit = scale == 1 ? "ns" : scale == 1e3 ? "us" : scale == 1e6 ? "ms" : "s";
	snprintf(b, len, "%.3g-%.3g %s", lo / scale, hi / scale, unit);
	return b;
}

/* ------------------------------------------------------------ pager */

/* Every counter of the pager's one list (src/pager/stats.h), by name, as
 * the preload's line writes them: summed over the processes, each read as
 * sum[PC_<name>] (a new counter is summed with no line here). */
#define PC_ENUM(name, kind, from) PC_##name,
enum { BP_PAGER_COUNTERS(PC_ENUM) PC_N };
#undef PC_ENUM
#define PC_KEY(name, kind, from) #name,
static const char *const pc_keys[PC_N] = { BP_PAGER_COUNTERS(PC_KEY) };
#undef PC_KEY

static void report_pager(FILE *out, const struct proc *ps, size_t n, const struct cli_run_facts *f)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned procs = 0, paged = 0, heap = 0;
	uint64_t sum[PC_N] = { 0 }; /* lat_hist's stays 0: hist[] below */
#define S(name) sum[PC_##name]
	uint64_t hist[MAXH] = { 0 };
	unsigned nhist = 0;
	const struct proc *top = NULL, *over = NULL, *swapfull = NULL;
	uint64_t top_peak = 0;
	double swap_ratio = 0;
	for (size_t i = 0; i < n; i++) {
		const struct proc *p = &ps[i];
		if (strcmp(p->module, "pager"))
			continue;
		procs++;
		uint64_t budget = get(p, "budget_pages"), peak = get(p, "resident_peak");
		if (budget || get(p, "mapped_pages"))
			paged++;
		heap += get(p, "heap") != 0;
		for (unsigned k = 0; k < PC_N; k++)
			sum[k] += get(p, pc_keys[k]);
		for (unsigned k = 0; k < p->nhist; k++)
			hist[k] += p->hist[k];
		if (p->nhist > nhist)
			nhist = p->nhist;
		if (!top || peak > top_peak) {
			top = p;
			top_peak = peak;
		}
		if (budget && peak > budget)
			over = p;
		uint64_t cap = get(p, "swap_pages"), used = get(p, "swap_used");
		if (cap && (double)used / (double)cap > swap_ratio) {
			swap_ratio = (double)used / (double)cap;
			swapfull = p;
		}
	}
	if (!procs) {
		fprintf(out, "bypass: pager: no counters: no process that loaded the pager preload "
			     "exited normally (a statically linked program, or one killed by a signal, "
			     "writes none)\n");
		return;
	}
	char a[48], b[48], c[48], d[48];
	fprintf(out, "bypass: pager: %u process%s, %u of them with paged memory, a run of %.1f s\n",
		procs, procs == 1 ? "" : "es", paged, f->wall_s);
	fprintf(out, "bypass: pager: budget: %s of resident paged memory (BYPASS_PAGER_BUDGET); %s\n",
		size_str(a, sizeof(a), f->budget),
		heap == procs ? "small allocations paged too (the heap over pager regions)"
		: heap ? "small allocations paged too in some processes"
		       : "allocations below BYPASS_PAGER_THRESHOLD stay outside it (heap off or not engaged)");

	/* The tree's memory, all of it, against the budget. */
	const struct cli_monitor *m = f->mon;
	uint64_t largest = f->largest_rss;
	if (m && m->largest_hwm > largest)
		largest = m->largest_hwm;
	uint64_t tree_peak = m ? m->peak : 0;
	if (largest > tree_peak)
		tree_peak = largest;
	if (m && m->samples)
		fprintf(out, "bypass: pager: peak resident memory: %s for the whole tree, %s of the "
			     "budget (proportional set size of up to %u process%s, sampled every %.1f s; "
			     "the largest process's high-water mark as the kernel records it: %s)\n",
			size_str(a, sizeof(a), tree_peak), pct(b, sizeof(b), (double)tree_peak, (double)f->budget),
			m->max_procs, m->max_procs == 1 ? "" : "es", m->interval,
			size_str(c, sizeof(c), largest));
	else
		fprintf(out, "bypass: pager: peak resident memory: %s, %s of the budget (the largest "
			     "process's high-water mark; the run ended before a sample of the tree)\n",
			size_str(a, sizeof(a), tree_peak), pct(b, sizeof(b), (double)tree_peak, (double)f->budget));
	if (top && paged)
		fprintf(out, "bypass: pager: paged memory resident at most: %s (pid %d), %s of its "
			     "pager's budget\n",
			size_str(a, sizeof(a), top_peak * page), top->pid,
			pct(b, sizeof(b), (double)top_peak, (double)get(top, "budget_pages")));

	if (!paged) {
		fprintf(out, "bypass: pager: nothing was paged: no allocation reached "
			     "BYPASS_PAGER_THRESHOLD and the heap over pager regions did not engage\n");
		goto warnings;
	}
	fprintf(out, "bypass: pager: evicted: %s (%" PRIu64 " page%s; %s of them clean, dropped "
		     "without a write; %s written to swap)\n",
		size_str(a, sizeof(a), S(evictions) * page), plural(S(evictions)),
		size_str(b, sizeof(b), S(evictions_clean) * page), size_str(c, sizeof(c), S(bytes_written)));
	fprintf(out, "bypass: pager: read back from swap: %s (%" PRIu64 " swap-in fault%s, %" PRIu64
		     " page%s read along, %" PRIu64 " prefetched of which %" PRIu64 " used)\n",
		size_str(a, sizeof(a), S(bytes_read)), plural(S(faults_swapin)), plural(S(readahead_pages)),
		S(prefetch_pages), S(prefetch_used));
	{
		/* The compressed tier (issue 35), where a process had it on
		 * (its line carries the tier_* counters). */
		unsigned on = 0;
		uint64_t st = 0, rej = 0, skip = 0, pool = 0, file = 0, held = 0, mem = 0;
		for (size_t i = 0; i < n; i++) {
			if (strcmp(ps[i].module, "pager") || !has_key(&ps[i], "tier_stored"))
				continue;
			on++;
			st += get(&ps[i], "tier_stored");
			rej += get(&ps[i], "tier_rejected");
			skip += get(&ps[i], "tier_skipped");
			pool += get(&ps[i], "tier_swapin_pool");
			file += get(&ps[i], "tier_swapin_file");
			held += get(&ps[i], "tier_pool_pages");
			mem += get(&ps[i], "tier_pool_bytes");
		}
		if (mem)
			snprintf(c, sizeof(c), " (%.1fx)", (double)(held * page) / (double)mem);
		else
			c[0] = 0;
		if (on)
			fprintf(out, "bypass: pager: compressed tier: %" PRIu64 " page%s put in the pool, "
				     "%" PRIu64 " that did not compress written to swap (%" PRIu64
				     " untried); swap-ins: %" PRIu64 " from the pool, %" PRIu64
				     " from the file; at exit the pool held %s of pages in %s%s\n",
				plural(st), rej, skip, pool, file, size_str(a, sizeof(a), held * page),
				size_str(b, sizeof(b), mem), c);
	}
	fprintf(out, "bypass: pager: time in faults: %s, %s of the %.1f s run (service time summed "
		     "over threads and processes; the signal's delivery is not in it)\n",
		ns_str(a, sizeof(a), (double)S(lat_sum_ns)),
		pct(b, sizeof(b), (double)S(lat_sum_ns), f->wall_s * 1e9), f->wall_s);
	int q50 = quantile(hist, nhist, 0.5), q99 = quantile(hist, nhist, 0.99);
	if (q50 < 0)
		fprintf(out, "bypass: pager: fault latency: no fault was served\n");
	else
		fprintf(out, "bypass: pager: fault latency: median %s, p99 %s (%" PRIu64 " faults: %" PRIu64
			     " first touches, %" PRIu64 " swap-ins, %" PRIu64 " writes to clean pages, %" PRIu64
			     " other; the histogram's buckets are powers of two)\n",
			bucket_str(a, sizeof(a), q50), bucket_str(b, sizeof(b), q99), S(lat_count), S(faults_zero),
			S(faults_swapin), S(faults_wp), S(faults_other));

	const char *pol = getenv("BYPASS_PAGER_POLICY"), *eng = getenv("BYPASS_PAGER_ENGINE");
	snprintf(a, sizeof(a), "%s", pol && *pol ? pol : "");
	snprintf(b, sizeof(b), "%s", eng && *eng ? eng : "");
	fprintf(out, "bypass: pager: policy: %s%s; engine: %s%s",
		a[0] ? a : "the preload's default", a[0] ? " (BYPASS_PAGER_POLICY)" : " (BYPASS_PAGER_POLICY unset)",
		b[0] ? b : "the preload's default", b[0] ? " (BYPASS_PAGER_ENGINE)" : " (BYPASS_PAGER_ENGINE unset)");
	if (S(engine_switches))
		fprintf(out, ", %" PRIu64 " switch%s between upcalls and the handler pool", S(engine_switches),
			S(engine_switches) == 1 ? "" : "es");
	if (S(policy_rejects))
		fprintf(out, "; %" PRIu64 " answers of the policy refused", S(policy_rejects));
	fprintf(out, "\n");
	{
		uint64_t cap = swapfull ? get(swapfull, "swap_pages") : 0;
		uint64_t used = swapfull ? get(swapfull, "swap_used") : 0;
		for (size_t i = 0; !cap && i < n; i++)
			if (!strcmp(ps[i].module, "pager"))
				cap = get(&ps[i], "swap_pages");
		const char *dir = f->swap ? f->swap : getenv("BYPASS_PAGER_SWAP");
		if (cap)
			fprintf(out, "bypass: pager: swap: a %s swap file per paging process in %s; "
				     "%s written in all; at exit the fullest held %s (%s; its peak use "
				     "is not counted)\n",
				size_str(a, sizeof(a), cap * page),
				dir && *dir ? dir : "the preload's default directory",
				size_str(b, sizeof(b), S(bytes_written)), size_str(c, sizeof(c), used * page),
				pct(d, sizeof(d), (double)used, (double)cap));
	}
warnings:
	/* Warnings: what a person must act on. */
	if (f->budget && tree_peak > f->budget) {
		fprintf(out, "bypass: pager: WARNING: the budget was exceeded: the process tree's "
			     "resident memory reached %s, over the %s budget, ",
			size_str(a, sizeof(a), tree_peak), size_str(b, sizeof(b), f->budget));
		if (paged > 1)
			fprintf(out, "with %u processes paging, and ", paged);
		fprintf(out, "with memory the pager does not hold (program text, libraries, stacks, "
			     "allocations below BYPASS_PAGER_THRESHOLD before the heap engages: "
			     "libbypass-pager(3))\n");
	}
	if (over)
		fprintf(out, "bypass: pager: WARNING: pid %d's pager held %s resident, over its "
			     "%s budget\n",
			over->pid, size_str(a, sizeof(a), get(over, "resident_peak") * page),
			size_str(b, sizeof(b), get(over, "budget_pages") * page));
	if (swapfull && swap_ratio >= 0.9)
		fprintf(out, "bypass: pager: WARNING: the swap file is nearly full (%s used in pid "
			     "%d): evictions fail when it is; give a larger BYPASS_PAGER_SWAP_SIZE\n",
			pct(a, sizeof(a), swap_ratio, 1.0), swapfull->pid);
	if (S(write_errors))
		fprintf(out, "bypass: pager: WARNING: %" PRIu64 " write-back%s to the swap file failed "
			     "(the pages stayed resident)\n",
			plural(S(write_errors)));
#undef S
}

#endif /* BYPASS_WITH_PAGER */

/* ------------------------------------------------------------ batch */

#if BYPASS_WITH_BATCH
static void report_batch(FILE *out, const struct proc *ps, size_t n, const struct cli_run_facts *f)
{
	unsigned procs = 0;
	/* every counter of the batch line (BT_COUNTERS), summed by name */
	struct bt_counters t = { 0 };
	for (size_t i = 0; i < n; i++) {
		const struct proc *p = &ps[i];
		if (strcmp(p->module, "batch"))
			continue;
		procs++;
#define ADD(name) t.name += get(p, #name);
		BT_COUNTERS(ADD)
#undef ADD
	}
	const uint64_t seg = t.segments, def = t.deferred, direct = t.direct, enters = t.enters,
		       bytes = t.bytes, errors = t.errors, reported = t.reported,
		       merged = t.merged_waits, partial = t.partial, spliced = t.spliced,
		       eagain = t.eagain;
	if (!procs) {
		fprintf(out, "bypass: batch: no counters: no process that loaded the batch preload "
			     "exited normally (a statically linked program, or one killed by a signal, "
			     "writes none)\n");
		return;
	}
	char a[48];
	fprintf(out, "bypass: batch: %u process%s, a run of %.1f s\n", procs, procs == 1 ? "" : "es",
		f->wall_s);
	if (def)
		fprintf(out, "bypass: batch: calls deferred: %" PRIu64 " (%s of payload) in %" PRIu64
			     " segment%s; %" PRIu64 " other call%s inside segments ran as system calls\n",
			def, size_str(a, sizeof(a), bytes), plural(seg), plural(direct));
	else
		fprintf(out, "bypass: batch: calls deferred: none (%" PRIu64 " segment%s; a segment "
			     "begins when the program's event loop returns from epoll_wait, poll or "
			     "select, and only writes, sends, sendfile, shutdown, close and setsockopt "
			     "on sockets and pipes are deferred)\n",
			plural(seg));
	/* Each deferred call would have been a crossing, each merged wait
	 * one more (the flush and the wait went in together); the
	 * io_uring_enter calls made are crossings that remain. */
	double saved = (double)def + (double)merged - (double)enters;
	if (saved >= 0)
		fprintf(out, "bypass: batch: kernel crossings saved: %.0f, %.1f per second (%" PRIu64
			     " deferred calls + %" PRIu64 " merged waits - %" PRIu64 " io_uring_enter calls)\n",
			saved, f->wall_s > 0 ? saved / f->wall_s : 0, def, merged, enters);
	else
		fprintf(out, "bypass: batch: kernel crossings saved: none: %.0f more than without the "
			     "preload, %.1f per second (%" PRIu64 " deferred calls + %" PRIu64 " merged "
			     "waits - %" PRIu64 " io_uring_enter calls)\n",
			-saved, f->wall_s > 0 ? -saved / f->wall_s : 0, def, merged, enters);
	if (errors)
		fprintf(out, "bypass: batch: errors reported late: %" PRIu64 " deferred call%s failed "
			     "after returning success; %" PRIu64 " reported to the next call on the "
			     "descriptor, %" PRIu64 " never (no later call on it)\n",
			plural(errors), reported, errors - (reported < errors ? reported : errors));
	else
		fprintf(out, "bypass: batch: errors reported late: none (no deferred call failed)\n");
	if (merged) {
		fprintf(out, "bypass: batch: merged wait: used %" PRIu64 " time%s (the flush and the "
			     "next epoll_wait in one io_uring_enter)\n",
			plural(merged));
	} else {
		const char *why = "the program's waits never found calls queued, it waits with poll "
				  "or select, or BYPASS_BATCH_MERGED_WAIT=0";
		if (!bp_bt_merged_wait_available())
			why = "this kernel has no IORING_OP_EPOLL_WAIT (Linux 6.15)";
		fprintf(out, "bypass: batch: merged wait: not used (%s)\n", why);
	}
	if (partial || spliced || eagain)
		fprintf(out, "bypass: batch: also: %" PRIu64 " short write%s finished by the preload, "
			     "%" PRIu64 " sendfile call%s deferred as splices, %" PRIu64 " write%s answered "
			     "EAGAIN behind queued data\n",
			plural(partial), plural(spliced), plural(eagain));
}
#endif /* BYPASS_WITH_BATCH */

int cli_report(FILE *out, const char *stats_path, long from, const struct cli_run_facts *f)
{
	FILE *in = stats_path ? fopen(stats_path, "r") : NULL;
	if (in && from > 0)
		fseek(in, from, SEEK_SET);
	size_t n = 0, cap = 0;
	struct proc *ps = NULL;
	if (in) {
		char *line = NULL;
		size_t linecap = 0;
		while (getline(&line, &linecap, in) > 0) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				struct proc *np = realloc(ps, cap * sizeof(*ps));
				if (!np)
					break;
				ps = np;
			}
			if (!parse(line, &ps[n]))
				n++;
		}
		free(line);
		fclose(in);
	}
	(void)f; /* a build with neither preload */
#if BYPASS_WITH_PAGER
	if (f->pager)
		report_pager(out, ps, n, f);
#endif
#if BYPASS_WITH_BATCH
	if (f->batch)
		report_batch(out, ps, n, f);
#endif
	fflush(out);
	for (size_t i = 0; i < n; i++)
		free(ps[i].k);
	free(ps);
	return (int)n;
}
