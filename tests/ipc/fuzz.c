/* SPDX-License-Identifier: MIT */
/*
 * fuzz: a hostile client scribbles garbage over everything it shares with
 * the server - record stamps (random, and plausible positions), lengths,
 * ids, the ring control blocks (tails, sleeper counts, wake words, flags) -
 * while the server receives, releases, replies and sends.  The server's
 * arena is fenced with PROT_NONE guard regions on both sides: any access
 * outside the arena would crash the test.  Every call must return 0 or a
 * documented error; every message handed out must lie inside the arena.
 */
#include <sys/mman.h>

#include "ipc/ipc_internal.h"
#include "util.h"

#define TRIALS 60
#define GUARD (2ul << 20)

static void scribble(bypass_ipc_conn *c, uint64_t seed, unsigned rounds)
{
	_Atomic uint32_t *ctl_words[] = {
		&c->tx.ctl->rx_sleepers, &c->tx.ctl->rx_armed, &c->tx.ctl->rx_closed,
		&c->tx.ctl->tx_wake, &c->tx.ctl->rx_wake, &c->tx.ctl->tx_sleepers,
		&c->rx.ctl->rx_sleepers, &c->rx.ctl->rx_armed, &c->rx.ctl->tx_wake,
		&c->rx.ctl->rx_wake, &c->rx.ctl->tx_sleepers,
	};
	for (unsigned i = 0; i < rounds; i++) {
		uint64_t r = test_rand(&seed), v = test_rand(&seed);
		switch (r % 8) {
		case 0: case 1: case 2: { /* a record in the ring we produce */
			uint64_t off = (v % c->tx.cap) & ~63ull;
			struct ipc_rec *rec = (void *)(c->tx.data + off);
			uint64_t lap = (test_rand(&seed) % 4) * c->tx.cap;
			rec->len = (uint32_t)(r % 3 ? test_rand(&seed) % (c->max_msg + 200)
						    : test_rand(&seed));
			rec->id = (uint32_t)v;
			atomic_store(&rec->stamp, (off + lap) | (test_rand(&seed) % 8));
			break;
		}
		case 3: /* random bytes anywhere in our ring */
			((volatile uint64_t *)c->tx.data)[v % (c->tx.cap / 8)] = test_rand(&seed);
			break;
		case 4: /* the tail the server reads for room */
			atomic_store(&c->rx.ctl->tail, r % 2 ? v : (v % (4 * c->rx.cap)) & ~63ull);
			break;
		case 5:
			atomic_store(ctl_words[v % BP_ARRAY_SIZE(ctl_words)], (uint32_t)test_rand(&seed));
			break;
		case 6: /* and sometimes a real message */
			bypass_ipc_send(c, &v, (size_t)(r % 64), 0);
			break;
		default: {
			struct bypass_ipc_msg m;
			if (!bypass_ipc_recv(c, &m, 0))
				bypass_ipc_release(c, &m);
		}
		}
	}
}

static bool allowed(int r)
{
	return r == 0 || r == -EAGAIN || r == -ETIMEDOUT || r == -EPROTO ||
	       r == -ECONNRESET || r == -EPIPE || r == -EBUSY;
}

static void check_in_arena(bypass_ipc_conn *c, const struct bypass_ipc_msg *m)
{
	uintptr_t p = (uintptr_t)m->data;
	if (p < c->lo || p > c->lo + c->len || m->len > c->lo + c->len - p)
		TEST_FAIL("message %p+%zu outside the arena %#lx+%zu", m->data, m->len,
			  (unsigned long)c->lo, c->len);
	/* Read every byte in place. */
	volatile unsigned char sum = 0;
	for (size_t i = 0; i < m->len; i++)
		sum += ((const unsigned char *)m->data)[i];
	(void)sum;
}

int main(void)
{
	test_timeout(120);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "fuzz");
	struct bypass_ipc_opts so = { .ring_size = 8192, .mode = BYPASS_WAIT_SLEEP };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	int protos = 0, msgs = 0;
	for (int t = 0; t < TRIALS; t++) {
		uint64_t seed = 0x5eed0000ull + (uint64_t)t;
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			bypass_ipc_conn *c = test_connect(name, NULL);
			scribble(c, seed, 20000);
			_exit(0);
		}
		bypass_ipc_conn *c = test_accept(svc);
		void *lo = mmap((void *)(c->lo - GUARD), GUARD, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		void *hi = mmap((void *)(c->lo + c->len), GUARD, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		uint64_t s2 = seed * 7;
		for (int i = 0; i < 20000; i++) {
			struct bypass_ipc_msg m;
			int r;
			switch (test_rand(&s2) % 3) {
			case 0:
				r = bypass_ipc_recv(c, &m, (i % 50) ? 0 : 1000000);
				if (!r) {
					msgs++;
					check_in_arena(c, &m);
					if (m.flags & BYPASS_IPC_MSG_CALL)
						CHECK(allowed(bypass_ipc_reply(c, &m, "ok", 2, 0)));
					CHECK_ERR(bypass_ipc_release(c, &m), 0);
				}
				break;
			case 1: {
				char buf[300];
				r = bypass_ipc_send(c, buf, test_rand(&s2) % sizeof(buf), 0);
				break;
			}
			default: {
				void *b;
				r = bypass_ipc_loan(c, 100, &b, 0);
				if (!r) {
					memset(b, 0, 100);
					r = bypass_ipc_send(c, b, 50, 0);
				}
			}
			}
			if (!allowed(r))
				TEST_FAIL("trial %d op %d: %d (%s)", t, i, r, strerror(-r));
			if (r == -EPROTO) {
				protos++;
				break;
			}
			if (r == -ECONNRESET || r == -EPIPE)
				break;
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		CHECK_ERR(bypass_ipc_close(c), 0);
		if (lo != MAP_FAILED)
			munmap(lo, GUARD);
		if (hi != MAP_FAILED)
			munmap(hi, GUARD);
	}
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	CHECK_EQ(test_count_maps("bypass-ipc"), 0);
	TEST_LOG("%d messages read in place, %d connections ended as corrupt", msgs, protos);
	CHECK(protos > 0); /* the fuzzer did reach the checks */
	return test_pass("ipc/fuzz");
}
