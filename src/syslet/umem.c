/* SPDX-License-Identifier: MIT */
/*
 * The caller's memory, touched on a program's behalf: the program and its
 * atoms (copied in before validation, so that what runs is what was
 * validated), LOAD arguments, umem_add targets, ret stores, the completion
 * the caller gave.  A bad address, wherever it points (a small integer, a
 * read-only, PROT_NONE or unmapped page, a mapping past the end of its
 * file, a non-canonical address), becomes -EFAULT instead of a SIGSEGV or
 * SIGBUS, in whichever thread touches it.
 *
 * How: the kernel's way with user memory (an exception table), not a
 * recovery point's sigsetjmp.  Every access is one instruction in the small
 * asm functions below, between the labels bp_syslet_ua_begin and _end; a
 * hook in core's SIGSEGV/SIGBUS handler (after the pager's, which serves
 * its own regions first) sees a fault whose instruction lies there and
 * resumes at bp_syslet_ua_fixup, which returns -EFAULT from the function.
 * The functions push nothing, so the fixup's ret returns to their caller.
 * The fast path costs a call and the instruction: nothing to arm.  And the
 * sanitizers do not see these accesses, as they must not: AddressSanitizer
 * would report an address that is ours to turn into -EFAULT, and
 * ThreadSanitizer would touch its shadow of it first.  The values are
 * x86-64's: a plain move is an acquire load or a release store, a locked
 * instruction is sequentially consistent.
 */
#include "syslet/syslet_internal.h"

#include <pthread.h>
#include <string.h>
#include <ucontext.h>

_Static_assert(sizeof(struct bypass_syslet_prog) % 8 == 0, "copied by words");
_Static_assert(sizeof(struct bypass_syslet_atom) % 8 == 0, "copied by words");
_Static_assert(sizeof(struct bypass_syslet_completion) % 8 == 0, "copied by words");

#define UA_FN(name)                                                            \
	".globl " #name "\n.hidden " #name "\n.type " #name ", @function\n"   \
	".p2align 4\n" #name ":\n"

__asm__(".text\n"
	".globl bp_syslet_ua_begin\n.hidden bp_syslet_ua_begin\n"
	"bp_syslet_ua_begin:\n"
	/* int copy(void *dst, const void *src, size_t words) */
	UA_FN(bp_syslet_ua_copy)
	"	.cfi_startproc\n" /* 16 bytes a turn: rep movsq starts slowly */
	"	cmpq $2, %rdx\n"
	"	jb 2f\n"
	"1:	movdqu (%rsi), %xmm0\n"
	"	movdqu %xmm0, (%rdi)\n"
	"	addq $16, %rsi\n"
	"	addq $16, %rdi\n"
	"	subq $2, %rdx\n"
	"	cmpq $2, %rdx\n"
	"	jae 1b\n"
	"2:	testq %rdx, %rdx\n"
	"	jz 3f\n"
	"	movq (%rsi), %rax\n"
	"	movq %rax, (%rdi)\n"
	"3:	xorl %eax, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	/* int zero(void *dst, size_t words) */
	UA_FN(bp_syslet_ua_zero)
	"	.cfi_startproc\n"
	"	xorl %eax, %eax\n"
	"	testq %rsi, %rsi\n"
	"	jz 2f\n"
	"1:	movq %rax, (%rdi)\n"
	"	addq $8, %rdi\n"
	"	decq %rsi\n"
	"	jnz 1b\n"
	"2:	ret\n"
	"	.cfi_endproc\n"
	/* int load(const int64_t *p, int64_t *out) */
	UA_FN(bp_syslet_ua_load)
	"	.cfi_startproc\n"
	"	movq (%rdi), %rax\n"
	"	movq %rax, (%rsi)\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	/* int store(int64_t *p, int64_t v) */
	UA_FN(bp_syslet_ua_store)
	"	.cfi_startproc\n"
	"	movq %rsi, (%rdi)\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	/* int probe_store(int64_t *p): an atomic no-op write (p is aligned) */
	UA_FN(bp_syslet_ua_probe_store)
	"	.cfi_startproc\n"
	"	lock orq $0, (%rdi)\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	/* int xadd(int64_t *p, int64_t delta, int64_t *old) */
	UA_FN(bp_syslet_ua_xadd)
	"	.cfi_startproc\n"
	"	lock xaddq %rsi, (%rdi)\n"
	"	movq %rsi, (%rdx)\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".globl bp_syslet_ua_end\n.hidden bp_syslet_ua_end\n"
	"bp_syslet_ua_end:\n"
	UA_FN(bp_syslet_ua_fixup)
	"	.cfi_startproc\n"
	"	movl $-14, %eax\n" /* -EFAULT */
	"	ret\n"
	"	.cfi_endproc\n");

