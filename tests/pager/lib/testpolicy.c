/* SPDX-License-Identifier: MIT */
/*
 * A policy in a shared object, for the pager's policy tests: loaded with
 * bypass_pager_set_policy(p, ".../testpolicy.so[,mode]").  The mode makes
 * it behave ("good": FIFO victims from its faults, prefetch of the next 8
 * pages) or misbehave in one way ("garbage", "outside", "fail", "greedy",
 * "dup"; "initfail" fails its init).  Its counters are global so that the
 * test can read them through dlsym.  Every callback but init/fini/on_hint
 * may run in a signal handler: atomics and static memory only.
 */
#include <bypass/pager.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

enum { GOOD, GARBAGE, OUTSIDE, FAIL, GREEDY, DUP };

_Atomic unsigned long testpol_faults, testpol_victim_calls, testpol_prefetch_calls,
	testpol_hints, testpol_access, testpol_inits, testpol_finis;

static int mode;
#define RING 4096u
static _Atomic uintptr_t ring[RING];
static _Atomic unsigned rhead, rtail;
static _Atomic uint64_t rnd = 88172645463325252ull;
static char outside_buf[8192] __attribute__((aligned(4096)));

static uint64_t next_rnd(void)
{
	uint64_t x = atomic_load(&rnd);
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	atomic_store(&rnd, x);
	return x;
}

static int tp_init(bypass_pager *p, const char *args, void **state)
{
	(void)p;
	static const char *const names[] = { "good", "garbage", "outside", "fail", "greedy", "dup" };
	*state = &mode;
	atomic_fetch_add(&testpol_inits, 1);
	atomic_store(&rhead, 0);
	atomic_store(&rtail, 0);
	if (!args || !*args) {
		mode = GOOD;
		return 0;
	}
	if (!strcmp(args, "initfail"))
		return -EIO;
	for (int i = 0; i < 6; i++)
		if (!strcmp(args, names[i])) {
			mode = i;
			return 0;
		}
	return -EINVAL;
}

static void tp_fini(void *state)
{
	(void)state;
	atomic_fetch_add(&testpol_finis, 1);
}

static void tp_fault(void *state, const struct bypass_pager_fault *f)
{
	(void)state;
	atomic_fetch_add(&testpol_faults, 1);
	if (f->kind == BYPASS_PAGER_FAULT_ZERO || f->kind == BYPASS_PAGER_FAULT_SWAPIN) {
		for (unsigned i = 0; i < f->npages; i++) {
			unsigned h = atomic_fetch_add(&rhead, 1);
			atomic_store(&ring[h % RING], (uintptr_t)f->addr + i * 4096ul);
		}
	}
}

static void tp_access(void *state, void *addr, size_t npages, unsigned flags)
{
	(void)state, (void)addr, (void)npages, (void)flags;
	atomic_fetch_add(&testpol_access, 1);
}

static int tp_victims(void *state, void **addrs, unsigned n)
{
	(void)state;
	atomic_fetch_add(&testpol_victim_calls, 1);
	switch (mode) {
	case FAIL:
		return -EIO;
	case GARBAGE:
		for (unsigned i = 0; i < n; i++)
			addrs[i] = (void *)(uintptr_t)next_rnd();
		return (int)n;
	case OUTSIDE:
		for (unsigned i = 0; i < n; i++)
			addrs[i] = i % 3 == 0 ? (void *)outside_buf
				 : i % 3 == 1 ? (void *)(outside_buf + 4096)
					      : (void *)((uintptr_t)atomic_load(&ring[0]) + 1);
		return (int)n;
	case DUP: {
		uintptr_t a = atomic_load(&ring[(atomic_load(&rhead) - 1) % RING]);
		for (unsigned i = 0; i < n; i++)
			addrs[i] = (void *)a;
		return (int)n;
	}
	default:
		break;
	}
	unsigned got = 0;
	while (got < n) {
		unsigned t = atomic_load(&rtail);
		if (t == atomic_load(&rhead))
			break;
		if (!atomic_compare_exchange_weak(&rtail, &t, t + 1))
			continue;
		addrs[got++] = (void *)atomic_load(&ring[t % RING]);
	}
	return mode == GREEDY ? (int)n + 1000 : (int)got;
}

static int tp_prefetch(void *state, const struct bypass_pager_fault *f,
		       struct bypass_pager_range *out, unsigned n)
{
	(void)state;
	atomic_fetch_add(&testpol_prefetch_calls, 1);
	switch (mode) {
	case FAIL:
		return -EIO;
	case GARBAGE:
		for (unsigned i = 0; i < n; i++)
			out[i] = (struct bypass_pager_range){ (void *)(uintptr_t)next_rnd(),
							      (size_t)next_rnd() };
		return (int)n;
	case OUTSIDE:
		out[0] = (struct bypass_pager_range){ outside_buf, sizeof(outside_buf) };
		out[1] = (struct bypass_pager_range){ (char *)f->region - 4096, 8192 };
		out[2] = (struct bypass_pager_range){ (char *)f->region + f->region_len - 4096,
						      8192 };
		out[3] = (struct bypass_pager_range){ f->addr, 0 };
		return 4;
	case GREEDY:
		for (unsigned i = 0; i < n; i++)
			out[i] = (struct bypass_pager_range){ f->region, f->region_len };
		return (int)n + 5;
	default:
		break;
	}
	if (f->kind != BYPASS_PAGER_FAULT_SWAPIN)
		return 0;
	char *a = (char *)f->addr + 4096ul * f->npages, *end = (char *)f->region + f->region_len;
	if (a >= end)
		return 0;
	size_t len = 8 * 4096ul;
	if (len > (size_t)(end - a))
		len = (size_t)(end - a);
	out[0] = (struct bypass_pager_range){ a, len };
	return 1;
}

static int tp_hint(void *state, void *addr, size_t len, int advice)
{
	(void)state, (void)addr, (void)len, (void)advice;
	atomic_fetch_add(&testpol_hints, 1);
	return mode == FAIL ? -EIO : 0;
}

const struct bypass_pager_policy bypass_pager_policy = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "testpol", .init = tp_init,
	.fini = tp_fini, .on_fault = tp_fault, .on_access = tp_access,
	.choose_victims = tp_victims, .prefetch = tp_prefetch, .on_hint = tp_hint,
};

/* the same under another symbol (":testpol_alt") */
const struct bypass_pager_policy testpol_alt = {
	.version = BYPASS_PAGER_POLICY_VERSION, .name = "testpol-alt", .init = tp_init,
	.fini = tp_fini, .choose_victims = tp_victims,
};

/* a struct of a future version: refused */
const struct bypass_pager_policy testpol_badver = {
	.version = 99, .name = "testpol-badver",
};
