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

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int the_key = -EOPNOTSUPP;
static char reason[160] = "not checked";

int bp_ipc_pkey_alloc(unsigned rights, char *why, size_t n)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((c >> 3) & 1)) {
		snprintf(why, n, "the CPU does not report protection keys (CPUID.7.0:ECX[3] PKU)");
		return -EOPNOTSUPP;
	}
	if (!((c >> 4) & 1)) {
		snprintf(why, n, "the OS has not enabled protection keys (CPUID.7.0:ECX[4] OSPKE)");
		return -EOPNOTSUPP;
	}
	long k = bp_sys_ret(bp_syscall2(SYS_pkey_alloc, 0, rights));
	if (k < 0) {
		int e = errno;
		snprintf(why, n, "pkey_alloc failed: %s", strerror(e));
		return -e;
	}
	return (int)k;
}

static void probe(void)
{
	int k = bp_ipc_pkey_alloc(PKEY_DISABLE_WRITE, reason, sizeof(reason));
	if (k < 0)
		return;
	the_key = k;
	snprintf(reason, sizeof(reason), "available (key %d)", the_key);
}

int bp_ipc_pkey_get(void)
{
	pthread_once(&once, probe);
	if (the_key < 0)
		bp_info("bypass: ipc: protection keys unavailable: %s", reason);
	return the_key;
}

int bypass_ipc_pkey_supported(const char **why)
{
	pthread_once(&once, probe);
	if (why)
		*why = reason;
	return the_key >= 0;
}

static inline uint32_t rdpkru(void)
{
	uint32_t eax, edx;
	__asm__ __volatile__(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

static inline void wrpkru(uint32_t v)
{
	__asm__ __volatile__(".byte 0x0f,0x01,0xef" : : "a"(v), "c"(0), "d"(0) : "memory");
}

/* PKRU as this thread had it at its last bp_ipc_pkey_open. */
static __thread uint32_t pkru_before __attribute__((tls_model("initial-exec")));

/* PKRU has two bits per key: access-disable (bit 2k), write-disable (2k+1). */
void bp_ipc_pkey_open(void)
{
	if (the_key < 0)
		return;
	uint32_t v = rdpkru();
	uint32_t nv = v & ~(3u << (2 * the_key));
	pkru_before = v;
	if (nv != v)
		wrpkru(nv);
}

/*
 * After a fault was recovered (siglongjmp from the signal handler, which
 * restores no PKRU): the thread still runs with the kernel's default PKRU,
 * every key but 0 access-disabled.  Put back what it had at the last open,
 * with our key write-disabled.
 */
void bp_ipc_pkey_after_fault(void)
{
	if (the_key < 0)
		return;
	wrpkru((pkru_before & ~(3u << (2 * the_key))) | (2u << (2 * the_key)));
}

void bp_ipc_pkey_close(void)
{
	if (the_key < 0)
		return;
	uint32_t v = rdpkru();
	uint32_t nv = (v & ~(3u << (2 * the_key))) | (2u << (2 * the_key));
	if (nv != v)
		wrpkru(nv);
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
