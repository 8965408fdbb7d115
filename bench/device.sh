#!/usr/bin/env bash
# bench/device.sh: the harness's experiments that need no protection keys,
# on a second machine (the 16-core Intel device): "more than one machine"
# (../shared/BENCHMARKING.md, item 12) for notify (the cache-line limit
# between two real cores, against which the doorbell's ratio moved on the
# VM), batch.sends and syslet.  150 s at most:
#   notify --quick, half the round trips      (60 s at most)
#   batch --quick --param only=sends, 50 samples a round (40 s at most)
#   syslet --quick --param uncached=0         (40 s at most)
# each with its JSON (machine, quiet record, provenance); a run cut by its
# time limit leaves its .out but no JSON (on this 2-vCPU VM at load 17 the
# first two were cut).  Run from the
# project root after ../shared/tools/pack-build.sh here:
#   source .devrun/env.sh && bench/device.sh
# Everything goes to $OUT (or ./device-out): bench-<module>.json and .out,
# summary.txt (each run's exit status and targets line).  Render beside the
# VM's run: make bench-docs BENCHDOCS_MORE="<the JSON files>".
set -u
build=${BYPASS_BUILD:?source .devrun/env.sh first}
out=${OUT:-./device-out}
mkdir -p "$out"
bench=$build/bench/bypass-bench
run() { # name seconds args...
	local name=$1 secs=$2
	shift 2
	timeout -k 5 "$secs" "$bench" "$@" --json "$out/bench-$name.json" \
		>"$out/bench-$name.out" 2>&1
	local rc=$?
	echo "$name: exit $rc; $(grep -E '^targets met' "$out/bench-$name.out" || echo 'no targets line')"
}
{
	date -u
	uname -r
	grep -m1 'model name' /proc/cpuinfo
	echo "cpus: $(nproc)"
	run notify 60 notify --quick --param roundtrips=50000
	run batch-sends 40 batch --quick --param only=sends --param send_samples=50
	run syslet 40 syslet --quick --param uncached=0
} >"$out/summary.txt" 2>&1
cat "$out/summary.txt"
