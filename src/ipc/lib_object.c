/* SPDX-License-Identifier: MIT */
/*
 * The service object: who may have written it, what its code may contain,
 * and loading it.
 *
 * Both sides check the object through a descriptor (the server's own, which
 * a client receives in the handshake): a regular file owned by the server's
 * uid or by root, not writable by group or others.  Its executable segments
 * are then scanned at every byte offset, in the file before anything of it
 * runs and in memory after it is loaded (relocations could have written
 * code), for the byte sequences of WRPKRU (0f 01 ef), which would let code
 * outside the gate open the service's protection key, and XRSTOR with a
 * memory operand (0f ae /5, mod != 3; mod 3 is LFENCE), which restores PKRU
 * from memory when its mask asks for it.  An object holding either is
 * refused unless BYPASS_IPC_LIB_ALLOW_WRPKRU.  The scan covers the object
 * itself, not the libraries it pulls in (libc's code is the process's
 * anyway); the gate's own WRPKRUs live in libbypass.
 *
 * The server does not hand its clients the file it was given: it copies it
 * once, at listen, into a memfd sealed against writing, shrinking and
 * growing (bp_ipc_lib_object_copy), scans the copy, loads the copy itself
 * and sends it; a client requires those seals.  A rewrite of the file in
 * place (cp over it keeps the inode) then reaches neither the server nor
 * any client; the new file is used when the service is listened anew.
 * Where memfds may not be executable (vm.memfd_noexec = 2), the server
 * falls back to the file itself and says so.
 *
 * The object is loaded with dlopen("/proc/self/fd/N") from that same
 * descriptor, RTLD_NOW (no lazy binding inside a call), and the file that
 * the loader mapped is checked once more: the device and inode of the
 * mapping that holds the description (from /proc/self/maps) must be those
 * of the descriptor, which rules out the loader having reused another
 * object by name.
 */
#include "ipc/lib.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

size_t bp_ipc_lib_scan(const unsigned char *b, size_t n, size_t *first)
{
	size_t count = 0;
	if (n < 3)
		return 0;
	const unsigned char *p = b, *end = b + n - 2;
	while (p < end && (p = memchr(p, 0x0f, (size_t)(end - p)))) {
		bool hit = (p[1] == 0x01 && p[2] == 0xef) ||
			   (p[1] == 0xae && (p[2] & 0x38) == 0x28 && (p[2] & 0xc0) != 0xc0);
		if (hit) {
			if (!count && first)
				*first = (size_t)(p - b);
			count++;
		}
		p++;
	}
	return count;
}

/* Scan [off, end) of the file in windows that overlap by two bytes (the
 * last two bytes of a window start no sequence in it: they start the next
 * window, so nothing is counted twice). */
static int scan_file_range(int fd, uint64_t off, uint64_t end, size_t *count, uint64_t *first)
{
	enum { CHUNK = 1 << 16 };
	unsigned char *buf = malloc(CHUNK + 2);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	size_t keep = 0;
	while (off < end) {
		size_t want = end - off > CHUNK ? CHUNK : (size_t)(end - off);
		ssize_t n = bp_sys_pread(fd, buf + keep, want, (off_t)off);
		if (n <= 0) {
			r = n < 0 ? -errno : -ENOEXEC;
			break;
		}
		size_t total = keep + (size_t)n, f = 0;
		size_t c = bp_ipc_lib_scan(buf, total, &f);
		if (c && !*count)
			*first = off - keep + f;
		*count += c;
		off += (uint64_t)n;
		size_t nk = total < 2 ? total : 2;
		memmove(buf, buf + total - nk, nk);
		keep = nk;
	}
	free(buf);
	return r;
}

/* The executable segments of the ELF file at fd, page-rounded as the
 * loader maps them (clipped to the file). */
static int scan_file(int fd, uint64_t fsize, size_t *count, uint64_t *first)
{
	Elf64_Ehdr eh;
	if (bp_sys_pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    eh.e_type != ET_DYN || eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
	    eh.e_phnum > 256)
		return -ENOEXEC;
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (bp_sys_pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset)
			return -ENOEXEC;
		uint64_t lo = ph.p_offset & ~(ps - 1);
		uint64_t hi = (ph.p_offset + ph.p_filesz + ps - 1) & ~(ps - 1);
		if (hi > fsize)
			hi = fsize;
		int r = scan_file_range(fd, lo, hi, count, first);
		if (r)
			return r;
	}
	return 0;
}

