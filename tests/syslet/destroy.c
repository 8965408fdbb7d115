/* SPDX-License-Identifier: MIT */
/*
 * Teardown with programs in flight: io_uring chains blocked on an empty pipe
 * are cancelled by destroy (it returns at once); with the worker engine, a
 * program not yet started is dropped and destroy waits for the running one
 * (released here by a write).  No descriptor or memory leaks (ASan).
 * TEST_LABELS: threads
 */
#include "util.h"

#include <pthread.h>

static int wfd;
static void *late_writer(void *arg)
{
	(void)arg;
	test_sleep_ms(50);
	if (write(wfd, "x", 1) != 1)
		abort();
	return NULL;
}

int main(void)
{
	test_timeout(20);
	unsetenv("BYPASS_SYSLET_ENGINE");
	int fds0 = test_count_fds();
	int pfd[2];
	char buf[4][8];

	/* io_uring chains blocked in reads: cancelled */
	bypass_syslet *s = ctx_for(BYPASS_SYSLET_ENGINE_URING, 0);
	if (s) {
		CHECK_EQ(pipe(pfd), 0);
		atom_t a[4][1];
		prog_t p[4];
		for (int i = 0; i < 4; i++) {
			a[i][0] = (atom_t){ .nr = SYS_read, .arg = { C(pfd[0]), P(buf[i]), C(8) } };
			p[i] = prog_of(a[i], 1, (uint64_t)i);
		}
		CHECK_EQ(bypass_syslet_submit(s, p, 4), 4);
		uint64_t t0 = test_now_ns();
		CHECK_EQ(bypass_syslet_destroy(s), 0);
		TEST_LOG("uring: destroy with 4 blocked chains took %.1f ms",
			 (double)(test_now_ns() - t0) / 1e6);
		close(pfd[0]);
		close(pfd[1]);
	}

	/* one worker: the first program runs (blocked), the second waits */
	struct bypass_syslet_opts o;
	memset(&o, 0, sizeof(o));
	o.engine = BYPASS_SYSLET_ENGINE_WORKERS;
	o.workers = 1;
	CHECK_EQ(bypass_syslet_create(&o, &s), 0);
	CHECK_EQ(pipe(pfd), 0);
	wfd = pfd[1];
	int64_t second = 0;
	atom_t r1[1] = { { .nr = SYS_read, .arg = { C(pfd[0]), P(buf[0]), C(1) } } };
	atom_t r2[1] = { { .nr = BYPASS_SYSLET_UMEM_ADD, .flags = BYPASS_SYSLET_ASYNC,
			   .arg = { P(&second), C(1) } } };
	prog_t p1 = prog_of(r1, 1, 1), p2 = prog_of(r2, 1, 2);
	CHECK_EQ(bypass_syslet_run(s, &p1, NULL), 0);
	for (int i = 0; i < 1000; i++) { /* the worker has taken it */
		struct bypass_syslet_stats st;
		bypass_syslet_stats(s, &st);
		if (st.workers == 1)
			break;
		test_sleep_ms(1);
	}
	test_sleep_ms(10);
	CHECK_EQ(bypass_syslet_run(s, &p2, NULL), 0);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, late_writer, NULL), 0);
	CHECK_EQ(bypass_syslet_destroy(s), 0);
	pthread_join(t, NULL);
	CHECK_EQ(__atomic_load_n(&second, __ATOMIC_SEQ_CST), 0); /* dropped, never ran */
	close(pfd[0]);
	close(pfd[1]);
	CHECK_EQ(test_count_fds(), fds0);
	return test_pass("syslet/destroy");
}
