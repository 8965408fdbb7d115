/* SPDX-License-Identifier: MIT */
/*
 * thread-ring: each thread's segments go through its own io_uring, kept
 * with its thread state: made on its first segment, never shared between
 * threads, ended when the thread exits (a new thread may reuse the state
 * and gets a ring of its own), and in a forked child dropped and made anew
 * (the child's segments work, and leave the parent's ring working).
 * TEST_LABELS: threads
 */
#include <bypass/batch.h>
#include <liburing.h>
#include <pthread.h>

#include "harness.h"
#include "batch/batch_internal.h"

static int sv[2];

/* One segment of one write through the calling thread's ring; its ring. */
static struct io_uring *one_segment(char c)
{
	if (bypass_batch_start())
		return NULL;
	ssize_t res = 0;
	if (bypass_batch_write(sv[0], &c, 1, &res) || bypass_batch_flush() != 1 || res != 1)
		return NULL;
	char got = 0;
	if (read(sv[1], &got, 1) != 1 || got != c)
		return NULL;
	struct bt_thread *th = bp_bt_self();
	return th && th->gen == bp_fork_gen() ? th->ring : NULL;
}

/* Every thread holds its ring at once: a ring ended at thread exit is
 * unmapped by liburing with a raw system call ThreadSanitizer does not see,
 * so a later ring at the same address would look like a race to it. */
static pthread_barrier_t all_up, all_done;
static pthread_mutex_t sock_lock = PTHREAD_MUTEX_INITIALIZER;

static void *thread_fn(void *arg)
{
	struct io_uring **out = arg;
	struct bt_thread *th = bp_bt_self();
	void *ret = th && th->ring ? (void *)1 : NULL; /* none before its first segment */
	pthread_mutex_lock(&sock_lock);
	*out = one_segment('t');
	pthread_mutex_unlock(&sock_lock);
	pthread_barrier_wait(&all_up);
	pthread_barrier_wait(&all_done);
	return ret;
}

int main(void)
{
	test_timeout(60);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(bp_bt_self() == NULL);
	int r = bypass_batch_start();
	if (r == -ENOSYS || r == -EPERM)
		SKIP("io_uring unavailable: %s", strerror(-r));
	CHECK_ERR(r, 0);
	CHECK_EQ(bypass_batch_flush(), 0);
	struct io_uring *mine = one_segment('m');
	CHECK(mine != NULL);
	CHECK(one_segment('n') == mine); /* kept */

	pthread_t t[3];
	struct io_uring *theirs[3];
	pthread_barrier_init(&all_up, NULL, 4);
	pthread_barrier_init(&all_done, NULL, 4);
	for (int i = 0; i < 3; i++)
		CHECK(pthread_create(&t[i], NULL, thread_fn, &theirs[i]) == 0);
	pthread_barrier_wait(&all_up);
	for (int i = 0; i < 3; i++) {
		CHECK(theirs[i] != NULL && theirs[i] != mine);
		for (int j = 0; j < i; j++)
			CHECK(theirs[i] != theirs[j]);
	}
	pthread_barrier_wait(&all_done);
	for (int i = 0; i < 3; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		CHECK(ret == NULL);
	}
	/* Their states retired with their rings ended; a new thread reuses one
	 * and makes a ring of its own. */
	pthread_barrier_init(&all_up, NULL, 2);
	pthread_barrier_init(&all_done, NULL, 2);
	CHECK(pthread_create(&t[0], NULL, thread_fn, &theirs[0]) == 0);
	pthread_barrier_wait(&all_up);
	CHECK(theirs[0] != NULL && theirs[0] != mine);
	pthread_barrier_wait(&all_done);
	void *ret;
	pthread_join(t[0], &ret);
	CHECK(ret == NULL);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct bt_thread *th = bp_bt_self();
		CHECK(th && th->ring == NULL); /* the parent's copy is dropped */
		for (int i = 0; i < 50; i++)
			CHECK(one_segment((char)('a' + i % 26)) != NULL);
		_exit(0);
	}
	wait_child(pid);
	CHECK(one_segment('p') == mine);
	return test_pass("batch/thread-ring");
}
