/* SPDX-License-Identifier: MIT */
/*
 * batch-fanout: one message to many connections with one system call.
 *
 * A server that answers many connections per event-loop turn makes one
 * send() per connection.  Inside a bypass segment the sends are queued in
 * the thread's io_uring and entered once at the flush, which stores each
 * call's result (what send(2) would have returned).
 *
 *   cc batch-fanout.c -lbypass -o batch-fanout && ./batch-fanout
 *
 * Unmodified programs get the same without recompiling:
 *   LD_PRELOAD=libbypass-batch.so nginx ...   (see man libbypass-batch)
 */
#include <bypass/batch.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define N 16

int main(void)
{
	int tx[N], rx[N];
	for (int i = 0; i < N; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
			perror("socketpair");
			return 1;
		}
		tx[i] = sv[0];
		rx[i] = sv[1];
	}

	int r = bypass_batch_start();
	if (r < 0) {
		fprintf(stderr, "bypass_batch_start: %s\n", strerror(-r));
		return 1;
	}
	const char msg[] = "hello from one io_uring_enter\n";
	ssize_t res[N];
	for (int i = 0; i < N; i++)
		bypass_batch_send(tx[i], msg, sizeof(msg) - 1, MSG_NOSIGNAL, &res[i]);
	close(rx[N - 1]); /* one peer went away: its send will fail */
	int n = bypass_batch_flush(); /* one system call for all of them */
	printf("%d sends completed\n", n);

	for (int i = 0; i < N; i++) {
		if (res[i] < 0) {
			printf("connection %2d: %s\n", i, strerror((int)-res[i]));
			continue;
		}
		char buf[64];
		ssize_t k = read(rx[i], buf, sizeof(buf));
		printf("connection %2d: sent %zd, peer read %zd\n", i, res[i], k);
	}

	struct bypass_batch_stats st;
	bypass_batch_stats(&st);
	printf("%llu calls queued, %llu io_uring_enter calls\n",
	       (unsigned long long)st.deferred, (unsigned long long)st.enters);
	for (int i = 0; i < N; i++) {
		close(tx[i]);
		if (i < N - 1)
			close(rx[i]);
	}
	return 0;
}
