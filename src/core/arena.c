/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory arena: a memfd mapped at the same address in every
 * process that attaches (MAP_FIXED_NOREPLACE), so pointers stay valid.
 *
 * The first page holds a header; allocations follow it.  The creator picks a
 * random 2 MiB-aligned address in a band of the address space that the
 * kernel's top-down mmap and the heap rarely reach, which keeps the range
 * free in the processes that attach later.
 */
#include "core/internal.h"
#include "core/syscall.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARENA_MAGIC 0x627970617373a7e1ull /* "bypass" + tag */
#define ARENA_VERSION 1
#define ARENA_HDR 4096
#define ARENA_ALIGN (2ul << 20)
#if BP_TSAN
/*
 * ThreadSanitizer keeps its shadow and metadata between 1 TiB and 80 TiB
 * and drops a hint outside its application ranges (MAP_FIXED_NOREPLACE at
 * address 0 follows, or a bad-address abort): use 64 GiB .. 448 GiB, which
 * is application memory in every TSan x86-64 layout.
 */
#define ARENA_BAND_LO (64ull << 30)
#define ARENA_BAND_HI (448ull << 30)
#else
/* The band: 16 TiB .. 80 TiB (x86-64 user space ends at 128 TiB). */
#define ARENA_BAND_LO (16ull << 40)
#define ARENA_BAND_HI (80ull << 40)
#endif

struct arena_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t flags;
	uint64_t base;          /* the address every process maps it at */
	uint64_t size;
	_Atomic uint64_t brk;   /* next free offset */
	pid_t creator;
	uint32_t pad;
	_Atomic uint64_t roots[BYPASS_ARENA_ROOTS]; /* offsets, 0 = empty */
};
_Static_assert(sizeof(struct arena_hdr) <= ARENA_HDR, "arena header");

struct bypass_arena {
	struct arena_hdr *hdr;
	size_t size;
	int fd;
};

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static void *map_at(int fd, uint64_t addr, size_t size)
{
	void *p = bp_sys_mmap((void *)addr, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	if ((uint64_t)p != addr) { /* kernel older than 4.17: only a hint */
		bp_sys_munmap(p, size);
		errno = EEXIST;
		return NULL;
	}
	return p;
}

int bypass_arena_create(const struct bypass_arena_opts *opts,
			bypass_arena **out)
{
	if (!out || (opts && opts->flags))
		return -EINVAL;
	if (opts)
		for (size_t i = 0; i < BP_ARRAY_SIZE(opts->reserved); i++)
			if (opts->reserved[i])
				return -EINVAL;
	size_t ps = page_size();
	size_t size = opts && opts->size ? opts->size : (1u << 20);
	if (size > (1ull << 40))
		return -EINVAL;
	size = (size + ps - 1) & ~(ps - 1);
	if (size < 2 * ps)
		size = 2 * ps;
	uint64_t want = opts ? (uint64_t)opts->addr : 0;
	if (want & (ps - 1))
		return -EINVAL;

	struct bypass_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	const char *name = opts && opts->name ? opts->name : "bypass-arena";
	a->fd = bp_sys_memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (a->fd < 0) {
		int e = -errno;
		free(a);
		return e;
	}
	if (bp_sys_ftruncate(a->fd, (off_t)size) < 0) {
		int e = -errno;
		bp_sys_close(a->fd);
		free(a);
		return e;
	}
	/* The arena never shrinks: a peer cannot truncate it under us. */
	bp_sys_fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK);

	void *p = NULL;
	if (want) {
		p = map_at(a->fd, want, size);
		if (!p) {
			int e = -errno;
			bp_err("bypass: arena: range %#llx+%zu is taken",
			       (unsigned long long)want, size);
			bp_sys_close(a->fd);
			free(a);
			return e;
		}
	} else {
		uint64_t span = (ARENA_BAND_HI - ARENA_BAND_LO) / ARENA_ALIGN;
		for (int tries = 0; tries < 64 && !p; tries++) {
			uint64_t r;
			if (bp_sys_getrandom(&r, sizeof(r), 0) != sizeof(r))
				r = bypass_rdtscp(NULL) * 0x9e3779b97f4a7c15ull;
			uint64_t addr = ARENA_BAND_LO + (r % span) * ARENA_ALIGN;
			if (addr + size > ARENA_BAND_HI)
				continue;
			p = map_at(a->fd, addr, size);
		}
		if (!p) {
			bp_sys_close(a->fd);
			free(a);
			return -ENOMEM;
		}
	}
	a->hdr = p;
	a->size = size;
	struct arena_hdr *h = a->hdr;
	h->version = ARENA_VERSION;
	h->base = (uint64_t)p;
	h->size = size;
	h->creator = bp_pid();
	atomic_store(&h->brk, ARENA_HDR);
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, ARENA_MAGIC,
			      memory_order_release);
	*out = a;
	return 0;
}

