/* SPDX-License-Identifier: MIT */
/* The test service's ops (tests/ipc/lib/testsvc.c), for the ipc tests. */
#ifndef BYPASS_TEST_IPC_TESTSVC_H
#define BYPASS_TEST_IPC_TESTSVC_H

#include <stdint.h>
#include <sys/types.h>

enum {
	TS_ECHO,          /* resp = req */
	TS_ADD,           /* counter += uint64_t req, under the lock: the new value */
	TS_FAULT,         /* SIGSEGV; req[0] 1: holding the lock, 2: with a != b */
	TS_HOLD,          /* lock, set *(uint32_t *)req-pointer, change a/b until killed */
	TS_CHECK,         /* uint64_t[2]: a == b, a */
	TS_LEAK,          /* returns holding the lock */
	TS_POST,          /* env->post(TS_EVENT, req) */
	TS_WHERE,         /* struct ts_where; req int 1: read PKRU too */
	TS_SIGWAIT,       /* struct ts_sig *: raise a signal inside the call */
	TS_NEST,          /* struct ts_nest: call from inside a call */
	TS_RECOVER_FAILS, /* req[0]: the recover hook fails while non-zero */
	TS_SIGNAL,        /* struct ts_kill: signal a process, then sleep */
	TS_NOPS
};

#define TS_EVENT 7
/* The state's lock word lies this far into the state (TS_WHERE's state):
 * tests read it to learn whether a killed process died holding it. */
#define TS_STATE_LOCK_OFF 8

struct ts_where {
	pid_t pid;        /* the process the handler ran in */
	uint32_t flags;   /* env->flags */
	void *state;
	uint32_t pkru;
	uint32_t pad;
};

struct ts_sig {
	int sig;
	volatile int inside, done;
	int lock;         /* TS_SIGWAIT takes the state's lock first */
};

struct ts_kill {
	int32_t pid;      /* kill(pid, sig) from the handler (the server's
			     thread in message mode: the caller waits) */
	int32_t sig;
	uint32_t ms;      /* then sleep this long before answering */
};

struct ts_nest {
	int (*call)(void *lib, unsigned op, const void *req, size_t len, void *resp, size_t cap);
	void *lib;
};

#endif
