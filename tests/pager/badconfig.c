/* SPDX-License-Identifier: MIT */
/*
 * Bad configurations and arguments get a clear error, print nothing unless
 * BYPASS_LOG asks, and lose no data: budget 0 or too small, a missing or too
 * small swap file, unknown modes and flags, watermarks out of order,
 * unaligned lengths, a full swap file, over-pinning.
 */
#include "util.h"

#include <fcntl.h>

static int create(struct bypass_pager_config c)
{
	bypass_pager *p = NULL;
	int r = bypass_pager_create(&c, &p);
	if (r == 0)
		bypass_pager_destroy(p);
	return r;
}

static struct bypass_pager_config good(void)
{
	struct bypass_pager_config c = {
		.budget = 64 * PAGE, .swap_path = tmpdir(), .swap_size = 256 * PAGE,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	return c;
}

static size_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

int main(void)
{
	test_timeout(60);
	bypass_set_log_level(BYPASS_LOG_NONE);
	char path[256], small[256];
	snprintf(path, sizeof(path), "%s/swap", tmpdir());
	snprintf(small, sizeof(small), "%s/small", tmpdir());

	/* Errors print nothing by default: stderr goes to a file here. */
	char errpath[256];
	snprintf(errpath, sizeof(errpath), "%s/stderr", tmpdir());
	int errfd = open(errpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int saved = dup(2);
	CHECK(errfd >= 0 && saved >= 0);
	dup2(errfd, 2);

	bypass_pager *p = NULL;
	struct bypass_pager_config c = good();
	CHECK_ERR(bypass_pager_create(NULL, &p), -EINVAL);
	CHECK_ERR(bypass_pager_create(&c, NULL), -EINVAL);
	c.budget = 0;
	CHECK_ERR(create(c), -EINVAL);
	c.budget = 15 * PAGE;
	CHECK_ERR(create(c), -EINVAL);
	c = good();
	c.swap_path = NULL;
	CHECK_ERR(create(c), -EINVAL);
	c = good();
	c.mode = 7;
	CHECK_ERR(create(c), -EINVAL);
	c = good();
	c.flags |= 0x100;
	CHECK_ERR(create(c), -EINVAL);
	c = good();
	c.readahead = 65;
	CHECK_ERR(create(c), -EINVAL);
	c = good();
	c.fault_around = 65;
	CHECK_ERR(create(c), -EINVAL);
	for (int i = 0; i < 4; i++) { /* room to grow: must be zero */
		c = good();
		c.reserved[i] = 1;
		CHECK_ERR(create(c), -EINVAL);
	}
	c = good();
	c.high_watermark = 32 * PAGE;
	c.low_watermark = 32 * PAGE;
	CHECK_ERR(create(c), -EINVAL);
	c.high_watermark = 65 * PAGE;
	c.low_watermark = 8 * PAGE;
	CHECK_ERR(create(c), -EINVAL);
	c.high_watermark = 48 * PAGE;
	CHECK_EQ(create(c), 0);

	/* the swap file */
	c = good();
	c.flags = 0;
	c.swap_path = path;
	CHECK_ERR(create(c), -ENOENT); /* missing, no SWAP_CREATE */
	c.flags = BYPASS_PAGER_SWAP_CREATE;
	c.swap_size = 0;
	CHECK_ERR(create(c), -EINVAL); /* creating needs a size */
	c.swap_size = 256 * PAGE;
	CHECK_EQ(create(c), 0);
	CHECK_EQ(file_size(path), 256 * PAGE); /* created, and kept */
	c.flags = 0;
	c.swap_size = 0;
	CHECK_EQ(create(c), 0); /* existing, its own size */
	c.swap_size = 512 * PAGE;
	CHECK_ERR(create(c), -ENOSPC); /* smaller than asked */
	int fd = open(small, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, 8 * PAGE), 0);
	close(fd);
	c.swap_path = small;
	c.swap_size = 0;
	CHECK_ERR(create(c), -ENOSPC); /* below the minimum of 16 pages */
	c.swap_path = tmpdir();
	CHECK_ERR(create(c), -EISDIR); /* a directory without SWAP_TEMP */
	unlink(small);
	unlink(path);
	/* a swap file that create made is removed again when create fails;
	 * one that existed is kept */
	c.swap_path = path;
	c.flags = BYPASS_PAGER_SWAP_CREATE;
	c.swap_size = 8 * PAGE;
	CHECK_ERR(create(c), -ENOSPC);
	CHECK(access(path, F_OK) < 0 && errno == ENOENT);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK_ERR(create(c), -ENOSPC);
	CHECK_EQ(access(path, F_OK), 0);
	unlink(path);

	/* map, unmap, pin on a working pager */
	c = good();
	c.swap_size = 64 * PAGE;
	CHECK_EQ(bypass_pager_create(&c, &p), 0);
	char *m, *n;
	void *x;
	CHECK_ERR(bypass_pager_map(p, 0, 0, &x), -EINVAL);
	CHECK_ERR(bypass_pager_map(p, PAGE + 1, 0, &x), -EINVAL);
	CHECK_ERR(bypass_pager_map(p, PAGE, 0x80, &x), -EINVAL);
	CHECK_ERR(bypass_pager_map(p, PAGE, 0, NULL), -EINVAL);
	CHECK_ERR(bypass_pager_map(NULL, PAGE, 0, &x), -EINVAL);
	CHECK_ERR(bypass_pager_map(p, 65 * PAGE, 0, &x), -ENOSPC); /* > swap */
	CHECK_EQ(bypass_pager_map(p, 40 * PAGE, 0, (void **)&m), 0);
	for (uint64_t i = 0; i < 40; i++)
		fill_page(m + i * PAGE, i, 5);
	/* the swap file is full: 24 pages are left */
	CHECK_ERR(bypass_pager_map(p, 25 * PAGE, 0, &x), -ENOSPC);
	CHECK_EQ(bypass_pager_map(p, 24 * PAGE, 0, (void **)&n), 0);
	CHECK_ERR(bypass_pager_map(p, PAGE, 0, &x), -ENOSPC);
	for (uint64_t i = 0; i < 24; i++)
		fill_page(n + i * PAGE, 100 + i, 5);
	for (uint64_t i = 0; i < 40; i++)
		CHECK(page_ok(m + i * PAGE, i, 5));
	for (uint64_t i = 0; i < 24; i++)
		CHECK(page_ok(n + i * PAGE, 100 + i, 5));
	CHECK_EQ(bypass_pager_unmap(p, n, 24 * PAGE), 0);

	/* pinning: bad flags, outside the regions, more than half the budget */
	CHECK_ERR(bypass_pager_pin(p, m, PAGE, 0x10), -EINVAL);
	CHECK_ERR(bypass_pager_pin(p, m + 39 * PAGE, 2 * PAGE, 0), -EINVAL);
	CHECK_ERR(bypass_pager_pin(p, &c, sizeof(c), 0), -EINVAL);
	CHECK_ERR(bypass_pager_pin(p, m, 33 * PAGE, 0), -ENOMEM);
	CHECK_EQ(stats_of(p).pinned_pages, 0); /* nothing stays pinned */
	CHECK_EQ(bypass_pager_pin(p, m, 32 * PAGE, 0), 0);
	CHECK_ERR(bypass_pager_pin(p, m + 32 * PAGE, PAGE, 0), -ENOMEM);
	CHECK_EQ(stats_of(p).pinned_pages, 32);
	CHECK_ERR(bypass_pager_unpin(p, m + 31 * PAGE, 2 * PAGE), -EINVAL); /* 32 unpinned */
	CHECK_EQ(stats_of(p).pinned_pages, 32); /* unchanged */
	CHECK_EQ(bypass_pager_unpin(p, m, 32 * PAGE), 0);
	CHECK_ERR(bypass_pager_unpin(p, m, PAGE), -EINVAL);
	CHECK_EQ(stats_of(p).pinned_pages, 0);
	CHECK_EQ(bypass_pager_pin(p, m, 0, 0), 0);
	for (uint64_t i = 0; i < 40; i++)
		CHECK(page_ok(m + i * PAGE, i, 5));

	struct bypass_pager_stats st;
	CHECK_ERR(bypass_pager_stats(NULL, &st), -EINVAL);
	CHECK_ERR(bypass_pager_stats(p, NULL), -EINVAL);
	CHECK_ERR(bypass_pager_destroy(NULL), -EINVAL);
	CHECK_EQ(bypass_pager_destroy(p), 0);

	/* nothing was printed; with BYPASS_LOG=error the reason is */
	fflush(stderr);
	CHECK_EQ(lseek(errfd, 0, SEEK_END), 0);
	bypass_set_log_level(BYPASS_LOG_ERROR);
	c = good();
	c.budget = 0;
	CHECK_ERR(create(c), -EINVAL);
	fflush(stderr);
	dup2(saved, 2);
	char buf[512] = { 0 };
	CHECK(pread(errfd, buf, sizeof(buf) - 1, 0) > 0);
	CHECK(strstr(buf, "budget") != NULL);
	close(errfd);
	close(saved);
	tmpdir_cleanup();
	return test_pass("pager/badconfig");
}