int bp_ipc_lib_check_object(int fd, uid_t owner, bool allow_wrpkru)
{
	struct stat st;
	if (bp_sys_fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (st.st_uid != owner && st.st_uid != 0) {
		bp_warn("bypass: ipc: the service object is owned by uid %u (want %u or root): "
			"refused", (unsigned)st.st_uid, (unsigned)owner);
		return -EACCES;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		bp_warn("bypass: ipc: the service object is writable by group or others "
			"(mode %o): refused", (unsigned)(st.st_mode & 07777));
		return -EACCES;
	}
	size_t count = 0;
	uint64_t first = 0;
	int r = scan_file(fd, (uint64_t)st.st_size, &count, &first);
	if (r)
		return r;
	if (count) {
		bp_warn("bypass: ipc: the service object holds %zu WRPKRU/XRSTOR byte "
			"sequence(s) in executable segments (the first at file offset %#llx)%s",
			count, (unsigned long long)first,
			allow_wrpkru ? ": allowed by BYPASS_IPC_LIB_ALLOW_WRPKRU" : ": refused");
		if (!allow_wrpkru)
			return -EPERM;
	}
	return 0;
}

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010u
#endif

int bp_ipc_lib_object_copy(int fd, int *out)
{
	struct stat st;
	if (bp_sys_fstat(fd, &st) < 0)
		return -errno;
	/* MFD_EXEC: executable where vm.memfd_noexec would seal it
	 * otherwise (Linux 6.3+; older kernels refuse the flag: EINVAL). */
	int m = memfd_create("bypass-ipc-lib-object", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (m < 0 && errno == EINVAL)
		m = memfd_create("bypass-ipc-lib-object", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0)
		return -errno;
	enum { CHUNK = 1 << 16 };
	unsigned char *buf = malloc(CHUNK);
	int r = buf ? 0 : -ENOMEM;
	off_t off = 0;
	while (!r) {
		ssize_t n = bp_sys_pread(fd, buf, CHUNK, off);
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		for (ssize_t done = 0; done < n && !r;) {
			ssize_t w = bp_sys_write(m, buf + done, (size_t)(n - done));
			if (w < 0)
				r = -errno;
			else
				done += w;
		}
		off += n;
	}
	free(buf);
	if (!r && fchmod(m, 0555) < 0)
		r = -errno;
	if (!r && bp_sys_fcntl(m, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		r = -errno;
	if (r) {
		bp_sys_close(m);
		return r;
	}
	*out = m;
	return 0;
}

int bp_ipc_lib_object_sealed(int fd)
{
	int seals = bp_sys_fcntl(fd, F_GET_SEALS, 0);
	unsigned need = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
	if (seals < 0)
		return 0;
	return ((unsigned)seals & need) == need ? 1 : -EACCES;
}

/* --------------------------------------------------------------- loading */

struct mem_scan {
	uintptr_t inside;           /* an address in the object (its description) */
	size_t count;
	bool found, faulted;
};

/* Execute-only pages would fault: the file scan covered them. */
static __attribute__((noinline)) void scan_range(struct mem_scan *ms, uintptr_t lo, uintptr_t hi)
{
	struct bp_recover rp;
	if (BP_RECOVER_TRY(&rp, (void *)lo, hi - lo)) {
		ms->count += bp_ipc_lib_scan((const unsigned char *)lo, hi - lo, NULL);
		bp_recover_pop(&rp);
	} else {
		ms->faulted = true;
	}
}

/* The object whose loaded segments hold ms->inside: scan its executable
 * ones.  (Found by address: reading the loader's link map here would race,
 * as ThreadSanitizer sees it, with its creation in another thread.) */
static int scan_loaded(struct dl_phdr_info *info, size_t sz, void *arg)
{
	(void)sz;
	struct mem_scan *ms = arg;
	bool ours = false;
	for (unsigned i = 0; i < info->dlpi_phnum && !ours; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		ours = ph->p_type == PT_LOAD && ms->inside >= lo && ms->inside - lo < ph->p_memsz;
	}
	if (!ours)
		return 0;
	ms->found = true;
	uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(ps - 1);
		uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + ps - 1) & ~(ps - 1);
		scan_range(ms, lo, hi);
	}
	return 1;
}

/* The device and inode of the file mapped at addr, from /proc/self/maps
 * (read through core's system calls, not stdio: tests/core/imports.sh). */
static int mapped_file(const void *addr, dev_t *dev, ino_t *ino)
{
	int fd = bp_sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	char buf[8192];
	size_t have = 0;
	int r = -ENOENT;
	for (;;) {
		ssize_t n = bp_sys_read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		/* Whole lines; at the end of the file, the last one too. */
		while ((nl = strchr(line, '\n')) || (n == 0 && *line)) {
			if (nl)
				*nl = 0;
			unsigned long lo, hi, off, ma, mi, in;
			char perm[8];
			if (sscanf(line, "%lx-%lx %7s %lx %lx:%lx %lu", &lo, &hi, perm, &off, &ma,
				   &mi, &in) == 7 &&
			    (uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
				*dev = makedev(ma, mi);
				*ino = (ino_t)in;
				r = 0;
				goto out;
			}
			line = nl ? nl + 1 : line + strlen(line);
		}
		if (n == 0)
			break;
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: not ours */
	}
out:
	bp_sys_close(fd);
	return r;
}

/* Is the object mapped at d the file (dev, ino)? */
static bool is_file(const void *d, const struct stat *st)
{
	dev_t dev;
	ino_t ino;
	return d && !mapped_file(d, &dev, &ino) && dev == st->st_dev && ino == st->st_ino;
}

/*
 * dlopen the file open at fd by its /proc/self/fd name.  The loader first
 * looks for an object already loaded under the same name: a descriptor
 * number once used to load another object (still loaded) gives that one
 * back.  Then the description found is not in our file: give it back and
 * try under another descriptor number.
 */
static void *open_fd(int fd, const struct stat *st, const struct bypass_ipc_lib_desc **d)
{
	int lfd = fd;
	void *dl = NULL;
	for (int tries = 0; tries < 16 && lfd >= 0; tries++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", lfd);
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!dl) {
			bp_warn("bypass: ipc: cannot load the service object: %s", dlerror());
			break;
		}
		*d = dlsym(dl, BYPASS_IPC_LIB_ENTRY);
		if (is_file(*d, st))
			break;
		dlclose(dl);
		dl = NULL;
		int nfd = bp_sys_fcntl(fd, F_DUPFD_CLOEXEC, lfd + 1);
		if (lfd != fd)
			bp_sys_close(lfd);
		lfd = nfd;
	}
	if (lfd >= 0 && lfd != fd)
		bp_sys_close(lfd);
	return dl;
}

int bp_ipc_lib_load(struct lib_core *lc, int fd, bool allow_wrpkru)
{
	struct stat st;
	if (bp_sys_fstat(fd, &st) < 0)
		return -errno;
	const struct bypass_ipc_lib_desc *d = NULL;
	void *dl = open_fd(fd, &st, &d);
	if (!dl) {
		if (!d)
			bp_warn("bypass: ipc: the service object defines no %s",
				BYPASS_IPC_LIB_ENTRY);
		else
			bp_warn("bypass: ipc: the object loaded is not the file of the "
				"server's descriptor: refused");
		return d ? -ESTALE : -ENOEXEC;
	}
	int r = -ENOEXEC;
	struct mem_scan ms = { .inside = (uintptr_t)d };
	dl_iterate_phdr(scan_loaded, &ms);
	if (!ms.found || (ms.faulted && !allow_wrpkru))
		goto fail;
	if (ms.count && !allow_wrpkru) {
		bp_warn("bypass: ipc: the loaded service object holds %zu WRPKRU/XRSTOR "
			"sequence(s): refused", ms.count);
		r = -EPERM;
		goto fail;
	}
	if (d->abi != BYPASS_IPC_LIB_ABI || !d->nops || d->nops > 65536 || !d->ops ||
	    d->reserved[0] || d->reserved[1] || d->reserved[2] || d->reserved[3]) {
		bp_warn("bypass: ipc: the service description is not of ABI %d or is "
			"malformed", BYPASS_IPC_LIB_ABI);
		goto fail;
	}
	for (uint32_t i = 0; i < d->nops; i++)
		if (!d->ops[i])
			goto fail;
	lc->dl = dl;
	lc->desc = d;
	lc->ops = d->ops;
	lc->nops = d->nops;
	return 0;
fail:
	dlclose(dl);
	return r;
}

void bp_ipc_lib_unload(struct lib_core *lc)
{
	if (lc->dl)
		dlclose(lc->dl);
	lc->dl = NULL;
	lc->desc = NULL;
	lc->ops = NULL;
}
