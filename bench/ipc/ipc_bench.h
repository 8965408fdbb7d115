/* SPDX-License-Identifier: MIT */
/* Shared by the files of bench/ipc. */
#ifndef BYPASS_BENCH_IPC_H
#define BYPASS_BENCH_IPC_H

#include "bench.h"

void ipcb_name(char *buf, size_t n, const char *tag);
int ipcb_wait(pid_t pid);
/* Read or write exactly len bytes (busy: non-blocking recv in a loop, with
 * a pause between tries); 0, or -1 on error or end of file. */
int ipcb_read(int fd, void *buf, size_t len, bool busy);
int ipcb_write(int fd, const void *buf, size_t len);
/* ipc.call and ipc.tput.* */
int ipcb_calls(struct bench_ctx *c);
int ipcb_throughput(struct bench_ctx *c);
/* The iceoryx2 row: NULL and *s filled, or the reason it cannot run. */
const char *ipcb_iceoryx2(struct bench_ctx *c, uint64_t count, struct bench_summary *s);

#endif
