/* SPDX-License-Identifier: MIT */
/*
 * ipc-echo-client: talks to ipc-echo-unix or ipc-echo-bypass, sends COUNT
 * lines and checks each echo; prints the mean round trip.  With "stall" it
 * plays the client that never reads: it sends without reading the echoes
 * and succeeds when the server drops it (as it must, rather than stall its
 * other clients).
 *
 *   ipc-echo-client unix|bypass NAME [COUNT [stall]]
 */
#include <bypass/ipc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s unix|bypass NAME [COUNT]\n", argv[0]);
		return 2;
	}
	int count = argc > 3 ? atoi(argv[3]) : 1000;
	int use_bypass = !strcmp(argv[1], "bypass");
	int fd = -1;
	bypass_ipc_conn *c = NULL;
	for (int tries = 0;; tries++) { /* the server may still be starting */
		int r;
		if (use_bypass) {
			r = bypass_ipc_connect(argv[2], NULL, &c);
		} else {
			struct sockaddr_un sa = { .sun_family = AF_UNIX };
			int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "echo:%s", argv[2]);
			fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			r = connect(fd, (struct sockaddr *)&sa, sizeof(sa_family_t) + 1 + n);
			if (r < 0)
				close(fd);
		}
		if (r == 0)
			break;
		if (tries == 200) {
			fprintf(stderr, "cannot connect to %s\n", argv[2]);
			return 1;
		}
		usleep(10000);
	}
	if (argc > 4 && !strcmp(argv[4], "stall")) {
		for (int i = 0; i < 1000000; i++) {
			char line[64];
			int len = snprintf(line, sizeof(line), "unread %d", i) + 1;
			int r = use_bypass ? bypass_ipc_send(c, line, (size_t)len, 10 * BYPASS_SEC)
					   : (int)send(fd, line, (size_t)len, MSG_NOSIGNAL);
			if (r < 0) {
				printf("%s: dropped by the server after %d unread echoes\n",
				       argv[1], i);
				if (use_bypass)
					bypass_ipc_close(c);
				else
					close(fd);
				return 0;
			}
		}
		fprintf(stderr, "never dropped\n");
		return 1;
	}
	double t0 = now();
	for (int i = 0; i < count; i++) {
		char line[64], back[64];
		int len = snprintf(line, sizeof(line), "hello %d", i) + 1;
		if (use_bypass) {
			struct bypass_ipc_msg m;
			if (bypass_ipc_send(c, line, (size_t)len, BYPASS_FOREVER) < 0 ||
			    bypass_ipc_recv(c, &m, BYPASS_FOREVER) < 0 || m.len != (size_t)len) {
				fprintf(stderr, "echo %d failed\n", i);
				return 1;
			}
			memcpy(back, m.data, m.len);
			bypass_ipc_release(c, &m);
		} else {
			if (write(fd, line, (size_t)len) != len) {
				fprintf(stderr, "echo %d failed\n", i);
				return 1;
			}
			int got = 0;
			while (got < len) {
				ssize_t n = read(fd, back + got, (size_t)(len - got));
				if (n <= 0) {
					fprintf(stderr, "echo %d failed\n", i);
					return 1;
				}
				got += (int)n;
			}
		}
		if (memcmp(line, back, (size_t)len)) {
			fprintf(stderr, "echo %d differs\n", i);
			return 1;
		}
	}
	double t = now() - t0;
	printf("%s: %d echoes, mean round trip %.2f us\n", argv[1], count, t / count * 1e6);
	if (use_bypass)
		bypass_ipc_close(c);
	else
		close(fd);
	return 0;
}
