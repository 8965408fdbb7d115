/* SPDX-License-Identifier: MIT */
/*
 * The part of the system-call layer (syscall.h) that is not inline:
 * sigaction as the rt_sigaction system call.
 *
 * The kernel returns from a handler to the address in sa_restorer, which
 * must make the rt_sigreturn system call; libc passes its own (__restore_rt)
 * and so do we.  Ours is the same two instructions, byte for byte
 * (48 c7 c0 0f 00 00 00 0f 05: movq $15, %rax; syscall), preceded by a nop
 * and covered by no unwind table entry: an unwinder that finds no entry
 * for the return address minus one (libgcc's, which glibc's backtrace()
 * uses; libunwind's) recognizes a signal frame by exactly these bytes and
 * unwinds through it from the saved context; gdb does the same for an
 * address in a symbol whose name contains "sigaction".
 */
#include "core/syscall.h"

#include <string.h>

#if !BP_SYS_LIBC && defined(__x86_64__)

void bp_sys_sigaction_restorer(void);
__asm__(".pushsection .text\n"
	".balign 16\n"
	"\tnop\n"
	".type bp_sys_sigaction_restorer, @function\n"
	"bp_sys_sigaction_restorer:\n"
	"\tmovq $15, %rax\n" /* __NR_rt_sigreturn */
	"\tsyscall\n"
	".size bp_sys_sigaction_restorer, .-bp_sys_sigaction_restorer\n"
	".popsection\n");
_Static_assert(SYS_rt_sigreturn == 15, "the restorer's system call number");

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

/* The kernel's struct sigaction on x86-64 (a 64-bit mask, then nothing). */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

int bp_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	/* glibc's own signals (SIGCANCEL, SIGSETXID): glibc refuses them */
	if (sig == 32 || sig == 33)
		return (int)bp_sys_ret(-EINVAL);
	struct kernel_sigaction k, ko;
	if (act) {
		k.handler = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction
							 : (void *)act->sa_handler;
		k.flags = (unsigned long)act->sa_flags | SA_RESTORER;
		k.restorer = bp_sys_sigaction_restorer;
		memcpy(&k.mask, &act->sa_mask, sizeof(k.mask));
	}
	long r = bp_syscall4(SYS_rt_sigaction, sig, act ? &k : NULL, old ? &ko : NULL,
			     sizeof(k.mask));
	if (r < 0)
		return (int)bp_sys_ret(r);
	if (old) {
		memset(old, 0, sizeof(*old));
		if (ko.flags & SA_SIGINFO)
			old->sa_sigaction = (void (*)(int, siginfo_t *, void *))ko.handler;
		else
			old->sa_handler = (void (*)(int))ko.handler;
		old->sa_flags = (int)ko.flags;
		old->sa_restorer = ko.restorer;
		memcpy(&old->sa_mask, &ko.mask, sizeof(ko.mask));
	}
	return 0;
}

#else

int bp_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

#endif
