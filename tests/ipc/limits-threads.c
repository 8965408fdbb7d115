/* SPDX-License-Identifier: MIT */
/*
 * limits-threads: a service's per-client accounting is shared by the
 * accepting thread and the threads that close connections (and outlives the
 * service when connections are closed after it).  One thread accepts while
 * another closes what it accepted, some clients leaving first (punched at
 * once), some after (lingering, punched at a later accept); then the
 * service closes with connections still open, and they are closed after
 * it.  Every client's memfd ends punched or released, the limit of 4 per
 * process is never exceeded, and descriptors come back.  TEST_LABELS: threads
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ipc/ipc_internal.h"
#include "util.h"

#define N 40
#define LIMIT 4

static int to_closer[2], from_closer[2];
#define SYNC ((bypass_ipc_conn *)1)

/* Closes what it is sent; answers SYNC once everything before it is
 * closed; stops at NULL. */
static void *closer(void *arg)
{
	(void)arg;
	bypass_ipc_conn *c;
	while (read(to_closer[0], &c, sizeof(c)) == sizeof(c) && c) {
		if (c == SYNC)
			CHECK(write(from_closer[1], "s", 1) == 1);
		else
			CHECK_ERR(bypass_ipc_close(c), 0);
	}
	return NULL;
}

static void send_closer(bypass_ipc_conn *c)
{
	CHECK(write(to_closer[1], &c, sizeof(c)) == sizeof(c));
}

static int raw_connect(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "bypass-ipc:%s", name);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	CHECK(connect(s, (struct sockaddr *)&sa,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0);
	return s;
}

static int raw_hello(int s)
{
	struct ipc_hello h;
	int fds[2];
	unsigned n = 2;
	memset(&h, 0, sizeof(h));
	CHECK_EQ(bypass_recv_fds(s, fds, &n, &h, sizeof(h)), sizeof(h));
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	return h.status;
}

int main(void)
{
	test_timeout(60);
	int fds = test_count_fds();
	char name[64];
	test_svc_name(name, sizeof(name), "limt");
	struct bypass_ipc_opts so = { .ring_size = 8192, .max_per_pid = LIMIT };
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, &so, &svc), 0);
	CHECK(pipe(to_closer) == 0 && pipe(from_closer) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, closer, NULL) == 0);
	int refused = 0;
	for (int i = 0; i < N; i++) {
		int s = raw_connect(name);
		bypass_ipc_conn *c = NULL;
		int r = bypass_ipc_accept(svc, &c, BYPASS_SEC);
		CHECK(r == 0 || r == -EUSERS);
		int st = raw_hello(s);
		CHECK_EQ(st, r ? EUSERS : 0);
		refused += r != 0;
		/* Half the clients leave before the server closes, half after. */
		if (i & 1)
			close(s);
		if (c)
			send_closer(c);
		if (!(i & 1)) {
			usleep(1000);
			close(s);
		}
	}
	/* Once everything is closed and every client gone, the next accepts
	 * find the limit free again (the lingering ones are swept). */
	char x;
	send_closer(SYNC);
	CHECK(read(from_closer[0], &x, 1) == 1);
	/* Some still open when the service goes: closed after it. */
	bypass_ipc_conn *late[LIMIT];
	int ls[LIMIT];
	for (int i = 0; i < LIMIT; i++) {
		ls[i] = raw_connect(name);
		CHECK_ERR(bypass_ipc_accept(svc, &late[i], BYPASS_SEC), 0);
		CHECK_EQ(raw_hello(ls[i]), 0);
	}
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
	for (int i = 0; i < LIMIT; i++)
		send_closer(late[i]);
	send_closer(NULL);
	CHECK(pthread_join(t, NULL) == 0);
	for (int i = 0; i < LIMIT; i++)
		close(ls[i]);
	close(to_closer[0]);
	close(to_closer[1]);
	close(from_closer[0]);
	close(from_closer[1]);
	TEST_LOG("%d of %d clients refused at the limit of %d", refused, N, LIMIT);
	CHECK_EQ(test_count_fds(), fds);
	CHECK_EQ(test_count_maps("bypass-ipc"), 0);
	return test_pass("ipc/limits-threads");
}
