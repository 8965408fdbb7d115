#!/usr/bin/env bash
# bench/ipc/device.sh: ipc library mode (issue 21) on a machine whose CPU has
# protection keys (the 16-core Intel device): what the project's 2-vCPU AMD
# VM cannot run.  150 s at most (60 + 3 x 10 + 60; about 30 s when all goes well):
#   (a) the ipc tests, the protection-key paths among them (ctest -R
#       'ipc/(lib-|pkey)': lib-pkey's SEGV_PKUERR on stray writes and reads,
#       PKRU inside and outside calls, threads started before and after the
#       key; lib-signal's PKRU in a signal handler during a call; lib-fault's
#       PKRU put back after a handler's fault; every other lib- test with the
#       gate on; message mode's pkey test), verbose logs of the three that
#       print PKRU;
#   (b) bypass-bench ipc --quick --param ipc=lib: ipc.lib.call with the
#       gated row (library mode behind the gate, the unguarded row, the
#       plain call, message mode, Unix socket + epoll) and ipc.lib.kv, JSON.
# Run from the project root, after ../shared/tools/pack-build.sh here:
#   source .devrun/env.sh && bench/ipc/device.sh
# Everything goes to $OUT (or ./device-out): device-facts.txt, ipc-tests.log,
# ipc-pkey-verbose.log, ipc-lib.json, ipc-lib.out, summary.txt.
set -u
build=${BYPASS_BUILD:?source .devrun/env.sh first}
out=${OUT:-./device-out}
mkdir -p "$out"
{
	date -u
	uname -r
	grep -m1 'model name' /proc/cpuinfo
	echo "cpus: $(nproc)"
	echo "pku: $(grep -c -w pku /proc/cpuinfo) of $(grep -c ^processor /proc/cpuinfo) CPUs list it; ospke: $(grep -c -w ospke /proc/cpuinfo)"
	"$build/bypass" doctor 2>&1 | grep -i -E 'pkey|ipc' || true
} >"$out/device-facts.txt" 2>&1

# (a) the tests: 60 s at most (they take a few seconds each)
(cd "$build" && timeout 60 ctest -R 'ipc/(lib-|pkey)' -j8 --timeout 40 --output-on-failure) \
	>"$out/ipc-tests.log" 2>&1
tests_rc=$?
for t in lib-pkey lib-signal lib-fault; do
	echo "== $t"
	(cd "$build" && BYPASS_LOG=info timeout 10 "tests/ipc/$t") 2>&1
	echo "exit $?"
done >"$out/ipc-pkey-verbose.log" 2>&1

# (b) the library-mode experiment at quick size: 60 s at most
timeout 60 "$build/bench/bypass-bench" ipc --quick --param ipc=lib \
	--json "$out/ipc-lib.json" >"$out/ipc-lib.out" 2>&1
bench_rc=$?

{
	echo "tests: exit $tests_rc"
	grep -E 'tests passed|Skipped|Failed|Timeout' "$out/ipc-tests.log"
	echo "bench: exit $bench_rc"
	grep -E '^(library|plain|message|unix)|target:' "$out/ipc-lib.out"
} >"$out/summary.txt" 2>&1
cat "$out/summary.txt"
[ $tests_rc = 0 ] && [ $bench_rc = 0 ]
