/* SPDX-License-Identifier: MIT */
/*
 * pager-swap: 64 MiB of memory through a 16 MiB budget.
 *
 * A pager serves the page faults of the memory it maps: a zero page on
 * first touch, a read from its swap file after eviction.  Here we write
 * 64 MiB, read it all back, hand a buffer to read(2) (pinned first: in
 * upcall mode the kernel cannot fault pages in for us), and print what the
 * pager did.
 *
 *   cc pager-swap.c -lbypass && ./pager-swap [swap-directory]
 */
#include <bypass/pager.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024 * 1024ul)

int main(int argc, char **argv)
{
	struct bypass_pager_config cfg = {
		.budget = 16 * MIB,                 /* at most 16 MiB resident */
		.swap_path = argc > 1 ? argv[1] : "/var/tmp",
		.swap_size = 64 * MIB,              /* room for every page */
		.mode = BYPASS_PAGER_UPCALL,        /* faults served in the faulting thread */
		.flags = BYPASS_PAGER_SWAP_TEMP,    /* an unnamed file in that directory */
	};
	bypass_pager *p;
	int e = bypass_pager_create(&cfg, &p);
	if (e) {
		fprintf(stderr, "bypass_pager_create: %s (run with BYPASS_LOG=error for why)\n",
			strerror(-e));
		return 1;
	}
	uint64_t *m;
	e = bypass_pager_map(p, 64 * MIB, 0, (void **)&m);
	if (e) {
		fprintf(stderr, "bypass_pager_map: %s\n", strerror(-e));
		return 1;
	}

	size_t n = 64 * MIB / sizeof(*m);
	for (size_t i = 0; i < n; i++) /* 48 MiB of it goes to swap on the way */
		m[i] = i * 2654435761u;
	for (size_t i = 0; i < n; i++)
		if (m[i] != i * 2654435761u) {
			fprintf(stderr, "word %zu is wrong\n", i);
			return 1;
		}

	/* System calls on pager memory: pin the buffer while the kernel uses it. */
	int fd = open("/etc/hostname", O_RDONLY);
	if (fd >= 0) {
		char *buf = (char *)m + 8 * MIB;
		bypass_pager_pin(p, buf, 4096, BYPASS_PAGER_PIN_WRITE);
		ssize_t got = read(fd, buf, 4095);
		bypass_pager_unpin(p, buf, 4096);
		printf("read %zd bytes into pager memory\n", got);
		close(fd);
	}

	struct bypass_pager_stats st;
	bypass_pager_stats(p, &st);
	printf("faults: %llu first-touch, %llu swap-in (+%llu pages read ahead), %llu write-protect\n",
	       (unsigned long long)st.faults_zero, (unsigned long long)st.faults_swapin,
	       (unsigned long long)st.readahead_pages, (unsigned long long)st.faults_wp);
	printf("evicted %llu pages (%llu clean, not written); %llu MiB written, %llu MiB read\n",
	       (unsigned long long)st.evictions, (unsigned long long)st.evictions_clean,
	       (unsigned long long)(st.bytes_written / MIB), (unsigned long long)(st.bytes_read / MIB));
	printf("resident now %llu pages, at most %llu, budget %llu; mean fault %llu ns\n",
	       (unsigned long long)st.resident_pages, (unsigned long long)st.resident_peak,
	       (unsigned long long)st.budget_pages,
	       (unsigned long long)(st.lat_count ? st.lat_sum_ns / st.lat_count : 0));
	bypass_pager_destroy(p);
	return 0;
}
