#!/usr/bin/env bash
# bench-report: the report tooling over two tiny notify runs (issue 24):
# bypass-bench --compare (tools/report.py --compare: every ratio of both
# runs, with its interval), --status (README's lines), --times (seconds per
# table and module) and --template (how
# docs/BENCHMARKS.md is made: each table with its JSON and command, the
# targets with the JSON's verdicts, no placeholder left).  Each JSON carries
# the run's quiet record, its command and every target's verdict.  No
# figure is judged.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
src=${BYPASS_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
bench=$build/bench/bypass-bench
[ -x "$bench" ] || { echo "SKIP: bench/bypass-bench not built"; exit 77; }
py=/usr/bin/python3
[ -x $py ] || py=python3
command -v $py >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
small=(--smoke --rounds 2 --param roundtrips=200 --param ring_batches=20)

for run in a b; do
	"$bench" notify "${small[@]}" --json "$tmp/$run.json" >"$tmp/$run.out" 2>&1 ||
		bad "run $run: exit $?: $(tail -3 "$tmp/$run.out")"
done
$py - "$tmp/a.json" <<'PY' || bad "the JSON's new fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"].startswith("bypass-bench notify"), d["command"]
assert d["quiet"]["measured"] and "rounds" in d["quiet"], d["quiet"]
for k in ("loadavg_start", "loadavg_end"):
    assert d["provenance"][k], k
assert "git_dirty_files" in d["provenance"]
e = {x["id"]: x for x in d["experiments"]}["notify.pingpong"]
assert e["quiet"]["rounds"] == 2, e["quiet"]
assert e["seconds"] is not None
for t in e["targets"]:
    assert t["verdict"], t
    assert t["met"] == (t["verdict"] == "met"), t
PY

"$bench" --compare "$tmp/a.json" "$tmp/b.json" >"$tmp/cmp.md" 2>&1 || bad "--compare: exit $?"
grep -q '^## notify.pingpong' "$tmp/cmp.md" || bad "--compare: no notify.pingpong section"
grep -q '| bypass doorbell: adaptive |' "$tmp/cmp.md" || bad "--compare: no adaptive row"
grep -q '| adaptive doorbell' "$tmp/cmp.md" || bad "--compare: no target row"

$py "$src/tools/report.py" --status "$tmp/a.json" >"$tmp/status" || bad "--status: exit $?"
grep -q 'notify\*\*: [0-9]* of 3 targets met' "$tmp/status" || bad "--status: $(cat "$tmp/status")"

$py "$src/tools/report.py" --times "$tmp/a.json" >"$tmp/times" || bad "--times: exit $?"
grep -q '^notify ' "$tmp/times" && grep -q 'notify.pingpong' "$tmp/times" ||
	bad "--times: $(cat "$tmp/times")"

printf '# t\n\n{{run}}\n\n{{targets}}\n\n{{table notify.pingpong}}\n\n%s\n\n{{tables}}\n' \
	'{{ratio notify.pingpong|bypass doorbell: adaptive}} {{target notify.pingpong|sleeping}}' \
	>"$tmp/t.in.md"
$py "$src/tools/report.py" --template "$tmp/t.in.md" "$tmp/a.json" --md "$tmp/t.md" \
	--out "$tmp/img" >/dev/null 2>&1 || bad "--template: exit $?"
grep -q '{{' "$tmp/t.md" && bad "--template left a placeholder: $(grep '{{' "$tmp/t.md")"
grep -q '^From \[.*a.json\](.*a.json): `bypass-bench notify' "$tmp/t.md" ||
	bad "--template: a table without its JSON and command"
grep -q '<a id="notify.ring"></a>' "$tmp/t.md" || bad "--template: {{tables}} left notify.ring out"
[ $fail -eq 0 ] && echo "PASS: notify/bench-report"
exit $fail
