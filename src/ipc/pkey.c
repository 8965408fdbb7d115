/* SPDX-License-Identifier: MIT */
/*
 * Memory protection keys for arenas (BYPASS_IPC_PKEY).
 *
 * One key per process tags every guarded arena mapping.  Outside the library
 * the key is write-disabled in this thread's PKRU, so application code may
 * read received messages in place but a stray write faults; the library
 * opens write access on entry and closes it on exit (and keeps it open while
 * the thread holds a loan, which the application writes into).
 *
 * This file is ipc's one protection-key layer: the CPU/OS probe, key
 * allocation (struct bp_ipc_key: the arenas' key here, the gate's in
 * lib_gate.c) and RDPKRU/WRPKRU (ipc_internal.h).
 *
 * Exercised by tests/ipc/pkey.c wherever the CPU has PKU (the project's
 * AMD EPYC VM does).  Everything is detected at run time and refused with
 * -EOPNOTSUPP and a reason elsewhere; RDPKRU/WRPKRU are executed only after
 * pkey_alloc succeeded, which implies the OS enabled them (OSPKE).  The
 * rings are pre-faulted before an arena is tagged: MADV_POPULATE_WRITE
 * honours PKRU and fails on a write-disabled key.
 */
#include "ipc/ipc_internal.h"

#include <cpuid.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PKEY_DISABLE_WRITE
#define PKEY_DISABLE_WRITE 0x2
#endif

/* The arenas' key: write-disabled outside the library. */
static struct bp_ipc_key arena_key = BP_IPC_KEY_INIT(PKEY_DISABLE_WRITE);
/* the_key, once read: arena_key.key after bp_ipc_key_get, for the paths
 * that run on every entry (open, close) */
static _Atomic int the_key = -EOPNOTSUPP;

bool bp_ipc_pkey_cpu(char *why, size_t n)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((c >> 3) & 1)) {
		if (why)
			snprintf(why, n, "the CPU does not report protection keys "
				 "(CPUID.7.0:ECX[3] PKU)");
		return false;
	}
	if (!((c >> 4) & 1)) {
		if (why)
			snprintf(why, n, "the OS has not enabled protection keys "
				 "(CPUID.7.0:ECX[4] OSPKE)");
		return false;
	}
	return true;
}

int bp_ipc_pkey_alloc(unsigned rights, char *why, size_t n)
{
	if (!bp_ipc_pkey_cpu(why, n))
		return -EOPNOTSUPP;
	long k = bp_sys_ret(bp_syscall2(SYS_pkey_alloc, 0, rights));
	if (k < 0) {
		int e = errno;
		snprintf(why, n, "pkey_alloc failed: %s", strerror(e));
		return -e;
	}
	return (int)k;
}

int bp_ipc_key_get(struct bp_ipc_key *k)
{
	if (atomic_load_explicit(&k->state, memory_order_acquire))
		return k->key;
	pthread_mutex_lock(&k->lock);
	if (!atomic_load_explicit(&k->state, memory_order_relaxed)) {
		int key = bp_ipc_pkey_alloc(k->rights, k->reason, sizeof(k->reason));
		if (key >= 0)
			snprintf(k->reason, sizeof(k->reason), "available (key %d)", key);
		k->key = key < 0 ? -EOPNOTSUPP : key; /* the reason says which failure */
		atomic_store_explicit(&k->state, 1, memory_order_release);
	}
	pthread_mutex_unlock(&k->lock);
	return k->key;
}

int bp_ipc_pkey_get(void)
{
	int k = bp_ipc_key_get(&arena_key);
	atomic_store_explicit(&the_key, k, memory_order_relaxed);
	if (k < 0)
		bp_info("bypass: ipc: protection keys unavailable: %s", arena_key.reason);
	return k;
}

int bypass_ipc_pkey_supported(const char **why)
{
	int k = bp_ipc_key_get(&arena_key);
	atomic_store_explicit(&the_key, k, memory_order_relaxed);
	if (why)
		*why = arena_key.reason;
	return k >= 0;
}

/* PKRU as this thread had it at its last bp_ipc_pkey_open. */
static __thread uint32_t pkru_before __attribute__((tls_model("initial-exec")));

static inline int key_now(void)
{
	return atomic_load_explicit(&the_key, memory_order_relaxed);
}

/* PKRU has two bits per key: access-disable (bit 2k), write-disable (2k+1). */
void bp_ipc_pkey_open(void)
{
	int k = key_now();
	if (k < 0)
		return;
	uint32_t v = bp_ipc_rdpkru();
	uint32_t nv = v & ~(3u << (2 * k));
	pkru_before = v;
	if (nv != v)
		bp_ipc_wrpkru(nv);
}

/*
 * After a fault was recovered (siglongjmp from the signal handler, which
 * restores no PKRU): the thread still runs with the kernel's default PKRU,
 * every key but 0 access-disabled.  Put back what it had at the last open,
 * with our key write-disabled.
 */
void bp_ipc_pkey_after_fault(void)
{
	int k = key_now();
	if (k < 0)
		return;
	bp_ipc_wrpkru((pkru_before & ~(3u << (2 * k))) | (2u << (2 * k)));
}

void bp_ipc_pkey_close(void)
{
	int k = key_now();
	if (k < 0)
		return;
	uint32_t v = bp_ipc_rdpkru();
	uint32_t nv = (v & ~(3u << (2 * k))) | (2u << (2 * k));
	if (nv != v)
		bp_ipc_wrpkru(nv);
}

int bp_ipc_pkey_tag(void *addr, size_t len)
{
	int k = bp_ipc_pkey_get();
	if (k < 0)
		return -EOPNOTSUPP;
	if (bp_sys_pkey_mprotect(addr, len, PROT_READ | PROT_WRITE, (int)k) < 0)
		return -errno;
	bp_ipc_pkey_close();
	return 0;
}
