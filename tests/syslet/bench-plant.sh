#!/usr/bin/env bash
# bench-plant: bypass-bench's failure paths for syslet (issue 24).  A wrong
# result planted in syslet.atoms (--param plant=syslet.atoms: as if a call
# had returned the wrong count) and in syslet.files (plant=syslet.files: the
# syslet variant reads the wrong bytes) must end up in the JSON's
# "failures", leave no target met, and make bypass-bench exit 1; the same
# tiny run without the plant exits 0.  No figure is judged.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bench=$build/bench/bypass-bench
[ -x "$bench" ] || { echo "SKIP: bench/bypass-bench not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing (reads the JSON)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
small=(--smoke --rounds 1 --param files=40 --param atom_batches=4 --param uncached=0)

# plant=<experiment>:<the table that must carry the failure>
for pair in syslet.atoms:syslet.atoms syslet.files:syslet.files.cached; do
	id=${pair%%:*} table=${pair#*:}
	only=${id#syslet.}
	"$bench" syslet "${small[@]}" --param only="$only" --param plant="$id" \
		--json "$tmp/$only.json" >"$tmp/$only.out" 2>&1
	r=$?
	python3 "$src/tools/report.py" --expect-failed "$table" "$tmp/$only.json"
	c=$?
	if [ $c = 77 ]; then
		continue
	fi
	[ $c = 0 ] || bad "$id: the JSON of the planted failure"
	[ $r = 1 ] || bad "$id: planted failure: exit $r, want 1: $(tail -5 "$tmp/$only.out")"
	grep -q FAILED "$tmp/$only.out" || bad "$id: no FAILED line"
done

"$bench" syslet "${small[@]}" --param only=atoms --json "$tmp/good.json" >"$tmp/good.out" 2>&1
r=$?
[ $r = 0 ] || bad "a clean run: exit $r, want 0: $(tail -5 "$tmp/good.out")"
grep -q FAILED "$tmp/good.out" && bad "a clean run printed FAILED"
[ $fail -eq 0 ] && echo "PASS: syslet/bench-plant"
exit $fail
