/* SPDX-License-Identifier: MIT */
/*
 * The heap's packer tests (heap-pack under the preload, heap-pack-unit with
 * pack.c linked alone): blocks marked and checked, and NTHREADS threads
 * that allocate, check, reallocate and free blocks of 1 byte .. 64 KiB
 * (half of them in the packer's range), a third of them freed by another
 * thread.  The allocator's calls are HS_MALLOC, HS_CALLOC (one element),
 * HS_REALLOC and HS_FREE (the C library's unless the test defines them);
 * PACK_OPS operations per thread.
 */
#ifndef BYPASS_TEST_PAGER_HEAP_STRESS_H
#define BYPASS_TEST_PAGER_HEAP_STRESS_H

#include "harness.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef HS_MALLOC
#define HS_MALLOC(n) malloc(n)
#define HS_CALLOC(n) calloc(1, n)
#define HS_REALLOC(p, n) realloc(p, n)
#define HS_FREE(p) free(p)
#endif
#ifndef HS_THREAD_START
#define HS_THREAD_START() ((void)0)
#endif
#define NTHREADS 4
#define NSLOT 256
/* the soak's (500,000 operations a thread or more): a line on stderr from
 * thread 0 every HS_PROGRESS_S seconds, its operations so far */
#ifndef HS_PROGRESS_S
#define HS_PROGRESS_S 30
#endif

static double hs_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The block's marks: its first and last 64 bytes and a byte every 1000. */
static void mark(unsigned char *b, size_t n, unsigned k)
{
	for (size_t i = 0; i < n; i += (i < 64 || i + 64 >= n) ? 1 : 1000)
		b[i] = (unsigned char)(k * 31 + i * 7 + 1);
}

static bool marked(const unsigned char *b, size_t n, unsigned k)
{
	for (size_t i = 0; i < n; i += (i < 64 || i + 64 >= n) ? 1 : 1000)
		if (b[i] != (unsigned char)(k * 31 + i * 7 + 1))
			return false;
	return true;
}

struct block {
	unsigned char *p;
	size_t n;
	unsigned k;
};

/* Blocks handed to the next thread to free. */
static struct {
	pthread_mutex_t lock;
	struct block b[NTHREADS][64];
	int n[NTHREADS];
} hand = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (size_t)*s;
}

/* 1 byte .. 64 KiB, half of them in the packer's range */
static size_t size_draw(uint64_t *s)
{
	size_t r = rnd(s);
	switch (r % 4) {
	case 0:
		return 1 + (r >> 8) % 4096;
	case 1:
	case 2:
		return 4097 + (r >> 8) % 12288;
	default:
		return 1 + (r >> 8) % 65536;
	}
}

static void *stress(void *arg)
{
	HS_THREAD_START();
	unsigned me = (unsigned)(uintptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (me + 1);
	struct block mine[NSLOT] = { { 0 } };
	unsigned key = me << 24;
	double t0 = hs_now(), told = t0;
	for (long op = 0; op < PACK_OPS; op++) {
		if (PACK_OPS >= 500000 && me == 0 && !(op & 1023) && hs_now() - told >= HS_PROGRESS_S) {
			told = hs_now();
			fprintf(stderr, "  thread 0: %ld of %ld operations, %.0f s\n", op,
				(long)PACK_OPS, told - t0);
		}
		/* free what another thread handed over */
		pthread_mutex_lock(&hand.lock);
		for (int i = 0; i < hand.n[me]; i++) {
			struct block *b = &hand.b[me][i];
			if (!marked(b->p, b->n, b->k)) {
				pthread_mutex_unlock(&hand.lock);
				return (void *)"a block handed over lost its data";
			}
			HS_FREE(b->p);
		}
		hand.n[me] = 0;
		pthread_mutex_unlock(&hand.lock);

		struct block *b = &mine[rnd(&s) % NSLOT];
		if (!b->p) {
			b->n = size_draw(&s);
			b->k = ++key;
			b->p = (rnd(&s) & 7) ? HS_MALLOC(b->n) : HS_CALLOC(b->n);
			if (!b->p)
				return (void *)"malloc failed";
			mark(b->p, b->n, b->k);
			continue;
		}
		if (!marked(b->p, b->n, b->k))
			return (void *)"a block lost its data";
		switch (rnd(&s) % 3) {
		case 0:
			HS_FREE(b->p);
			b->p = NULL;
			break;
		case 1: {
			size_t n = size_draw(&s);
			unsigned char *q = HS_REALLOC(b->p, n);
			if (!q)
				return (void *)"realloc failed";
			if (!marked(q, n < b->n ? n : b->n, b->k) && n >= b->n)
				return (void *)"realloc lost the data";
			b->p = q;
			b->n = n;
			b->k = ++key;
			mark(q, n, b->k);
			break;
		}
		default: {
			unsigned to = (me + 1) % NTHREADS;
			pthread_mutex_lock(&hand.lock);
			if (hand.n[to] < 64) {
				hand.b[to][hand.n[to]++] = *b;
				b->p = NULL;
			}
			pthread_mutex_unlock(&hand.lock);
		}
		}
	}
	for (int i = 0; i < NSLOT; i++)
		HS_FREE(mine[i].p);
	return NULL;
}

/* The threads started: stress() each. */
static void stress_start(pthread_t t[NTHREADS])
{
	for (unsigned i = 0; i < NTHREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, stress, (void *)(uintptr_t)i), 0);
}

/* The threads joined (a failure is the test's), the blocks still handed
 * over checked and freed. */
static void stress_finish(pthread_t t[NTHREADS])
{
	for (unsigned i = 0; i < NTHREADS; i++) {
		void *ret;
		CHECK_EQ(pthread_join(t[i], &ret), 0);
		if (ret)
			TEST_FAIL("thread %u: %s", i, (const char *)ret);
	}
	for (unsigned i = 0; i < NTHREADS; i++)
		for (int j = 0; j < hand.n[i]; j++) {
			CHECK(marked(hand.b[i][j].p, hand.b[i][j].n, hand.b[i][j].k));
			HS_FREE(hand.b[i][j].p);
		}
}

#endif
