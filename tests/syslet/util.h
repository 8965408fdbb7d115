/* SPDX-License-Identifier: MIT */
/* Helpers for the syslet tests. */
#ifndef BYPASS_TEST_SYSLET_UTIL_H
#define BYPASS_TEST_SYSLET_UTIL_H

#include "harness.h"
#include "core/testutil.h"

#include <bypass/syslet.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct bypass_syslet_atom atom_t;
typedef struct bypass_syslet_prog prog_t;
typedef struct bypass_syslet_completion comp_t;

#define C(x) BYPASS_SYSLET_C(x)
#define P(x) BYPASS_SYSLET_P(x)
#define R(i) BYPASS_SYSLET_R(i)
#define LD(p) BYPASS_SYSLET_LOAD(p)

static inline prog_t prog_of(const atom_t *a, uint32_t n, uint64_t tag)
{
	prog_t p;
	memset(&p, 0, sizeof(p));
	p.atoms = a;
	p.natoms = n;
	p.tag = tag;
	return p;
}

/* A context on engine e (WORKERS or URING); NULL if io_uring is refused. */
static inline bypass_syslet *ctx_for(uint32_t engine, uint32_t entries)
{
	struct bypass_syslet_opts o;
	memset(&o, 0, sizeof(o));
	o.engine = engine;
	o.entries = entries;
	bypass_syslet *s = NULL;
	int r = bypass_syslet_create(&o, &s);
	if (r == -EOPNOTSUPP && engine == BYPASS_SYSLET_ENGINE_URING) {
		TEST_LOG("io_uring refused here: the uring engine is not tested");
		return NULL;
	}
	if (r)
		TEST_FAIL("bypass_syslet_create(engine %u): %s", engine, strerror(-r));
	return s;
}

static inline const char *engine_name(uint32_t e)
{
	return e == BYPASS_SYSLET_ENGINE_URING ? "uring" :
	       e == BYPASS_SYSLET_ENGINE_WORKERS ? "workers" :
	       e == BYPASS_SYSLET_ENGINE_INLINE ? "inline" : "auto";
}

/* A fresh temporary directory (removed by rm_tree). */
static inline void make_tmpdir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/bypass-syslet-test.XXXXXX");
	if (!mkdtemp(buf))
		TEST_FAIL("mkdtemp: %s", strerror(errno));
}

static inline void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		TEST_FAIL("write %s: %s", path, strerror(errno));
	close(fd);
}

/* Wait for and take exactly one completion. */
static inline comp_t wait_one(bypass_syslet *s)
{
	comp_t c;
	int r = bypass_syslet_wait(s, 1, 5000000000ll);
	if (r < 1)
		TEST_FAIL("bypass_syslet_wait: %d (%s)", r, r < 0 ? strerror(-r) : "");
	r = bypass_syslet_reap(s, &c, 1);
	if (r != 1)
		TEST_FAIL("bypass_syslet_reap: %d", r);
	return c;
}

#endif
