/* SPDX-License-Identifier: MIT */
/* Shared by the files of bench/ipc. */
#ifndef BYPASS_BENCH_IPC_H
#define BYPASS_BENCH_IPC_H

#include "bench.h"

#include <bypass/ipc.h>
#include <sys/types.h>
#include <time.h>

void ipcb_name(char *buf, size_t n, const char *tag);
int ipcb_wait(pid_t pid);
/* A bypass connection between two processes on the experiment's two CPUs:
 * listen on a fresh name with o and fork.  The child (second CPU) accepts
 * and gets 0 with *conn, or exits 1; the parent (first CPU) gets the
 * child's pid and connects: *conn (NULL on failure) and *err (0 or the
 * -errno).  -1 when listen or fork failed. */
pid_t ipcb_pair(struct bench_ctx *c, const char *tag, const struct bypass_ipc_opts *o,
		bypass_ipc_conn **conn, int *err);
/* Read or write exactly len bytes (busy: non-blocking recv in a loop, with
 * a pause between tries); 0, or -1 on error or end of file. */
int ipcb_read(int fd, void *buf, size_t len, bool busy);
int ipcb_write(int fd, const void *buf, size_t len);
/* ipc.lib.call and ipc.lib.kv: library mode (lib.c, libkv.c) */
int ipcb_lib(struct bench_ctx *c);
/* The key-value example's protocol (examples/ipc-kv/kv.h), the ops used
 * here; a mismatch shows as failed checks, never as figures. */
enum { KV_GET = 0, KV_SET = 1, KV_PING = 5 };
struct kv_set {
	uint16_t klen, vlen;
};
/* lib.c's server process: two library-mode services over the example's
 * object, message-mode connections waiting adaptively ([0]) and asleep
 * ([1]), a thread per connection; its main thread sleeps in epoll_wait. */
struct ipcb_srv {
	pid_t pid;
	char name[2][64];
};
uint64_t ipcb_clock_ns(clockid_t id);
/* Another process's CPU time so far (ns), or 0. */
uint64_t ipcb_proc_cpu_ns(pid_t pid);
int ipcb_lib_kv(struct bench_ctx *c, struct ipcb_srv *s, const char *why_no_gate);
/* ipc.call and ipc.tput.* */
int ipcb_calls(struct bench_ctx *c);
int ipcb_throughput(struct bench_ctx *c);
/* The iceoryx2 row: NULL when its peer is built (once per run), or the
 * reason it cannot run. */
const char *ipcb_iceoryx2_prepare(struct bench_ctx *c);
/* One run of n messages: the one-way samples (server's TSC minus the
 * client's stamp, offset not removed), the client's round trips, and the
 * CPU time of each side's process (start-up included).  0 or -1. */
int ipcb_iceoryx2_run(struct bench_ctx *c, size_t n, uint64_t *ow, uint64_t *rtt,
		      uint64_t *cpu_client_ns, uint64_t *cpu_server_ns);

#endif
