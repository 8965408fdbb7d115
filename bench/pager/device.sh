#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The pager's run on a lent 16-core machine (issue 20): the first-touch
# table at 1, 2, 4, 8, 16 (and 32) threads faulting at once, every engine
# side by side with the kernel's minor fault (issue 12's target: the
# aggregate rate at 16 threads at least 8x one thread's), the adaptive
# engine at every thread count against the better of upcall and pool, and
# the one-CPU and swap-in tables of the same experiment.  From a packed
# build (../shared/tools/pack-build.sh after make), at the project root
# there:
#   source .devrun/env.sh && bench/pager/device.sh
# At most 150 s (then killed: the .txt says so); writes to $OUT (or here):
#   pager-device.json   the bench's JSON (docs/results/ takes it)
#   pager-device.txt    its tables and notes
#   pager-device-facts.txt  CPUs, model, kernel, protection keys
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
} > "$out/pager-device-facts.txt"
timeout -k 5 150 "$b/bench/bypass-bench" pager --quick --rounds 2 --param only=latency \
	--json "$out/pager-device.json" > "$out/pager-device.txt" 2>&1
rc=$?
[ $rc -eq 124 ] && echo "pager/device.sh: stopped at 150 s (no JSON)" >> "$out/pager-device.txt"
echo "exit $rc" >> "$out/pager-device.txt"
exit $rc