#define UA __attribute__((visibility("hidden")))
extern const char bp_syslet_ua_begin[] UA, bp_syslet_ua_end[] UA;
extern void bp_syslet_ua_fixup(void) UA;
int bp_syslet_ua_copy(void *dst, const void *src, size_t words) UA;
int bp_syslet_ua_zero(void *dst, size_t words) UA;
int bp_syslet_ua_load(const int64_t *p, int64_t *out) UA;
int bp_syslet_ua_store(int64_t *p, int64_t v) UA;
int bp_syslet_ua_probe_store(int64_t *p) UA;
int bp_syslet_ua_xadd(int64_t *p, int64_t delta, int64_t *old) UA;

_Static_assert(EFAULT == 14, "the fixup returns -14");

/* In core's handler, in signal context: a fault in one of the functions. */
static int ua_hook(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	if (si->si_code <= 0) /* sent by kill(), not raised by an instruction */
		return 0;
	ucontext_t *u = uc;
	uintptr_t ip = (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
	if (ip < (uintptr_t)bp_syslet_ua_begin || ip >= (uintptr_t)bp_syslet_ua_end)
		return 0;
	u->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)bp_syslet_ua_fixup;
	return 1;
}

static pthread_once_t hook_once = PTHREAD_ONCE_INIT;
static int hook_err;

static void hook_add(void)
{
	hook_err = bp_fault_hook_add(ua_hook);
	if (hook_err)
		bp_warn("bypass syslet: cannot hook the fault handler: %s",
			strerror(-hook_err));
}

int bp_syslet_umem_init(void)
{
	pthread_once(&hook_once, hook_add);
	return hook_err;
}

int bp_syslet_copy(void *dst, const void *src, size_t len)
{
	return bp_syslet_ua_copy(dst, src, len / 8);
}

int bp_syslet_probe_out(void *dst, size_t len)
{
	return bp_syslet_ua_zero(dst, len / 8);
}

int bp_syslet_load(const int64_t *p, int64_t *out)
{
	return bp_syslet_ua_load(p, out);
}

int bp_syslet_store(int64_t *p, int64_t v)
{
	return bp_syslet_ua_store(p, v);
}

int bp_syslet_probe_store(int64_t *p)
{
	return bp_syslet_ua_probe_store(p);
}

int bp_syslet_umem_add(int64_t *p, int64_t delta, int64_t *out)
{
	int64_t old;
	int r = bp_syslet_ua_xadd(p, delta, &old);
	if (r == 0)
		*out = (int64_t)((uint64_t)old + (uint64_t)delta);
	return r;
}

int bp_syslet_copy_prog(const struct bypass_syslet_prog *user,
			struct bypass_syslet_prog *p, struct bypass_syslet_atom *atoms,
			struct bypass_syslet_completion *done)
{
	if (!user)
		return -EINVAL;
	if (bp_syslet_ua_copy(p, user, sizeof(*p) / 8))
		return -EFAULT;
	if (!p->atoms || p->natoms == 0 || p->natoms > BYPASS_SYSLET_MAX_ATOMS)
		return done && bp_syslet_ua_zero(done, sizeof(*done) / 8) ? -EFAULT : -EINVAL;
	if (bp_syslet_ua_copy(atoms, p->atoms, p->natoms * sizeof(*atoms) / 8))
		return -EFAULT;
	if (done && bp_syslet_ua_zero(done, sizeof(*done) / 8))
		return -EFAULT;
	p->atoms = atoms;
	return 0;
}
