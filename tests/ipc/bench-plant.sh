#!/usr/bin/env bash
# bench-plant: bypass-bench's failure paths for ipc (issue 24).  The adaptive
# row of ipc.oneway failing to run (its summary must not be a median of 0 that
# meets a <= target); the library-mode row of ipc.lib.call (the one its
# targets read) answering wrong; a short message in ipc.tput.32 (the bypass
# rows' server checks every message's length); ipc.call's server garbling a
# reply (the client checks every reply's length and content).
# Each must end up in the JSON's "failures", leave no target of its table
# met ("no verdict: failed") and make bypass-bench exit 1
# (tools/report.py --expect-failed checks the JSON).  No figure is judged.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bench=$build/bench/bypass-bench
[ -x "$bench" ] || { echo "SKIP: bench/bypass-bench not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing (reads the JSON)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 ran=0
bad() { echo "FAIL: $*"; fail=1; }
small=(--smoke --rounds 2 --param iceoryx2=0 --param messages=400)

# <plant>:<the table that must carry the failure>:<--param only=...>
for spec in ipc.oneway:ipc.oneway:ipc=oneway ipc.lib.call:ipc.lib.call:ipc=lib \
	ipc.tput.32:ipc.tput.32:ipc=tput ipc.call:ipc.call:ipc=call; do
	IFS=: read -r id table only <<<"$spec"
	name=${table//./-}
	"$bench" ipc "${small[@]}" --param "$only" --param plant="$id" \
		--json "$tmp/$name.json" >"$tmp/$name.out" 2>&1
	r=$?
	python3 "$src/tools/report.py" --expect-failed "$table" "$tmp/$name.json"
	c=$?
	[ $c = 77 ] && continue
	ran=1
	[ $c = 0 ] || bad "$id: the JSON of the planted failure: $(tail -5 "$tmp/$name.out")"
	[ $r = 1 ] || bad "$id: planted failure: exit $r, want 1: $(tail -5 "$tmp/$name.out")"
	grep -q FAILED "$tmp/$name.out" || bad "$id: no FAILED line"
done
[ $ran = 1 ] || { echo "SKIP: no experiment could run here"; exit 77; }
[ $fail -eq 0 ] && echo "PASS: ipc/bench-plant"
exit $fail
