/* SPDX-License-Identifier: MIT */
/*
 * endless: a hostile peer that keeps records coming which the receiver
 * passes over cannot keep it past its timeout.
 *
 * 1. A client writes, just ahead of the server's released tail, an endless
 *    stream of call responses nobody waits for (recv skips them), and keeps
 *    the "producer sleeps" flag set so that every skip costs the server a
 *    wake-up system call.  recv with no wait, and with a short timeout,
 *    must still return (-EAGAIN, -ETIMEDOUT).
 * 2. A client writes records laps ahead, ignoring the room the server
 *    released (overwriting what it has not read).  A call scanning for its
 *    response must see the corruption (-EPROTO, sticky), not wait for its
 *    timeout at a record that was overwritten.
 */
#include <sys/prctl.h>

#include "ipc/ipc_internal.h"
#include "util.h"

#define RING (16u << 20)

static void put(struct ipc_ring *r, uint64_t pos, unsigned kind)
{
	struct ipc_rec *rec = (void *)(r->data + (pos & r->mask));
	rec->len = 0;
	rec->id = 12345;
	atomic_store_explicit(&rec->stamp, pos | kind, memory_order_release);
}

/* Responses nobody waits for, just ahead of the consumer, forever. */
static void skipper(const char *name)
{
	bypass_ipc_conn *c = test_connect(name, NULL);
	struct ipc_ring *r = &c->tx;
	uint64_t w = 0;
	for (;;) {
		uint64_t t = atomic_load(&r->ctl->tail);
		if (w < t)
			w = t;
		while (w + IPC_ALIGN < t + r->cap) {
			put(r, w, IPC_K_RESP);
			w += IPC_ALIGN;
		}
		atomic_store(&r->ctl->tx_sleepers, 1);
	}
}

/* Three laps of one-way messages, whatever the consumer released. */
static void overrun(const char *name, int done)
{
	bypass_ipc_conn *c = test_connect(name, NULL);
	struct ipc_ring *r = &c->tx;
	for (uint64_t w = 0; w < 3 * r->cap; w += IPC_ALIGN)
		put(r, w, IPC_K_MSG);
	CHECK(write(done, "d", 1) == 1);
	pause();
}

static pid_t spawn(void (*fn)(const char *, int), const char *name, int arg)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fn(name, arg);
		_exit(0);
	}
	return pid;
}

static void skipper_fn(const char *name, int arg)
{
	(void)arg;
	skipper(name);
}

int main(void)
{
	test_timeout(120);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "endless");
	struct bypass_ipc_opts so = { .ring_size = RING, .mode = BYPASS_WAIT_SLEEP };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	struct bypass_ipc_msg m;

	/* 1: recv returns despite an endless stream of records to skip. */
	pid_t p1 = spawn(skipper_fn, name, -1);
	bypass_ipc_conn *s1 = test_accept(svc);
	for (int i = 0; i < 5; i++)
		CHECK_ERR(bypass_ipc_recv(s1, &m, 0), -EAGAIN);
	for (int i = 0; i < 3; i++)
		CHECK_ERR(bypass_ipc_recv(s1, &m, 20000000), -ETIMEDOUT);
	kill(p1, SIGKILL);
	CHECK(waitpid(p1, NULL, 0) == p1);
	CHECK_ERR(bypass_ipc_close(s1), 0);

	/* 2: a call scanning for its response sees records laps ahead. */
	int done[2];
	CHECK(pipe(done) == 0);
	pid_t p2 = spawn(overrun, name, done[1]);
	bypass_ipc_conn *s2 = test_accept(svc);
	char x;
	CHECK(read(done[0], &x, 1) == 1);
	CHECK_ERR(bypass_ipc_call(s2, "q", 2, &m, 5000000000ll), -EPROTO);
	CHECK_ERR(bypass_ipc_recv(s2, &m, 0), -EPROTO);
	kill(p2, SIGKILL);
	CHECK(waitpid(p2, NULL, 0) == p2);
	CHECK_ERR(bypass_ipc_close(s2), 0);
	close(done[0]);
	close(done[1]);

	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	CHECK_EQ(test_count_fds(), fds);
	CHECK_EQ(test_count_maps("bypass-ipc"), 0);
	return test_pass("ipc/endless");
}
