/* SPDX-License-Identifier: MIT */
/* Setting a pager up: its userfaultfds (through uffd.c), its swap file, its configuration. */
#include "pager/page.h"
#include "pager/struct.h"
#include "pager/mem.h"
#include "pager/setup.h"
#include "pager/uffd.h"
#include "core/syscall.h"
#include "core/fdhigh.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_FEATURE_POISON
#define UFFD_FEATURE_POISON (1 << 14)
#endif

#define DEFAULT_BATCH 32u
#define DEFAULT_RA 64u
#define DEFAULT_FA 16u

/* ------------------------------------------------------------ userfaultfd */

uint64_t bp_thread_uffd_features(const struct bypass_pager *p)
{
	/* THREAD_ID: a fault of the thread that is preparing a fork is served
	 * through the fork's gate (dispatch.c, handle_msg) */
	return UFFD_FEATURE_PAGEFAULT_FLAG_WP |
	       (p->cfg.uffd_avail & (UFFD_FEATURE_POISON | UFFD_FEATURE_THREAD_ID));
}

int bp_open_thread_uffd(struct bypass_pager *p)
{
	int fd = bp_uffd_open(false);
	if (fd < 0)
		return fd;
	int e = bp_uffd_setup(fd, bp_thread_uffd_features(p));
	if (e) {
		bp_sys_close(fd);
		return e;
	}
	/* The stop eventfd first: a handler thread must never be started
	 * without a way to stop it. */
	if (p->srv.stop_fd < 0) {
		p->srv.stop_fd = bp_fd_lift(eventfd(0, EFD_CLOEXEC), true);
		if (p->srv.stop_fd < 0) {
			e = -errno;
			bp_sys_close(fd);
			return e;
		}
	}
	p->srv.uffd_thread = fd;
	return 0;
}

int bp_open_pool_uffd(struct bypass_pager *p)
{
	/* User-mode-only: any user may create it; kernel-mode faults fail
	 * with EFAULT, as in SIGBUS mode, so switching changes nothing there. */
	int fd = bp_uffd_open(true);
	if (fd < 0) {
		bp_err("bypass: pager: userfaultfd for the handler pool: %s", strerror(-fd));
		return fd;
	}
	/* THREAD_ID: the monitor counts the threads that fault, not the pool
	 * threads that serve them */
	int e = bp_uffd_setup(fd, UFFD_FEATURE_PAGEFAULT_FLAG_WP |
				      (p->cfg.uffd_avail & (UFFD_FEATURE_POISON | UFFD_FEATURE_THREAD_ID)));
	if (!e && p->srv.stop_fd < 0) {
		p->srv.stop_fd = bp_fd_lift(eventfd(0, EFD_CLOEXEC), true);
		if (p->srv.stop_fd < 0)
			e = -errno;
	}
	if (e) {
		bp_sys_close(fd);
		return e;
	}
	atomic_store(&p->eng.uffd_pool, fd);
	return 0;
}

/* ------------------------------------------------------------ swap file */

/* An unnamed file in dir (O_TMPFILE, or a named one unlinked at once where
 * the file system has no O_TMPFILE); the descriptor, or -1 and errno. */
