#!/usr/bin/env bash
# bench-plant: bypass-bench's failure paths for notify (issue 24).  The
# doorbell responders failing (--param fail=responder, as tests/notify/bench-
# fail.sh): no target of notify.pingpong may then be met; a ring lost in
# notify.ring (its plain doorbell row rings once less than it counts, which
# the check that every ring is counted catches).
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
small=(--smoke
	--rounds 2
	--param roundtrips=200
	--param ring_batches=20)

# <plant>:<the table that must carry the failure>:<another --param>
for spec in none:notify.pingpong:fail=responder notify.ring:notify.ring:ring_batches=20; do
	IFS=: read -r id table only <<<"$spec"
	name=${table//./-}
	"$bench" notify "${small[@]}" --param "$only" --param plant="$id" \
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
[ $fail -eq 0 ] && echo "PASS: notify/bench-plant"
exit $fail
