/* SPDX-License-Identifier: MIT */
/*
 * notify-pingpong: two processes pass a doorbell ring back and forth.
 *
 * The parent creates two doorbells before fork; the child inherits them.
 * Each side rings the other's doorbell and waits on its own.  With an
 * awake peer the wait spins and no system call happens at all; when a side
 * is slow the waiter sleeps on a futex and the ring wakes it.
 *
 *   ./notify-pingpong [round-trips]
 */
#include <bypass/notify.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	bypass_doorbell *ping, *pong;
	int r = bypass_notify_create(NULL, &ping);
	if (r == 0)
		r = bypass_notify_create(NULL, &pong);
	if (r < 0) {
		fprintf(stderr, "bypass_notify_create: %s\n", strerror(-r));
		return 1;
	}

	pid_t child = fork();
	if (child == 0) {
		/* The child answers every ping with a pong. */
		for (long i = 0; i < n; i++) {
			r = bypass_notify_wait(ping, BYPASS_FOREVER);
			if (r < 0) {
				fprintf(stderr, "child: wait: %s\n", strerror(-r));
				_exit(1);
			}
			bypass_notify_ring(pong);
		}
		_exit(0);
	}

	uint64_t t0 = bypass_rdtscp(NULL);
	for (long i = 0; i < n; i++) {
		bypass_notify_ring(ping);
		/* A 1 s timeout: if the child died we hear about it (-EPIPE). */
		r = bypass_notify_wait(pong, 1000000000);
		if (r < 0) {
			fprintf(stderr, "parent: wait: %s\n", strerror(-r));
			return 1;
		}
	}
	uint64_t cycles = bypass_rdtscp(NULL) - t0;
	waitpid(child, NULL, 0);
	printf("%ld round trips, %.0f ns each (%s backend)\n", n,
	       bypass_cycles_to_ns(cycles) / (double)n, bypass_notify_backend(ping));
	bypass_notify_destroy(ping);
	bypass_notify_destroy(pong);
	return 0;
}