static int open_tmp(const char *dir, bool direct)
{
	int fd = bp_sys_open(dir, O_RDWR | O_CLOEXEC | O_TMPFILE | (direct ? O_DIRECT : 0), 0600);
	if (fd < 0 && errno == EOPNOTSUPP) {
		char tmpl[4096];
		int n = snprintf(tmpl, sizeof(tmpl), "%s/bypass-swap-XXXXXX", dir);
		if (n < 0 || (size_t)n >= sizeof(tmpl)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		fd = mkostemp(tmpl, O_CLOEXEC | (direct ? O_DIRECT : 0));
		if (fd >= 0)
			unlink(tmpl);
	}
	return fd;
}

int bp_open_swap(struct bypass_pager *p, const struct bypass_pager_config *cfg)
{
	const char *path = cfg->swap_path;
	int base = O_RDWR | O_CLOEXEC;
	int fd = -1;
	struct stat st;
	bool existed = stat(path, &st) == 0;
	for (int direct = 1; direct >= 0 && fd < 0; direct--) {
		int fl = base | (direct ? O_DIRECT : 0);
		if (cfg->flags & BYPASS_PAGER_SWAP_TEMP) {
			fd = open_tmp(path, direct);
			if (fd < 0 && errno == ENAMETOOLONG)
				return -ENAMETOOLONG;
		} else if (cfg->flags & BYPASS_PAGER_SWAP_CREATE) {
			fd = bp_sys_open(path, fl | O_CREAT, 0600);
		} else {
			fd = bp_sys_open(path, fl, 0);
		}
		if (fd < 0 && !(direct && errno == EINVAL)) {
			int e = errno;
			bp_err("bypass: pager: swap file %s: %s", path, strerror(e));
			return -e;
		}
		p->swap.direct = fd >= 0 && direct;
	}
	if (!p->swap.direct)
		bp_warn("bypass: pager: %s does not support O_DIRECT; swap I/O goes "
			"through the page cache", path);
	fd = bp_fd_lift(fd, true); /* out of the program's way: fd from here on is the new one */
	p->swap.fd = fd;
	p->swap.created = (cfg->flags & BYPASS_PAGER_SWAP_CREATE) &&
			  !(cfg->flags & BYPASS_PAGER_SWAP_TEMP) && !existed;

	if (bp_sys_fstat(fd, &st) < 0)
		return -errno;
	uint64_t size;
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (bp_sys_ioctl(fd, BLKGETSIZE64, &size) < 0)
			return -errno;
	} else {
		bp_err("bypass: pager: swap file %s is not a regular file or block device",
		       path);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	uint64_t want = cfg->swap_size;
	if (size < want && S_ISREG(st.st_mode) &&
	    (cfg->flags & (BYPASS_PAGER_SWAP_CREATE | BYPASS_PAGER_SWAP_TEMP))) {
		/* EINTR: tmpfs gives up (and frees what it took) when the
		 * thread has a signal or io_uring task work pending (seen on
		 * Linux 6.1 with a swap file in a tmpfs /tmp): try again. */
		int e, tries = 0;
		do
			e = posix_fallocate(fd, 0, (off_t)want);
		while (e == EINTR && ++tries < 100);
		if (e == EOPNOTSUPP || e == EINVAL)
			e = ftruncate(fd, (off_t)want) < 0 ? errno : 0;
		if (e) {
			bp_err("bypass: pager: sizing swap file %s to %llu bytes: %s", path,
			       (unsigned long long)want, strerror(e));
			return -e;
		}
		size = want;
	}
	if (want && size < want) {
		bp_err("bypass: pager: swap file %s has %llu bytes, fewer than the %llu "
		       "asked for", path, (unsigned long long)size, (unsigned long long)want);
		return -ENOSPC;
	}
	if (!want)
		want = size;
	uint64_t pages = want >> PG_SHIFT;
	if (pages < PG_MIN_SWAP) {
		bp_err("bypass: pager: swap file %s is too small: %llu bytes, at least "
		       "%zu needed", path, (unsigned long long)want, PG_MIN_SWAP * PG_SIZE);
		return -ENOSPC;
	}
	if (pages > UINT32_MAX - 2) {
		bp_warn("bypass: pager: using the first 16 TiB of swap file %s", path);
		pages = UINT32_MAX - 2;
	}
	p->swap.pages = (uint32_t)pages;
	p->swap.nslots = p->swap.pages;
	/*
	 * An unnamed file in a directory: a forked child can make its own
	 * there and keep the parent's slots instead of reading them back
	 * (share.c).  The slots its children hold are not the parent's to
	 * reuse, so there are more slots than pages (the file grows past its
	 * sized part, sparse, only when they are used): four times, within
	 * what pg.slot can say.
	 */
	if ((cfg->flags & BYPASS_PAGER_SWAP_TEMP) && pages < PG_SLOT_MASK / 4) {
		p->swap.dir = bp_pg_strdup(path);
		if (!p->swap.dir)
			return -ENOMEM;
		p->swap.nslots = (uint32_t)pages * 4;
	}
	return 0;
}

int bp_swap_tmpfile(struct bypass_pager *p, const char *dir, bool direct)
{
	int fd = open_tmp(dir, direct);
	if (fd < 0)
		return -errno;
	/* sparse: a fork does not wait for blocks to be allocated; a full
	 * file system shows as write errors (the pages stay resident) */
	if (ftruncate(fd, (off_t)p->swap.nslots * (off_t)PG_SIZE) < 0) {
		int e = -errno;
		bp_sys_close(fd);
		return e;
	}
	return fd;
}

int bp_check_config(const struct bypass_pager_config *cfg, struct bypass_pager *p)
{
	if (!cfg->swap_path || (cfg->mode != BYPASS_PAGER_UPCALL &&
				cfg->mode != BYPASS_PAGER_HANDLER &&
				cfg->mode != BYPASS_PAGER_ADAPTIVE) ||
	    cfg->threads > PG_MAX_THREADS ||
	    (cfg->flags & ~(BYPASS_PAGER_SWAP_CREATE | BYPASS_PAGER_SWAP_TEMP |
			    BYPASS_PAGER_SAMPLE | BYPASS_PAGER_NO_SPIN)) ||
	    cfg->readahead > PG_MAX_RA || cfg->fault_around > PG_MAX_FA) {
		bp_err("bypass: pager: bad configuration (swap_path, mode, flags, "
		       "readahead, fault_around or threads)");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(cfg->reserved) / sizeof(cfg->reserved[0]); i++)
		if (cfg->reserved[i]) {
			bp_err("bypass: pager: config.reserved[%zu] is not zero", i);
			return -EINVAL;
		}
	if ((cfg->flags & (BYPASS_PAGER_SWAP_CREATE | BYPASS_PAGER_SWAP_TEMP)) &&
	    !cfg->swap_size) {
		bp_err("bypass: pager: creating a swap file needs swap_size");
		return -EINVAL;
	}
	uint64_t budget = cfg->budget >> PG_SHIFT;
	if (budget < PG_MIN_BUDGET) {
		bp_err("bypass: pager: budget %zu bytes is below the minimum of %zu",
		       cfg->budget, PG_MIN_BUDGET * PG_SIZE);
		return -EINVAL;
	}
	if (budget > UINT32_MAX / 2)
		budget = UINT32_MAX / 2;
	p->cfg.budget = (uint32_t)budget;
	uint32_t batch = cfg->batch ? cfg->batch : DEFAULT_BATCH;
	if (batch > p->cfg.budget / 4)
		batch = p->cfg.budget / 4;
	p->cfg.batch = batch;
	uint64_t high = cfg->high_watermark >> PG_SHIFT, low = cfg->low_watermark >> PG_SHIFT;
	if (!high) {
		high = p->cfg.budget - 2 * batch;
		if (high < p->cfg.budget / 2)
			high = p->cfg.budget / 2;
	}
	if (!low)
		low = high > batch ? high - batch : 1;
	if (high > p->cfg.budget || low >= high || !low) {
		bp_err("bypass: pager: watermarks out of order: low %llu < high %llu <= "
		       "budget %u pages is needed", (unsigned long long)low,
		       (unsigned long long)high, p->cfg.budget);
		return -EINVAL;
	}
	p->cfg.high = (uint32_t)high;
	p->cfg.low = (uint32_t)low;
	/* the default: DEFAULT_RA, but no more than 1/32 of the budget above
	 * 8 pages (large windows locked or under write-back in a small
	 * budget crowd out what the policy keeps, PRIORITY pages included) */
	p->cfg.ra = DEFAULT_RA;
	if (p->cfg.ra > p->cfg.budget / 32)
		p->cfg.ra = p->cfg.budget / 32 > 8 ? p->cfg.budget / 32 : 8;
	if (cfg->readahead)
		p->cfg.ra = cfg->readahead;
	if (p->cfg.ra > p->cfg.budget / 4)
		p->cfg.ra = p->cfg.budget / 4;
	p->cfg.fa = cfg->fault_around ? cfg->fault_around : DEFAULT_FA;
	if (p->cfg.fa > p->cfg.budget / 4)
		p->cfg.fa = p->cfg.budget / 4;
	if (!p->cfg.fa)
		p->cfg.fa = 1;
	p->cfg.mode = cfg->mode;
	p->cfg.nthreads = cfg->threads;
	if (!p->cfg.nthreads) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		p->cfg.nthreads = p->cfg.mode == BYPASS_PAGER_HANDLER ? 1
			      : ncpu < 1 ? 1 : ncpu > 16 ? 16 : (unsigned)ncpu;
	}
	return 0;
}
