#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The pager's run on a lent 16-core machine (issue 20), from a packed build
# (../shared/tools/pack-build.sh after make; the preload links jemalloc,
# which that script does not carry: copy libjemalloc.so.2 into .devrun/lib
# too), at the project root there:
#   source .devrun/env.sh && bench/pager/device.sh
# Three runs, each with its own time limit (the .txt says when it was cut):
#   latency     the first-touch table at 1, 2, 4, 8, 16 (and 32) threads
#               faulting at once, every engine beside the kernel's minor
#               fault (issue 12's target: 16 threads at least 8x one
#               thread's rate), the adaptive engine at every thread count,
#               the one-CPU and swap-in tables                   (150 s)
#   throughput  sequential and random against Linux swap         (60 s)
#   unmodified  sort, Python, SQLite, the C program against Linux swap
#               (skipped, with the reason, where the preload cannot load)
#                                                                 (150 s)
# Writes to $OUT (or here): pager-device-<run>.json and .txt, and
# pager-device-facts.txt (CPUs, model, kernel, protection keys, cgroup).
set -uo pipefail
out=${OUT:-$PWD}
b=${BYPASS_BUILD:?source .devrun/env.sh first}
mkdir -p "$out"
{
	echo "cpus $(nproc)"
	grep -m1 'model name' /proc/cpuinfo
	echo "kernel $(uname -r)"
	grep -qw pku /proc/cpuinfo && echo "pku yes" || echo "pku no"
	echo "unprivileged_userfaultfd $(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)"
	[ -f /sys/fs/cgroup/cgroup.controllers ] && echo "cgroup v2" || echo "cgroup v1"
} > "$out/pager-device-facts.txt"
rc=0
run() { # name seconds params...
	local name=$1 secs=$2
	shift 2
	timeout -k 5 "$secs" "$b/bench/bypass-bench" pager --quick "$@" \
		--json "$out/pager-device-$name.json" > "$out/pager-device-$name.txt" 2>&1
	local r=$?
	[ $r -eq 124 ] && echo "pager/device.sh: stopped at $secs s (no JSON)" >> "$out/pager-device-$name.txt"
	echo "$name: exit $r" | tee -a "$out/pager-device-$name.txt"
	[ $r -eq 0 ] || rc=$r
}
run latency 150 --rounds 2 --param only=latency
run throughput 60 --param only=throughput
missing=$(ldd "$b/libbypass-pager.so" 2>/dev/null | awk '/not found/ {print $1}')
if [ -n "$missing" ]; then
	echo "unmodified: skipped: the preload cannot load here (missing: $missing)" |
		tee "$out/pager-device-unmodified.txt"
else
	run unmodified 150 --param only=unmodified
fi
exit $rc
