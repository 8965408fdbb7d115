/* SPDX-License-Identifier: MIT */
/*
 * The graph of pager.pagerank: a Kronecker graph as the Graph500 and GAP
 * generators make it (initiator A = 0.57, B = 0.19, C = 0.19, edge factor
 * 16, vertex ids randomly permuted), symmetrized, self-loops and duplicate
 * edges removed (GAP's "squish"), in compressed sparse row form: offsets
 * (uint64, nv + 1) and neighbours (uint32, sorted per vertex).  As the graph
 * is undirected, a vertex's in-neighbours are its out-neighbours and its
 * out-degree is offsets[v + 1] - offsets[v]: the pull direction needs
 * nothing else.
 *
 * The file: a 4 KiB header (magic, nv, ne), the offsets from byte 4096, the
 * neighbours from the next 4 KiB boundary, the end padded to 4 KiB, so that
 * it can be read with O_DIRECT (no page cache charged to the reader's
 * memory cgroup).
 */
#include "pager_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CSR_MAGIC 0x3152534350425942ull /* "BYBPCSR1" */
#define CHUNK (1u << 20)

static inline uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void sort_u32(uint32_t *v, size_t n)
{
	if (n > 24) {
		qsort(v, n, sizeof(*v), cmp_u32);
		return;
	}
	for (size_t i = 1; i < n; i++) { /* short lists: insertion sort */
		uint32_t x = v[i];
		size_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

int pb_kron_csr(unsigned scale, unsigned edge_factor, uint64_t seed, struct pb_csr *g)
{
	memset(g, 0, sizeof(*g));
	if (scale < 4 || scale > 30)
		return -EINVAL;
	uint32_t nv = 1u << scale;
	uint64_t m = (uint64_t)edge_factor << scale;
	uint32_t *src = malloc(m * sizeof(*src)), *dst = malloc(m * sizeof(*dst));
	uint32_t *perm = malloc((size_t)nv * sizeof(*perm));
	uint64_t *off = calloc((size_t)nv + 1, sizeof(*off));
	uint64_t *pos = malloc((size_t)nv * sizeof(*pos));
	uint32_t *nb = NULL;
	int e = -ENOMEM;
	if (!src || !dst || !perm || !off || !pos)
		goto out;
	/* Edges in blocks of 2^18, each block with its own generator state (as
	 * GAP seeds one per block), so the graph depends only on the seed. */
	const double A = 0.57, AB = 0.57 + 0.19, ABC = 0.57 + 0.19 + 0.19;
	for (uint64_t b = 0; b < m; b += 1u << 18) {
		uint64_t s = seed * 0x2545f4914f6cdd1dull + b;
		uint64_t end = b + (1u << 18) < m ? b + (1u << 18) : m;
		for (uint64_t k = b; k < end; k++) {
			uint32_t u = 0, v = 0;
			for (unsigned d = 0; d < scale; d++) {
				double r = (double)(splitmix(&s) >> 11) * 0x1p-53;
				u <<= 1;
				v <<= 1;
				if (r < AB) {
					if (r > A)
						v++;
				} else {
					u++;
					if (r > ABC)
						v++;
				}
			}
			src[k] = u;
			dst[k] = v;
		}
	}
	/* a random permutation of the vertex ids (Fisher-Yates) */
	uint64_t s = seed ^ 0x5851f42d4c957f2dull;
	for (uint32_t i = 0; i < nv; i++)
		perm[i] = i;
	for (uint32_t i = nv - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(splitmix(&s) % ((uint64_t)i + 1));
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	/* symmetrize: both directions of every edge but self-loops */
	for (uint64_t k = 0; k < m; k++) {
		src[k] = perm[src[k]];
		dst[k] = perm[dst[k]];
		if (src[k] != dst[k]) {
			off[src[k] + 1]++;
			off[dst[k] + 1]++;
		}
	}
	for (uint32_t v = 0; v < nv; v++)
		off[v + 1] += off[v];
	nb = malloc(off[nv] * sizeof(*nb) + 1);
	if (!nb)
		goto out;
	memcpy(pos, off, (size_t)nv * sizeof(*pos));
	for (uint64_t k = 0; k < m; k++)
		if (src[k] != dst[k]) {
			nb[pos[src[k]]++] = dst[k];
			nb[pos[dst[k]]++] = src[k];
		}
	/* squish: sort each list, drop duplicates, compact in place */
	uint64_t w = 0;
	for (uint32_t v = 0; v < nv; v++) {
		uint64_t b = off[v], end = off[v + 1];
		sort_u32(nb + b, end - b);
		off[v] = w;
		for (uint64_t k = b; k < end; k++)
			if (k == b || nb[k] != nb[k - 1])
				nb[w++] = nb[k];
	}
	off[nv] = w;
	uint32_t *shrunk = realloc(nb, w * sizeof(*nb) + 1);
	if (shrunk)
		nb = shrunk;
	g->nv = nv;
	g->ne = w;
	g->off = off;
	g->nb = nb;
	off = NULL;
	nb = NULL;
	e = 0;
out:
	free(src);
	free(dst);
	free(perm);
	free(off);
	free(pos);
	free(nb);
	return e;
}

void pb_csr_free(struct pb_csr *g)
{
	free(g->off);
	free(g->nb);
	memset(g, 0, sizeof(*g));
}

static size_t round_page(size_t n)
{
	return (n + PB_PAGE - 1) & ~(PB_PAGE - 1);
}

/* Byte offsets of the sections in the file. */
static void layout(uint32_t nv, uint64_t ne, size_t *off_at, size_t *nb_at, size_t *end)
{
	*off_at = PB_PAGE;
	*nb_at = *off_at + round_page(((size_t)nv + 1) * sizeof(uint64_t));
	*end = *nb_at + round_page((size_t)ne * sizeof(uint32_t));
}

static int write_all(int fd, const void *buf, size_t len)
{
	for (const char *p = buf; len;) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pb_csr_write(const char *path, const struct pb_csr *g)
{
	size_t off_at, nb_at, end;
	layout(g->nv, g->ne, &off_at, &nb_at, &end);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	char *pad = calloc(1, PB_PAGE);
	int e = pad ? 0 : -ENOMEM;
	if (!e) {
		uint64_t h[3] = { CSR_MAGIC, g->nv, g->ne };
		memcpy(pad, h, sizeof(h));
		e = write_all(fd, pad, PB_PAGE);
		memset(pad, 0, PB_PAGE);
	}
	size_t offb = ((size_t)g->nv + 1) * sizeof(uint64_t), nbb = (size_t)g->ne * 4;
	if (!e)
		e = write_all(fd, g->off, offb);
	if (!e)
		e = write_all(fd, pad, nb_at - off_at - offb);
	if (!e)
		e = write_all(fd, g->nb, nbb);
	if (!e)
		e = write_all(fd, pad, end - nb_at - nbb);
	if (!e && fsync(fd) < 0)
		e = -errno;
	free(pad);
	close(fd);
	if (e)
		unlink(path);
	return e;
}

int pb_csr_load(const char *path, uint64_t *off, uint32_t *nb, uint32_t nv, uint64_t ne)
{
	size_t off_at, nb_at, end;
	layout(nv, ne, &off_at, &nb_at, &end);
	bool direct = true;
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) { /* a file system without O_DIRECT: the page cache, dropped behind */
		direct = false;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	char *buf = NULL;
	if (posix_memalign((void **)&buf, PB_PAGE, CHUNK)) {
		close(fd);
		return -ENOMEM;
	}
	int e = 0;
	size_t offb = ((size_t)nv + 1) * sizeof(uint64_t), nbb = (size_t)ne * 4;
	for (size_t at = off_at; at < end && !e;) {
		size_t want = end - at < CHUNK ? end - at : CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (size_t)n % PB_PAGE) {
			e = n < 0 ? -errno : -EIO;
			break;
		}
		/* the parts of [at, at + n) that are offsets or neighbours */
		for (int sec = 0; sec < 2; sec++) {
			size_t s0 = sec ? nb_at : off_at, s1 = s0 + (sec ? nbb : offb);
			size_t a = at > s0 ? at : s0, b = at + (size_t)n < s1 ? at + (size_t)n : s1;
			if (a < b)
				memcpy((char *)(sec ? (void *)nb : (void *)off) + (a - s0),
				       buf + (a - at), b - a);
		}
		if (!direct)
			posix_fadvise(fd, (off_t)at, n, POSIX_FADV_DONTNEED);
		at += (size_t)n;
	}
	free(buf);
	close(fd);
	return e;
}
