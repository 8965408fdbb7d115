#!/usr/bin/env bash
# bench-plant: bypass-bench's failure paths for batch (issue 24).  The base
# row of batch.nginx failing in every round (its wrk runs give no figure:
# never a ratio of +inf that meets a target); batch.sends' bypass API rows
# sending one byte short (the receivers' byte counts catch the lost data);
# batch.sendfile's deferred rows asking for one byte less than the file (the
# check of each call's count catches the short send).
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
small=(--smoke --rounds 1)

# <plant>|<the table that must carry the failure>|<--param only=...>
#   |<more --param, comma-separated>|<text the failure must print>
for spec in 'batch.nginx|batch.nginx|servers|server=nginx,wrk_seconds=1|no run gave a figure' \
	'batch.sends|batch.sends|sends||received 252 of the 256 bytes' \
	'batch.sendfile|batch.sendfile|sendfile||returned 20479'; do
	IFS='|' read -r id table only more want <<<"$spec"
	name=${table//./-}
	params=(--param only="$only")
	IFS=, read -ra extra <<<"$more"
	for p in "${extra[@]}"; do params+=(--param "$p"); done
	"$bench" batch "${small[@]}" "${params[@]}" --param plant="$id" \
		--json "$tmp/$name.json" >"$tmp/$name.out" 2>&1
	r=$?
	if grep -q 'did not start' "$tmp/$name.out"; then
		# a sanitizer build's preload does not start in nginx: not the
		# failure planted here
		echo "SKIP: $id: a server did not start: $(grep -m1 'did not start' "$tmp/$name.out")"
		continue
	fi
	python3 "$src/tools/report.py" --expect-failed "$table" "$tmp/$name.json"
	c=$?
	[ $c = 77 ] && continue
	grep -q "$want" "$tmp/$name.out" ||
		bad "$id: not the planted failure: $(grep -m2 FAILED "$tmp/$name.out")"
	ran=1
	[ $c = 0 ] || bad "$id: the JSON of the planted failure: $(tail -5 "$tmp/$name.out")"
	[ $r = 1 ] || bad "$id: planted failure: exit $r, want 1: $(tail -5 "$tmp/$name.out")"
	grep -q FAILED "$tmp/$name.out" || bad "$id: no FAILED line"
done
[ $ran = 1 ] || { echo "SKIP: no experiment could run here"; exit 77; }
[ $fail -eq 0 ] && echo "PASS: batch/bench-plant"
exit $fail
