#!/usr/bin/env bash
# bench-fail: bypass-bench's failure path (issue 9, item 12).  A notify run
# whose doorbell responders fail (--param fail=responder) prints FAILED
# lines, keeps them in the JSON and exits 1, so CI's smoke step fails on a
# broken experiment; the same tiny run without it exits 0 with no failure,
# and its JSON carries the provenance and the ratio rule.  No figure is
# judged.
set -u
build=${BYPASS_BUILD:?BYPASS_BUILD unset}
bench=$build/bench/bypass-bench
[ -x "$bench" ] || { echo "SKIP: bench/bypass-bench not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing (reads the JSON)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
small=(--smoke --rounds 2 --param roundtrips=200 --param ring_batches=20)

"$bench" notify "${small[@]}" --param fail=responder --json "$tmp/bad.json" >"$tmp/bad.out" 2>&1
r=$?
[ $r = 1 ] || bad "a failing variant: exit $r, want 1"
grep -q 'FAILED: bypass doorbell: adaptive' "$tmp/bad.out" || bad "no FAILED line: $(tail -5 "$tmp/bad.out")"
python3 - "$tmp/bad.json" <<'PY' || bad "the JSON of the failing run"
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for e in d["experiments"] for x in e.get("failures", [])]
assert any("responder did not exit cleanly" in x for x in f), f
PY

"$bench" notify "${small[@]}" --json "$tmp/good.json" >"$tmp/good.out" 2>&1
r=$?
[ $r = 0 ] || bad "a clean run: exit $r, want 0: $(tail -5 "$tmp/good.out")"
grep -q FAILED "$tmp/good.out" && bad "a clean run printed FAILED"
python3 - "$tmp/good.json" <<'PY' || bad "the JSON of the clean run"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["provenance"]
for k in ("git_commit", "git_dirty", "env", "kernel", "cpu", "cpu_pair", "loadavg_start", "facts"):
    assert k in p, k
for k in ("vm.page-cluster", "mglru", "thp.enabled", "zswap.enabled", "kernel.io_uring_disabled"):
    assert k in p["kernel"], k
e = {x["id"]: x for x in d["experiments"]}["notify.pingpong"]
assert e["ratio_rule"] == "x baseline time, lower is better", e["ratio_rule"]
assert not e["failures"], e["failures"]
base = [r for r in e["rows"] if r["is_base"]]
assert len(base) == 1 and base[0]["kind"] == "limit" and base[0]["ratio"] == 1, base
PY
[ $fail -eq 0 ] && echo "PASS: notify/bench-fail"
exit $fail