int bypass_arena_open(int fd, bypass_arena **out)
{
	if (fd < 0 || !out)
		return -EINVAL;
	struct stat st;
	if (bp_sys_fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size < 2 * page_size())
		return -EINVAL;
	struct arena_hdr *probe = bp_sys_mmap(NULL, ARENA_HDR, PROT_READ, MAP_SHARED, fd, 0);
	if (probe == MAP_FAILED)
		return -errno;
	struct arena_hdr h = *probe;
	bp_sys_munmap(probe, ARENA_HDR);
	if (h.magic != ARENA_MAGIC || h.version != ARENA_VERSION ||
	    h.size != (uint64_t)st.st_size || (h.base & (page_size() - 1)) ||
	    h.base + h.size < h.base || h.base + h.size > (128ull << 40))
		return -EINVAL;

	struct bypass_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = bp_sys_fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (a->fd < 0) {
		int e = -errno;
		free(a);
		return e;
	}
	void *p = map_at(a->fd, h.base, h.size);
	if (!p) {
		int e = -errno;
		bp_err("bypass: arena: cannot map at %#llx+%llu in this process: %s",
		       (unsigned long long)h.base, (unsigned long long)h.size,
		       strerror(-e));
		bp_sys_close(a->fd);
		free(a);
		return e;
	}
	a->hdr = p;
	a->size = h.size;
	*out = a;
	return 0;
}

int bypass_arena_close(bypass_arena *a)
{
	if (!a)
		return -EINVAL;
	bp_sys_munmap(a->hdr, a->size);
	bp_sys_close(a->fd);
	free(a);
	return 0;
}

int bypass_arena_fd(const bypass_arena *a)
{
	return a ? a->fd : -EINVAL;
}

void *bypass_arena_base(const bypass_arena *a)
{
	return a ? (void *)a->hdr : NULL;
}

size_t bypass_arena_size(const bypass_arena *a)
{
	return a ? a->size : 0;
}

int bypass_arena_alloc(bypass_arena *a, size_t size, size_t align, void **ptr)
{
	if (!a || !ptr || !size)
		return -EINVAL;
	if (!align)
		align = BP_CACHELINE;
	if (align & (align - 1) || align > 4096)
		return -EINVAL;
	if (size > a->size)
		return -ENOSPC;
	uint64_t cur = atomic_load(&a->hdr->brk), start;
	do {
		start = (cur + align - 1) & ~(uint64_t)(align - 1);
		if (start > a->size || a->size - start < size)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak(&a->hdr->brk, &cur, start + size));
	*ptr = (char *)a->hdr + start;
	return 0;
}

int bypass_arena_contains(const bypass_arena *a, const void *ptr, size_t len)
{
	if (!a || !ptr)
		return 0;
	uintptr_t b = (uintptr_t)a->hdr, p = (uintptr_t)ptr;
	return p >= b && p - b <= a->size && len <= a->size - (p - b);
}

int bypass_arena_set_root(bypass_arena *a, unsigned idx, void *ptr)
{
	if (!a || idx >= BYPASS_ARENA_ROOTS)
		return -EINVAL;
	uint64_t off = 0;
	if (ptr) {
		if (!bypass_arena_contains(a, ptr, 1) ||
		    (uintptr_t)ptr - (uintptr_t)a->hdr < ARENA_HDR)
			return -EINVAL;
		off = (uintptr_t)ptr - (uintptr_t)a->hdr;
	}
	atomic_store_explicit(&a->hdr->roots[idx], off, memory_order_release);
	return 0;
}

int bypass_arena_get_root(const bypass_arena *a, unsigned idx, void **ptr)
{
	if (!a || !ptr || idx >= BYPASS_ARENA_ROOTS)
		return -EINVAL;
	uint64_t off = atomic_load_explicit(&a->hdr->roots[idx], memory_order_acquire);
	if (!off)
		return -ENOENT;
	if (off < ARENA_HDR || off >= a->size) /* a peer wrote garbage */
		return -EINVAL;
	*ptr = (char *)a->hdr + off;
	return 0;
}
